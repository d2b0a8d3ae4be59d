//! Truncation side by side: each side's sweep over its own answer, drawn as curves on one token axis
//! (a json side: `json` and `json-repair`; a jsonl side: `jsonl`), where the curves of the two sides
//! cross, the first cut at which each yields anything, resilience, and corrupt items under repair.
//!
//! The axis is the model's own tokens when both answers were recorded with token ids, else o200k
//! tokens for both. A side whose answer is shorter keeps its final figures past its end: a cut beyond
//! the answer leaves the whole answer.

use serde::Serialize;

use crate::output::ResponseType;
use crate::truncate::strategy::Strategy;
use crate::truncate::sweep::Sweep;

/// One strategy of one side, as a step curve of items recovered against cut.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Curve {
    /// 0 for side A, 1 for side B.
    pub side: usize,
    /// `"<side label>/<strategy>"`, e.g. `json/json-repair`.
    pub label: String,
    pub strategy: Strategy,
    /// The side's answer length on the axis.
    pub total: usize,
    /// Items in the side's full answer (its sweep's reference).
    pub full_items: usize,
    /// `[cut, items, corrupt]` wherever the figures change, from cut 0.
    pub steps: Vec<[usize; 3]>,
    /// The first cut that yields at least one item (`None`: never).
    pub first_yield: Option<usize>,
    /// Mean over the side's cuts of (items − corrupt) ÷ full items (as `truncate --sweep`).
    pub resilience: f64,
    /// Cuts at which some recovered item differs from the full answer's (a string repaired mid-word).
    pub corrupt_cuts: usize,
    /// The most corrupt items at any one cut.
    pub max_corrupt: usize,
}

impl Curve {
    /// `[items, corrupt]` at `cut` (the last step at or before it).
    pub fn at(&self, cut: usize) -> [usize; 2] {
        let index = self.steps.partition_point(|step| step[0] <= cut);
        self.steps.get(index.wrapping_sub(1)).map_or([0, 0], |s| [s[1], s[2]])
    }
}

/// A cut where the lead between two sides' curves changes hands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Crossing {
    /// The first cut at which `ahead` recovers more items than `behind`, after `behind` led.
    pub at: usize,
    pub ahead: String,
    pub behind: String,
}

/// The shared chart: every curve, the axis, and the crossings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chart {
    /// `model` (both answers carry the model's token ids) or `o200k`.
    pub tokens: &'static str,
    /// The axis runs from 0 to the longer answer.
    pub axis: usize,
    pub curves: Vec<Curve>,
    pub crossings: Vec<Crossing>,
}

/// The strategies drawn for a side of `response_type`.
pub fn strategies_of(response_type: ResponseType) -> &'static [Strategy] {
    match response_type {
        ResponseType::Json => &[Strategy::Json, Strategy::JsonRepair],
        ResponseType::Jsonl => &[Strategy::Jsonl],
        ResponseType::Text => &[],
    }
}

/// The curve of `strategy` in `sweep` (side `side`, labelled `side_label`), `total` cuts long.
pub fn curve(side: usize, side_label: &str, strategy: Strategy, sweep: &Sweep, total: usize) -> Curve {
    let steps = sweep.steps(strategy);
    let figures = sweep.figures(strategy);
    Curve {
        side,
        label: format!("{side_label}/{strategy}"),
        strategy,
        total,
        full_items: sweep.full_items,
        first_yield: steps.iter().find(|s| s[1] > 0).map(|s| s[0]),
        resilience: sweep.resilience(strategy),
        corrupt_cuts: figures.spans().filter(|(_, _, f)| f.corrupt > 0).map(|(_, cuts, _)| cuts).sum(),
        max_corrupt: figures.spans().map(|(_, _, f)| f.corrupt).max().unwrap_or(0),
        steps,
    }
}

/// The chart of `curves`: the axis, and every crossing between curves of different sides.
pub fn chart(curves: Vec<Curve>, tokens: &'static str) -> Chart {
    let axis = curves.iter().map(|c| c.total).max().unwrap_or(0);
    let mut crossings = Vec::new();
    for (i, first) in curves.iter().enumerate() {
        for second in curves.iter().skip(i + 1).filter(|c| c.side != first.side) {
            crossings.extend(crossings_of(first, second));
        }
    }
    crossings.sort_by_key(|c| c.at);
    Chart { tokens, axis, curves, crossings }
}

/// Where the lead between `a` and `b` changes: only cuts where a step happens can change it.
fn crossings_of(a: &Curve, b: &Curve) -> Vec<Crossing> {
    let mut cuts: Vec<usize> = a.steps.iter().chain(&b.steps).map(|s| s[0]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut leader: Option<bool> = None;
    let mut found = Vec::new();
    for cut in cuts {
        let (x, y) = (a.at(cut)[0], b.at(cut)[0]);
        if x == y {
            continue;
        }
        let a_ahead = x > y;
        if leader.is_some_and(|was| was != a_ahead) {
            let (ahead, behind) = if a_ahead { (a, b) } else { (b, a) };
            found.push(Crossing { at: cut, ahead: ahead.label.clone(), behind: behind.label.clone() });
        }
        leader = Some(a_ahead);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve_of(side: usize, label: &str, steps: Vec<[usize; 3]>, total: usize) -> Curve {
        Curve {
            side,
            label: label.into(),
            strategy: Strategy::Jsonl,
            total,
            full_items: 0,
            first_yield: None,
            resilience: 0.0,
            corrupt_cuts: 0,
            max_corrupt: 0,
            steps,
        }
    }

    #[test]
    fn the_lead_changing_hands_is_a_crossing_and_a_tie_is_not() {
        let a = curve_of(0, "a", vec![[0, 0, 0], [1, 2, 0], [5, 3, 0]], 5);
        let b = curve_of(1, "b", vec![[0, 0, 0], [3, 2, 0], [6, 4, 0]], 8);
        assert_eq!(a.at(0), [0, 0]);
        assert_eq!(a.at(4), [2, 0]);
        assert_eq!(a.at(100), [3, 0]);
        let chart = chart(vec![a, b], "o200k");
        assert_eq!(chart.axis, 8);
        assert_eq!(chart.crossings, [Crossing { at: 6, ahead: "b".into(), behind: "a".into() }]);
    }
}
