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

/// A text's lines and characters, counted once: any byte offset to its line and column in a
/// bounded number of steps (a prompt file places every case, item and check it reads, and one
/// line may hold thousands of them).
pub(super) struct Lines<'a> {
    text: &'a str,
    /// The byte offset where each line starts.
    starts: Vec<usize>,
    /// The characters before every [`STEP`]th byte.
    chars: Vec<usize>,
}

/// Bytes between two character counts of [`Lines`].
const STEP: usize = 256;

impl<'a> Lines<'a> {
    pub(super) fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let mut chars = vec![0];
        let mut count = 0;
        for block in text.as_bytes().chunks(STEP) {
            count += block.iter().filter(|&&b| !is_continuation(b)).count();
            chars.push(count);
        }
        Lines { text, starts, chars }
    }

    /// 1-based line and column (in characters) of byte offset `at`, as [`line_col`] gives it.
    pub(super) fn line_col(&self, at: usize) -> (usize, usize) {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        // The last line start at or before `at`; the first start is 0, so there is one.
        let line = self.starts.partition_point(|&start| start <= at).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        (line, self.chars_before(at) - self.chars_before(start) + 1)
    }

    /// The characters before byte offset `at` (a character boundary).
    fn chars_before(&self, at: usize) -> usize {
        let block = at / STEP;
        let counted = self.chars.get(block).copied().unwrap_or(0);
        let rest = self.text.as_bytes().get(block * STEP..at).unwrap_or_default();
        counted + rest.iter().filter(|&&b| !is_continuation(b)).count()
    }
}

/// A UTF-8 byte that continues a character (`10xxxxxx`).
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_place_every_offset_as_line_col_does() {
        let long = format!("items = [{}]", "{ a = \"é\u{1f600}\" }, ".repeat(100));
        let text = format!("a = 1\nname = \"é\u{1f600}x\"\r\n\n[[cases]]\n{long}\nz");
        let lines = Lines::new(&text);
        for at in 0..=text.len() + 2 {
            assert_eq!(lines.line_col(at), line_col(&text, at), "at {at}");
        }
        assert_eq!(Lines::new("").line_col(0), (1, 1));
    }
}
