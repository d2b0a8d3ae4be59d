//! Approve on the eval screen (pure): `a` shows what approving a case would write (its answer as the
//! case's expected answer), `y` asks for it to be written (into the prompt file or the case's
//! dataset row); an eval opened from the history is read-only.

use crate::eval::Approval;
use crate::prompt::file::OnDisk;
use crate::tui::eval::state::EvalOverlay;
use crate::tui::msg::{DatasetApproval, Effect, RescoreRequest};
use crate::tui::state::State;

/// `a`: shows what approving the selected case would write (every item, scrolled), or why nothing.
pub fn ask_approve(state: &mut State) -> Vec<Effect> {
    if let Some(why) = read_only(state) {
        state.note = Some(format!("approve: {why}"));
        return Vec::new();
    }
    let view = &state.eval;
    let row = view.selected;
    let Some(run) = view.selected_cell().and_then(|c| c.run.as_deref()) else {
        state.note = Some("approve: this case has no answer yet".into());
        return Vec::new();
    };
    if view.rows.get(row).cloned().flatten().is_none() {
        state.note =
            Some("approve: only a case's answer can be approved (this row is the prompt's own variables)".into());
        return Vec::new();
    }
    let approval = match Approval::of(run) {
        Ok(approval) => approval,
        Err(e) => {
            state.note = Some(format!("approve: {e}"));
            return Vec::new();
        }
    };
    if !approval.has_answer() {
        let why = approval.refusal().unwrap_or_else(|| "the answer is empty".into());
        state.note = Some(format!("approve: nothing in this answer can be approved: {why}"));
        return Vec::new();
    }
    state.note = Some(match approval.refusal() {
        Some(why) => {
            format!("approve refused: {why}; a again writes only the {} with the rest marked", approval.count())
        }
        None => format!("approve: {} (y or a approves, ↑/↓ scroll, any other key cancels)", approval.count()),
    });
    state.eval.scroll = 0;
    state.eval.overlay = EvalOverlay::ConfirmApprove { row, approval: Box::new(approval) };
    Vec::new()
}

/// The answer of `row` becomes its case's expected answer in the saved prompt (the editors' unsaved
/// edits stay unsaved), written atomically, and the row is scored again. What is written is the
/// core's [`Approval`]: an answer with parts that are not a real answer is refused (the note says
/// which) unless `insist`, and then its valid items are written with the rest marked.
pub fn approve(state: &mut State, row: usize, insist: bool) -> Vec<Effect> {
    let Some(cell) = state.eval.cells.get(row) else { return Vec::new() };
    let (Some(run), Some(scored)) = (cell.run.clone(), state.eval.scored(row).cloned().map(Box::new)) else {
        state.eval.overlay = EvalOverlay::None;
        state.note = Some("not approved: this case has no answer".into());
        return Vec::new();
    };
    let approval = match Approval::of(&run) {
        Ok(approval) => approval,
        Err(e) => {
            state.note = Some(format!("not approved: {e}"));
            return Vec::new();
        }
    };
    // On the prompt as last written: an approve whose save has not been confirmed yet is kept.
    let mut prompt = state.pending_save.as_ref().map_or_else(|| state.saved.clone(), |pending| pending.0.clone());
    // A row of the prompt's dataset (the workbench lists them after the inline cases).
    let row_of_dataset = match &prompt.dataset {
        Some(dataset) => prompt.cases.iter().skip(dataset.first).any(|c| c.name == approval.case),
        None => prompt.cases_file.is_some() && prompt.case(&approval.case).is_err(),
    };
    if row_of_dataset {
        // A row of the prompt's dataset: written into that row by the runner, the prompt file untouched.
        state.eval.overlay = EvalOverlay::None;
        state.note = Some(format!("approving case {:?} into the dataset…", approval.case));
        let was =
            prompt.dataset.as_ref().and_then(|d| prompt.cases.iter().skip(d.first).find(|c| c.name == approval.case));
        let was = was.cloned().map(Box::new);
        let request = DatasetApproval {
            id: state.eval.id,
            row,
            path: state.path.clone(),
            approval,
            insist,
            was,
            cell: scored,
            run,
        };
        return vec![Effect::ApproveInDataset(Box::new(request))];
    }
    if let Err(e) = crate::eval::approve(&mut prompt, &approval, insist) {
        let again = if approval.has_answer() && !insist {
            format!("; a again writes only the {} with the rest marked", approval.count())
        } else {
            String::new()
        };
        state.note = Some(format!("{e}{again}"));
        return Vec::new();
    }
    state.eval.overlay = EvalOverlay::None;
    let case = scored.case.clone().unwrap_or_default();
    // The variables pane's cases carry the expectation too, or the next ctrl-s would write the old one back.
    let approved = prompt.cases.iter().find(|c| c.name == case).map(|c| c.expected.clone());
    if let (Some(expected), Some(edited)) = (approved, state.cases.iter_mut().find(|c| c.name == case)) {
        edited.expected = expected;
    }
    state.pending_save = Some(Box::new((prompt.clone(), state.saved_texts.clone())));
    let marked = match approval.left_out.len() {
        0 => String::new(),
        n => format!(", {n} left out marked in left_out"),
    };
    state.note = Some(format!("approved: case {case:?} now expects {}{marked}", approval.count()));
    vec![
        Effect::Save {
            path: state.path.clone(),
            base: Box::new(OnDisk { text: state.saved_text.clone(), prompt: state.saved.clone() }),
            prompt: Box::new(prompt.clone()),
            schema_text: None,
            schema_file: None,
        },
        Effect::Rescore(Box::new(RescoreRequest {
            id: state.eval.id,
            row,
            prompt,
            path: state.path.clone(),
            cell: scored,
            run,
        })),
    ]
}

/// Why the shown eval cannot be changed (one opened from the history), or `None`.
pub fn read_only(state: &State) -> Option<String> {
    state.eval.opened.as_ref().map(|id| format!("eval {id} is read-only: ctrl-r runs it again"))
}
