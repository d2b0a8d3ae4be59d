//! A prompt changed outside the workbench (another editor, `git checkout`): reloaded when nothing is
//! unsaved, asked about otherwise, and never written over without the author saying so; saves go
//! through the real runner into a temporary folder.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ratatui_textarea::Key;
use tunebench::tui::msg::{Effect, Msg, SaveFailed};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Overlay, State};
use tunebench::tui::update::update;

use super::eval::{evaluated, folder};
use super::support::*;

/// The sample prompt copied into `dir` (a file of the author's own), opened in the workbench.
fn own_copy(dir: &Path) -> (PathBuf, State) {
    without_local_model();
    let path = dir.join("agent-kg-extract.toml");
    std::fs::copy(SAMPLE, &path).unwrap();
    let state = state_for(&path).unwrap();
    (path, state)
}

/// Runs `effects` on a real runner; returns the messages that came straight back, after updating.
fn execute(state: &mut State, effects: Vec<Effect>) -> Vec<Msg> {
    let (tx, _rx) = mpsc::channel();
    let mut runner = Runner::new(tx, None).unwrap();
    let mut seen = Vec::new();
    for effect in effects {
        for msg in runner.execute(effect) {
            seen.push(msg.clone());
            update(state, msg);
        }
    }
    seen
}

fn on_disk(path: &Path) -> Msg {
    Msg::OnDisk { path: path.to_path_buf(), text: std::fs::read_to_string(path).unwrap() }
}

#[test]
fn a_change_on_disk_with_nothing_unsaved_is_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut state) = own_copy(dir.path());
    let outside =
        std::fs::read_to_string(&path).unwrap().replace("Analyse the text below", "Analyse the passage below");
    std::fs::write(&path, &outside).unwrap();
    let effects = update(&mut state, on_disk(&path));
    assert!(!effects.iter().any(|e| matches!(e, Effect::Save { .. })), "{effects:?}");
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.texts()[1].starts_with("Analyse the passage below"), "{}", state.texts()[1]);
    assert_eq!(state.saved_text, outside);
    assert!(!state.dirty);
    assert!(state.note.as_deref().unwrap_or("").contains("reloaded"), "{:?}", state.note);
    // The workbench's own save, seen by the watch, is nothing new.
    type_text(&mut state, "x");
    let effects = update(&mut state, ctrl('s'));
    execute(&mut state, effects);
    assert!(!state.dirty);
    let (note, texts) = (state.note.clone(), state.texts());
    assert!(update(&mut state, on_disk(&path)).is_empty());
    assert_eq!((state.overlay.clone(), state.note.clone(), state.texts()), (Overlay::None, note, texts));
}

#[test]
fn a_change_on_disk_under_unsaved_edits_asks_and_keep_mine_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut state) = own_copy(dir.path());
    type_text(&mut state, "Be brief. ");
    let read = std::fs::read_to_string(&path).unwrap();
    let outside = read
        .replace("[provider]\ntemperature = 0.0\n", "[provider]\ntemperature = 0.25\n")
        .replace("You are a helpful assistant.", "You are a careful assistant.");
    assert_ne!(outside, read, "the sample has a [provider] table");
    std::fs::write(&path, &outside).unwrap();
    update(&mut state, on_disk(&path));
    let Overlay::ChangedOutside(change) = &state.overlay else { panic!("{:?}", state.overlay) };
    assert!(!change.refused_save);
    assert!(state.texts()[1].starts_with("Be brief. "), "the edits are untouched while asked");
    // d shows what changed outside.
    update(&mut state, key('d'));
    let Overlay::ChangedOutside(change) = &state.overlay else { panic!("{:?}", state.overlay) };
    let diff = change.diff.clone().unwrap();
    assert!(diff.iter().any(|l| l == "+temperature = 0.25"), "{diff:?}");
    update(&mut state, special(Key::Down));
    // k keeps mine: the next save writes the edit over the file as it is now, keeping their change.
    update(&mut state, key('k'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.dirty);
    assert_eq!(state.texts()[0], "You are a careful assistant.", "a text I did not edit takes theirs");
    let effects = update(&mut state, ctrl('s'));
    let seen = execute(&mut state, effects);
    assert!(matches!(seen.as_slice(), [Msg::Saved(Ok(_))]), "{seen:?}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("temperature = 0.25\n"), "their change stays:\n{written}");
    assert!(written.contains("You are a careful assistant."), "their change stays:\n{written}");
    assert!(written.contains("Be brief. Analyse the text below"), "my edit is written:\n{written}");
    assert_eq!(written.lines().count(), outside.lines().count(), "one line changed, none added");
    assert!(!state.dirty);
}

#[test]
fn a_save_over_a_file_changed_on_disk_writes_nothing_and_asks() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut state) = own_copy(dir.path());
    type_text(&mut state, "Be brief. ");
    // `git checkout` of another version while the workbench is open, not yet seen by the watch.
    let outside =
        std::fs::read_to_string(&path).unwrap().replace("Analyse the text below", "Analyse the article below");
    std::fs::write(&path, &outside).unwrap();
    let effects = update(&mut state, ctrl('s'));
    let seen = execute(&mut state, effects);
    assert!(matches!(seen.as_slice(), [Msg::Saved(Err(SaveFailed::ChangedOutside { .. }))]), "{seen:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), outside, "nothing written over it");
    let Overlay::ChangedOutside(change) = &state.overlay else { panic!("{:?}", state.overlay) };
    assert!(change.refused_save);
    assert!(state.dirty, "the edit is still unsaved");
    // Any other key leaves it: the next save asks again.
    update(&mut state, special(Key::Esc));
    assert_eq!(state.overlay, Overlay::None);
    let effects = update(&mut state, ctrl('s'));
    execute(&mut state, effects);
    assert!(matches!(state.overlay, Overlay::ChangedOutside(_)));
    // r reloads: their version in the editors, mine dropped.
    update(&mut state, key('r'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.texts()[1].starts_with("Analyse the article below"), "{}", state.texts()[1]);
    assert!(!state.dirty);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), outside);
}

#[test]
fn keep_mine_after_a_refused_save_saves_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut state) = own_copy(dir.path());
    type_text(&mut state, "Be brief. ");
    let outside = std::fs::read_to_string(&path).unwrap().replacen("\n", "\n# a comment added outside\n", 1);
    std::fs::write(&path, &outside).unwrap();
    let effects = update(&mut state, ctrl('s'));
    execute(&mut state, effects);
    assert!(matches!(state.overlay, Overlay::ChangedOutside(_)));
    let effects = update(&mut state, key('k'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }]), "{effects:?}");
    execute(&mut state, effects);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("# a comment added outside\n") && written.contains("Be brief. "), "{written}");
    assert!(!state.dirty);
}

#[test]
fn approving_over_a_file_changed_on_disk_writes_nothing_and_asks() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    let path = dir.path().join("definitions.toml");
    let outside = format!("{}\n[[cases]]\nname = \"added-outside\"\n", std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, &outside).unwrap();
    update(&mut state, special(Key::Down));
    update(&mut state, key('a'));
    let effects = update(&mut state, key('y'));
    let saves: Vec<Effect> = effects.into_iter().filter(|e| matches!(e, Effect::Save { .. })).collect();
    assert_eq!(saves.len(), 1);
    execute(&mut state, saves);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), outside, "the added case is not lost");
    assert!(matches!(&state.overlay, Overlay::ChangedOutside(c) if c.refused_save), "{:?}", state.overlay);
    // Keep mine: the approve is written over the file as it is now, the added case kept.
    let effects = update(&mut state, key('k'));
    execute(&mut state, effects);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("name = \"added-outside\""), "{written}");
    assert_ne!(written, outside, "the approve is written");
}

const ROWS_PROMPT: &str = r#"# A prompt of my own, with its cases in a dataset beside it.
id = "rows"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}'''
cases_file = "cases.jsonl"   # hundreds of labelled rows live here

[[cases]]
name = "inline"
variables = { text = "hi" }
"#;

/// A dataset row edited in the workbench goes back into its line alone (the other rows and the
/// prompt file byte-identical but for what changed); a case added there goes into the prompt file;
/// a row deleted in the workbench, or changed on disk since, is not saved over.
#[test]
fn a_dataset_case_edited_in_the_workbench_is_written_into_its_row_alone() {
    use tunebench::tui::variables::{set, Origin};
    without_local_model();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.toml");
    std::fs::write(&path, ROWS_PROMPT).unwrap();
    let rows = dir.path().join("cases.jsonl");
    std::fs::write(&rows, "{\"name\": \"a\",  \"text\": \"x\"}\n{\"name\":\"b\",\"text\":\"y\",\"expected\":[]}\n")
        .unwrap();
    let mut state = state_for(&path).unwrap();
    let names: Vec<&str> = state.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["inline", "a", "b"], "the dataset's rows are listed after the inline case");

    set(&mut state, "text", Origin::Case(2), serde_json::json!("y, edited"));
    tunebench::tui::edit::edited(&mut state);
    tunebench::tui::workbench::cases::add(&mut state, 3, None, "name = \"added\"\nvariables = { text = \"z\" }")
        .unwrap();
    let effects = update(&mut state, ctrl('s'));
    execute(&mut state, effects);
    assert!(!state.dirty, "{:?}", state.note);
    assert_eq!(
        std::fs::read_to_string(&rows).unwrap(),
        "{\"name\": \"a\",  \"text\": \"x\"}\n{\"name\":\"b\",\"text\":\"y, edited\",\"expected\":[]}\n",
        "row b alone rewritten"
    );
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.starts_with(ROWS_PROMPT), "the file as written, then the added case:\n{saved}");
    assert!(saved.contains("name = \"added\"") && !saved.contains("\"b\""), "{saved}");
    let again = state_for(&path).unwrap();
    let names: Vec<&str> = again.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["inline", "added", "a", "b"]);

    // Row a changed on disk meanwhile: my edit of it is not saved over theirs, and nothing is written.
    let mut state = again;
    std::fs::write(
        &rows,
        "{\"name\": \"a\",  \"text\": \"theirs\"}\n{\"name\":\"b\",\"text\":\"y, edited\",\"expected\":[]}\n",
    )
    .unwrap();
    set(&mut state, "text", Origin::Case(2), serde_json::json!("mine"));
    tunebench::tui::edit::edited(&mut state);
    assert!(state.dirty);
    let before = std::fs::read_to_string(&path).unwrap();
    let effects = update(&mut state, ctrl('s'));
    execute(&mut state, effects);
    assert!(state.dirty);
    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains("cases.jsonl:1") && note.contains("changed on disk"), "{note}");
    assert!(std::fs::read_to_string(&rows).unwrap().contains("theirs"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}
