//! Positions in a prompt file: byte offsets to line:column, and JSON errors inside a TOML string.

use std::ops::Range;

use serde_json::Value;

/// Parses the JSON text of `schema = '''…'''`; errors point into the TOML file when the string is
/// written without escapes (positions are exact), else into the string.
pub(super) fn parse_schema_text(file: &str, span: Range<usize>, json: &str) -> Result<Value, (usize, usize, String)> {
    let json_no_bom = json.strip_prefix('\u{feff}').unwrap_or(json);
    serde_json::from_str(json_no_bom).map_err(|e| {
        let message = format!("`schema` is not JSON: {e}");
        let offset_in_json = offset_of(json, e.line(), e.column());
        match content_start(file, span, json) {
            Some(start) => {
                let (line, column) = line_col(file, start + offset_in_json);
                (line, column, message)
            }
            None => (e.line(), e.column(), format!("{message} (line and column within the string)")),
        }
    })
}

/// Where the characters of a TOML string start in the file, when the raw text equals the value.
fn content_start(file: &str, span: Range<usize>, value: &str) -> Option<usize> {
    let raw = file.get(span.clone())?;
    let start_in_raw = if raw.starts_with("'''") || raw.starts_with("\"\"\"") {
        let after = &raw[3..];
        3 + if after.starts_with("\r\n") {
            2
        } else if after.starts_with('\n') {
            1
        } else {
            0
        }
    } else {
        1
    };
    let inner = raw.get(start_in_raw..)?;
    inner.starts_with(value).then_some(span.start + start_in_raw)
}

/// Byte offset of serde_json's 1-based (line, column) in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// 1-based line and column (in characters) of byte offset `at` in `text`.
pub(super) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}
