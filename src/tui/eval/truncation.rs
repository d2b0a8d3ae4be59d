//! The truncation view of an eval case's answer (pure): `t` in a case (or the review) asks the runner
//! for the core's sweep of that answer at every chunk cut (the truncation pane's sweep), ←/→ move the
//! cut, esc or `t` go back to the case.

use ratatui_textarea::{Input, Key};

use crate::tui::eval::state::{CellSweep, EvalOverlay};
use crate::tui::msg::{Effect, SweepRequest};
use crate::tui::run_view::TruncationView;
use crate::tui::state::State;

/// `answer-truncation`: the selected case's answer swept (once per answer) and shown.
pub fn open(state: &mut State) -> Vec<Effect> {
    let view = &state.eval;
    let row = view.selected;
    let Some(turn) = view.selected_cell().and_then(|c| c.run.as_deref()).and_then(|r| r.turns.last()) else {
        state.note = Some("truncation: this case has no recorded answer".into());
        return Vec::new();
    };
    let (chunk_ends, answer) = (turn.transcript.chunk_ends(), turn.output.clone());
    let under = std::mem::take(&mut state.eval.overlay);
    state.eval.under = Some(Box::new(under));
    state.eval.overlay = EvalOverlay::Truncation;
    state.note = Some("truncation of the answer: ←/→ cut, home/end, esc back".into());
    let known = state.eval.sweep.as_ref().is_some_and(|s| s.row == row && s.chunk_ends == chunk_ends);
    if known {
        return Vec::new();
    }
    let request = SweepRequest {
        run: 0,
        answer,
        chunk_ends: chunk_ends.clone(),
        prompt: state.saved.clone(),
        path: state.path.clone(),
    };
    let chart = TruncationView { cut: chunk_ends.len(), pending: true, ..TruncationView::default() };
    state.eval.sweep = Some(CellSweep { row, chunk_ends, chart });
    vec![Effect::SweepCell { id: state.eval.id, row, sweep: Box::new(request) }]
}

/// A key in the truncation view: the cut moves; esc or `t` go back.
pub fn key(state: &mut State, input: &Input) -> Vec<Effect> {
    let view = &mut state.eval;
    let Some(sweep) = view.sweep.as_mut() else {
        view.overlay = EvalOverlay::None;
        return Vec::new();
    };
    let total = sweep.chunk_ends.len();
    let cut = &mut sweep.chart.cut;
    match input.key {
        Key::Left | Key::Char('h') | Key::Char('[') => *cut = cut.saturating_sub(1),
        Key::Right | Key::Char('l') | Key::Char(']') => *cut = (*cut + 1).min(total),
        Key::PageUp | Key::Char('{') => *cut = cut.saturating_sub(10),
        Key::PageDown | Key::Char('}') => *cut = (*cut + 10).min(total),
        Key::Home | Key::Char('g') => *cut = 0,
        Key::End | Key::Char('G') => *cut = total,
        Key::Esc | Key::Char('t') | Key::Char('q') => {
            view.overlay = view.under.take().map_or(EvalOverlay::None, |under| *under);
        }
        _ => state.note = Some("truncation of the answer: ←/→ cut, home/end, esc back".into()),
    }
    Vec::new()
}

/// The sweep of row `row`'s answer arrived.
pub fn swept(state: &mut State, row: usize, sweep: Result<Box<crate::truncate::sweep::Sweep>, String>) {
    let Some(shown) = state.eval.sweep.as_mut().filter(|s| s.row == row) else { return };
    let chart = &mut shown.chart;
    chart.pending = false;
    match sweep {
        Ok(sweep) => {
            chart.series = crate::tui::series::series(&sweep);
            chart.sweep = Some(*sweep);
        }
        Err(why) => chart.error = Some(why),
    }
}
