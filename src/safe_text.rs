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
}
