//! An eval of the history opened (pure): enter on one of the evals the history pane lists
//! (`workbench::history`) opens it in the eval screen's matrix, read-only until ctrl-r, compared with the marked eval or
//! else the one before it; `d` on the eval screen shows the core's eval diff.

use crate::eval::diff;
use crate::tui::eval::state::{EvalCell, EvalOverlay, EvalPhase, EvalView};
use crate::tui::msg::{Effect, OpenedEval};
use crate::tui::state::{Screen, State};

/// Enter on the `index`-th eval of the history: read it (and the eval it is compared with).
pub fn open(state: &mut State, index: usize) -> Vec<Effect> {
    if state.eval.running() {
        state.note = Some("an eval is running: alt-e shows it (esc there stops it)".into());
        return Vec::new();
    }
    let Some(eval) = state.workbench.evals.get(index) else { return Vec::new() };
    let marked = state.workbench.eval_marked.as_ref().filter(|id| **id != eval.id);
    let against = match marked {
        Some(id) => state.workbench.evals.iter().find(|e| &e.id == id),
        None => state.workbench.evals.get(index + 1),
    };
    state.eval.id += 1;
    state.note = Some(format!("reading eval {}…", eval.id));
    vec![Effect::OpenEval { id: state.eval.id, file: eval.path.clone(), against: against.map(|e| e.path.clone()) }]
}

/// The eval opened from the history arrived: its matrix, read-only, with the runs of its cells found
/// in this prompt's history (so a case opens with its answer).
pub fn opened(state: &mut State, result: Result<Box<OpenedEval>, String>) {
    let opened = match result {
        Ok(opened) => *opened,
        Err(e) => {
            state.note = Some(format!("eval not opened: {e}"));
            return;
        }
    };
    let OpenedEval { record, against } = opened;
    let cells = record
        .rows
        .iter()
        .enumerate()
        .map(|(row, _)| {
            let scored = record.cells.iter().find(|c| c.row == row && c.column == 0 && c.repeat <= 1);
            let run = scored.and_then(|cell| {
                state
                    .workbench
                    .history
                    .iter()
                    .find(|r| r.started_at_ms == cell.run.started_at_ms && r.case == cell.case)
            });
            EvalCell {
                started: scored.is_some(),
                answer: run.and_then(|r| r.turns.last()).map(|t| t.output.clone()).unwrap_or_default(),
                turn: 1,
                // The record holds the scores (`EvalView::scored`).
                scored: None,
                run: run.cloned().map(Box::new),
            }
        })
        .collect();
    let compared = against.as_ref().map_or(String::new(), |a| format!(", compared with {}", a.id));
    state.note = Some(format!("eval {}{compared}: read-only (ctrl-r runs it again, d diffs it)", record.id));
    state.screen = Screen::Eval;
    state.eval = EvalView {
        id: state.eval.id,
        phase: EvalPhase::Done,
        rows: record.rows.clone(),
        column: record.column_label(0).to_string(),
        cells,
        baseline: against.as_ref().map(|a| crate::eval::session::compare(a, &record)),
        baseline_column: against.as_ref().and_then(|a| diff::counterpart(&a.columns, &record.columns, 0)),
        baseline_record: against.map(Box::new),
        opened: Some(record.id.clone()),
        record: Some(Box::new(record)),
        ..EvalView::default()
    };
}

/// `d` on the eval screen: the eval diff of the shown eval against its baseline.
pub fn show_diff(state: &mut State) -> Vec<Effect> {
    let view = &mut state.eval;
    let (Some(before), Some(after)) = (view.baseline_record.as_deref(), view.record.as_deref()) else {
        state.note = Some(
            "diff: needs a finished eval and a baseline (an earlier eval of the saved prompt, or the eval marked in the history)"
                .into(),
        );
        return Vec::new();
    };
    let compared: Box<crate::eval::diff::EvalDiff> = Box::new(diff::diff(before, after));
    state.note = Some(format!(
        "diff {} → {}: {} improved, {} regressed (esc back)",
        compared.a, compared.b, compared.improved, compared.regressed
    ));
    view.overlay = EvalOverlay::Diff(compared);
    view.scroll = 0;
    Vec::new()
}
