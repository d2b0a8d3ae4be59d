//! The review's part of `update` (pure): start it on the rows that need a look, then `a` accepts the
//! answer as expected (the confirmed approve's path: saved atomically, the row scored again), `r`
//! rejects it (left as it is, marked), `s` skips it; esc or the last row ends it with a summary.

use ratatui_textarea::{Input, Key};

use crate::tui::eval::review::{Review, KEYS};
use crate::tui::eval::state::EvalOverlay;
use crate::tui::msg::Effect;
use crate::tui::state::State;

/// `review`: walks the failing, truncated and unexpected cases one by one.
pub fn start(state: &mut State) -> Vec<Effect> {
    if let Some(why) = crate::tui::eval::approve::read_only(state) {
        state.note = Some(format!("review: {why}"));
        return Vec::new();
    }
    if state.eval.running() {
        state.note = Some("review: wait until every case has ended".into());
        return Vec::new();
    }
    let review = Review::of(&state.eval);
    let Some(row) = review.row() else {
        state.note = Some("review: nothing to review (every case passes against its expected answer)".into());
        return Vec::new();
    };
    state.note = Some(format!("review: {} cases to look at ({KEYS})", review.queue.len()));
    let view = &mut state.eval;
    view.review = Some(review);
    view.selected = row;
    view.scroll = 0;
    view.overlay = EvalOverlay::Review;
    Vec::new()
}

/// A key during the review (or on its summary).
pub fn key(state: &mut State, input: &Input) -> Vec<Effect> {
    if state.eval.overlay == EvalOverlay::ReviewDone {
        state.eval.overlay = EvalOverlay::None;
        return Vec::new();
    }
    let Some(row) = state.eval.review.as_ref().and_then(Review::row) else {
        state.eval.overlay = EvalOverlay::None;
        return Vec::new();
    };
    match input.key {
        Key::Char('a') => accept(state, row),
        Key::Char('r') => {
            decide(state, |r| r.rejected.push(row));
            Vec::new()
        }
        Key::Char('s') => {
            decide(state, |r| r.skipped.push(row));
            Vec::new()
        }
        Key::Esc | Key::Char('q') => {
            finish(state);
            Vec::new()
        }
        Key::Up => {
            state.eval.scroll = state.eval.scroll.saturating_sub(1);
            Vec::new()
        }
        Key::Down => {
            state.eval.scroll += 1;
            Vec::new()
        }
        _ => {
            state.note = Some(format!("review: {KEYS}"));
            Vec::new()
        }
    }
}

/// `a`: the answer of `row` becomes its case's expected answer, without asking again.
fn accept(state: &mut State, row: usize) -> Vec<Effect> {
    if state.eval.rows.get(row).is_some_and(Option::is_none) {
        state.note = Some("review: the prompt's own variables have no case to approve into: r or s".into());
        return Vec::new();
    }
    // A second `a` on the same row insists (an answer with parts that are not a real answer).
    let insist = state.eval.review.as_ref().is_some_and(|r| r.insisting == Some(row));
    let effects = crate::tui::eval::approve::approve(state, row, insist);
    if effects.is_empty() {
        // Not approved (the note says why): the row stays under review, and `a` again insists.
        state.eval.overlay = EvalOverlay::Review;
        if let Some(review) = state.eval.review.as_mut() {
            review.insisting = Some(row);
        }
        return effects;
    }
    decide(state, |r| r.accepted.push(row));
    effects
}

/// Records the decision on the row shown and moves to the next one (or the summary).
fn decide(state: &mut State, record: impl FnOnce(&mut Review)) {
    let view = &mut state.eval;
    let Some(review) = view.review.as_mut() else { return };
    record(review);
    review.insisting = None;
    review.at += 1;
    match review.row() {
        Some(next) => {
            view.selected = next;
            view.scroll = 0;
            view.overlay = EvalOverlay::Review;
        }
        None => finish(state),
    }
}

/// Ends the review: its summary over the matrix, and in the status line.
fn finish(state: &mut State) {
    let view = &mut state.eval;
    view.overlay = EvalOverlay::ReviewDone;
    if let Some(review) = &view.review {
        state.note = Some(format!("review done: {}", review.summary()));
    }
}
