//! Writing an expected answer back into one row of a dataset (an approve): the row found by its case
//! name, only its bytes rewritten (JSONL: its line, as compact JSON in its own key order; CSV: its
//! record, quoted as the csv writer quotes, its line ending kept), the file replaced atomically.

use std::path::Path;

use serde_json::{Map, Value};

use super::{DatasetError, Format, DATASET};

/// Writes `expected` as the expected answer of the row named `case` in the dataset at `path`.
pub fn write_expected(path: &Path, case: &str, expected: &Value) -> Result<(), DatasetError> {
    let text = crate::files::read_text(path, DATASET).map_err(|e| DatasetError::file(path, e.problem.to_string()))?;
    let (range, row) = match Format::of(path)? {
        Format::Jsonl => jsonl_row(path, &text, case, expected)?,
        Format::Csv => csv_row(path, &text, case, expected)?,
        Format::Yaml => {
            return Err(DatasetError::file(
                path,
                "an answer is written back into a JSONL or CSV dataset; a YAML one is edited by hand",
            ))
        }
    };
    let mut new = String::with_capacity(text.len() + row.len());
    new.push_str(text.get(..range.start).unwrap_or_default());
    new.push_str(&row);
    new.push_str(text.get(range.end..).unwrap_or_default());
    crate::prompt::file::write_atomic(path, &new).map_err(|e| DatasetError::file(path, e.to_string()))
}

/// The row's name as the reader gives it (`name`, `__description`, else `line-N`).
fn name_of(row: &Map<String, Value>, line: usize) -> String {
    ["name", "__description"]
        .iter()
        .find_map(|key| row.get(*key).and_then(Value::as_str).filter(|n| !n.trim().is_empty()))
        .map_or_else(|| format!("line-{line}"), str::to_string)
}

fn not_found(path: &Path, case: &str) -> DatasetError {
    DatasetError::file(path, format!("no row is the case {case:?}; nothing was written"))
}

/// The byte range of the JSONL line of `case` (its line ending left out) and the line rewritten.
fn jsonl_row(
    path: &Path,
    text: &str,
    case: &str,
    expected: &Value,
) -> Result<(std::ops::Range<usize>, String), DatasetError> {
    let mut start = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let end = start + line.trim_end_matches(['\n', '\r']).len();
        let body = text.get(start..end).unwrap_or_default();
        let body = if index == 0 { body.strip_prefix('\u{feff}').unwrap_or(body) } else { body };
        if let Ok(Value::Object(mut row)) = serde_json::from_str::<Value>(body) {
            if name_of(&row, index + 1) == case {
                // promptfoo's `__expected` (JSON text) keeps its key when the row has no `expected`.
                let promptfoo = !row.contains_key("expected") && row.get("__expected").is_some_and(Value::is_string);
                if promptfoo {
                    row.insert("__expected".into(), Value::String(expected.to_string()));
                } else {
                    row.insert("expected".into(), expected.clone());
                }
                let from = end - body.len();
                return Ok((from..end, Value::Object(row).to_string()));
            }
        }
        start += line.len();
    }
    Err(not_found(path, case))
}

/// The byte range of the CSV record of `case` (its line ending left out) and the record rewritten.
fn csv_row(
    path: &Path,
    text: &str,
    case: &str,
    expected: &Value,
) -> Result<(std::ops::Range<usize>, String), DatasetError> {
    let bad = |e: csv::Error| DatasetError::file(path, e.to_string());
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(bad)?.clone();
    let column = |name: &str| headers.iter().position(|h| h.trim_start_matches('\u{feff}').trim() == name);
    let Some(target) = column("expected").or_else(|| column("__expected")) else {
        return Err(DatasetError::file(
            path,
            "no `expected` column to write the answer into; add one (an empty cell is no expected answer)",
        ));
    };
    let mut record = csv::StringRecord::new();
    loop {
        let start = reader.position().byte() as usize;
        if !reader.read_record(&mut record).map_err(bad)? {
            return Err(not_found(path, case));
        }
        let line = record.position().map_or(0, |p| p.line() as usize);
        let start = record.position().map_or(start, |p| p.byte() as usize);
        let row: Map<String, Value> =
            headers.iter().zip(record.iter()).map(|(h, c)| (h.trim().to_string(), Value::String(c.into()))).collect();
        if name_of(&row, line) != case {
            continue;
        }
        let raw_end = reader.position().byte() as usize;
        let raw = text.get(start..raw_end).unwrap_or_default();
        let end = start + raw.trim_end_matches(['\n', '\r']).len();
        let mut cells: Vec<String> = record.iter().map(str::to_string).collect();
        if let Some(cell) = cells.get_mut(target) {
            *cell = expected.to_string();
        }
        let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        writer.write_record(&cells).map_err(bad)?;
        let bytes = writer.into_inner().map_err(|e| DatasetError::file(path, e.to_string()))?;
        let written = String::from_utf8(bytes).map_err(|e| DatasetError::file(path, e.to_string()))?;
        return Ok((start..end, written.trim_end_matches('\n').to_string()));
    }
}
