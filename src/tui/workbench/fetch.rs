//! The background fetch of the local model as `update` sees it: progress in the status line, and
//! once the model is there, runs move from the recorded answer to it: a run starts at once when none
//! is going, or as soon as the example replay that is playing ends ([`replay_ended`]); a case chosen
//! on the model runs its prompt through it in the background ([`warm_choice`]).

use crate::provider::kind::ProviderKind;
use crate::tui::msg::{Action, Dispatch, Effect, FetchNews};
use crate::tui::state::State;

/// News of the model's fetch (`act`: the router's, which takes the run that follows).
pub fn model_fetch(state: &mut State, news: FetchNews, act: Dispatch) -> Vec<Effect> {
    match news {
        FetchNews::Progress(text) => {
            state.note = Some(format!("local model: {text}"));
            Vec::new()
        }
        FetchNews::Done(Err(why)) => {
            state.note = Some(format!("could not fetch the local model: {why} (runs stay on the recorded answer)"));
            Vec::new()
        }
        FetchNews::Done(Ok(path)) => {
            // Only a replay the workbench chose itself gives way; a provider the user picked stays.
            if state.choice.provider != ProviderKind::Replay || state.replay_reason.is_none() {
                state.note = Some(format!("local model ready: {}", path.display()));
                return Vec::new();
            }
            use_local_model(state);
            state.replay_reason = None;
            state.note = Some(format!("local model ready ({}): runs use it now", path.display()));
            if state.workbench.running() {
                state.workbench.model_run_due = true;
                state.note = Some(format!("local model ready ({}): it runs when the example ends", path.display()));
                // Loaded, and the prompt run through it, while the example plays.
                crate::tui::workbench::request::run_request(state, None, None)
                    .map(|request| vec![Effect::WarmModel(Box::new(request))])
                    .unwrap_or_default()
            } else {
                act(state, Action::Run)
            }
        }
    }
}

/// The case (or prompt) to run next changed: with the local model and no run going, its prompt runs
/// through the model in the background now, so ctrl-r finds it ready and only runs the last block
/// (a warm the user has already moved on from gives way to the newer one).
pub fn warm_choice(state: &State) -> Vec<Effect> {
    if state.choice.provider != ProviderKind::Local || state.workbench.running() {
        return Vec::new();
    }
    crate::tui::workbench::request::run_request(state, None, None)
        .map(|request| vec![Effect::WarmModel(Box::new(request))])
        .unwrap_or_default()
}

/// The run that was going when the model arrived has ended (`cancelled`: by the user): the model's
/// run follows it without a key press, unless the user cancelled it (then ctrl-r runs the model).
pub fn replay_ended(state: &mut State, cancelled: bool, act: Dispatch) -> Vec<Effect> {
    if !std::mem::take(&mut state.workbench.model_run_due) {
        return Vec::new();
    }
    if cancelled {
        state.note = Some("local model ready: ctrl-r runs it".into());
        return Vec::new();
    }
    act(state, Action::Run)
}

/// Runs go to the local model (a json/jsonl prompt that names no structured mode is then held to its
/// schema by constrained decoding: the run setup's default, which the status bar shows).
pub fn use_local_model(state: &mut State) {
    crate::tui::workbench::provider::choose_provider(state, ProviderKind::Local);
}
