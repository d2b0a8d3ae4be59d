//! One dataset row made a case, the same [`Case`] `[[cases]]` gives: its variables (the row's other
//! keys or columns, or a `vars` object), its name (`name`, or promptfoo's `__description`), the
//! expected answer (`expected`, or promptfoo's `__expected` when it holds JSON; an array is items,
//! anything else a value) and its checks (`checks`: tables as `[[cases.checks]]` writes them).

use std::path::Path;

use serde_json::{Map, Value};

use super::DatasetError;
use crate::prompt::expect::{parse_check, At, Expected, FieldValue, Place, Places};
use crate::prompt::file::Case;

/// Where a row is: its file and the line it starts on (1-based).
#[derive(Clone, Copy, Debug)]
pub struct RowAt<'a> {
    pub path: &'a Path,
    pub line: usize,
}

impl RowAt<'_> {
    /// A bad row: `file:line: message`.
    pub fn error(&self, message: impl Into<String>) -> DatasetError {
        DatasetError { at: format!("{}:{}", self.path.display(), self.line), message: message.into() }
    }

    /// A bad field of the row: `file:line: column `name`: message` in a CSV, `key `name`` elsewhere.
    fn field_error(&self, how: Cells, field: &str, message: impl std::fmt::Display) -> DatasetError {
        let what = match how {
            Cells::Text => "column",
            Cells::Json => "key",
        };
        self.error(format!("{what} `{field}`: {message}"))
    }

    fn place(&self) -> Place {
        Place { path: self.path.to_path_buf(), line: self.line, column: 1 }
    }
}

/// How a row's values are written: JSON values (JSONL, YAML), or text cells (CSV), where `expected`,
/// `__expected` and `checks` hold JSON text and an empty cell is no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cells {
    Json,
    Text,
}

/// The keys a row may hold besides its variables.
const NAME_KEYS: [&str; 2] = ["name", "__description"];

/// The case `row` (read at `at`) writes.
pub fn case_of(mut row: Map<String, Value>, how: Cells, at: RowAt<'_>) -> Result<Case, DatasetError> {
    if how == Cells::Text {
        // An empty cell says nothing (a column not every row fills).
        for key in ["name", "__description", "expect", "expected", "__expected", "checks", "pass_score"] {
            if row.get(key).and_then(Value::as_str).is_some_and(|cell| cell.trim().is_empty()) {
                row.remove(key);
            }
        }
    }
    let name = name_of(&mut row, how, at)?;
    let expect = match row.remove("expect") {
        None | Some(Value::Null) => None,
        Some(Value::String(notes)) => Some(notes),
        Some(other) => return Err(at.field_error(how, "expect", format!("notes in words, not {}", kind(&other)))),
    };
    let expected = expected_of(&mut row, how, at)?;
    let checks = match row.remove("checks") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => checks_of(json_in(value, how, "checks", at)?, how, at)?,
    };
    let pass_score = match row.remove("pass_score") {
        None | Some(Value::Null) => None,
        Some(value) => match json_in(value, how, "pass_score", at)? {
            Value::Number(n) if n.as_f64().is_some_and(|n| n.is_finite() && n >= 0.0) => n.as_f64(),
            other => {
                return Err(at.field_error(how, "pass_score", format!("a number, 0 or more, not {}", kind(&other))))
            }
        },
    };
    let variables = variables_of(row, how, at)?;
    Ok(Case { name, expect, variables, expected, checks, pass_score })
}

fn name_of(row: &mut Map<String, Value>, how: Cells, at: RowAt<'_>) -> Result<String, DatasetError> {
    let mut name = None;
    for key in NAME_KEYS {
        match row.remove(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) if !text.trim().is_empty() => {
                name.get_or_insert(text);
            }
            Some(other) => return Err(at.field_error(how, key, format!("a name is non-empty text, not {other}"))),
        }
    }
    Ok(name.unwrap_or_else(|| format!("line-{}", at.line)))
}

/// `expected` (a JSON value; in a CSV, JSON text) or promptfoo's `__expected` (JSON text).
fn expected_of(row: &mut Map<String, Value>, how: Cells, at: RowAt<'_>) -> Result<Option<Expected>, DatasetError> {
    let value = match (row.remove("expected"), row.remove("__expected")) {
        (Some(_), Some(_)) => {
            return Err(at.error("both `expected` and `__expected` are given; a case has one expected answer"))
        }
        (Some(value), None) => json_in(value, how, "expected", at)?,
        (None, Some(Value::String(text))) => serde_json::from_str(&text).map_err(|e| {
            at.field_error(
                how,
                "__expected",
                format!(
                    "{:?} is not JSON ({e}); an expected answer is read from JSON alone (promptfoo's assertions such as `contains:` are not read here)",
                    clip(&text)
                ),
            )
        })?,
        (None, Some(value)) => value,
        (None, None) => return Ok(None),
    };
    let place = || At(Some(at.place()));
    Ok(match value {
        Value::Null => None,
        Value::Array(items) => {
            let item_at = Places(items.iter().map(|_| place()).collect());
            Some(Expected { at: place(), item_at, ..Expected::items(items) })
        }
        value => Some(Expected { at: place(), item_at: Places(vec![place()]), ..Expected::value(value) }),
    })
}

/// A field that holds JSON: as is in a JSON row, parsed from its text in a CSV cell.
fn json_in(value: Value, how: Cells, field: &str, at: RowAt<'_>) -> Result<Value, DatasetError> {
    match (how, value) {
        (Cells::Text, Value::String(text)) => serde_json::from_str(&text)
            .map_err(|e| at.field_error(how, field, format!("{:?} is not JSON: {e}", clip(&text)))),
        (_, value) => Ok(value),
    }
}

/// The row's checks: an array of tables, each as `[[cases.checks]]` writes one.
fn checks_of(value: Value, how: Cells, at: RowAt<'_>) -> Result<Vec<crate::prompt::expect::CheckSpec>, DatasetError> {
    let Value::Array(tables) = value else {
        return Err(at.field_error(how, "checks", format!("a list of check tables, not {}", kind(&value))));
    };
    let mut checks = Vec::with_capacity(tables.len());
    for (index, table) in tables.into_iter().enumerate() {
        let Value::Object(fields) = table else {
            return Err(at.field_error(how, "checks", format!("check {} is {}, not a table", index + 1, kind(&table))));
        };
        let fields = fields.into_iter().map(|(k, v)| (k, FieldValue::Json(v), 0..0)).collect();
        let check = parse_check(fields, At(Some(at.place())))
            .map_err(|(_, message)| at.field_error(how, "checks", format!("check {}: {message}", index + 1)))?;
        checks.push(check);
    }
    Ok(checks)
}

/// The row's variables: its `vars` (or `variables`) object, else every other key or column.
fn variables_of(mut row: Map<String, Value>, how: Cells, at: RowAt<'_>) -> Result<Map<String, Value>, DatasetError> {
    if let Some(key) = row.keys().find(|k| k.starts_with("__")) {
        return Err(at.field_error(
            how,
            key,
            "of promptfoo's `__` fields only __expected and __description are read; rename it if it is a variable",
        ));
    }
    let nested = match (row.remove("vars"), row.remove("variables")) {
        (Some(_), Some(_)) => return Err(at.error("both `vars` and `variables` are given; give one")),
        (Some(vars), None) => Some(("vars", vars)),
        (None, Some(vars)) => Some(("variables", vars)),
        (None, None) => None,
    };
    match nested {
        None => Ok(row),
        Some((key, Value::Object(vars))) => match row.keys().next() {
            Some(other) => Err(at.field_error(
                how,
                other,
                format!("unknown beside `{key}` (a row holds name, expect, expected, checks, pass_score and {key})"),
            )),
            None => Ok(vars),
        },
        Some((key, other)) => Err(at.field_error(how, key, format!("an object of variables, not {}", kind(&other)))),
    }
}

/// What a JSON value is, in words.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// At most the first 60 characters of `text`, to quote it in an error.
fn clip(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
