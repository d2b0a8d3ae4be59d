//! One strategy's figures over a sweep's cuts, kept as runs: the cut where the figures change and the
//! figures from there on (memory grows with the changes, not the cuts). The figures at any cut are a
//! binary search away; the steps and the resilience are read off the runs.

use std::ops::Index;

use serde::Serialize;

use crate::truncate::strategy::CutFigures;

/// Cuts `first..` up to the next run's first share `figures`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
struct Run {
    /// The index of the run's first cut.
    first: usize,
    /// That cut's position as the caller counts it.
    position: usize,
    figures: CutFigures,
}

/// The figures of one strategy at every cut, as runs (no two neighbours with the same figures).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Runs {
    runs: Vec<Run>,
    /// How many cuts.
    cuts: usize,
}

impl Runs {
    /// Appends `count` cuts with `figures`.
    pub(super) fn push(&mut self, count: usize, figures: CutFigures) {
        if count == 0 {
            return;
        }
        if self.runs.last().is_none_or(|last| last.figures != figures) {
            self.runs.push(Run { first: self.cuts, position: self.cuts, figures });
        }
        self.cuts += count;
    }

    /// Sets each run's position from its first cut's index.
    pub(super) fn place(&mut self, position: impl Fn(usize) -> usize) {
        for run in &mut self.runs {
            run.position = position(run.first);
        }
    }

    /// How many cuts.
    pub fn len(&self) -> usize {
        self.cuts
    }

    pub fn is_empty(&self) -> bool {
        self.cuts == 0
    }

    /// The figures at cut `cut` (by index), if there is such a cut.
    pub fn get(&self, cut: usize) -> Option<&CutFigures> {
        if cut >= self.cuts {
            return None;
        }
        let at = self.runs.partition_point(|run| run.first <= cut);
        self.runs.get(at.checked_sub(1)?).map(|run| &run.figures)
    }

    /// `(first cut, how many cuts, figures)` of each run, in order.
    pub fn spans(&self) -> impl Iterator<Item = (usize, usize, CutFigures)> + '_ {
        self.runs.iter().enumerate().map(|(at, run)| {
            let end = self.runs.get(at + 1).map_or(self.cuts, |next| next.first);
            (run.first, end - run.first, run.figures)
        })
    }

    /// The figures at every cut, in order (read off the runs: nothing is materialised).
    pub fn iter(&self) -> Iter<'_> {
        Iter { runs: self, run: 0, cut: 0 }
    }

    /// Every cut where the figures change, as `[position, items, corrupt]`, starting with the first.
    pub fn steps(&self) -> Vec<[usize; 3]> {
        self.runs.iter().map(|run| [run.position, run.figures.items, run.figures.corrupt]).collect()
    }

    /// The mean over all cuts of `(items - corrupt) / full_items` (0.0 with no items or no cuts).
    pub fn resilience(&self, full_items: usize) -> f64 {
        if full_items == 0 || self.cuts == 0 {
            return 0.0;
        }
        let sound: usize = self.spans().map(|(_, count, f)| count * f.items.saturating_sub(f.corrupt)).sum();
        sound as f64 / full_items as f64 / self.cuts as f64
    }
}

impl Index<usize> for Runs {
    type Output = CutFigures;

    /// The figures at cut `cut`; panics past the last cut, as a slice does.
    fn index(&self, cut: usize) -> &CutFigures {
        match self.get(cut) {
            Some(figures) => figures,
            None => panic!("cut {cut} of a sweep with {} cuts", self.cuts),
        }
    }
}

impl<'a> IntoIterator for &'a Runs {
    type Item = &'a CutFigures;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The figures at each cut in turn ([`Runs::iter`]).
pub struct Iter<'a> {
    runs: &'a Runs,
    /// The run of the next cut.
    run: usize,
    /// The next cut.
    cut: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a CutFigures;

    fn next(&mut self) -> Option<&'a CutFigures> {
        if self.cut >= self.runs.cuts {
            return None;
        }
        let runs = &self.runs.runs;
        while runs.get(self.run + 1).is_some_and(|next| next.first <= self.cut) {
            self.run += 1;
        }
        self.cut += 1;
        runs.get(self.run).map(|run| &run.figures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(items: usize, corrupt: usize) -> CutFigures {
        CutFigures { items, corrupt }
    }

    #[test]
    fn runs_merge_and_answer_per_cut() {
        let mut runs = Runs::default();
        runs.push(2, figures(0, 0));
        runs.push(0, figures(5, 5));
        runs.push(1, figures(0, 0));
        runs.push(3, figures(2, 1));
        runs.push(1, figures(3, 0));
        runs.place(|at| at * 10);
        assert_eq!(runs.len(), 7);
        assert_eq!(runs.steps(), [[0, 0, 0], [30, 2, 1], [60, 3, 0]]);
        let all: Vec<CutFigures> = runs.iter().copied().collect();
        assert_eq!(all.len(), 7);
        for (at, f) in all.iter().enumerate() {
            assert_eq!(runs.get(at), Some(f));
            assert_eq!(&runs[at], f);
        }
        assert_eq!(runs.get(7), None);
        assert!((runs.resilience(3) - (3.0 + 3.0) / 3.0 / 7.0).abs() < 1e-12);
        assert_eq!(Runs::default().resilience(3), 0.0);
    }
}
