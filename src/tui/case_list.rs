//! Which rows the variables pane lists (pure): the cases the case filter (`case_filter.rs`) shows,
//! by name and by the last eval's verdict, and the list as positions (the default variables, the
//! cases shown, the chosen variables), so a dataset of 10,000 rows is looked at and drawn a screen
//! at a time.

use std::collections::HashMap;

use crate::eval::diff::Change;
use crate::eval::score::Verdict;
use crate::tui::eval::filter::holds;
use crate::tui::eval::state::EvalView;
use crate::tui::state::State;

pub use crate::tui::case_filter::{CaseFilter, WantedVerdict};

/// The last eval's verdict of each case and its change against the baseline, by case name.
fn verdicts_of(eval: &EvalView) -> HashMap<&str, (Option<Verdict>, Option<Change>)> {
    let mut by_case: HashMap<&str, (Option<Verdict>, Option<Change>)> = HashMap::new();
    match eval.record.as_deref() {
        Some(record) => {
            for cell in record.cells.iter().filter(|c| c.column == 0 && c.repeat <= 1) {
                if let Some(case) = cell.case.as_deref() {
                    by_case.entry(case).or_default().0 = Some(cell.score.verdict);
                }
            }
        }
        None => {
            for (case, cell) in eval.rows.iter().zip(&eval.cells) {
                if let (Some(case), Some(scored)) = (case.as_deref(), cell.scored.as_deref()) {
                    by_case.entry(case).or_default().0 = Some(scored.score.verdict);
                }
            }
        }
    }
    for cell in eval.baseline.iter().flat_map(|delta| &delta.cells).filter(|c| c.after.is_some()) {
        if let Some(case) = cell.case.as_deref() {
            by_case.entry(case).or_default().1 = Some(cell.change);
        }
    }
    by_case
}

/// The variables pane's list: position 0 the default variables, then the cases shown, then the
/// chosen variables. A row is named as `State::selected_variable` counts it (0, each case's index
/// + 1, then the variables after every case), shown or not.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing {
    /// The shown cases (indices into `State::cases`, in order); `None`: every case.
    shown: Option<Vec<usize>>,
    cases: usize,
    variables: usize,
}

impl Listing {
    /// The list as the state's filter shows it (without a filter no case is looked at).
    pub fn of(state: &State) -> Listing {
        let cases = state.cases.len();
        let variables = crate::tui::variables::rows(state).len();
        let filter = &state.workbench.case_filter;
        if !filter.is_on() {
            return Listing { shown: None, cases, variables };
        }
        let verdicts = filter.verdict.map(|_| verdicts_of(&state.eval));
        let shown = state
            .cases
            .iter()
            .enumerate()
            .filter(|(_, case)| filter.name.is_empty() || case.name.to_lowercase().contains(filter.name.as_str()))
            .filter(|(_, case)| {
                let (verdict, change) =
                    verdicts.as_ref().and_then(|v| v.get(case.name.as_str()).copied()).unwrap_or_default();
                match filter.verdict {
                    None => true,
                    Some(WantedVerdict::Kind(kind)) => holds(kind, verdict, change),
                    Some(WantedVerdict::Exactly(wanted)) => verdict == Some(wanted),
                }
            })
            .map(|(index, _)| index)
            .collect();
        Listing { shown: Some(shown), cases, variables }
    }

    /// How many cases are shown, and how many there are.
    pub fn shown_of(&self) -> (usize, usize) {
        (self.shown.as_ref().map_or(self.cases, Vec::len), self.cases)
    }

    /// How many positions the list has.
    pub fn len(&self) -> usize {
        1 + self.shown_of().0 + self.variables
    }

    /// Never: the default variables are always listed.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The row (as `State::selected_variable` counts) at position `at`.
    pub fn row_at(&self, at: usize) -> Option<usize> {
        let (shown, cases) = self.shown_of();
        match at {
            0 => Some(0),
            at if at <= shown => match &self.shown {
                Some(indices) => indices.get(at - 1).map(|case| case + 1),
                None => Some(at),
            },
            at if at < self.len() => Some(at - shown + cases),
            _ => None,
        }
    }

    /// The position of `row`; a case the filter hides: the position of the next shown case (or of
    /// the first variable).
    pub fn position_of(&self, row: usize) -> usize {
        let (shown, cases) = self.shown_of();
        let at = match (&self.shown, row) {
            (_, 0) => 0,
            (Some(indices), row) if row <= cases => 1 + indices.partition_point(|&case| case + 1 < row),
            (_, row) if row <= cases => row,
            (_, row) => row - cases + shown,
        };
        at.min(self.len() - 1)
    }

    /// Whether `row` is shown.
    pub fn shows(&self, row: usize) -> bool {
        self.row_at(self.position_of(row)) == Some(row)
    }

    /// The row `by` shown positions from `row` (negative: up), kept in the list; from a hidden row the
    /// first step down lands on the next shown one.
    pub fn step(&self, row: usize, by: i64) -> usize {
        let at = self.position_of(row);
        let last = self.len() - 1;
        let to = if by < 0 {
            at.saturating_sub(usize::try_from(by.unsigned_abs()).unwrap_or(usize::MAX))
        } else {
            let by = usize::try_from(by).unwrap_or(usize::MAX);
            at.saturating_add(by - usize::from(by > 0 && !self.shows(row)))
        };
        self.row_at(to.min(last)).unwrap_or(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_rows_agree_with_a_filter_and_without() {
        // Five cases, cases 1 and 3 shown, two variables: rows 0, 2, 4, 6, 7 at positions 0..5.
        let filtered = Listing { shown: Some(vec![1, 3]), cases: 5, variables: 2 };
        let rows: Vec<usize> = (0..filtered.len()).filter_map(|at| filtered.row_at(at)).collect();
        assert_eq!(rows, [0, 2, 4, 6, 7]);
        assert_eq!(filtered.row_at(5), None);
        assert_eq!(filtered.position_of(3), 2, "a hidden case: the next shown one");
        assert_eq!(filtered.position_of(5), 3, "after the last shown case: the first variable");
        assert_eq!(filtered.step(3, 1), 4, "from a hidden row, one down is the next shown");
        assert_eq!(filtered.step(2, 1), 4);
        assert_eq!(filtered.step(4, -1), 2);
        assert_eq!(filtered.step(0, i64::MAX / 2), 7);
        assert_eq!(filtered.step(7, i64::MIN / 2), 0);
        let all = Listing { shown: None, cases: 5, variables: 2 };
        assert_eq!((0..all.len()).filter_map(|at| all.row_at(at)).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert!((0..8).all(|row| all.position_of(row) == row));
    }
}
