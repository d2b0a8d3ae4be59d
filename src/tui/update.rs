//! `update(&mut State, Msg) -> Vec<Effect>`: every change of the workbench, pure (no IO, no await).
//! Keys become actions through the keymap (or typing in the focused editor); run events fill the
//! live view; effects ask the loop to run, save, sweep, write the recovery file or quit. This file
//! routes each message (then the token count looks again if anything it reads changed); the files
//! beside it handle one concern each.

use crate::tui::compare::update as compare;
use crate::tui::eval::{history as eval_history, update as eval};
use crate::tui::optimize::{accept as optimize_accept, update as optimize};
use crate::tui::workbench::keys::{after_edit, editable, editor_mut, key};
use crate::tui::workbench::run::run_event;
use crate::tui::workbench::sweep::sweep_ready;
use crate::tui::workbench::{fetch, mouse, outside};

use crate::prompt::file::OnDisk;
use crate::tui::edit;
use crate::tui::msg::{Action, Effect, Msg, SaveFailed, TermEvent};
use crate::tui::state::{Overlay, Pane, RunPhase, SchemaKind, Screen, State};

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
    if let Some(request) = crate::tui::lint::ask(state, settled) {
        effects.push(Effect::Lint(Box::new(request)));
    }
    effects.extend(crate::tui::tokens::refresh(state));
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
            Action::MarkEval => eval_history::mark(state),
            Action::Open if state.focus == Pane::History && state.history_selected < state.evals.len() => {
                eval_history::open(state, state.history_selected)
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
            if state.overlay == Overlay::None && editable(state) {
                if let Some(area) = editor_mut(state) {
                    area.insert_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
                }
                after_edit(state);
            }
            Vec::new()
        }
        Msg::Action(action) => act(state, action),
        Msg::Compare { id, news } => compare::news(state, id, news),
        Msg::Eval { id, news } => eval::news(state, id, news),
        Msg::EvalsListed(result) => eval_history::listed(state, result),
        Msg::Optimize { id, news } => optimize::news(state, id, news),
        Msg::Run { run, event, at_ms } => {
            if run != state.run_id {
                return Vec::new();
            }
            run_event(state, *event, at_ms, act)
        }
        Msg::RunFailed { run, message } => {
            if run != state.run_id {
                return Vec::new();
            }
            state.phase = RunPhase::Failed(message.clone());
            state.note = Some(message);
            fetch::replay_ended(state, false, act)
        }
        Msg::RunScored { run, score } => {
            if run == state.run_id {
                if let Ok(score) = &score {
                    let case = state.choice.case.as_deref().unwrap_or_default();
                    let verdict = crate::eval::report::verdict_name(score.verdict);
                    state.note = Some(format!("case {case:?}: {verdict} ({})", score.reason));
                }
                state.run.scored = Some(score);
            }
            Vec::new()
        }
        Msg::RunRecorded { kept, record } => {
            let shown = kept.is_ok() && record.prompt == state.saved.id;
            state.note = Some(match kept {
                Ok(path) if state.phase == RunPhase::Cancelled => format!(
                    "cancelled run saved to the history with its partial answer ({}): alt-8, enter replays it",
                    path.display()
                ),
                Ok(path) => format!("run saved to the history ({})", path.display()),
                Err(why) => why,
            });
            if shown {
                // Newest first, as the history file is read.
                state.history.insert(0, *record);
            }
            Vec::new()
        }
        Msg::RunCancelled => {
            if state.phase == RunPhase::Cancelling {
                state.phase = RunPhase::Cancelled;
                state.note =
                    Some(format!("cancelled: the partial answer ({} chunks) stays", state.run.chunk_ends.len()));
            }
            // The run's own sweep of the partial answer follows (its turn ends), else the run's end asks.
            Vec::new()
        }
        Msg::SweepReady { run, answer_len, sweep } => {
            sweep_ready(state, run, answer_len, sweep);
            Vec::new()
        }
        Msg::HistoryLoaded(result) => {
            match result {
                Ok(runs) => {
                    state.history = runs;
                    state.history_selected =
                        state.history_selected.min((state.evals.len() + state.history.len()).saturating_sub(1));
                }
                Err(e) => state.note = Some(e),
            }
            Vec::new()
        }
        Msg::Saved(result) => {
            let pending = state.pending_save.take();
            match result {
                Ok(file) => {
                    if let Some(saved) = pending {
                        state.saved_texts = saved.1;
                    }
                    let OnDisk { text, prompt } = *file;
                    // A schema typed into an empty pane is the file's inline schema once saved (and
                    // one emptied is none): the pane's title says what the file holds.
                    match (&state.schema_kind, prompt.schema.is_some()) {
                        (SchemaKind::None, true) => state.schema_kind = SchemaKind::Inline,
                        (SchemaKind::Inline, false) => state.schema_kind = SchemaKind::None,
                        _ => {}
                    }
                    state.saved = prompt;
                    state.saved_text = text;
                    edit::recheck(state);
                    state.note = Some(format!("saved {}", state.path.display()));
                    if !state.dirty {
                        return vec![Effect::ClearRecovery];
                    }
                }
                Err(SaveFailed::ChangedOutside { path, text }) => outside::refused(state, path, text),
                Err(SaveFailed::Error(e)) => state.note = Some(format!("not saved: {e}")),
            }
            Vec::new()
        }
        Msg::OnDisk { path, text } => outside::noticed(state, path, text),
        Msg::ModelFetch(news) => {
            if matches!(news, crate::tui::msg::FetchNews::Done(Ok(_)))
                && state.tokens.local.as_ref().is_some_and(|l| l.1.is_err())
            {
                // The model is here now: its tokenizer can be read.
                state.tokens.local = None;
            }
            fetch::model_fetch(state, news, act)
        }
        Msg::Settled { edits } => {
            if edits != state.edits {
                // A newer edit came: its own settling follows.
                return Vec::new();
            }
            // The schema's lint is asked for by `update` (`lint::ask`).
            crate::tui::tokens::settled(state)
        }
        Msg::Linted { asked, lint } => {
            crate::tui::lint::linted(state, asked, lint);
            Vec::new()
        }
        Msg::TokensCounted { asked, counted } => {
            crate::tui::tokens::counted(state, asked, *counted);
            Vec::new()
        }
        Msg::TokenizerLoaded { model, tokenizer } => {
            crate::tui::tokens::loaded(state, model, tokenizer);
            Vec::new()
        }
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
