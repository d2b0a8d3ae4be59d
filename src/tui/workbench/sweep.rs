//! The truncation sweep as `update` sees it: while the answer streams, the run's own sweep sends the
//! items at each cut where they change and the chart appends them (nothing is re-swept here); the
//! whole sweep arrives from the run when its turn ends. An answer whose sweep did not come with it
//! (events fed by hand, a history record) is swept in the background; results shown when current.

use crate::truncate::sweep::{CutItems, Sweep};
use crate::tui::msg::{Effect, SweepRequest};
use crate::tui::state::State;

/// A delta arrived: the live chart reaches the new end, and the cut follows it unless moved back.
pub(crate) fn live_delta(state: &mut State) {
    let view = &mut state.workbench.truncation;
    if view.sweep.is_some() && !view.live {
        return;
    }
    let end = state.workbench.run.chunk_ends.len();
    if !view.live {
        view.live = true;
        view.steps = Default::default();
        view.series = Default::default();
        view.cut = 0;
    }
    // The run's sweep reads each delta once.
    view.swept_bytes = state.workbench.run.output.len();
    if view.cut + 1 >= end {
        view.cut = end;
    }
    for series in &mut view.series {
        if series.is_empty() {
            series.push((0.0, 0.0));
            series.push((0.0, 0.0));
        }
        if let Some(last) = series.last_mut() {
            last.0 = end as f64;
        }
    }
}

/// The run's sweep says what each strategy recovers at `cut`: appended to the steps and the chart.
pub(crate) fn live_cut(state: &mut State, cut: usize, items: CutItems) {
    let view = &mut state.workbench.truncation;
    if !view.live {
        return;
    }
    view.live_cuts += 1;
    for ((strategy, steps), series) in crate::tui::series::ORDER.iter().zip(&mut view.steps).zip(&mut view.series) {
        let now = items.get(*strategy);
        let last = steps.last().map_or(0, |&(_, items)| items);
        if now == last {
            continue;
        }
        steps.push((cut, now));
        let end = series.pop().map_or(cut as f64, |(x, _)| x);
        series.push((cut as f64, last as f64));
        series.push((cut as f64, now as f64));
        series.push((end, now as f64));
    }
}

/// The run's sweep of the whole answer (its turn ended, or was cancelled).
pub(crate) fn swept(state: &mut State, sweep: Sweep) {
    let view = &mut state.workbench.truncation;
    let following = view.cut >= state.workbench.run.chunk_ends.len();
    if following {
        view.cut = sweep.cuts().saturating_sub(1);
    }
    view.series = crate::tui::series::series(&sweep);
    view.sweep = Some(sweep);
    view.steps = Default::default();
    view.error = None;
    view.pending = false;
    view.live = false;
    view.swept_len = state.workbench.run.output.len();
    view.requested_len = view.swept_len;
}

/// A sweep computed here arrived: shown if it is of this run and not older than the one shown.
pub(crate) fn sweep_ready(state: &mut State, run: u64, answer_len: usize, sweep: Result<Box<Sweep>, String>) {
    let view = &mut state.workbench.truncation;
    if run != state.workbench.run_id || answer_len > state.workbench.run.output.len() || answer_len < view.swept_len {
        return;
    }
    if answer_len >= view.requested_len {
        view.pending = false;
    }
    match sweep {
        Ok(sweep) => {
            let following = view
                .sweep
                .as_ref()
                .map_or(view.cut >= state.workbench.run.chunk_ends.len(), |shown| view.cut + 1 >= shown.cuts());
            if following {
                view.cut = sweep.cuts().saturating_sub(1);
            }
            view.series = crate::tui::series::series(&sweep);
            view.sweep = Some(*sweep);
            view.steps = Default::default();
            view.error = None;
            view.swept_len = answer_len;
            view.swept_bytes += answer_len;
            view.live = false;
        }
        Err(e) => view.error = Some(e),
    }
}

/// At a run's end: the sweep of the answer on screen when the run sent none for it.
pub(crate) fn sweep_if_missing(state: &mut State) -> Vec<Effect> {
    let view = &state.workbench.truncation;
    let have = view.sweep.is_some() && !view.live && view.swept_len == state.workbench.run.output.len();
    if have || (view.pending && view.requested_len == state.workbench.run.output.len()) {
        return Vec::new();
    }
    sweep_effect(state)
}

/// The sweep of the answer on screen, when there is one.
pub(crate) fn sweep_effect(state: &mut State) -> Vec<Effect> {
    if state.workbench.run.output.is_empty() {
        return Vec::new();
    }
    let prompt = match &state.workbench.run_prompt {
        Some(prompt) => (**prompt).clone(),
        None => state.saved.clone(),
    };
    state.workbench.truncation.pending = true;
    state.workbench.truncation.requested_len = state.workbench.run.output.len();
    vec![Effect::ComputeSweep(Box::new(SweepRequest {
        run: state.workbench.run_id,
        answer: state.workbench.run.output.clone(),
        chunk_ends: state.workbench.run.chunk_ends.clone(),
        prompt,
        path: state.path.clone(),
    }))]
}
