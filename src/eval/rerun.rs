//! Running part of an earlier eval again (promptfoo's habits): `--filter-failing` runs only the cases
//! that failed or errored in it, `--retry-errors` only its errored cells, the others kept from its
//! record. Cells are matched by case name and column ([`super::plan::Column::same_as`]).

use super::plan::EvalPlan;
use super::record::{CellRecord, EvalRecord};
use super::score::Verdict;

/// The cases with a cell that did not pass in `record`, in its row order (`None`: a prompt's own
/// variables).
pub fn failing_cases(record: &EvalRecord) -> Vec<Option<String>> {
    // One pass over the cells, then one over the rows: linear in the record's size.
    let mut failed = vec![false; record.rows.len()];
    for cell in record.cells.iter().filter(|c| c.score.verdict != Verdict::Pass) {
        if let Some(slot) = failed.get_mut(cell.row) {
            *slot = true;
        }
    }
    let mut seen = std::collections::HashSet::new();
    record
        .rows
        .iter()
        .zip(failed)
        .filter(|(name, failed)| *failed && seen.insert(name.as_ref()))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Keeps in `plan` the cells that errored in `last` (and those it does not have: new cases or
/// columns); returns `last`'s other cells, placed at `plan`'s rows and columns, to stand beside the
/// re-run ones ([`merge`]), and how many of the cells left to run errored in `last` (the rest are
/// not in it).
pub fn retry_errors(plan: &mut EvalPlan, last: &EvalRecord) -> (Vec<CellRecord>, usize) {
    let mut kept = Vec::new();
    let mut errored = 0;
    let columns = plan.columns();
    // The earlier cells by (case, repeat), each list short (one per column): a lookup per cell, not a
    // scan of every earlier cell.
    let mut earlier_cells: std::collections::HashMap<(Option<&str>, u32), Vec<&CellRecord>> =
        std::collections::HashMap::new();
    for old in &last.cells {
        let Some(name) = last.rows.get(old.row) else { continue };
        earlier_cells.entry((name.as_deref(), old.repeat)).or_default().push(old);
    }
    plan.cells.retain(|cell| {
        let Some(row) = plan.rows.get(cell.row) else { return true };
        let Some(column) = columns.get(cell.column) else { return true };
        let candidates = earlier_cells.get(&(row.as_deref(), cell.repeat)).map(Vec::as_slice).unwrap_or_default();
        let earlier =
            candidates.iter().copied().find(|old| last.columns.get(old.column).is_some_and(|c| c.same_as(column)));
        match earlier {
            Some(old) if old.score.verdict != Verdict::Error => {
                kept.push(CellRecord { row: cell.row, column: cell.column, ..old.clone() });
                false
            }
            Some(_) => {
                errored += 1;
                true
            }
            None => true,
        }
    });
    (kept, errored)
}

/// `record` (the re-run cells) with the `kept` cells of the earlier eval, in the plan's order, its
/// totals summed again.
pub fn merge(record: &mut EvalRecord, kept: Vec<CellRecord>) {
    record.cells.extend(kept);
    record.cells.sort_by_key(|c| (c.row, c.column, c.repeat));
    record.sum_up();
}
