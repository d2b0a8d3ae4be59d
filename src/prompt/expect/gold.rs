//! An `expected_file` read: a `.jsonl` file is items (one JSON value per non-blank line), any other
//! file one JSON value (an array is items, anything else the expected value). Each item keeps its
//! place (file:line), so a bad expected item is reported where it is written.

use std::path::Path;

use serde_json::Value;

use super::{At, Place};
use crate::files;
use crate::prompt::file::{named, PromptError};

/// What the file holds: items or one value, each with its place.
pub(crate) enum Gold {
    Items(Vec<Value>, Vec<At>),
    Value(Value, At),
}

/// Reads the expected file `name` (relative to `base_dir`, the prompt's folder, and inside it) of the
/// `[cases.expected]` table written at `at`.
pub(crate) fn read(base_dir: &Path, name: &Path, at: Option<&Place>) -> Result<Gold, PromptError> {
    let (path, text) = named::read(base_dir, "expected_file", name, at, files::EXPECTED_FILE)?;
    let path = path.as_path();
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let place = |line: usize, column: usize| At(Some(Place { path: path.to_path_buf(), line, column }));
    let invalid = |line: usize, column: usize, message: String| PromptError::Invalid {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson")) {
        let mut items = Vec::new();
        let mut places = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let item: Value = serde_json::from_str(line)
                .map_err(|e| invalid(index + 1, e.column(), format!("an expected item is not JSON: {e}")))?;
            items.push(item);
            places.push(place(index + 1, 1));
        }
        return Ok(Gold::Items(items, places));
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| invalid(e.line(), e.column(), format!("the expected answer is not JSON: {e}")))?;
    Ok(match value {
        Value::Array(items) => {
            let places = vec![place(1, 1); items.len()];
            Gold::Items(items, places)
        }
        value => Gold::Value(value, place(1, 1)),
    })
}
