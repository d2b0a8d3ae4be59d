//! `update(&mut State, Msg) -> Vec<Effect>`: every change of the workbench, pure (no IO, no await).
//! Keys become actions through the keymap (or typing in the focused editor); run events fill the
//! live view; effects ask the loop to run, save, sweep, write the recovery file or quit. This file
//! routes each message (then the token count looks again if anything it reads changed); the files
//! beside it handle one concern each.

use crate::tui::compare::update as compare;
use crate::tui::eval::{history as eval_history, update as eval};
use crate::tui::optimize::{accept as optimize_accept, update as optimize};
use crate::tui::workbench::keys::{key, paste};
use crate::tui::workbench::update as workbench;
use crate::tui::workbench::{history, mouse};

use crate::tui::edit;
use crate::tui::msg::{Action, Effect, Msg, TermEvent};
use crate::tui::state::{Overlay, Screen, State};
use crate::tui::workbench::state::Pane;

/// How often unsaved edits go to the recovery file, at most.
pub const RECOVERY_EVERY_MS: u64 = 1000;

/// Applies `msg` to `state`; returns what the outside world must do. The schema's lint and the
/// request's token count are made at once for small texts; for large ones ([`State::heavy`]) an edit
/// asks to hear when typing settles (`Effect::Settle`: the lint and the count wait for it, and are
/// made in the background), a lint due for another reason is asked for at once (`lint::ask`). The
/// token count looks again only when what it depends on changed (`tokens::refresh`).
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    let edits = state.edits;
    let settled = matches!(msg, Msg::Settled { edits } if edits == state.edits);
    let mut effects = route(state, msg);
    if state.edits != edits && state.heavy() {
        effects.push(Effect::Settle { edits: state.edits });
    }
    if let Some(request) = crate::tui::workbench::lint::ask(state, settled) {
        effects.push(Effect::Lint(Box::new(request)));
    }
    effects.extend(crate::tui::workbench::tokens::refresh(state));
    effects
}

/// Takes `action` where it belongs: the actions every screen shares (quit, save, help, the provider,
/// the case) and the editing screen's own go to the workbench's; entering a screen (and opening an
/// eval of the history) to that screen; the rest to the screen shown.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    use crate::tui::workbench::actions;
    let shared =
        matches!(action, Action::Quit | Action::Save | Action::ToggleHelp | Action::NextProvider | Action::NextCase);
    if action == Action::UndoAccept {
        return optimize_accept::undo(state);
    }
    match state.screen {
        Screen::Eval | Screen::Compare | Screen::Optimize if shared => actions::act(state, action),
        Screen::Eval if action == Action::Optimize => optimize::enter(state),
        Screen::Eval => eval::act(state, action),
        Screen::Optimize => optimize::act(state, action),
        Screen::Compare => compare::act(state, action),
        Screen::Workbench => match action {
            Action::Eval => eval::enter(state),
            Action::Compare => compare::enter(state),
            Action::MarkEval => history::mark(state),
            Action::Open
                if state.workbench.focus == Pane::History
                    && state.workbench.history_selected < state.workbench.evals.len() =>
            {
                eval_history::open(state, state.workbench.history_selected)
            }
            _ => actions::act(state, action),
        },
    }
}

fn route(state: &mut State, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Term(TermEvent::Key(input)) if state.input.is_some() => crate::tui::input::key(state, input),
        Msg::Term(TermEvent::Paste(text)) if state.input.is_some() => {
            crate::tui::input::paste(state, &text);
            Vec::new()
        }
        Msg::Term(TermEvent::Mouse(_)) if state.input.is_some() => Vec::new(),
        Msg::Term(TermEvent::Key(input)) => match state.screen {
            Screen::Eval if state.overlay == Overlay::None => eval::key(state, &input, act),
            Screen::Compare if state.overlay == Overlay::None => compare::key(state, &input, act),
            Screen::Optimize if state.overlay == Overlay::None => optimize::key(state, &input, act),
            _ => key(state, input, act),
        },
        Msg::Term(TermEvent::Mouse(mouse)) => match state.screen {
            Screen::Eval => match mouse.kind {
                crate::tui::msg::MouseKind::Click => eval::click(state, mouse.row),
                _ => Vec::new(),
            },
            Screen::Compare | Screen::Optimize => Vec::new(),
            Screen::Workbench => mouse::mouse(state, mouse),
        },
        Msg::Term(TermEvent::Resize(columns, rows)) => {
            state.size = (columns, rows);
            Vec::new()
        }
        Msg::Term(TermEvent::Paste(text)) => {
            paste(state, &text);
            Vec::new()
        }
        Msg::Action(action) => act(state, action),
        Msg::Compare { id, news } => compare::news(state, id, news),
        Msg::Eval { id, news } => eval::news(state, id, news),
        Msg::Optimize { id, news } => optimize::news(state, id, news),
        msg @ (Msg::Run { .. }
        | Msg::RunFailed { .. }
        | Msg::RunScored { .. }
        | Msg::RunRecorded { .. }
        | Msg::RunCancelled
        | Msg::SweepReady { .. }
        | Msg::HistoryLoaded(_)
        | Msg::EvalsListed(_)
        | Msg::OnDisk { .. }
        | Msg::ModelFetch(_)
        | Msg::Settled { .. }
        | Msg::Linted { .. }
        | Msg::TokensCounted { .. }
        | Msg::TokenizerLoaded { .. }
        | Msg::Saved(_)) => workbench::news(state, msg, act),
        Msg::ModelsFound(found) => crate::tui::input::models_found(state, found),
        Msg::Note(note) => {
            state.note = Some(note);
            Vec::new()
        }
        Msg::Tick { now_ms } => {
            state.now_ms = now_ms;
            let due = now_ms.saturating_sub(state.last_recovery_ms) >= RECOVERY_EVERY_MS;
            if state.dirty && state.edits != state.recovery_written && due {
                state.recovery_written = state.edits;
                state.last_recovery_ms = now_ms;
                return vec![Effect::WriteRecovery(edit::recovery(state, 0))];
            }
            Vec::new()
        }
    }
}
