//! The truncation sweep as `update` sees it: asked for the answer so far while it streams (once a
//! frame at most, one at a time) and for the whole answer at its end; results shown when current.

use super::super::msg::{Effect, SweepRequest};
use super::super::panes;
use super::super::state::{RunPhase, State};
use crate::truncate::sweep::Sweep;

/// How often, at most, the answer so far is swept again while it streams (a frame; one sweep at a time).
pub const LIVE_SWEEP_EVERY_MS: u64 = 16;

/// While the answer streams: the sweep of the answer so far, when none is being computed and the last
/// one was asked for a frame ago or more (never once per token).
pub(super) fn live_sweep(state: &mut State, at_ms: u64) -> Vec<Effect> {
    let view = &state.truncation;
    let due = view.last_live_ms.is_none_or(|last| at_ms >= last.saturating_add(LIVE_SWEEP_EVERY_MS));
    if view.pending || !due {
        return Vec::new();
    }
    state.truncation.last_live_ms = Some(at_ms);
    sweep_effect(state)
}

/// A sweep arrived: shown if it is of this run and not older than the one shown; the cut follows the
/// end of the answer unless it was moved back.
pub(super) fn sweep_ready(state: &mut State, run: u64, answer_len: usize, sweep: Result<Box<Sweep>, String>) {
    let view = &mut state.truncation;
    if run != state.run_id || answer_len > state.run.output.len() || answer_len < view.swept_len {
        return;
    }
    if answer_len >= view.requested_len {
        view.pending = false;
    }
    match sweep {
        Ok(sweep) => {
            let following = view.sweep.as_ref().is_none_or(|shown| view.cut + 1 >= shown.cuts());
            if following {
                view.cut = sweep.cuts().saturating_sub(1);
            }
            view.series = panes::truncation::series(&sweep);
            view.sweep = Some(*sweep);
            view.error = None;
            view.swept_len = answer_len;
            view.swept_bytes += answer_len;
            view.live =
                answer_len < state.run.output.len() || matches!(state.phase, RunPhase::Starting | RunPhase::Running);
        }
        Err(e) => view.error = Some(e),
    }
}

/// The sweep of the answer on screen, when there is one.
pub(super) fn sweep_effect(state: &mut State) -> Vec<Effect> {
    if state.run.output.is_empty() {
        return Vec::new();
    }
    let prompt = match &state.run_prompt {
        Some(prompt) => (**prompt).clone(),
        None => state.saved.clone(),
    };
    state.truncation.pending = true;
    state.truncation.requested_len = state.run.output.len();
    vec![Effect::ComputeSweep(Box::new(SweepRequest {
        run: state.run_id,
        answer: state.run.output.clone(),
        chunk_ends: state.run.chunk_ends.clone(),
        prompt,
        path: state.path.clone(),
    }))]
}
