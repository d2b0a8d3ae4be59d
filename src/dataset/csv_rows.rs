//! A CSV dataset read record by record (the csv crate's reader): the header names the columns, each
//! record is one row of text cells; a record longer than [`ROW_BYTES`] is refused.

use std::io::BufReader;
use std::path::Path;

use serde_json::{Map, Value};

use super::jsonl::not_utf8;
use super::row::{Cells, RowAt};
use super::{open, DatasetError, Take, ROW_BYTES};

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    let file = BufReader::new(open(path)?);
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(file);
    let headers = reader.byte_headers().map_err(|e| csv_error(path, &e))?.clone();
    let mut columns: Vec<String> = Vec::with_capacity(headers.len());
    for (index, header) in headers.iter().enumerate() {
        let header = if index == 0 { header.strip_prefix("\u{feff}".as_bytes()).unwrap_or(header) } else { header };
        let name = std::str::from_utf8(header).map_err(|e| not_utf8(path, 1, header, &e))?.trim().to_string();
        let at = RowAt { path, line: 1 };
        if name.is_empty() {
            return Err(at.error(format!("column {} has no name; the first line names every column", index + 1)));
        }
        if columns.contains(&name) {
            return Err(at.error(format!("two columns are named `{name}`")));
        }
        columns.push(name);
    }
    let mut record = csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, &e)),
        }
        let line = record.position().map_or(0, |p| p.line() as usize);
        let at = RowAt { path, line };
        if record.as_slice().len() > ROW_BYTES {
            return Err(at.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take")));
        }
        let mut row = Map::with_capacity(columns.len());
        for (column, cell) in columns.iter().zip(record.iter()) {
            let text = std::str::from_utf8(cell).map_err(|e| {
                let error = not_utf8(path, line, cell, &e);
                at.error(format!("column `{column}`: {}", error.message))
            })?;
            row.insert(column.clone(), Value::String(text.to_string()));
        }
        take(row, Cells::Text, at)?;
    }
}

/// A record the csv reader refused (a row of another width, a read error), at its line.
fn csv_error(path: &Path, e: &csv::Error) -> DatasetError {
    let line = e.position().map(|p| p.line() as usize);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("a row of {len} cells; the header names {expected_len} columns")
        }
        csv::ErrorKind::Io(io) => format!("cannot read: {io}"),
        _ => e.to_string(),
    };
    match line {
        Some(line) => RowAt { path, line }.error(message),
        None => DatasetError::file(path, message),
    }
}
