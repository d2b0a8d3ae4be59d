//! A JSONL dataset read line by line: each line is one row (a JSON object), blank lines skipped; a
//! line is never longer than [`ROW_BYTES`] in memory, and the file is never held whole.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use super::row::{kind, Cells, RowAt};
use super::{open, DatasetError, Take, ROW_BYTES};

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    let mut reader = BufReader::new(open(path)?);
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        number += 1;
        let at = RowAt { path, line: number };
        let read = (&mut reader)
            .take(ROW_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > ROW_BYTES && line.last() != Some(&b'\n') {
            return Err(at.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take")));
        }
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let bytes = if number == 1 { bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes) } else { bytes };
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
        take(row, Cells::Json, at)?;
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
