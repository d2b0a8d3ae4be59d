//! The editing screen's news: a run's events and its end, the sweep, the history and the evals read, a save's
//! result, a file changed outside, the model fetch, and the background lint and token count. The
//! router hands each of these messages here whichever screen is shown (a run or a save may end while
//! the eval screen is up).

use crate::prompt::file::OnDisk;
use crate::tui::edit;
use crate::tui::msg::{Dispatch, Effect, Msg, SaveFailed};
use crate::tui::state::{SchemaKind, State};
use crate::tui::workbench::run::run_event;
use crate::tui::workbench::state::RunPhase;
use crate::tui::workbench::sweep::sweep_ready;
use crate::tui::workbench::{fetch, history, outside};

/// Applies one of the editing screen's messages (`act`: the router's, for what a run's end starts).
pub fn news(state: &mut State, msg: Msg, act: Dispatch) -> Vec<Effect> {
    match msg {
        Msg::Run { run, event, at_ms } => {
            if run != state.workbench.run_id {
                return Vec::new();
            }
            run_event(state, *event, at_ms, act)
        }
        Msg::RunFailed { run, message } => {
            if run != state.workbench.run_id {
                return Vec::new();
            }
            state.workbench.phase = RunPhase::Failed(message.clone());
            state.note = Some(message);
            fetch::replay_ended(state, false, act)
        }
        Msg::RunScored { run, score } => {
            if run == state.workbench.run_id {
                if let Ok(score) = &score {
                    let case = state.choice.case.as_deref().unwrap_or_default();
                    let verdict = crate::eval::report::verdict_name(score.verdict);
                    state.note = Some(format!("case {case:?}: {verdict} ({})", score.reason));
                }
                state.workbench.run.scored = Some(score);
            }
            Vec::new()
        }
        Msg::RunRecorded { kept, record } => {
            let shown = kept.is_ok() && record.prompt == state.saved.id;
            state.note = Some(match kept {
                Ok(path) if state.workbench.phase == RunPhase::Cancelled => format!(
                    "cancelled run saved to the history with its partial answer ({}): alt-8, enter replays it",
                    path.display()
                ),
                Ok(path) => format!("run saved to the history ({})", path.display()),
                Err(why) => why,
            });
            if shown {
                // Newest first, as the history file is read.
                state.workbench.history.insert(0, *record);
            }
            Vec::new()
        }
        Msg::RunCancelled => {
            if state.workbench.phase == RunPhase::Cancelling {
                state.workbench.phase = RunPhase::Cancelled;
                state.note = Some(format!(
                    "cancelled: the partial answer ({} chunks) stays",
                    state.workbench.run.chunk_ends.len()
                ));
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
                    state.workbench.history = runs;
                    state.workbench.history_selected = state
                        .workbench
                        .history_selected
                        .min((state.workbench.evals.len() + state.workbench.history.len()).saturating_sub(1));
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
        Msg::EvalsListed(result) => history::listed(state, result),
        Msg::OnDisk { path, text } => outside::noticed(state, path, text),
        Msg::ModelFetch(news) => {
            if matches!(news, crate::tui::msg::FetchNews::Done(Ok(_)))
                && state.workbench.tokens.local.as_ref().is_some_and(|l| l.1.is_err())
            {
                // The model is here now: its tokenizer can be read.
                state.workbench.tokens.local = None;
            }
            fetch::model_fetch(state, news, act)
        }
        Msg::Settled { edits } => {
            if edits != state.edits {
                // A newer edit came: its own settling follows.
                return Vec::new();
            }
            // The schema's lint is asked for by `update` (`lint::ask`).
            crate::tui::workbench::tokens::settled(state)
        }
        Msg::Linted { asked, lint } => {
            crate::tui::workbench::lint::linted(state, asked, lint);
            Vec::new()
        }
        Msg::TokensCounted { asked, counted } => {
            crate::tui::workbench::tokens::counted(state, asked, *counted);
            Vec::new()
        }
        Msg::TokenizerLoaded { model, tokenizer } => {
            crate::tui::workbench::tokens::loaded(state, model, tokenizer);
            Vec::new()
        }
        // The router hands this screen only the messages above.
        _ => Vec::new(),
    }
}
