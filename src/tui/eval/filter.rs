//! Which rows the eval screen's matrix shows: the cases whose name holds the typed text (`/`, any
//! case) and whose verdict is of the chosen kind (`v` cycles all, failing, passing, changed), so a
//! dataset of thousands of rows is read a screen at a time. The selection moves among the shown rows.

use std::collections::HashMap;

use crate::eval::diff::Change;
use crate::eval::score::Verdict;

use crate::tui::eval::state::EvalView;
pub use crate::tui::eval::state::{RowFilter, Verdicts};

/// The matrix's lines that are not rows: the status bar (2), the frame (2) and the header (1).
pub const MATRIX_CHROME: usize = 5;

/// The index in `shown` of the first row drawn when `height` rows fit: the selection in view.
pub fn first_drawn(shown: &[usize], selected: usize, height: usize) -> usize {
    let at = shown.partition_point(|&row| row < selected);
    at.saturating_sub(height.saturating_sub(1))
}

impl EvalView {
    /// The rows the matrix shows, in order (every row when no filter is on).
    pub fn shown_rows(&self) -> Vec<usize> {
        let filter = &self.filter;
        if !filter.is_on() {
            return (0..self.rows.len()).collect();
        }
        let name = filter.name.to_lowercase();
        // Each case's change, looked up once (not a scan of the baseline per row).
        let changes: HashMap<&Option<String>, Change> = match (&self.baseline, filter.verdicts) {
            (Some(delta), Verdicts::Changed) => {
                delta.cells.iter().filter(|c| c.after.is_some()).map(|c| (&c.case, c.change)).collect()
            }
            _ => HashMap::new(),
        };
        (0..self.rows.len())
            .filter(|&row| {
                let case = &self.rows[row];
                let named =
                    name.is_empty() || case.as_deref().unwrap_or("(variables)").to_lowercase().contains(name.as_str());
                let verdict = self.scored(row).map(|s| s.score.verdict);
                named && holds(filter.verdicts, verdict, changes.get(case).copied())
            })
            .collect()
    }

    /// Moves the selection `by` shown rows (negative: up), or to the first / last shown row; a
    /// selection the filter hides goes to the nearest shown row first.
    pub fn move_selection(&mut self, to: Move) {
        let shown = self.shown_rows();
        let Some(last) = shown.len().checked_sub(1) else { return };
        // The first shown row at or after the selection (`shown.len()` when there is none).
        let at = shown.partition_point(|&row| row < self.selected);
        let on_it = shown.get(at) == Some(&self.selected);
        let index = match to {
            Move::By(by) if by < 0 => at.saturating_sub(by.unsigned_abs()).min(last),
            Move::By(by) => (at + by.unsigned_abs() - usize::from(!on_it && by > 0)).min(last),
            Move::First => 0,
            Move::Last => last,
        };
        self.selected = shown[index];
    }
}

/// Whether a case with `verdict` (`None`: not scored) and `change` against the baseline is of the
/// `kind` shown (one meaning for the eval screen's `v` and the workbench's `is:` filter).
pub fn holds(kind: Verdicts, verdict: Option<Verdict>, change: Option<Change>) -> bool {
    match kind {
        Verdicts::All => true,
        Verdicts::Failing => verdict.is_some_and(|v| v != Verdict::Pass),
        Verdicts::Passing => verdict == Some(Verdict::Pass),
        Verdicts::Changed => matches!(change, Some(Change::Improved | Change::Regressed)),
    }
}

/// A move of the selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    By(isize),
    First,
    Last,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::eval::state::EvalCell;

    fn view(names: &[&str]) -> EvalView {
        EvalView {
            rows: names.iter().map(|n| Some(n.to_string())).collect(),
            cells: names.iter().map(|_| EvalCell::default()).collect(),
            ..EvalView::default()
        }
    }

    #[test]
    fn the_name_filter_shows_matching_cases_and_the_selection_moves_among_them() {
        let mut view = view(&["alpha", "beta", "Alphabet", "gamma", "alps"]);
        assert_eq!(view.shown_rows(), [0, 1, 2, 3, 4]);
        view.filter.name = "ALP".into();
        assert_eq!(view.shown_rows(), [0, 2, 4]);
        view.selected = 1; // hidden now: a move down goes to the next shown row
        view.move_selection(Move::By(1));
        assert_eq!(view.selected, 2);
        view.move_selection(Move::By(1));
        assert_eq!(view.selected, 4);
        view.move_selection(Move::By(1));
        assert_eq!(view.selected, 4, "the last shown row stays");
        view.move_selection(Move::By(-10));
        assert_eq!(view.selected, 0);
        view.move_selection(Move::Last);
        assert_eq!(view.selected, 4);
        view.filter.name = "zzz".into();
        view.move_selection(Move::First);
        assert_eq!(view.selected, 4, "nothing shown: the selection stays");
    }
}
