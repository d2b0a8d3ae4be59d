//! Cases from the screen (pure, part of `update`): add a case (its name and variables typed as TOML in
//! the box editor the variables use), copy the selected one into the same box, delete one after a
//! confirmation that names it, and undo the last change the variables pane made. Every change is an
//! unsaved edit like a typed one (ctrl-s saves atomically, the recovery file keeps it meanwhile).
//! Names are checked: not empty, one line, unique.

use crate::prompt::file::Case;
use crate::tui::input_box::{box_editor, InputBox, InputKind};
use crate::tui::msg::Effect;
use crate::tui::state::{Overlay, State};
use crate::tui::workbench::state::Pane;
use crate::tui::workbench::state::Snapshot;

/// How many changes `u` can take back.
const UNDO_DEPTH: usize = 100;

/// Keeps the pane as it is before a change described by `what`.
pub fn remember(state: &mut State, what: String) {
    if state.workbench.case_undo.len() >= UNDO_DEPTH {
        state.workbench.case_undo.remove(0);
    }
    state.workbench.case_undo.push(Snapshot {
        what,
        variables: state.variables.clone(),
        cases: state.cases.clone(),
        case: state.choice.case.clone(),
        selected: state.workbench.selected_variable,
    });
}

/// `undo-case-edit`: the variables and cases as they were before the last change.
pub fn undo(state: &mut State) -> Vec<Effect> {
    let Some(snapshot) = state.workbench.case_undo.pop() else {
        state.note = Some("nothing to undo in the variables and cases".into());
        return Vec::new();
    };
    state.variables = snapshot.variables;
    state.cases = snapshot.cases;
    state.choice.case = snapshot.case.filter(|name| state.cases.iter().any(|c| c.name == *name));
    state.workbench.selected_variable =
        snapshot.selected.min(crate::tui::variables::row_count(state).saturating_sub(1));
    crate::tui::edit::edited(state);
    state.note = Some(format!("undone: {}", snapshot.what));
    Vec::new()
}

/// The case the pane's selection names: the selected case row, else (on a variable row) the chosen case.
fn selected_case(state: &State) -> Option<usize> {
    match state.workbench.selected_variable {
        0 => None,
        n if n <= state.cases.len() => Some(n - 1),
        _ => state.choice.case.as_deref().and_then(|name| state.cases.iter().position(|c| c.name == name)),
    }
}

/// Whether the focus is on the variables pane; if not, says where the case keys work.
fn in_variables_pane(state: &mut State, what: &str) -> bool {
    if state.workbench.focus == Pane::Variables {
        return true;
    }
    state.note = Some(format!("{what} works in the variables pane (alt-4)"));
    false
}

/// `add-case`: the box editor with a new case: a free name and the default variables to change.
pub fn open_new(state: &mut State) -> Vec<Effect> {
    if !in_variables_pane(state, "adding a case") {
        return Vec::new();
    }
    let name = free_name(&state.cases, "case", state.cases.len() + 1);
    let case = Case { name, variables: state.variables.clone(), ..Case::default() };
    open_box(state, &case, state.cases.len(), None);
    Vec::new()
}

/// `copy-case`: the box editor with a copy of the selected case under a free name.
pub fn open_copy(state: &mut State) -> Vec<Effect> {
    if !in_variables_pane(state, "copying a case") {
        return Vec::new();
    }
    let Some(index) = selected_case(state) else {
        state.note = Some("select a case to copy (the default variables are copied by a: add a case)".into());
        return Vec::new();
    };
    let Some(original) = state.cases.get(index) else { return Vec::new() };
    let copy = Case { name: free_name(&state.cases, &original.name, 2), ..original.clone() };
    let from = original.name.clone();
    open_box(state, &copy, index + 1, Some(from));
    Vec::new()
}

fn open_box(state: &mut State, case: &Case, at: usize, copy_of: Option<String>) {
    let text = case_text(case);
    state.input =
        Some(Box::new(InputBox { kind: InputKind::Case { at, copy_of }, area: box_editor(&text), error: None }));
}

/// A case as the box shows it: TOML, as the prompt file writes a case (its variables under `[variables]`).
pub fn case_text(case: &Case) -> String {
    toml::to_string(case).unwrap_or_else(|_| format!("name = {:?}\n\n[variables]\n", case.name))
}

/// `base-<first>`, `base-<first + 1>`, ...: the first such name no case has (a number `base` ends
/// with is counted on from, not appended to).
fn free_name(cases: &[Case], base: &str, first: usize) -> String {
    let taken = |name: &str| cases.iter().any(|c| c.name == name);
    let stem = match base.rsplit_once('-') {
        Some((stem, n)) if n.parse::<u32>().is_ok() && !stem.is_empty() => stem,
        _ => base,
    };
    (first..).map(|n| format!("{stem}-{n}")).find(|name| !taken(name)).unwrap_or_else(|| format!("{stem}-new"))
}

/// A case name is usable: not empty, one line of text, and no other case has it.
pub fn check_name(cases: &[Case], name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the case needs a name: name = \"...\"".into());
    }
    if name.chars().any(char::is_control) {
        return Err(format!("the case name {name:?} holds a control character: a name is one line of text"));
    }
    if name.trim() != name {
        return Err(format!("the case name {name:?} starts or ends with spaces"));
    }
    if cases.iter().any(|c| c.name == name) {
        return Err(format!("a case named {name:?} exists already: give this one another name"));
    }
    Ok(())
}

/// The box's TOML read as a case; the error says where it is not one (line and column in the box).
pub fn parse_case(text: &str) -> Result<Case, String> {
    toml::from_str::<Case>(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => {
                let before = text.get(..span.start).unwrap_or(text);
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                (line, column)
            }
            None => (1, 1),
        };
        format!("line {line}, column {column}: {} (esc cancels)", e.message().trim())
    })
}

/// Enter in the case box: the typed case inserted at `at` and chosen for the next run.
pub fn add(state: &mut State, at: usize, copy_of: Option<&str>, text: &str) -> Result<(), String> {
    let case = parse_case(text)?;
    check_name(&state.cases, &case.name)?;
    let name = case.name.clone();
    let what = match copy_of {
        Some(from) => format!("copying case {from:?} to {name:?}"),
        None => format!("adding case {name:?}"),
    };
    remember(state, what);
    // A case added here is the prompt file's: it goes before the rows of its dataset.
    let at = at.min(first_row(state));
    state.cases.insert(at, case);
    state.choice.case = Some(name.clone());
    state.workbench.selected_variable = at + 1;
    state.workbench.focus = Pane::Variables;
    crate::tui::edit::edited(state);
    state.note = Some(format!("case {name:?} added and chosen (ctrl-s saves the prompt; {} undoes)", undo_key(state)));
    Ok(())
}

/// Where the rows of the prompt's dataset begin among the cases (the end when it has none).
fn first_row(state: &State) -> usize {
    let Some(dataset) = &state.saved.dataset else { return state.cases.len() };
    let rows: std::collections::HashSet<&str> =
        state.saved.cases.iter().skip(dataset.first).map(|c| c.name.as_str()).collect();
    state.cases.iter().position(|c| rows.contains(c.name.as_str())).unwrap_or(state.cases.len())
}

/// `delete-case`: asks first, naming the case.
pub fn ask_delete(state: &mut State) -> Vec<Effect> {
    if !in_variables_pane(state, "deleting a case") {
        return Vec::new();
    }
    match selected_case(state).and_then(|index| state.cases.get(index).map(|c| (index, c.name.clone()))) {
        Some((index, name)) => state.overlay = Overlay::ConfirmDeleteCase { index, name },
        None => state.note = Some("select a case to delete (the default variables stay)".into()),
    }
    Vec::new()
}

/// The answer to the delete confirmation: `yes` deletes the case at `index` (if it is still `name`).
pub fn answer_delete(state: &mut State, index: usize, name: &str, yes: bool) {
    state.overlay = Overlay::None;
    if !yes {
        state.note = Some(format!("case {name:?} kept"));
        return;
    }
    if state.cases.get(index).is_none_or(|c| c.name != name) {
        state.note = Some(format!("case {name:?} is gone already"));
        return;
    }
    remember(state, format!("deleting case {name:?}"));
    state.cases.remove(index);
    if state.choice.case.as_deref() == Some(name) {
        state.choice.case = None;
    }
    state.workbench.selected_variable = state.workbench.selected_variable.min(state.cases.len());
    crate::tui::edit::edited(state);
    state.note = Some(format!("case {name:?} deleted (ctrl-s saves the prompt; {} undoes)", undo_key(state)));
}

/// The key that takes a case change back, as the keymap writes it.
pub fn undo_key(state: &State) -> String {
    let keys = state.keymap.keys(crate::tui::keymap::Scope::View, crate::tui::msg::Action::UndoCaseEdit);
    keys.first().cloned().unwrap_or_else(|| "undo-case-edit".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str) -> Case {
        Case { name: name.into(), ..Case::default() }
    }

    #[test]
    fn free_names_count_up_from_the_original() {
        let cases = [case("economics"), case("economics-2")];
        assert_eq!(free_name(&cases, "economics", 2), "economics-3");
        assert_eq!(free_name(&cases, "economics-2", 2), "economics-3");
        assert_eq!(free_name(&cases, "case", 3), "case-3");
        assert_eq!(free_name(&cases, "-5", 2), "-5-2");
    }

    #[test]
    fn names_are_checked() {
        let cases = [case("economics")];
        assert!(check_name(&cases, "economics").unwrap_err().contains("exists already"));
        assert!(check_name(&cases, "  ").unwrap_err().contains("needs a name"));
        assert!(check_name(&cases, "a\nb").unwrap_err().contains("control character"));
        assert!(check_name(&cases, " a").unwrap_err().contains("spaces"));
        assert_eq!(check_name(&cases, "music"), Ok(()));
    }

    #[test]
    fn the_box_text_round_trips_and_errors_say_where() {
        let mut original = case("economics");
        original.expect = Some("inflation".into());
        original.variables.insert("text".into(), "Prices rise.\nSecond line".into());
        let text = case_text(&original);
        assert_eq!(parse_case(&text).unwrap(), original);
        let error = parse_case("name = \"x\"\ncolour = 1\n").unwrap_err();
        assert!(error.starts_with("line 2, column 1:") && error.contains("colour"), "{error}");
        let error = parse_case("name = \"x\"\n[variables]\ntext = \n").unwrap_err();
        assert!(error.starts_with("line 3"), "{error}");
    }
}
