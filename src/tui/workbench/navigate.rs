//! Moving in the views: the selection of lines, history and variables, the output's scroll, the cut,
//! and enter (replay a past run, pick a case or edit a variable, jump to a line).

use crate::tui::msg::Effect;
use crate::tui::state::{Pane, State};
use crate::tui::workbench::run::start_run;

/// Moves the focused pane's selection, scroll or cut by `by`.
pub(crate) fn step(state: &mut State, by: i64) -> Vec<Effect> {
    let clamp = |at: usize, len: usize| -> usize {
        let at = (at as i64).saturating_add(by);
        at.clamp(0, len.saturating_sub(1) as i64) as usize
    };
    match state.focus {
        Pane::Lines => state.selected_line = clamp(state.selected_line, state.run.verdicts.len()),
        Pane::History => {
            state.history_selected = clamp(state.history_selected, state.evals.len() + state.history.len())
        }
        Pane::Variables => {
            // Among the rows the case filter shows.
            state.selected_variable = crate::tui::case_list::Listing::of(state).step(state.selected_variable, by)
        }
        Pane::Output => {
            let lines = state.run.line_count();
            let from = state.output_scroll.unwrap_or_else(|| lines.saturating_sub(1));
            state.output_scroll = Some(clamp(from, lines));
        }
        Pane::Truncation => return cut_by(state, by),
        _ => {}
    }
    Vec::new()
}

pub(crate) fn cut_by(state: &mut State, by: i64) -> Vec<Effect> {
    if state.focus != Pane::Truncation {
        return Vec::new();
    }
    let total = state.run.chunk_ends.len() as i64;
    state.truncation.cut = (state.truncation.cut as i64).saturating_add(by).clamp(0, total) as usize;
    Vec::new()
}

/// Sets the cut (from a mouse drag).
pub fn set_cut(state: &mut State, cut: usize) {
    state.truncation.cut = cut.min(state.run.chunk_ends.len());
}

pub(crate) fn open(state: &mut State) -> Vec<Effect> {
    match state.focus {
        // An eval of the history opens on the eval screen: the router takes that enter.
        Pane::History if state.history_selected < state.evals.len() => Vec::new(),
        Pane::History => {
            let run = state.history_selected - state.evals.len();
            let Some(record) = state.history.get(run) else { return Vec::new() };
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
        Pane::Variables if state.selected_variable > state.cases.len() => {
            crate::tui::input::open_variable_editor(state)
        }
        Pane::Variables => {
            state.choice.case = match state.selected_variable {
                0 => None,
                n => state.cases.get(n - 1).map(|c| c.name.clone()),
            };
            state.note = Some(format!("case: {}", state.choice.case.as_deref().unwrap_or("(default variables)")));
            crate::tui::workbench::fetch::warm_choice(state)
        }
        Pane::Lines => {
            if let Some(verdict) = state.run.verdicts.get(state.selected_line) {
                state.output_scroll = Some(verdict.line.saturating_sub(1));
                state.focus = Pane::Output;
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}
