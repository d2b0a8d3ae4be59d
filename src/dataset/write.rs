//! Writing edits back into the rows of a dataset (an approve's expected answer, a case's variables
//! edited in the workbench): each row found by its case name, only its bytes rewritten (JSONL: its
//! line, as compact JSON in its own key order; CSV: its record, quoted as the csv writer quotes, its
//! line ending kept), every other byte of the file kept, and the file replaced atomically once.
//!
//! A row that no longer says what it said when it was read (changed outside, by an editor or a
//! colleague's pull) is not overwritten: nothing is written and the error names the row.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use serde_json::{Map, Value};

use super::row::{case_of, Cells, RowAt};
use super::{DatasetError, Format, DATASET};
use crate::prompt::file::{Case, DatasetCases, PromptFile};
use crate::prompt::template::Variables;

/// One row's edit: which case, what it said when read (checked against the file now), and what
/// changes (its variables, its expected answer, or both; `None` leaves that part as it is).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowEdit<'a> {
    pub case: &'a str,
    pub was: Option<&'a Case>,
    pub variables: Option<&'a Variables>,
    pub expected: Option<&'a Value>,
}

/// The keys of a JSON row that are not variables.
const CASE_KEYS: [&str; 7] = ["name", "__description", "expect", "expected", "__expected", "checks", "pass_score"];

/// Writes `expected` as the expected answer of the row named `case` in the dataset at `path`.
pub fn write_expected(path: &Path, case: &str, expected: &Value) -> Result<(), DatasetError> {
    write_rows(path, &[RowEdit { case, expected: Some(expected), ..RowEdit::default() }])
}

/// Writes every edit of `edits` into its row of the dataset at `path`, in one atomic replace; when
/// one row cannot be written (not found, changed outside, a variable with no CSV column) nothing is.
pub fn write_rows(path: &Path, edits: &[RowEdit<'_>]) -> Result<(), DatasetError> {
    if edits.is_empty() {
        return Ok(());
    }
    let text = crate::files::read_text(path, DATASET).map_err(|e| DatasetError::file(path, e.problem.to_string()))?;
    let wanted: HashMap<&str, &RowEdit> = edits.iter().map(|e| (e.case, e)).collect();
    let mut rows = match Format::of(path)? {
        Format::Jsonl => jsonl_rows(path, &text, &wanted)?,
        Format::Csv => csv_rows(path, &text, &wanted)?,
        Format::Yaml => {
            return Err(DatasetError::file(
                path,
                "an edit is written back into a JSONL or CSV dataset; a YAML one is edited by hand",
            ))
        }
    };
    if let Some(missing) = edits.iter().find(|e| !rows.iter().any(|(_, name, _)| name == e.case)) {
        return Err(DatasetError::file(path, format!("no row is the case {:?}; nothing was written", missing.case)));
    }
    rows.sort_by_key(|(range, _, _)| range.start);
    let mut new = String::with_capacity(text.len() + 64 * rows.len());
    let mut from = 0;
    for (range, _, row) in &rows {
        new.push_str(text.get(from..range.start).unwrap_or_default());
        new.push_str(row);
        from = range.end;
    }
    new.push_str(text.get(from..).unwrap_or_default());
    if new == text {
        return Ok(());
    }
    crate::prompt::file::write_atomic(path, &new).map_err(|e| DatasetError::file(path, e.to_string()))
}

/// The cases of `prompt` laid out as a save needs them: `cases` as edited (in any order, inline ones
/// added among the rows), the inline ones first and then the rows of its dataset (`prompt.dataset`:
/// a case is a row when a row of that name was read), each row keeping the line it was read from.
pub fn place_rows(prompt: &mut PromptFile, cases: Vec<Case>) {
    let Some(dataset) = prompt.dataset.take() else {
        prompt.cases = cases;
        return;
    };
    let lines: HashMap<&str, usize> = prompt
        .cases
        .iter()
        .skip(dataset.first)
        .zip(&dataset.lines)
        .map(|(case, line)| (case.name.as_str(), *line))
        .collect();
    let (rows, inline): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(|c| lines.contains_key(c.name.as_str()));
    let row_lines = rows.iter().map(|c| lines.get(c.name.as_str()).copied().unwrap_or_default()).collect();
    let first = inline.len();
    prompt.cases = inline;
    prompt.cases.extend(rows);
    prompt.dataset = Some(DatasetCases { path: dataset.path, first, lines: row_lines });
}

/// Writes into the dataset the rows `after` (the prompt as edited, laid out by [`place_rows`])
/// changed from `before` (as read or last saved): each changed row's variables, nothing else of the
/// file, in one atomic write; a row changed on disk since, or a row deleted in the workbench (a
/// dataset's rows are deleted in its file), is an error and nothing is written. Returns how many rows
/// were written.
pub fn save_edits(before: &PromptFile, after: &PromptFile) -> Result<usize, DatasetError> {
    let (Some(was), Some(now)) = (&before.dataset, &after.dataset) else { return Ok(0) };
    let rows_before = before.cases.get(was.first..).unwrap_or_default();
    let rows_now: HashMap<&str, &Case> =
        after.cases.get(now.first..).unwrap_or_default().iter().map(|c| (c.name.as_str(), c)).collect();
    let mut edits = Vec::new();
    for old in rows_before {
        let Some(new) = rows_now.get(old.name.as_str()) else {
            return Err(DatasetError::file(
                &was.path,
                format!("case {:?} is a row of this file: delete it there (the workbench edits rows, it does not delete them); nothing was saved", old.name),
            ));
        };
        if new.variables != old.variables {
            edits.push(RowEdit { case: &old.name, was: Some(old), variables: Some(&new.variables), expected: None });
        }
    }
    write_rows(&was.path, &edits)?;
    Ok(edits.len())
}

/// The row's name as the reader gives it (`name`, `__description`, else `line-N`).
fn name_of(row: &Map<String, Value>, line: usize) -> String {
    ["name", "__description"]
        .iter()
        .find_map(|key| row.get(*key).and_then(Value::as_str).filter(|n| !n.trim().is_empty()))
        .map_or_else(|| format!("line-{line}"), str::to_string)
}

/// Refuses the edit when the part of the row it writes (its variables, its expected answer) no longer
/// says what it said when read (a part that already says what the edit writes is no conflict: a save
/// tried again). An expected answer is the answer to the row's variables: it is refused too when they
/// changed. What the edit leaves alone may have changed otherwise: it is kept as the file has it.
fn unchanged(edit: &RowEdit<'_>, row: &Map<String, Value>, how: Cells, at: RowAt<'_>) -> Result<(), DatasetError> {
    let Some(was) = edit.was else { return Ok(()) };
    let now = case_of(row.clone(), how, at).ok();
    let same = now.as_ref().is_some_and(|now| {
        let expected = |c: &Case| c.expected.as_ref().map(|e| (e.value.clone(), e.items.clone()));
        let variables_kept = match (edit.variables, edit.expected) {
            (Some(new), _) => now.variables == was.variables || now.variables == *new,
            (None, Some(_)) => now.variables == was.variables,
            (None, None) => true,
        };
        let written = |new: &Value| match new {
            Value::Array(items) => Some((None, Some(items.clone()))),
            Value::Null => None,
            value => Some((Some(value.clone()), None)),
        };
        let expected_kept =
            edit.expected.is_none_or(|new| expected(now) == expected(was) || expected(now) == written(new));
        variables_kept && expected_kept
    });
    if same {
        Ok(())
    } else {
        Err(at.error(format!(
            "the row of case {:?} changed on disk (outside tunebench) since it was read; nothing was written (read the file again to keep both edits)",
            edit.case
        )))
    }
}

/// A JSON value as a CSV cell writes it: text as is, anything else as JSON text.
fn cell_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The variables laid into a JSON row: its `vars`/`variables` object when it has one, else its own
/// keys (a variable no longer given is removed; kept ones stay where they were, new ones go last).
fn set_variables(row: &mut Map<String, Value>, variables: &Variables) {
    let nested = ["vars", "variables"].into_iter().find(|k| row.get(*k).is_some_and(Value::is_object));
    let old = match nested {
        Some(key) => match row.get_mut(key) {
            Some(Value::Object(vars)) => std::mem::take(vars),
            _ => return,
        },
        None => std::mem::take(row),
    };
    let mut out = Map::new();
    for (key, value) in old {
        if nested.is_none() && CASE_KEYS.contains(&key.as_str()) {
            out.insert(key, value);
        } else if let Some(new) = variables.get(&key) {
            out.insert(key, new.clone());
        }
    }
    for (key, value) in variables {
        if !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    match nested.and_then(|key| row.get_mut(key)) {
        Some(vars) => *vars = Value::Object(out),
        None => *row = out,
    }
}

/// Each wanted JSONL row: the byte range of its line (line ending left out), its name and the line
/// rewritten.
fn jsonl_rows(
    path: &Path,
    text: &str,
    wanted: &HashMap<&str, &RowEdit>,
) -> Result<Vec<(Range<usize>, String, String)>, DatasetError> {
    let mut out = Vec::new();
    let mut start = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let end = start + line.trim_end_matches(['\n', '\r']).len();
        let body = text.get(start..end).unwrap_or_default();
        let body = if index == 0 { body.strip_prefix('\u{feff}').unwrap_or(body) } else { body };
        if let Ok(Value::Object(mut row)) = serde_json::from_str::<Value>(body) {
            let name = name_of(&row, index + 1);
            if let Some(edit) = wanted.get(name.as_str()) {
                unchanged(edit, &row, Cells::Json, RowAt { path, line: index + 1 })?;
                if let Some(variables) = edit.variables {
                    set_variables(&mut row, variables);
                }
                if let Some(expected) = edit.expected {
                    // promptfoo's `__expected` (JSON text) keeps its key when the row has no `expected`.
                    let promptfoo =
                        !row.contains_key("expected") && row.get("__expected").is_some_and(Value::is_string);
                    if promptfoo {
                        row.insert("__expected".into(), Value::String(expected.to_string()));
                    } else {
                        row.insert("expected".into(), expected.clone());
                    }
                }
                let from = end - body.len();
                out.push((from..end, name, Value::Object(row).to_string()));
            }
        }
        start += line.len();
    }
    Ok(out)
}

/// Each wanted CSV record: the byte range of its record (line ending left out), its name and the
/// record rewritten.
fn csv_rows(
    path: &Path,
    text: &str,
    wanted: &HashMap<&str, &RowEdit>,
) -> Result<Vec<(Range<usize>, String, String)>, DatasetError> {
    let bad = |e: csv::Error| DatasetError::file(path, e.to_string());
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(bad)?.clone();
    let names: Vec<String> = headers.iter().map(|h| h.trim_start_matches('\u{feff}').trim().to_string()).collect();
    let column = |name: &str| names.iter().position(|h| h == name);
    let mut out = Vec::new();
    let mut record = csv::StringRecord::new();
    let (mut counted, mut newlines) = (0, 0);
    loop {
        let start = reader.position().byte() as usize;
        if !reader.read_record(&mut record).map_err(bad)? {
            return Ok(out);
        }
        let start = record.position().map_or(start, |p| p.byte() as usize);
        // The reader may place a record at the line ending before it: its text starts after.
        let start = start + text.get(start..).map_or(0, |t| t.len() - t.trim_start_matches(['\n', '\r']).len());
        newlines += text.get(counted..start).map_or(0, |t| t.matches('\n').count());
        counted = start;
        let line = newlines + 1;
        let row: Map<String, Value> =
            names.iter().zip(record.iter()).map(|(h, c)| (h.clone(), Value::String(c.into()))).collect();
        let name = name_of(&row, line);
        let Some(edit) = wanted.get(name.as_str()) else { continue };
        let at = RowAt { path, line };
        unchanged(edit, &row, Cells::Text, at)?;
        let raw_end = reader.position().byte() as usize;
        let raw = text.get(start..raw_end).unwrap_or_default();
        let end = start + raw.trim_end_matches(['\n', '\r']).len();
        let mut cells: Vec<String> = record.iter().map(str::to_string).collect();
        if let Some(variables) = edit.variables {
            for (key, value) in variables {
                let Some(cell) = column(key).and_then(|i| cells.get_mut(i)) else {
                    return Err(at.error(format!(
                        "no column `{key}` for the variable of case {name:?}; add the column to the file first"
                    )));
                };
                *cell = cell_text(value);
            }
            let was = edit.was.map(|c| &c.variables);
            if let Some(gone) = was.and_then(|w| w.keys().find(|k| !variables.contains_key(*k))) {
                return Err(at.error(format!(
                    "every row of a CSV gives every column: the variable `{gone}` cannot leave case {name:?} alone"
                )));
            }
        }
        if let Some(expected) = edit.expected {
            let Some(target) = column("expected").or_else(|| column("__expected")) else {
                return Err(DatasetError::file(
                    path,
                    "no `expected` column to write the answer into; add one (an empty cell is no expected answer)",
                ));
            };
            if let Some(cell) = cells.get_mut(target) {
                *cell = expected.to_string();
            }
        }
        let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        writer.write_record(&cells).map_err(bad)?;
        let bytes = writer.into_inner().map_err(|e| DatasetError::file(path, e.to_string()))?;
        let written = String::from_utf8(bytes).map_err(|e| DatasetError::file(path, e.to_string()))?;
        out.push((start..end, name, written.trim_end_matches('\n').to_string()));
    }
}
