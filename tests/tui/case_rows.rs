//! The editing screen at 10,000 dataset rows: the variables pane is a virtual list (a screen of rows
//! drawn, scrolled deep too), `/` filters the cases by name and by the last eval's verdict (N of M in
//! the title), a keystroke allocates no more at 10,000 rows than at 100 (no copy of the rows), and
//! the recovery file keeps the edited rows alone and restores them.

use std::path::Path;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::eval::score::Verdict;
use tunebench::tui::input::InputKind;
use tunebench::tui::msg::{Action, Msg, TermEvent};
use tunebench::tui::setup::state_for;
use tunebench::tui::state::State;
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;
use tunebench::tui::variables::{set, Origin};

use super::alloc_count::allocated_by;
use super::support::*;

const PROMPT: &str = r#"id = "rows"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}'''
cases_file = "cases.jsonl"

[[cases]]
name = "inline"
variables = { text = "hi" }
"#;

/// A workbench on a prompt whose dataset has `rows` rows (`case-00000`, ...; each about 150 bytes),
/// after the one inline case; the variables pane focused.
fn workbench(dir: &Path, rows: usize) -> State {
    without_local_model();
    let path = dir.join("rows.toml");
    std::fs::write(&path, PROMPT).unwrap();
    let lines: String = (0..rows)
        .map(|row| {
            format!("{{\"name\": \"case-{row:05}\", \"text\": \"Row {row} of the dataset: a paragraph about cells, ribosomes and the proteins they make.\"}}\n")
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), lines).unwrap();
    let mut state = state_for(&path).unwrap();
    assert_eq!(state.cases.len(), rows + 1, "{:?}", state.note);
    update(&mut state, Msg::Action(Action::FocusVariables));
    state
}

/// The last eval's verdicts: every seventh row fails, the others pass.
fn evaluated(state: &mut State, rows: usize) {
    state.eval.rows = (0..rows).map(|row| Some(format!("case-{row:05}"))).collect();
    state.eval.cells = (0..rows)
        .map(|row| super::eval::scored(row, if row % 7 == 0 { Verdict::Fail } else { Verdict::Pass }))
        .collect();
}

fn draw(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| tunebench::tui::view::render(frame, state, &Theme::default())).unwrap();
    terminal.backend().to_string()
}

/// The filter's text replaced by `text`, as pasted.
fn retype(state: &mut State, text: &str) {
    state.input.as_mut().expect("the filter is open").area.select_all();
    update(state, special(Key::Backspace));
    update(state, Msg::Term(TermEvent::Paste(text.into())));
}

fn shown(state: &State) -> (usize, usize) {
    tunebench::tui::case_list::Listing::of(state).shown_of()
}

#[test]
fn ten_thousand_rows_are_filtered_by_name_and_by_the_last_evals_verdict_n_of_m_in_the_title() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 10_000;
    let mut state = workbench(dir.path(), rows);
    evaluated(&mut state, rows);

    // `/` opens the filter in the status line; it applies as typed, any case.
    update(&mut state, key('/'));
    assert_eq!(state.input.as_ref().map(|i| i.kind.clone()), Some(InputKind::CaseFilter));
    for c in "CASE-0990".chars() {
        update(&mut state, key(c));
    }
    assert_eq!(shown(&state), (10, rows + 1));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none(), "enter keeps the filter: {:?}", state.note);
    assert_eq!(state.note.as_deref(), Some("10 of 10001 cases shown"));
    let screen = draw(&state, 120, 40);
    assert!(screen.contains("4 cases 10 of 10001 ") && screen.contains(" /CASE-0990 "), "{screen}");
    assert!(
        screen.contains("case-09904") && !screen.contains("case-00000") && !screen.contains("○ inline"),
        "{screen}"
    );
    // The selection moves among the shown cases; enter chooses the one selected.
    update(&mut state, special(Key::Home));
    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.case.as_deref(), Some("case-09901"));

    // A verdict in the eval screen's words: the failing ones among the names (9905 = 7 × 1415, ...).
    update(&mut state, key('/'));
    retype(&mut state, "is:failing case-099");
    assert_eq!(shown(&state), (14, rows + 1), "{:?}", state.input.as_ref().and_then(|i| i.error.clone()));
    let screen = draw(&state, 120, 40);
    assert!(
        screen.contains("14 of 10001")
            && screen.contains("/is:failing case-099")
            && screen.contains("case-09905")
            && screen.contains("case-09912"),
        "{screen}"
    );
    assert!(!screen.contains("case-09906"), "{screen}");
    // While typing the selection stays; enter puts it on the next shown case after it.
    assert_eq!(state.workbench.selected_variable, 1 + 1 + 9901);
    // Exactly one verdict as the record writes it: every passing row.
    retype(&mut state, "is:pass");
    assert_eq!(shown(&state), (rows - rows.div_ceil(7), rows + 1));
    // A word that is no verdict is said, quoted, and the last filter that read stays.
    update(&mut state, Msg::Term(TermEvent::Paste(" is:broken".into())));
    let error = state.input.as_ref().and_then(|i| i.error.clone()).unwrap_or_default();
    assert!(error.contains("\"is:broken\" is not a verdict") && error.contains("failing"), "{error}");
    assert_eq!(shown(&state), (rows - rows.div_ceil(7), rows + 1));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_some(), "enter does not keep a filter that does not read");
    retype(&mut state, "is:failing case-099");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.workbench.selected_variable, 1 + 1 + 9905, "case-09905, the next failing one");
    update(&mut state, key('/'));
    // esc clears it: every case.
    update(&mut state, special(Key::Esc));
    assert!(state.input.is_none() && !state.workbench.case_filter.is_on());
    assert_eq!(shown(&state), (rows + 1, rows + 1));
    assert!(!draw(&state, 120, 40).contains(" of 10001"));
}

#[test]
fn the_virtual_list_draws_the_rows_in_view_when_scrolled_deep() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = workbench(dir.path(), 10_000);
    // Deep into the list: 7,000 rows down, then a click on the third row drawn chooses that case.
    for _ in 0..700 {
        update(&mut state, special(Key::PageDown));
    }
    assert_eq!(state.workbench.selected_variable, 7000);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|frame| tunebench::tui::view::render(frame, &state, &Theme::default())).unwrap();
    // The pane with its frame, as drawn.
    let (inner, skipped) = state.drawn.shown().variables.expect("the pane noted what it drew");
    assert_eq!(skipped, 7000 + 2 - usize::from(inner.height), "the selected row is the last one in view");
    let buffer = terminal.backend().buffer();
    let pane: Vec<String> = (inner.y - 1..inner.bottom() + 1)
        .map(|y| (inner.x - 1..inner.right() + 1).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .collect();
    insta::assert_snapshot!("variables_scrolled_deep_120x40", pane.join("\n"));
    // A click on the third row of the list chooses the case drawn there.
    update(
        &mut state,
        Msg::Term(TermEvent::Mouse(tunebench::tui::msg::Mouse {
            kind: tunebench::tui::msg::MouseKind::Click,
            column: inner.x + 2,
            row: inner.y + 3,
        })),
    );
    let third = format!("case-{skipped:05}");
    assert!(pane[4].contains(&third), "{third} is drawn on the pane's fifth line: {pane:?}");
    assert_eq!(state.choice.case.as_deref(), Some(third.as_str()), "the case drawn there");
}

/// The bytes a key typed in the template and the frame after it allocate, with the preview on and
/// a case deep in the dataset chosen.
fn keystroke_bytes(rows: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let mut state = workbench(dir.path(), rows);
    state.choice.case = Some(format!("case-{:05}", rows / 2));
    update(&mut state, Msg::Action(Action::TogglePreview));
    update(&mut state, Msg::Action(Action::FocusTemplate));
    // One key and frame first: what is made once (a lint, a layout) is not counted.
    update(&mut state, key('x'));
    draw(&state, 120, 40);
    let (_, bytes) = allocated_by(|| {
        update(&mut state, key('y'));
        draw(&state, 120, 40)
    });
    assert!(state.dirty);
    bytes
}

#[test]
fn a_keystroke_at_ten_thousand_rows_allocates_no_more_than_at_a_hundred() {
    let few = keystroke_bytes(100);
    let many = keystroke_bytes(10_000);
    // A copy of 10,000 rows is megabytes; a screen of lines is the same at any number of rows.
    assert!(many < few + few / 2 + 64 * 1024, "a key at 10,000 rows allocated {many} bytes, at 100 rows {few}");
}

#[test]
fn the_recovery_file_keeps_the_edited_rows_alone_and_restores_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = workbench(dir.path(), 10_000);
    set(&mut state, "text", Origin::Case(4243), serde_json::json!("row 4242, edited"));
    tunebench::tui::edit::edited(&mut state);
    tunebench::tui::workbench::cases::add(&mut state, 1, None, "name = \"added\"\nvariables = { text = \"z\" }")
        .unwrap();
    tunebench::tui::workbench::cases::answer_delete(&mut state, 9, "case-00007", true);
    assert!(state.dirty);

    let recovery = tunebench::tui::edit::recovery(&state, 1);
    let kept = recovery.variables.as_ref().expect("the cases were edited");
    let own: Vec<&str> = kept.case_list.iter().flatten().map(|c| c.name.as_str()).collect();
    assert_eq!(own, ["inline", "added"], "the prompt file's own cases, not the rows");
    let rows = kept.rows.as_ref().expect("the dataset's rows as changed");
    assert_eq!(rows.edited.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["case-04242"]);
    assert_eq!(rows.deleted, ["case-00007"]);
    let written = serde_json::to_string(&recovery).unwrap();
    assert!(written.len() < 4096, "{} bytes: the rows as saved are not in the file", written.len());

    // Written, read back and restored in a new workbench: the cases as they were edited.
    let data = tempfile::tempdir().unwrap();
    tunebench::tui::recovery::write(data.path(), &recovery).unwrap();
    let back = tunebench::tui::recovery::read(data.path(), &recovery.path).unwrap().expect("written");
    let mut again = state_for(&dir.path().join("rows.toml")).unwrap();
    tunebench::tui::edit::restore(&mut again, &back);
    assert!(again.cases == state.cases, "the cases as edited, in order");
    assert_eq!(again.cases[1].name, "added");
    assert_eq!(again.cases.iter().find(|c| c.name == "case-04242").unwrap().variables["text"], "row 4242, edited");
    assert!(again.dirty);
}
