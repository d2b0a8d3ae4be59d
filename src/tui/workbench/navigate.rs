//! Moving in the views: the selection of lines, history and variables, the output's scroll, the cut,
//! and enter (replay a past run, pick a case or edit a variable, jump to a line).

use crate::tui::msg::Effect;
use crate::tui::state::State;
use crate::tui::workbench::run::start_run;
use crate::tui::workbench::state::Pane;

/// Moves the focused pane's selection, scroll or cut by `by`.
pub(crate) fn step(state: &mut State, by: i64) -> Vec<Effect> {
    let clamp = |at: usize, len: usize| -> usize {
        let at = (at as i64).saturating_add(by);
        at.clamp(0, len.saturating_sub(1) as i64) as usize
    };
    match state.workbench.focus {
        Pane::Lines => {
            state.workbench.selected_line = clamp(state.workbench.selected_line, state.workbench.run.verdicts.len())
        }
        Pane::History => {
            state.workbench.history_selected =
                clamp(state.workbench.history_selected, state.workbench.evals.len() + state.workbench.history.len())
        }
        Pane::Variables => {
            // Among the rows the case filter shows.
            state.workbench.selected_variable =
                crate::tui::case_list::Listing::of(state).step(state.workbench.selected_variable, by)
        }
        Pane::Output => {
            let lines = state.workbench.run.line_count();
            let from = state.workbench.output_scroll.unwrap_or_else(|| lines.saturating_sub(1));
            state.workbench.output_scroll = Some(clamp(from, lines));
        }
        Pane::Truncation => return cut_by(state, by),
        _ => {}
    }
    Vec::new()
}

pub(crate) fn cut_by(state: &mut State, by: i64) -> Vec<Effect> {
    if state.workbench.focus != Pane::Truncation {
        return Vec::new();
    }
    let total = state.workbench.run.chunk_ends.len() as i64;
    state.workbench.truncation.cut =
        (state.workbench.truncation.cut as i64).saturating_add(by).clamp(0, total) as usize;
    Vec::new()
}

/// Sets the cut (from a mouse drag).
pub fn set_cut(state: &mut State, cut: usize) {
    state.workbench.truncation.cut = cut.min(state.workbench.run.chunk_ends.len());
}

pub(crate) fn open(state: &mut State) -> Vec<Effect> {
    match state.workbench.focus {
        // An eval of the history opens on the eval screen: the router takes that enter.
        Pane::History if state.workbench.history_selected < state.workbench.evals.len() => Vec::new(),
        Pane::History => {
            let run = state.workbench.history_selected - state.workbench.evals.len();
            let Some(record) = state.workbench.history.get(run) else { return Vec::new() };
            match record.turns.last().map(|turn| turn.transcript.clone()) {
                Some(transcript) => {
                    start_run(state, Some(1), Some(crate::run::ReplayFrom::Transcript(Box::new(transcript))))
                }
                None => {
                    state.note = Some("this history entry has no transcript to replay".into());
                    Vec::new()
                }
            }
        }
        Pane::Variables if state.workbench.selected_variable > state.cases.len() => {
            crate::tui::input::open_variable_editor(state)
        }
        Pane::Variables => {
            state.choice.case = match state.workbench.selected_variable {
                0 => None,
                n => state.cases.get(n - 1).map(|c| c.name.clone()),
            };
            state.note = Some(format!("case: {}", state.choice.case.as_deref().unwrap_or("(default variables)")));
            crate::tui::workbench::fetch::warm_choice(state)
        }
        Pane::Lines => {
            if let Some(verdict) = state.workbench.run.verdicts.get(state.workbench.selected_line) {
                state.workbench.output_scroll = Some(verdict.line.saturating_sub(1));
                state.workbench.focus = Pane::Output;
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}
