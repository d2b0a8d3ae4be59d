//! The eval screen's review: `r` walks the failing, truncated and unexpected cases one by one with
//! `cargo insta review`'s keys (a accept, r reject, s skip, esc stop) and ends with a summary; an
//! accepted answer is written as expected (saved, the row scored again) without asking again.
//! Snapshots of the review and its summary at 80×24 and 120×40; model text is shown escaped.

use ratatui_textarea::Key;
use tunebench::eval::score::Verdict;
use tunebench::tui::eval::state::EvalOverlay;
use tunebench::tui::msg::Effect;
use tunebench::tui::state::Screen;
use tunebench::tui::update::update;

use super::eval::{draw, drive, evaluated, folder, transcript, verdict, PROMPT};
use super::support::*;

/// The eval folder with a third case, `delta`, that expects nothing and whose answer carries an
/// escape sequence after its record.
fn folder_with_delta() -> tempfile::TempDir {
    let dir = folder();
    let prompt = format!("{PROMPT}\n[[cases]]\nname = \"delta\"\nvariables = {{ text = \"DELTA-TEXT\" }}\n");
    std::fs::write(dir.path().join("definitions.toml"), prompt).unwrap();
    let delta = "{\"entity\": \"Delta\", \"definition\": \"The fourth letter.\"}\nthe end\u{1b}[2J\n";
    std::fs::write(dir.path().join("answers/definitions.delta.jsonl"), transcript(delta)).unwrap();
    dir
}

#[test]
fn review_accepts_a_failing_case_and_it_passes() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    assert_eq!(verdict(&state, 1), Some(Verdict::Fail));
    assert!(update(&mut state, key('r')).is_empty());
    assert_eq!(state.eval.overlay, EvalOverlay::Review);
    assert_eq!(state.eval.selected, 1, "the review starts on the failing case");
    let shown = draw(&state, 120, 40);
    assert!(shown.contains("review 1/1") && shown.contains("missing"), "{shown}");
    insta::assert_snapshot!("eval_review_120x40", shown);
    insta::assert_snapshot!("eval_review_80x24", draw(&state, 80, 24));

    // a: approved without a confirmation, the review ends with its summary.
    let effects = update(&mut state, key('a'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    assert_eq!(state.eval.overlay, EvalOverlay::ReviewDone);
    assert!(state.note.as_deref().unwrap_or_default().contains("1 accepted, 0 rejected, 0 skipped"));
    let summary = draw(&state, 80, 24);
    assert!(summary.contains("review done") && summary.contains("accepted"), "{summary}");
    insta::assert_snapshot!("eval_review_done_80x24", summary);
    insta::assert_snapshot!("eval_review_done_120x40", draw(&state, 120, 40));
    drive(&mut state, effects);
    assert_eq!(verdict(&state, 1), Some(Verdict::Pass), "{:?}", state.note);
    let saved = std::fs::read_to_string(dir.path().join("definitions.toml")).unwrap();
    assert!(saved.contains("The second letter.") && !saved.contains("Gamma"), "{saved}");

    update(&mut state, key('x'));
    assert_eq!(state.eval.overlay, EvalOverlay::None, "any key closes the summary");
    update(&mut state, key('r'));
    assert_eq!(state.eval.overlay, EvalOverlay::None, "nothing is left to review");
    assert!(state.note.as_deref().unwrap_or_default().contains("nothing to review"), "{:?}", state.note);
}

#[test]
fn review_rejects_skips_and_stops_and_model_text_is_escaped() {
    let dir = folder_with_delta();
    let mut state = evaluated(dir.path());
    assert_eq!(state.eval.rows.len(), 3);
    update(&mut state, key('r'));
    let review = state.eval.review.clone().unwrap();
    assert_eq!(review.queue, [1, 2], "beta fails, delta has no expected answer");

    // r: beta rejected and left as it is; the review moves on to delta.
    assert!(update(&mut state, key('r')).is_empty());
    assert_eq!(state.eval.selected, 2);
    assert_eq!(state.eval.overlay, EvalOverlay::Review);
    let shown = draw(&state, 120, 40);
    assert!(shown.contains("no expected answer"), "{shown}");
    assert!(shown.contains("\\u{1b}[2J") && !shown.contains('\u{1b}'), "model text escaped:\n{shown}");
    // s: delta skipped, the review is over.
    assert!(update(&mut state, key('s')).is_empty());
    assert_eq!(state.eval.overlay, EvalOverlay::ReviewDone);
    assert!(state.note.as_deref().unwrap_or_default().contains("0 accepted, 1 rejected, 1 skipped"));
    update(&mut state, special(Key::Enter));
    let matrix = draw(&state, 120, 40);
    assert!(matrix.contains("rejected"), "the rejected case is marked:\n{matrix}");
    assert_eq!(verdict(&state, 1), Some(Verdict::Fail), "a rejected answer is not written");
    let saved = std::fs::read_to_string(dir.path().join("definitions.toml")).unwrap();
    assert!(saved.contains("Gamma"), "{saved}");

    // esc stops a review: what was not reached counts as skipped.
    update(&mut state, key('r'));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.eval.overlay, EvalOverlay::ReviewDone);
    assert!(state.note.as_deref().unwrap_or_default().contains("0 accepted, 0 rejected, 2 skipped"));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.eval.overlay, EvalOverlay::None);
    assert!(state.screen == Screen::Eval, "esc on the summary only closes it");
}
