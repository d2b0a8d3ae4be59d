//! A JSONL dataset read line by line: each line is one row (a JSON object), blank lines skipped; a
//! line is never longer than [`ROW_BYTES`] in memory, and the file is never held whole. Each row's
//! byte offset is known, so one row can be read again alone ([`scan`] from its offset).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::{Map, Value};

use super::row::{kind, Cells, RowAt};
use super::{open, DatasetError, Take, ROW_BYTES};

/// What [`scan`] hands each row to: its keys, where it is and its byte offset; `false` stops the scan.
pub(super) type TakeAt<'a> = dyn FnMut(Map<String, Value>, Cells, RowAt<'_>, u64) -> Result<bool, DatasetError> + 'a;

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    scan(path, 0, 1, &mut |row, how, at, _| take(row, how, at).map(|()| true))
}

/// Reads the rows from byte `offset` of the file (where line `first_line` starts), each handed to
/// `take` with the byte offset it starts at, until the file ends or `take` returns `false`.
pub(super) fn scan(path: &Path, offset: u64, first_line: usize, take: &mut TakeAt<'_>) -> Result<(), DatasetError> {
    let mut file = open(path)?;
    file.seek(SeekFrom::Start(offset)).map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut number = first_line.saturating_sub(1);
    let mut start = offset;
    loop {
        line.clear();
        number += 1;
        let at = RowAt { path, line: number };
        let read = (&mut reader)
            .take(ROW_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
        let row_start = start;
        start += read as u64;
        if read == 0 {
            return Ok(());
        }
        if line.len() > ROW_BYTES && line.last() != Some(&b'\n') {
            return Err(at.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take")));
        }
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let bytes = if row_start == 0 { bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes) } else { bytes };
        let text = std::str::from_utf8(bytes).map_err(|e| not_utf8(path, number, bytes, &e))?;
        if text.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(text).map_err(|e| at.error(format!("not JSON: {e}")))?;
        let Value::Object(row) = value else {
            return Err(at.error(format!(
                "expected a JSON object (a row: its variables, or name/vars/expected/checks), not {}",
                kind(&value)
            )));
        };
        if !take(row, Cells::Json, at, row_start)? {
            return Ok(());
        }
    }
}

/// `file:line:column: not UTF-8 (byte 0x..)`, the column counted in characters.
pub(super) fn not_utf8(path: &Path, line: usize, bytes: &[u8], e: &std::str::Utf8Error) -> DatasetError {
    let good = bytes.get(..e.valid_up_to()).unwrap_or_default();
    let column = String::from_utf8_lossy(good).chars().count() + 1;
    let byte = bytes.get(e.valid_up_to()).copied().unwrap_or_default();
    DatasetError {
        at: format!("{}:{line}:{column}", path.display()),
        message: format!("not UTF-8 (byte 0x{byte:02x}); a dataset is UTF-8 text"),
    }
}
