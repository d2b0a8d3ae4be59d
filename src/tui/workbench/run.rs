//! Runs: starting one from the prompt as edited (with the settings chosen), and its events filling
//! the live view (output, verdicts, timings, mode, turns, the end).

use crate::run::{ReplayFrom, RunEvent};
use crate::tui::msg::{Dispatch, Effect, Start};
use crate::tui::state::State;
use crate::tui::workbench::request::run_request;
use crate::tui::workbench::state::RunPhase;
use crate::tui::workbench::sweep::{live_cut, live_delta, sweep_if_missing, swept};

/// Starts a run of the prompt as edited (`max_turns` `Some(1)`: one turn; `replay`: a recorded answer).
pub(crate) fn start_run(state: &mut State, max_turns: Option<u32>, replay: Option<ReplayFrom>) -> Vec<Effect> {
    if state.workbench.running() {
        state.note = Some("a run is going: esc cancels it".into());
        return Vec::new();
    }
    let mut request = match run_request(state, max_turns, replay) {
        Ok(request) => request,
        Err(e) => {
            state.note = Some(format!("cannot run: {e}"));
            return Vec::new();
        }
    };
    state.workbench.phase = RunPhase::Starting;
    state.workbench.run.clear_answer();
    state.workbench.run.turn = 0;
    state.workbench.selected_line = 0;
    state.workbench.output_scroll = None;
    state.workbench.truncation = Default::default();
    state.note = None;
    state.workbench.run_prompt = Some(Box::new(request.prompt.clone()));
    state.workbench.run_id += 1;
    request.run = state.workbench.run_id;
    state.workbench.run.provider = request.target.provider;
    state.workbench.run.model = state.choice.model.clone().unwrap_or_default();
    state.workbench.run.mode = None;
    (state.workbench.run.asked_mode, state.workbench.run.mode_by_default) =
        state.choice.asked_mode(request.prompt.response_type);
    vec![Effect::Start(Start::Run(Box::new(request)))]
}

/// One event of the current run into the live view.
/// (`act`: the router's, which takes the local model's run when the example replay gives way to it).
pub(crate) fn run_event(state: &mut State, event: RunEvent, at_ms: u64, act: Dispatch) -> Vec<Effect> {
    let run = &mut state.workbench.run;
    run.last_at_ms = at_ms;
    match event {
        RunEvent::TurnStarted { turn, max_turns, request } => {
            if turn > 1 {
                run.clear_answer();
                state.workbench.selected_line = 0;
                state.workbench.truncation = Default::default();
            }
            run.turn = turn;
            run.max_turns = max_turns;
            if !request.model.is_empty() {
                run.model = request.model;
            }
            state.workbench.phase = RunPhase::Running;
        }
        RunEvent::Mode(mode) => {
            if let Some(fallback) = mode.fallbacks.last() {
                state.note = Some(format!(
                    "structured mode fell back from {} to {}: {}",
                    fallback.from, fallback.to, fallback.reason
                ));
            }
            run.mode = Some(mode);
        }
        RunEvent::Waiting { attempt, after_ms, reason } => {
            state.note = Some(format!("server busy ({reason}): attempt {attempt} in {after_ms} ms"));
        }
        RunEvent::Delta(text) => {
            // The sparkline counts chunks per 100 ms from the first; the figures (ttft, tokens/s)
            // come from the turn's summary, measured once in the core.
            let first = *run.first_chunk_ms.get_or_insert(at_ms);
            run.push_chunk(&text);
            let bucket = (at_ms.saturating_sub(first) / 100) as usize;
            if bucket < 10_000 {
                if run.rate.len() <= bucket {
                    run.rate.resize(bucket + 1, 0);
                }
                run.rate[bucket] += 1;
            }
            live_delta(state);
        }
        RunEvent::Thinking(text) => {
            run.thinking.push_str(&text);
            run.thinking_tokens += 1;
        }
        RunEvent::Probs(probs) => run.push_probs(&probs),
        RunEvent::Line(verdict) => run.verdicts.push(verdict),
        RunEvent::Cut { cut, items } => live_cut(state, cut, items),
        RunEvent::Swept(sweep) => swept(state, *sweep),
        RunEvent::Usage(usage) => run.usage = Some(usage),
        RunEvent::Finish(reason) => run.finish = Some(reason),
        RunEvent::StreamError(error) => run.error = Some(error.to_string()),
        RunEvent::TurnEnded(summary) => {
            let summary = *summary;
            run.report = Some(summary.parse);
            run.tokens_per_s = summary.tokens_per_s;
            run.ttft_ms = summary.ttft_ms;
            run.usage = summary.usage.or(run.usage);
        }
        RunEvent::Feedback { turn, .. } => {
            state.note = Some(format!("turn {turn} failed validation: retrying with the errors as feedback"));
        }
        RunEvent::RunEnded { ok, .. } => {
            let cancelled = matches!(state.workbench.phase, RunPhase::Cancelling | RunPhase::Cancelled);
            if !cancelled {
                state.workbench.phase = RunPhase::Done { ok };
            }
            if state.workbench.model_run_due {
                // The example replay gives way to the local model's run (its sweep is not needed).
                return crate::tui::workbench::fetch::replay_ended(state, cancelled, act);
            }
            return sweep_if_missing(state);
        }
    }
    Vec::new()
}
