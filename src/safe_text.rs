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

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

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
