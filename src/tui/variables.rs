//! The variables as edited (pure): the rows the variables pane lists after the cases, which table a
//! value lives in (the prompt's `[variables]` or the chosen case's), and an edited value put back.
//! The pane's rows: the run line, the default variables and each case, then the chosen variables.

use serde_json::Value;

use crate::prompt::template::Variables;
use crate::tui::state::State;

pub use crate::tui::input_box::Origin;

/// One variable row: its name, value and the table it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct VariableRow {
    pub name: String,
    pub value: Value,
    pub origin: Origin,
}

/// The index of the chosen case (`None`: the default variables).
fn chosen_case(state: &State) -> Option<usize> {
    let name = state.choice.case.as_deref()?;
    state.cases.iter().position(|c| c.name == name)
}

/// The variables of the chosen case as edited: the defaults, then the case's own over them.
pub fn rows(state: &State) -> Vec<VariableRow> {
    let mut rows: Vec<VariableRow> = state
        .variables
        .iter()
        .map(|(name, value)| VariableRow { name: name.clone(), value: value.clone(), origin: Origin::Defaults })
        .collect();
    if let Some(case) = chosen_case(state) {
        for (name, value) in state.cases.get(case).map(|c| &c.variables).into_iter().flatten() {
            let row = VariableRow { name: name.clone(), value: value.clone(), origin: Origin::Case(case) };
            match rows.iter_mut().find(|r| r.name == *name) {
                Some(existing) => *existing = row,
                None => rows.push(row),
            }
        }
    }
    rows
}

/// The rows of the variables pane: the default variables and each case, then the variables.
pub fn row_count(state: &State) -> usize {
    state.cases.len() + 1 + rows(state).len()
}

/// The variable row selected in the pane, if the selection is on a variable (not a case).
pub fn selected(state: &State) -> Option<VariableRow> {
    let first = state.cases.len() + 1;
    state.workbench.selected_variable.checked_sub(first).and_then(|i| rows(state).into_iter().nth(i))
}

/// A value as the editor shows it: a string as is, anything else as JSON.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// The typed `text` as the new value of `row`: a string stays a string; any other value must be
/// JSON (the error says where it is not).
pub fn value_of(row_name: &str, was: &Value, text: &str) -> Result<Value, String> {
    if was.is_string() {
        return Ok(Value::String(text.to_string()));
    }
    serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        format!("{row_name} holds JSON and {}:{} is not: {message} (esc cancels)", e.line(), e.column())
    })
}

/// Puts `value` into the table `origin` names.
pub fn set(state: &mut State, name: &str, origin: Origin, value: Value) {
    let table: Option<&mut Variables> = match origin {
        Origin::Defaults => Some(&mut state.variables),
        Origin::Case(case) => state.cases.get_mut(case).map(|c| &mut c.variables),
    };
    if let Some(table) = table {
        table.insert(name.to_string(), value);
    }
}

/// Whether the variables or the cases differ from the saved prompt's.
pub fn changed(state: &State) -> bool {
    state.variables != state.saved.variables || state.cases != state.saved.cases
}
