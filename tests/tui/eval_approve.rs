//! Approve on the eval screen writes only what is a real answer: an answer with a line that fails
//! the schema is refused with the line and the reason (`y` writes nothing), a second `a` insists and
//! writes only the valid items with the rest marked in `left_out`; the review's `a` is refused the
//! same way and insists the second time; the confirmation says how many items it writes and scrolls
//! through every one of them.

use ratatui_textarea::Key;
use tunebench::prompt::file::PromptFile;
use tunebench::tui::eval::state::EvalOverlay;
use tunebench::tui::msg::Effect;
use tunebench::tui::update::update;

use super::eval::{draw, drive, evaluated, folder, transcript};
use super::support::*;

/// Beta answers Beta right, then Gamma without its definition (a schema error on line 2).
const BETA_HALF_VALID: &str =
    "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n{\"entity\": \"Gamma\"}\n";

fn folder_with_beta(answer: &str) -> tempfile::TempDir {
    let dir = folder();
    std::fs::write(dir.path().join("answers/definitions.beta.jsonl"), transcript(answer)).unwrap();
    dir
}

fn saved_beta(dir: &std::path::Path) -> tunebench::prompt::expect::Expected {
    let path = dir.join("definitions.toml");
    let prompt = PromptFile::from_toml_str(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    prompt.cases.into_iter().find(|c| c.name == "beta").unwrap().expected.unwrap()
}

fn note(state: &tunebench::tui::state::State) -> String {
    state.note.clone().unwrap_or_default()
}

#[test]
fn an_answer_with_a_schema_error_is_refused_and_a_second_a_writes_only_its_valid_items() {
    let dir = folder_with_beta(BETA_HALF_VALID);
    let mut state = evaluated(dir.path());
    update(&mut state, special(Key::Down));
    assert!(update(&mut state, key('a')).is_empty());
    assert!(matches!(state.eval.overlay, EvalOverlay::ConfirmApprove { row: 1, .. }), "{:?}", state.note);
    let shown = draw(&state, 100, 30);
    assert!(shown.contains("refused") && shown.contains("line 2: does not match the schema"), "{shown}");
    assert!(shown.contains("1 item"), "{shown}");

    // y is refused: nothing is written, the reason is said, the confirmation stays.
    assert!(update(&mut state, key('y')).is_empty(), "a refused approve writes nothing");
    assert!(note(&state).contains("not approved") && note(&state).contains("line 2"), "{}", note(&state));
    assert!(matches!(state.eval.overlay, EvalOverlay::ConfirmApprove { .. }));
    assert_eq!(saved_beta(dir.path()).items.map(|i| i.len()), Some(2), "the file still expects Beta and Gamma");

    // a again insists: Beta alone is written, line 2 marked as left out.
    let effects = update(&mut state, key('a'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    drive(&mut state, effects);
    let written = saved_beta(dir.path());
    assert_eq!(written.items, Some(vec![serde_json::json!({"entity": "Beta", "definition": "The second letter."})]));
    assert_eq!(written.left_out.len(), 1, "{:?}", written.left_out);
    assert!(written.left_out[0].starts_with("line 2: does not match the schema"), "{:?}", written.left_out);
}

#[test]
fn the_reviews_a_is_refused_on_a_partial_answer_and_insists_the_second_time() {
    let dir = folder_with_beta(BETA_HALF_VALID);
    let mut state = evaluated(dir.path());
    update(&mut state, key('r'));
    assert_eq!((state.eval.overlay.clone(), state.eval.selected), (EvalOverlay::Review, 1));
    assert!(update(&mut state, key('a')).is_empty(), "refused: {}", note(&state));
    assert!(note(&state).contains("line 2") && note(&state).contains("a again"), "{}", note(&state));
    assert_eq!(state.eval.overlay, EvalOverlay::Review, "the case stays under review");
    let effects = update(&mut state, key('a'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    assert_eq!(state.eval.overlay, EvalOverlay::ReviewDone);
    drive(&mut state, effects);
    assert_eq!(saved_beta(dir.path()).left_out.len(), 1);
}

#[test]
fn the_confirmation_says_how_many_items_and_scrolls_to_the_last() {
    let long = "a definition long enough to wrap over several lines of the confirmation ".repeat(5);
    let answer: String = ["One", "Two", "Three", "Four"]
        .iter()
        .map(|name| format!("{}\n", serde_json::json!({"entity": format!("{name}-entity"), "definition": long})))
        .collect();
    let dir = folder_with_beta(&answer);
    let mut state = evaluated(dir.path());
    update(&mut state, special(Key::Down));
    update(&mut state, key('a'));
    let first = draw(&state, 80, 24);
    assert!(first.contains("approve as expected: 4 items"), "{first}");
    assert!(first.contains("of 4") && first.contains("more"), "the frame says more items follow:\n{first}");
    assert!(first.contains("One-entity") && !first.contains("Four-entity"), "{first}");
    for _ in 0..3 {
        assert!(update(&mut state, special(Key::Down)).is_empty());
    }
    let last = draw(&state, 80, 24);
    assert!(last.contains("4. ") && last.contains("Four-entity") && last.contains("4–4 of 4"), "{last}");
    assert!(matches!(state.eval.overlay, EvalOverlay::ConfirmApprove { .. }), "scrolling keeps it open");
    let effects = update(&mut state, key('y'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    drive(&mut state, effects);
    assert_eq!(saved_beta(dir.path()).items.map(|i| i.len()), Some(4));
}

#[test]
fn approving_a_dataset_row_writes_that_row_alone_and_scores_it_again() {
    // alpha inline; beta and gamma rows of the prompt's dataset.
    let dir = folder();
    let inline = super::eval::PROMPT.split("[[cases]]\nname = \"beta\"").next().unwrap();
    std::fs::write(dir.path().join("definitions.toml"), format!("cases_file = \"cases.jsonl\"\n{inline}")).unwrap();
    let beta = r#"{"name": "beta", "text": "BETA-TEXT", "expected": [{"entity": "Beta", "definition": "The second letter."}, {"entity": "Gamma", "definition": "The third letter."}]}"#;
    let gamma = r#"{"name": "gamma",   "text": "GAMMA-TEXT"}"#;
    let dataset = dir.path().join("cases.jsonl");
    std::fs::write(&dataset, format!("{beta}\r\n{gamma}\n")).unwrap();
    let gamma_answer = "{\"entity\": \"Gamma\", \"definition\": \"The third letter.\"}\n";
    std::fs::write(dir.path().join("answers/definitions.gamma.jsonl"), transcript(gamma_answer)).unwrap();
    let prompt_before = std::fs::read(dir.path().join("definitions.toml")).unwrap();
    let mut state = evaluated(dir.path());
    let rows: Vec<Option<String>> = ["alpha", "beta", "gamma"].iter().map(|r| Some(r.to_string())).collect();
    assert_eq!(state.eval.rows, rows);
    assert_eq!(super::eval::verdict(&state, 1), Some(tunebench::eval::score::Verdict::Fail), "beta misses Gamma");

    update(&mut state, special(Key::Down));
    assert!(update(&mut state, key('a')).is_empty());
    // The confirmation names the dataset file and the row's line, not the prompt file.
    let shown = draw(&state, 160, 30).replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let want = format!("written into its row of {}, line 1", dataset.display());
    assert!(shown.contains(&want) && !shown.contains("the prompt file is saved"), "{shown}");
    let effects = update(&mut state, key('y'));
    assert!(matches!(effects.as_slice(), [Effect::ApproveInDataset(_)]), "{effects:?}");
    drive(&mut state, effects);
    assert_eq!(super::eval::verdict(&state, 1), Some(tunebench::eval::score::Verdict::Pass), "{}", note(&state));
    let written =
        r#"{"name":"beta","text":"BETA-TEXT","expected":[{"entity":"Beta","definition":"The second letter."}]}"#;
    assert_eq!(
        std::fs::read_to_string(&dataset).unwrap(),
        format!("{written}\r\n{gamma}\n"),
        "only beta's line changed"
    );
    assert_eq!(
        std::fs::read(dir.path().join("definitions.toml")).unwrap(),
        prompt_before,
        "the prompt file is untouched"
    );
}

#[test]
fn approving_a_dataset_row_changed_outside_since_it_was_read_is_refused() {
    let dir = folder();
    let inline = super::eval::PROMPT.split("[[cases]]\nname = \"beta\"").next().unwrap();
    std::fs::write(dir.path().join("definitions.toml"), format!("cases_file = \"cases.jsonl\"\n{inline}")).unwrap();
    let beta = r#"{"name": "beta", "text": "BETA-TEXT", "expected": [{"entity": "Beta", "definition": "The second letter."}, {"entity": "Gamma", "definition": "The third letter."}]}"#;
    let dataset = dir.path().join("cases.jsonl");
    std::fs::write(&dataset, format!("{beta}\n")).unwrap();
    let mut state = evaluated(dir.path());
    // Another editor changes beta's row (its input) after the workbench read it.
    let outside = format!("{}\n", beta.replace("BETA-TEXT", "BETA-TEXT, edited elsewhere"));
    std::fs::write(&dataset, &outside).unwrap();

    update(&mut state, special(Key::Down));
    assert!(update(&mut state, key('a')).is_empty());
    let effects = update(&mut state, key('y'));
    assert!(matches!(effects.as_slice(), [Effect::ApproveInDataset(_)]), "{effects:?}");
    let (tx, _rx) = std::sync::mpsc::channel();
    let mut runner = tunebench::tui::runner::Runner::new(tx, None).unwrap();
    runner.record_history = false;
    for effect in effects {
        for msg in runner.execute(effect) {
            update(&mut state, msg);
        }
    }
    let said = note(&state);
    assert!(said.contains("not approved") && said.contains("cases.jsonl:1"), "{said}");
    assert!(said.contains("changed on disk (outside tunebench)"), "{said}");
    assert_eq!(std::fs::read_to_string(&dataset).unwrap(), outside, "the outside edit is kept");
}
