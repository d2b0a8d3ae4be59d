//! Running part of an earlier eval again (promptfoo's habits): `--filter-failing` runs only the cases
//! that failed or errored in it, `--retry-errors` only its errored cells, the others kept from its
//! record. Cells are matched by case name and column ([`super::plan::Column::same_as`]).

use super::plan::EvalPlan;
use super::record::{CellRecord, EvalRecord};
use super::score::Verdict;

/// The cases with a cell that did not pass in `record`, in its row order (`None`: a prompt's own
/// variables).
pub fn failing_cases(record: &EvalRecord) -> Vec<Option<String>> {
    let mut failing: Vec<Option<String>> = Vec::new();
    for (row, name) in record.rows.iter().enumerate() {
        let failed = record.cells.iter().any(|c| c.row == row && c.score.verdict != Verdict::Pass);
        if failed && !failing.contains(name) {
            failing.push(name.clone());
        }
    }
    failing
}

/// Keeps in `plan` the cells that errored in `last` (and those it does not have: new cases or
/// columns); returns `last`'s other cells, placed at `plan`'s rows and columns, to stand beside the
/// re-run ones ([`merge`]).
pub fn retry_errors(plan: &mut EvalPlan, last: &EvalRecord) -> Vec<CellRecord> {
    let mut kept = Vec::new();
    let columns = plan.columns();
    plan.cells.retain(|cell| {
        let row = plan.rows.get(cell.row);
        let Some(column) = columns.get(cell.column) else { return true };
        let earlier = last.cells.iter().find(|old| {
            old.repeat == cell.repeat
                && last.rows.get(old.row) == row
                && last.columns.get(old.column).is_some_and(|c| c.same_as(column))
        });
        match earlier {
            Some(old) if old.score.verdict != Verdict::Error => {
                kept.push(CellRecord { row: cell.row, column: cell.column, ..old.clone() });
                false
            }
            _ => true,
        }
    });
    kept
}

/// `record` (the re-run cells) with the `kept` cells of the earlier eval, in the plan's order, its
/// totals summed again.
pub fn merge(record: &mut EvalRecord, kept: Vec<CellRecord>) {
    record.cells.extend(kept);
    record.cells.sort_by_key(|c| (c.row, c.column, c.repeat));
    record.sum_up();
}
