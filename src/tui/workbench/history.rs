//! The history pane's evals (pure): the eval store's records of this prompt, listed above its runs,
//! and the one marked (`m`) to compare another with (enter opens one: `eval::history`).

use crate::eval::store::Listed;
use crate::tui::msg::Effect;
use crate::tui::state::State;
use crate::tui::workbench::state::Pane;

/// The store's evals of this prompt arrived.
pub fn listed(state: &mut State, result: Result<Vec<Listed>, String>) -> Vec<Effect> {
    match result {
        Ok(evals) => {
            state.workbench.evals = evals;
            let len = state.workbench.evals.len() + state.workbench.history.len();
            state.workbench.history_selected = state.workbench.history_selected.min(len.saturating_sub(1));
            if state.workbench.eval_marked.as_ref().is_some_and(|id| !state.workbench.evals.iter().any(|e| &e.id == id))
            {
                state.workbench.eval_marked = None;
            }
        }
        Err(e) => state.note = Some(format!("evals not listed: {e}")),
    }
    Vec::new()
}

/// `m` in the history pane: marks the selected eval (again: unmarks it).
pub fn mark(state: &mut State) -> Vec<Effect> {
    let selected = (state.workbench.focus == Pane::History)
        .then(|| state.workbench.evals.get(state.workbench.history_selected))
        .flatten();
    let Some(eval) = selected else {
        state.note = Some("mark: select an eval in the history pane (alt-8) first".into());
        return Vec::new();
    };
    if state.workbench.eval_marked.as_ref() == Some(&eval.id) {
        state.workbench.eval_marked = None;
        state.note = Some(format!("eval {} unmarked", eval.id));
    } else {
        state.note = Some(format!("eval {} marked: enter on another eval compares them", eval.id));
        state.workbench.eval_marked = Some(eval.id.clone());
    }
    Vec::new()
}
