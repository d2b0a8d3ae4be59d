//! Model output is untrusted: control characters and escape sequences are shown escaped, never sent raw.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character except newline and tab written as a visible escape
/// (`\u{1b}` for ESC, `\r` for carriage return), so nothing in it can drive the terminal.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON text with every character that could drive a terminal and that serde_json writes raw (C1
/// controls such as U+009B, the 8-bit CSI; DEL; bidirectional overrides) written as a `\uXXXX` escape:
/// the same JSON value, safe to print. Such characters occur only inside strings, so the result is
/// valid JSON whenever `json` is (serde_json already escapes C0 controls).
pub fn escape_json_text(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 12);
    for c in json.chars() {
        if needs_escape(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that passes JSON text on with [`escape_json_text`]'s escapes, as it is written: a report
/// serialized straight into it is never held whole. A character split across two writes waits for
/// its last bytes; bytes that are not UTF-8 pass on as they are (serde_json writes none).
pub struct JsonEscaping<W: std::io::Write> {
    out: W,
    pending: Vec<u8>,
}

impl<W: std::io::Write> JsonEscaping<W> {
    pub fn new(out: W) -> Self {
        JsonEscaping { out, pending: Vec::new() }
    }

    /// The writer it writes to (after a flush, what was written is there).
    pub fn into_inner(mut self) -> std::io::Result<W> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.out.write_all(&rest)?;
        }
        Ok(self.out)
    }
}

impl<W: std::io::Write> std::io::Write for JsonEscaping<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(text) => text.len(),
            // An incomplete character at the end waits; bytes that are not UTF-8 go on as they are.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let head: Vec<u8> = self.pending.drain(..valid).collect();
        match std::str::from_utf8(&head) {
            Ok(text) => self.out.write_all(escape_json_text(text).as_bytes())?,
            Err(_) => self.out.write_all(&head)?,
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escaping_writer_writes_what_escape_json_text_gives_whatever_the_writes_split() {
        use std::io::Write;
        let text = "{\"a\": \"esc \u{1b}[31m, bidi \u{202e}, é, 日本\"}";
        for size in [1, 2, 3, 7, 100] {
            let mut writer = JsonEscaping::new(Vec::new());
            for piece in text.as_bytes().chunks(size) {
                writer.write_all(piece).unwrap();
            }
            let written = String::from_utf8(writer.into_inner().unwrap()).unwrap();
            assert_eq!(written, escape_json_text(text), "writes of {size} bytes");
        }
    }

    #[test]
    fn escapes_terminal_sequences_and_keeps_text() {
        assert_eq!(escape_controls("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(escape_controls("\u{1b}[2Jgone\r\u{7}"), "\\u{1b}[2Jgone\\r\\u{7}");
        assert_eq!(escape_controls("bidi\u{202e}x"), "bidi\\u{202e}x");
    }

    #[test]
    fn json_text_keeps_its_value_with_terminal_controls_escaped() {
        let value = serde_json::json!({"a": "x\u{1b}[2J\u{9b}31m\u{7f}\u{202e}y\né"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = escape_json_text(&text);
        assert!(!safe.chars().any(|c| c.is_control() && c != '\n'), "{safe}");
        assert!(safe.contains("\\u009b31m\\u007f\\u202ey") && safe.contains('é'), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }
}
