//! The compare screen's part of `update` (pure): entering and leaving it, both sides' run events
//! landing in their panes, the comparison arriving, the cut and the agreement row moving.

use ratatui_textarea::Input;

use crate::run::RunEvent;
use crate::tui::compare::state::{ComparePhase, CompareView, SideView};
use crate::tui::edit;
use crate::tui::msg::{Action, CompareNews, CompareRequest, Dispatch, Effect, Job, Start};
use crate::tui::state::{Screen, State};

/// `compare` from the edit screen: open the compare screen and run both sides.
pub fn enter(state: &mut State) -> Vec<Effect> {
    if state.workbench.running() {
        state.note = Some("a run is going: esc cancels it, then alt-x compares".into());
        return Vec::new();
    }
    let prompt = match edit::prompt_for_run(state) {
        Ok(prompt) => prompt,
        Err(e) => {
            state.note = Some(format!("cannot compare: {e}"));
            return Vec::new();
        }
    };
    let id = state.compare.id + 1;
    state.screen = Screen::Compare;
    state.compare = CompareView { id, phase: ComparePhase::Running, ..CompareView::default() };
    state.note = Some(format!("comparing json vs jsonl on {} (alt-x or esc: back to editing)", state.choice.provider));
    vec![Effect::Start(Start::Compare(Box::new(CompareRequest {
        id,
        prompt,
        path: state.path.clone(),
        case: state.choice.case.clone(),
        target: state.choice.target(),
    })))]
}

/// Back to the edit screen; a running comparison is stopped.
pub fn leave(state: &mut State) -> Vec<Effect> {
    state.screen = Screen::Workbench;
    if state.compare.running() {
        state.compare.phase = ComparePhase::Failed("cancelled: alt-x runs the comparison again".into());
        return vec![Effect::Cancel(Job::Compare)];
    }
    Vec::new()
}

/// A key while the compare screen is shown (no editor takes typing here).
pub fn key(state: &mut State, input: &Input, act: Dispatch) -> Vec<Effect> {
    match state.keymap.action(input, true) {
        Some(action) => act(state, action),
        None => Vec::new(),
    }
}

/// An action while the compare screen is shown.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    let view = &mut state.compare;
    match action {
        Action::Compare | Action::CancelRun => return leave(state),
        Action::Left => view.cut = view.cut.saturating_sub(1),
        Action::Right => view.cut = (view.cut + 1).min(view.axis()),
        Action::PageUp => view.cut = view.cut.saturating_sub(10),
        Action::PageDown => view.cut = (view.cut + 10).min(view.axis()),
        Action::Home => view.cut = 0,
        Action::End => view.cut = view.axis(),
        Action::Up => view.selected_row = view.selected_row.saturating_sub(1),
        Action::Down => {
            let rows = view.comparison.as_ref().map_or(0, |c| c.agreement.rows.len());
            view.selected_row = (view.selected_row + 1).min(rows.saturating_sub(1));
        }
        _ => state.note = Some("compare screen: ←/→ move the cut, ↑/↓ pick a row, esc or alt-x go back".into()),
    }
    Vec::new()
}

/// News of comparison `id`.
pub fn news(state: &mut State, id: u64, news: CompareNews) -> Vec<Effect> {
    let view = &mut state.compare;
    if id != view.id || !view.running() {
        return Vec::new();
    }
    match news {
        CompareNews::Event { side, event } => {
            if let Some(pane) = view.sides.get_mut(side) {
                side_event(pane, *event);
            }
        }
        CompareNews::Done(Ok(comparison)) => {
            view.cut = comparison.chart.axis;
            view.selected_row = 0;
            view.comparison = Some(comparison);
            view.phase = ComparePhase::Done;
        }
        CompareNews::Done(Err(message)) => view.phase = ComparePhase::Failed(message),
    }
    Vec::new()
}

fn side_event(side: &mut SideView, event: RunEvent) {
    match event {
        RunEvent::TurnStarted { turn, .. } if turn > 1 => {
            *side = SideView::default();
        }
        RunEvent::Delta(text) => {
            side.output.push_str(&text);
            side.chunks += 1;
        }
        RunEvent::Line(verdict) => side.verdicts.push(verdict),
        RunEvent::Finish(reason) => side.finish = Some(reason),
        RunEvent::StreamError(error) => side.error = Some(error.to_string()),
        RunEvent::TurnEnded(summary) => side.report = Some(summary.parse),
        RunEvent::RunEnded { ok, .. } => side.ended = Some(ok),
        _ => {}
    }
}
