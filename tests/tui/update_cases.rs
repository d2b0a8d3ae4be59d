//! Transition tests of cases from the screen: add (name and variables typed as TOML in the box),
//! copy, delete after a confirmation naming the case, undo; names checked; saved atomically and read
//! back, kept in the recovery file meanwhile; a click on a case row chooses it.

use std::path::Path;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::prompt::file::PromptFile;
use tunebench::tui::input::InputKind;
use tunebench::tui::msg::{Action, Effect, Mouse, MouseKind, Msg, Start, TermEvent};
use tunebench::tui::state::{Overlay, State};
use tunebench::tui::update::update;
use tunebench::tui::workbench::state::Pane;

use super::support::*;

/// The sample (cases `computing-history` and `geology`), its variables pane focused.
fn in_variables_pane() -> State {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::FocusVariables));
    state
}

/// Replaces the open box's text with `text` (as pasted).
fn retype_box(state: &mut State, text: &str) {
    state.input.as_mut().expect("a box is open").area.select_all();
    update(state, special(Key::Backspace));
    update(state, Msg::Term(TermEvent::Paste(text.into())));
}

/// ctrl-s, the save written as the runner writes it (atomically) into `dir`, read back.
fn save_and_read_back(state: &mut State, dir: &Path) -> PromptFile {
    let effects = update(state, ctrl('s'));
    let [effect @ Effect::Save { schema_file: None, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let file = save_into(effect, dir);
    let back = PromptFile::load(dir.join("agent-kg-extract.toml")).unwrap();
    assert_eq!(update(state, Msg::Saved(Ok(Box::new(file)))), [Effect::ClearRecovery]);
    assert!(!state.dirty, "saved: nothing unsaved any more");
    back
}

#[test]
fn a_case_is_added_from_the_box_chosen_saved_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = in_variables_pane();
    update(&mut state, key('a'));
    let open = state.input.as_ref().expect("a opens the case box");
    assert_eq!(open.kind, InputKind::Case { at: 2, copy_of: None });
    let text = open.text();
    assert!(text.starts_with("name = \"case-3\"\n"), "a free name: {text}");
    assert!(text.contains("[variables]\ntext = \"Deoxyribonucleic acid"), "the default variables to change: {text}");
    // Typing goes to the box, not to the template behind it.
    let template = state.texts()[1].clone();
    retype_box(&mut state, "name = \"ribosomes\"\nexpect = \"a definition of ribosome\"\n\n[variables]\ntext = '''\nRibosomes translate mRNA.\nThey are in every cell.'''\n");
    assert_eq!(state.texts()[1], template);
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none(), "{:?}", state.input.as_ref().map(|i| i.error.clone()));
    assert_eq!(state.cases.len(), 3);
    assert_eq!(state.cases[2].name, "ribosomes");
    assert_eq!(state.choice.case.as_deref(), Some("ribosomes"), "the new case is chosen");
    assert_eq!(state.workbench.selected_variable, 3, "and selected");
    assert!(state.dirty, "an added case is an unsaved edit");
    assert!(state.note.as_deref().unwrap_or("").contains("\"ribosomes\" added"), "{:?}", state.note);
    // The next run renders the new case's variables.
    let effects = update(&mut state, Msg::Action(Action::Run));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(request.case.as_deref(), Some("ribosomes"));
    let rendered = request.prompt.render(Some("ribosomes"), &Default::default()).unwrap();
    assert!(rendered.user.contains("Ribosomes translate mRNA.\nThey are in every cell."), "{}", rendered.user);

    let back = save_and_read_back(&mut state, dir.path());
    let names: Vec<&str> = back.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["computing-history", "geology", "ribosomes"]);
    assert_eq!(back.cases[2].expect.as_deref(), Some("a definition of ribosome"));
    assert_eq!(back.cases[2].variables["text"], "Ribosomes translate mRNA.\nThey are in every cell.");
    assert_eq!(back.cases[0], state.saved.cases[0], "the other cases are untouched");
}

#[test]
fn case_names_are_checked_and_the_box_stays_open_with_the_reason() {
    let mut state = in_variables_pane();
    update(&mut state, key('a'));
    for (text, reason) in [
        ("name = \"geology\"\n", "a case named \"geology\" exists already"),
        ("name = \"\"\n", "the case needs a name"),
        ("name = \"two\\nlines\"\n", "holds a control character"),
        ("name = \"x\"\ncolour = \"red\"\n", "line 2, column 1: unknown field `colour`"),
        ("[variables]\ntext = \"no name\"\n", "missing field `name`"),
    ] {
        retype_box(&mut state, text);
        update(&mut state, special(Key::Enter));
        let open = state.input.as_ref().expect("refused: the box stays open");
        let error = open.error.clone().unwrap_or_default();
        assert!(error.contains(reason), "{text:?}: {error}");
        assert_eq!(state.note.as_deref(), Some(error.as_str()), "the status line says why");
        assert_eq!(state.cases.len(), 2);
    }
    update(&mut state, special(Key::Esc));
    assert!(state.input.is_none());
    assert_eq!(state.note.as_deref(), Some("no case added"));
    assert!(!state.dirty);
}

#[test]
fn a_copy_is_edited_in_the_box_and_lands_after_its_original() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = in_variables_pane();
    update(&mut state, key('j')); // computing-history
    update(&mut state, key('c'));
    let open = state.input.as_ref().expect("c opens the box with a copy");
    assert_eq!(open.kind, InputKind::Case { at: 1, copy_of: Some("computing-history".into()) });
    assert!(open.title().contains("copy of case computing-history"), "{}", open.title());
    let text = open.text();
    assert!(text.starts_with("name = \"computing-history-2\"\n"), "{text}");
    assert!(text.contains("expect = ") && text.contains("The Analytical Engine"), "notes and variables copied: {text}");
    update(&mut state, special(Key::Enter));
    let names: Vec<&str> = state.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["computing-history", "computing-history-2", "geology"]);
    assert_eq!(state.cases[1].variables, state.cases[0].variables);
    assert_eq!(state.cases[1].expect, state.cases[0].expect);
    assert_eq!(state.choice.case.as_deref(), Some("computing-history-2"));
    // Copying again counts on.
    update(&mut state, key('c'));
    assert!(state.input.as_ref().unwrap().text().starts_with("name = \"computing-history-3\""));
    update(&mut state, special(Key::Esc));
    let back = save_and_read_back(&mut state, dir.path());
    assert_eq!(back.cases.len(), 3);
    assert_eq!(back.cases[1].name, "computing-history-2");
    assert_eq!(back.cases[1].variables, back.cases[0].variables);
}

#[test]
fn delete_asks_naming_the_case_and_undo_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = in_variables_pane();
    update(&mut state, key('j'));
    update(&mut state, key('j')); // geology
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.case.as_deref(), Some("geology"));
    update(&mut state, key('x'));
    assert_eq!(state.overlay, Overlay::ConfirmDeleteCase { index: 1, name: "geology".into() });
    // Any key but y keeps it.
    update(&mut state, key('n'));
    assert_eq!(state.overlay, Overlay::None);
    assert_eq!(state.cases.len(), 2);
    assert_eq!(state.note.as_deref(), Some("case \"geology\" kept"));
    // delete works as x does; y deletes.
    update(&mut state, special(Key::Delete));
    update(&mut state, key('y'));
    let names: Vec<&str> = state.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["computing-history"]);
    assert_eq!(state.choice.case, None, "the deleted case is no longer chosen");
    assert_eq!(state.workbench.selected_variable, 1, "the selection stays on the case rows");
    assert!(state.dirty);
    // u takes the deletion back: nothing unsaved any more.
    update(&mut state, key('U'));
    assert_eq!(state.cases, state.saved.cases);
    assert_eq!(state.choice.case.as_deref(), Some("geology"));
    assert!(!state.dirty);
    assert!(state.note.as_deref().unwrap_or("").contains("undone: deleting case \"geology\""), "{:?}", state.note);
    update(&mut state, key('U'));
    assert_eq!(state.note.as_deref(), Some("nothing to undo in the variables and cases"));
    // Deleted again and saved: the file has one case.
    update(&mut state, key('x'));
    update(&mut state, key('y'));
    let back = save_and_read_back(&mut state, dir.path());
    assert_eq!(back.cases.len(), 1);
    assert_eq!(back.cases[0].name, "computing-history");
    // The default variables are no case: nothing to delete or copy.
    update(&mut state, Msg::Action(Action::Home));
    update(&mut state, key('x'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.note.as_deref().unwrap_or("").contains("select a case"), "{:?}", state.note);
}

#[test]
fn undo_also_takes_back_a_variable_edit() {
    let mut state = in_variables_pane();
    for _ in 0..3 {
        update(&mut state, key('j')); // the first variable, after the default row and two cases
    }
    update(&mut state, special(Key::Enter));
    retype_box(&mut state, "changed");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.variables["text"], "changed");
    update(&mut state, key('U'));
    assert_eq!(state.variables, state.saved.variables);
    assert!(!state.dirty);
}

#[test]
fn the_case_keys_work_in_the_variables_pane_and_type_in_editors() {
    let mut state = sample_state();
    assert_eq!(state.workbench.focus, Pane::Template);
    let before = state.texts()[1].clone();
    update(&mut state, key('a'));
    assert!(state.input.is_none());
    assert_eq!(state.texts()[1], format!("a{before}"), "a types in the template");
    update(&mut state, Msg::Action(Action::FocusOutput));
    update(&mut state, key('x'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.note.as_deref().unwrap_or("").contains("variables pane (alt-4)"), "{:?}", state.note);
}

#[test]
fn cases_as_edited_go_to_the_recovery_file_and_come_back() {
    let mut state = in_variables_pane();
    update(&mut state, key('a'));
    retype_box(&mut state, "name = \"recovered\"\n[variables]\ntext = \"kept\"\n");
    update(&mut state, special(Key::Enter));
    update(&mut state, key('j'));
    let edits = tunebench::tui::edit::recovery(&state, 0);
    let text = serde_json::to_string(&edits).unwrap();
    let read: tunebench::tui::recovery::Recovery = serde_json::from_str(&text).unwrap();
    let mut fresh = sample_state();
    tunebench::tui::edit::restore(&mut fresh, &read);
    assert_eq!(fresh.cases, state.cases);
    assert!(fresh.dirty);

    // A recovery file written before cases could be added: each saved case's variables, in order.
    let older = serde_json::json!({
        "path": "sample-prompts/agent-kg-extract.toml", "system": state.texts()[0], "template": state.texts()[1],
        "schema": state.texts()[2], "written_at_ms": 1,
        "variables": {"variables": state.variables, "cases": [{"text": "first"}, {"text": "second"}]}
    });
    let older: tunebench::tui::recovery::Recovery = serde_json::from_value(older).unwrap();
    let mut fresh = sample_state();
    tunebench::tui::edit::restore(&mut fresh, &older);
    assert_eq!(fresh.cases[1].variables["text"], "second");
    assert_eq!(fresh.cases[1].name, "geology");
}

#[test]
fn a_click_on_a_case_row_chooses_it() {
    let mut state = sample_state();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal
        .draw(|frame| tunebench::tui::view::render(frame, &state, &tunebench::tui::theme::Theme::default()))
        .unwrap();
    let screen = terminal.backend().to_string();
    // The row that shows "○ geology".
    let (row, line) = screen.lines().enumerate().find(|(_, l)| l.contains("○ geology")).expect("the case is listed");
    // The test backend writes each row quoted: the opening quote is no column.
    let column = (line.chars().position(|c| c == '○').unwrap() - 1) as u16;
    let click = Mouse { kind: MouseKind::Click, column, row: row as u16 };
    update(&mut state, Msg::Term(TermEvent::Mouse(click)));
    assert_eq!(state.workbench.focus, Pane::Variables);
    assert_eq!(state.workbench.selected_variable, 2);
    assert_eq!(state.choice.case.as_deref(), Some("geology"));
}
