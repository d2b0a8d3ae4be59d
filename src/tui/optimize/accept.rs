//! Accept and reject on the optimize screen (pure): an accepted candidate's system prompt and
//! template go into the editors as an edit (unsaved: the dirty marker on, ctrl-s saves through the
//! normal path, undo-accept takes both editors back in one step); a rejected one is marked and never
//! "best". Nothing is written to the prompt file here.

use crate::tui::msg::Effect;
use crate::tui::optimize::state::AcceptUndo;
use crate::tui::state::{editor, State};

/// `a`: the selected candidate into the editors.
pub fn accept(state: &mut State) -> Vec<Effect> {
    let view = &state.optimize;
    let Some(row) = view.rows.get(view.selected) else { return Vec::new() };
    let id = row.id.clone();
    let Some(candidate) = view.record.as_deref().and_then(|r| r.candidate(&id)) else {
        state.note = Some("a candidate can be accepted once the optimization ends (esc stops it)".into());
        return Vec::new();
    };
    if let Some(reason) = &candidate.rejected {
        state.note = Some(format!("{id} was rejected by the optimizer ({reason}): nothing to accept"));
        return Vec::new();
    }
    if view.dismissed.contains(&id) {
        state.note = Some(format!("{id} is marked rejected: r takes the mark back first"));
        return Vec::new();
    }
    let after = [candidate.system.clone().unwrap_or_default(), candidate.template.clone()];
    let before = [state.system.text(), state.template.text()];
    if before == after {
        state.note = Some(format!("the editors already hold {id}"));
        return Vec::new();
    }
    state.system = editor(&after[0]);
    state.template = editor(&after[1]);
    crate::tui::edit::edited(state);
    state.accept_undo = Some(Box::new(AcceptUndo { candidate: id.clone(), before, after }));
    state.optimize.accepted = Some(id.clone());
    state.note = Some(format!("{id} is in the editors, unsaved: ctrl-s saves it, {} takes it back", undo_key(state)));
    Vec::new()
}

/// `r`: marks the selected candidate rejected (again: takes the mark back).
pub fn reject(state: &mut State) {
    let view = &mut state.optimize;
    let Some(row) = view.rows.get(view.selected) else { return };
    let id = row.id.clone();
    if id == "baseline" {
        state.note = Some("the baseline is the prompt as it was: nothing to reject".into());
        return;
    }
    match view.dismissed.iter().position(|d| *d == id) {
        Some(at) => {
            view.dismissed.remove(at);
            state.note = Some(format!("{id} is no longer marked rejected"));
        }
        None => {
            view.dismissed.push(id.clone());
            state.note = Some(format!("{id} marked rejected: it is never the best (r again takes the mark back)"));
        }
    }
}

/// `undo-accept`: the editors as they were before the last accepted candidate, while they still hold it.
pub fn undo(state: &mut State) -> Vec<Effect> {
    let Some(undo) = state.accept_undo.take() else {
        state.note = Some("no accepted candidate to take back (ctrl-u undoes typing in an editor)".into());
        return Vec::new();
    };
    if [state.system.text(), state.template.text()] != undo.after {
        state.note = Some(format!(
            "the editors changed since {} was accepted: not taken back (ctrl-u undoes typing first)",
            undo.candidate
        ));
        state.accept_undo = Some(undo);
        return Vec::new();
    }
    state.system = editor(&undo.before[0]);
    state.template = editor(&undo.before[1]);
    crate::tui::edit::edited(state);
    if state.optimize.accepted.as_deref() == Some(undo.candidate.as_str()) {
        state.optimize.accepted = None;
    }
    state.note = Some(format!("{} taken back: the editors hold what they held before", undo.candidate));
    Vec::new()
}

fn undo_key(state: &State) -> String {
    let keys = state.keymap.keys(crate::tui::keymap::Scope::Global, crate::tui::msg::Action::UndoAccept);
    keys.first().cloned().unwrap_or_else(|| "undo-accept".into())
}
