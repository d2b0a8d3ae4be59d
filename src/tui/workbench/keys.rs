//! Keys: the open input or overlay first (quit confirmation, recovery offer, help scrolling), then
//! the keymap's actions, then typing into the focused editor.

use ratatui_textarea::{Input, Key};

use crate::tui::edit;
use crate::tui::edit::save;
use crate::tui::msg::{Action, Dispatch, Effect};
use crate::tui::state::{Overlay, State};
use crate::tui::workbench::cases;
use crate::tui::workbench::state::Pane;

/// Whether typing goes into an editor now.
pub(crate) fn editable(state: &State) -> bool {
    state.workbench.focus.is_editor() && !(state.workbench.preview && state.workbench.focus == Pane::System)
}

pub(crate) fn editor_mut(state: &mut State) -> Option<&mut crate::tui::editor::Editor> {
    match state.workbench.focus {
        Pane::System => Some(&mut state.system),
        Pane::Template => Some(&mut state.template),
        Pane::Schema => Some(&mut state.schema),
        _ => None,
    }
}

pub(crate) fn after_edit(state: &mut State) {
    if state.workbench.focus == Pane::Schema {
        // Linted in the background once typing settles, not on the key.
        crate::tui::workbench::lint::schema_edited(state);
    }
    edit::text_edited(state);
}

/// A key: to the open overlay, else an action of the keymap (taken by the router's `act`), else
/// typing in the focused editor.
pub(crate) fn key(state: &mut State, input: Input, act: Dispatch) -> Vec<Effect> {
    if input.key == Key::Null {
        return Vec::new();
    }
    match state.overlay.clone() {
        Overlay::None => {}
        Overlay::Help => {
            help_key(state, &input);
            return Vec::new();
        }
        Overlay::ConfirmQuit => {
            return match input.key {
                Key::Char('y') => {
                    state.quit = true;
                    vec![Effect::ClearRecovery, Effect::Quit]
                }
                Key::Char('s') => {
                    state.overlay = Overlay::None;
                    let mut effects = save(state);
                    if state.pending_save.is_some() {
                        state.quit = true;
                        effects.push(Effect::Quit);
                    }
                    effects
                }
                _ => {
                    state.overlay = Overlay::None;
                    state.note = Some("not quitting".into());
                    Vec::new()
                }
            };
        }
        Overlay::ChangedOutside(change) => return crate::tui::workbench::outside::answer(state, *change, &input),
        Overlay::ConfirmDeleteCase { index, name } => {
            cases::answer_delete(state, index, &name, input.key == Key::Char('y'));
            return Vec::new();
        }
        Overlay::Recovery(recovery) => {
            state.overlay = Overlay::None;
            return match input.key {
                Key::Char('r') => {
                    edit::restore(state, &recovery);
                    state.note = Some("unsaved edits restored (ctrl-s saves them)".into());
                    Vec::new()
                }
                Key::Char('d') => {
                    state.note = Some("unsaved edits of the last session discarded".into());
                    vec![Effect::ClearRecovery]
                }
                _ => {
                    state.note = Some("unsaved edits kept in the recovery file for next time".into());
                    Vec::new()
                }
            };
        }
    }
    if let Some(action) = state.keymap.action(&input, !editable(state)) {
        return act(state, action);
    }
    if editable(state) {
        if let Some(area) = editor_mut(state) {
            if area.input(input) {
                after_edit(state);
            }
        }
    }
    Vec::new()
}

/// A key over the help: the view's up/down/page/home/end keys scroll it (when it does not fit the
/// screen), any other key closes it.
pub(crate) fn help_key(state: &mut State, input: &Input) {
    // The page as the help was last drawn (the update calls no pane code).
    let (height, max_scroll) = state.drawn.shown().help;
    let at = state.help_scroll.min(max_scroll);
    state.help_scroll = match state.keymap.action(input, true) {
        Some(Action::Up) => at.saturating_sub(1),
        Some(Action::Down) => (at + 1).min(max_scroll),
        Some(Action::PageUp) => at.saturating_sub(height),
        Some(Action::PageDown) => (at + height).min(max_scroll),
        Some(Action::Home) => 0,
        Some(Action::End) => max_scroll,
        _ => {
            state.overlay = Overlay::None;
            return;
        }
    };
}

/// Text pasted in one piece goes into the focused editor (line ends as `\n`); elsewhere it is dropped.
pub fn paste(state: &mut State, text: &str) {
    if state.overlay == Overlay::None && editable(state) {
        if let Some(area) = editor_mut(state) {
            area.insert_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
        }
        after_edit(state);
    }
}
