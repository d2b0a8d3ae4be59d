//! Runs: starting one from the prompt as edited (with the settings chosen), and its events filling
//! the live view (output, verdicts, timings, mode, turns, the end).

use crate::run::{ReplayFrom, RunEvent};
use crate::tui::msg::{Dispatch, Effect};
use crate::tui::request::run_request;
use crate::tui::state::{RunPhase, State};
use crate::tui::workbench::sweep::{live_cut, live_delta, sweep_if_missing, swept};

/// Starts a run of the prompt as edited (`max_turns` `Some(1)`: one turn; `replay`: a recorded answer).
pub(crate) fn start_run(state: &mut State, max_turns: Option<u32>, replay: Option<ReplayFrom>) -> Vec<Effect> {
    if state.running() {
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
    state.phase = RunPhase::Starting;
    state.run.clear_answer();
    state.run.turn = 0;
    state.selected_line = 0;
    state.output_scroll = None;
    state.truncation = Default::default();
    state.note = None;
    state.run_prompt = Some(Box::new(request.prompt.clone()));
    state.run_id += 1;
    request.run = state.run_id;
    state.run.provider = request.target.provider;
    state.run.model = state.choice.model.clone().unwrap_or_default();
    state.run.mode = None;
    (state.run.asked_mode, state.run.mode_by_default) = state.choice.asked_mode(request.prompt.response_type);
    vec![Effect::StartRun(Box::new(request))]
}

/// One event of the current run into the live view.
/// (`act`: the router's, which takes the local model's run when the example replay gives way to it).
pub(crate) fn run_event(state: &mut State, event: RunEvent, at_ms: u64, act: Dispatch) -> Vec<Effect> {
    let run = &mut state.run;
    run.last_at_ms = at_ms;
    match event {
        RunEvent::TurnStarted { turn, max_turns, request } => {
            if turn > 1 {
                run.clear_answer();
                state.selected_line = 0;
                state.truncation = Default::default();
            }
            run.turn = turn;
            run.max_turns = max_turns;
            if !request.model.is_empty() {
                run.model = request.model;
            }
            state.phase = RunPhase::Running;
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
            let ttft = *run.ttft_ms.get_or_insert(at_ms);
            run.push_chunk(&text);
            let bucket = (at_ms.saturating_sub(ttft) / 100) as usize;
            if bucket < 10_000 {
                if run.rate.len() <= bucket {
                    run.rate.resize(bucket + 1, 0);
                }
                run.rate[bucket] += 1;
            }
            let secs = at_ms.saturating_sub(ttft) as f64 / 1000.0;
            if secs > 0.05 {
                run.tokens_per_s = Some(run.chunk_ends.len() as f64 / secs);
            }
            live_delta(state);
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
            run.tokens_per_s = summary.tokens_per_s.or(run.tokens_per_s);
            run.ttft_ms = summary.ttft_ms.or(run.ttft_ms);
            run.usage = summary.usage.or(run.usage);
        }
        RunEvent::Feedback { turn, .. } => {
            state.note = Some(format!("turn {turn} failed validation: retrying with the errors as feedback"));
        }
        RunEvent::RunEnded { ok, .. } => {
            let cancelled = matches!(state.phase, RunPhase::Cancelling | RunPhase::Cancelled);
            if !cancelled {
                state.phase = RunPhase::Done { ok };
            }
            if state.model_run_due {
                // The example replay gives way to the local model's run (its sweep is not needed).
                return crate::tui::workbench::fetch::replay_ended(state, cancelled, act);
            }
            return sweep_if_missing(state);
        }
    }
    Vec::new()
}
