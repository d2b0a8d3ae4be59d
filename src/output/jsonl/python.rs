//! Python's view of text and JSON as TrustGraph's `parse_jsonl` sees it: the whitespace of `str.strip()`
//! and `re`'s `\s`, and `json.loads`, which also reads `NaN`, `Infinity`, `-Infinity`, numbers too large
//! for a float and lone surrogate escapes (none of which a `serde_json::Value` can hold as such).

use serde_json::Value;

/// Whether Python's `str.isspace()` holds for `c`: the set `str.strip()` and `re`'s `\s` remove.
/// Wider than JSON's whitespace (it has NBSP, U+2028, U+3000, the ASCII separators 0x1C-0x1F).
pub(crate) fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `text.strip()`.
pub(crate) fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// Python's `text.lstrip()`.
pub(crate) fn py_lstrip(text: &str) -> &str {
    text.trim_start_matches(is_py_space)
}

/// Python's `json.loads(text)`, as far as a `serde_json::Value` can hold the result.
///
/// Text serde_json reads is read by it. Otherwise the Python-only forms are rewritten (`NaN`,
/// `Infinity`, `-Infinity` and numbers beyond a float become `null`; a lone surrogate escape becomes
/// U+FFFD) and, if that reads, the value comes with a note per rewrite. Else serde_json's first error.
/// Known difference: nesting deeper than serde_json's 128 levels fails here, while Python reads up to
/// its recursion limit and then raises `RecursionError` (which escapes TrustGraph's `parse_jsonl`).
pub(crate) fn python_loads(text: &str) -> Result<(Value, Vec<String>), serde_json::Error> {
    match super::value::from_str(text) {
        // Python reads the integer `-0` as 0 where serde_json gives the float -0.0.
        Ok(value) if text.contains("-0") => match python_rewrite(text) {
            Some((rewritten, notes)) => Ok((super::value::from_str(&rewritten).unwrap_or(value), notes)),
            None => Ok((value, Vec::new())),
        },
        Ok(value) => Ok((value, Vec::new())),
        Err(error) => match python_rewrite(text) {
            Some((rewritten, notes)) => match super::value::from_str(&rewritten) {
                Ok(value) => Ok((value, notes)),
                Err(_) => Err(error),
            },
            None => Err(error),
        },
    }
}

/// `text` with Python's non-JSON forms replaced (see [`python_loads`]) and the integer `-0` written `0`,
/// or `None` when it has none of them.
pub(crate) fn python_rewrite(text: &str) -> Option<(String, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut notes = Vec::new();
    // `copied` is the byte offset up to which `text` has been copied into `out`.
    let (mut copied, mut at) = (0, 0);
    let (mut in_string, mut changed) = (false, false);
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                b'"' => in_string = false,
                b'\\' if bytes.get(at + 1) == Some(&b'u') => {
                    match unicode_escape(bytes, at) {
                        UnicodeEscape::Lone => {
                            out.push_str(&text[copied..at]);
                            out.push_str("\\ufffd");
                            notes.push(format!("read lone surrogate `{}` as U+FFFD", &text[at..at + 6]));
                            (copied, at, changed) = (at + 6, at + 6, true);
                        }
                        UnicodeEscape::Pair => at += 12,
                        UnicodeEscape::Other => at += 2,
                    }
                    continue;
                }
                b'\\' => {
                    at += 2;
                    continue;
                }
                _ => {}
            }
            at += 1;
            continue;
        }
        let rest = &bytes[at..];
        let token = if byte == b'"' {
            in_string = true;
            None
        } else if rest.starts_with(b"NaN") {
            Some(("NaN".len(), "NaN"))
        } else if rest.starts_with(b"Infinity") {
            Some(("Infinity".len(), "Infinity"))
        } else if rest.starts_with(b"-Infinity") {
            Some(("-Infinity".len(), "-Infinity"))
        } else if byte == b'-' || byte.is_ascii_digit() {
            let length = number_length(bytes, at);
            if length == 2 && bytes.get(at..at + 2) == Some(b"-0") {
                out.push_str(&text[copied..at]);
                // A space, so that the `0` never joins a number before it (`1-0` stays an error).
                out.push_str(" 0");
                (at, copied, changed) = (at + 2, at + 2, true);
                continue;
            }
            let infinite = text[at..at + length].parse::<f64>().map(f64::is_infinite).unwrap_or(false);
            if !infinite {
                at += length.max(1);
                continue;
            }
            Some((length, "a number beyond a float"))
        } else {
            None
        };
        match token {
            Some((length, what)) => {
                out.push_str(&text[copied..at]);
                out.push_str("null");
                notes.push(format!(
                    "read {what} `{}` as null (Python's json.loads accepts it; JSON cannot hold it)",
                    &text[at..at + length]
                ));
                at += length;
                (copied, changed) = (at, true);
            }
            None => at += 1,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some((out, notes))
}

/// Length of the JSON number (`-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`) at `at`; 0 when there is none.
fn number_length(bytes: &[u8], at: usize) -> usize {
    let digits = |from: usize| bytes.get(from..).map_or(0, |b| b.iter().take_while(|c| c.is_ascii_digit()).count());
    let mut end = at;
    if bytes.get(end) == Some(&b'-') {
        end += 1;
    }
    match bytes.get(end) {
        Some(b'0') => end += 1,
        Some(b'1'..=b'9') => end += digits(end),
        _ => return 0,
    }
    if bytes.get(end) == Some(&b'.') && digits(end + 1) > 0 {
        end += 1 + digits(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let count = digits(end + 1 + sign);
        if count > 0 {
            end += 1 + sign + count;
        }
    }
    end - at
}

/// What the `\uXXXX` escape at `at` is, as far as surrogates go.
enum UnicodeEscape {
    /// A surrogate that is not part of a high-low pair (Python keeps it; serde_json refuses it).
    Lone,
    /// A high surrogate followed by a low one (12 bytes).
    Pair,
    /// Anything else, including a malformed escape (left for serde_json to report).
    Other,
}

fn unicode_escape(bytes: &[u8], at: usize) -> UnicodeEscape {
    match hex4(bytes, at + 2) {
        Some(0xD800..=0xDBFF) => {
            let pair = bytes.get(at + 6) == Some(&b'\\') && bytes.get(at + 7) == Some(&b'u');
            match pair.then(|| hex4(bytes, at + 8)).flatten() {
                Some(0xDC00..=0xDFFF) => UnicodeEscape::Pair,
                _ => UnicodeEscape::Lone,
            }
        }
        Some(0xDC00..=0xDFFF) => UnicodeEscape::Lone,
        _ => UnicodeEscape::Other,
    }
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, b| Some(acc * 16 + char::from(*b).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strip_removes_python_whitespace_including_nbsp_but_not_bom() {
        assert_eq!(py_strip("\u{a0}\u{3000} x \r\u{1f}"), "x");
        assert_eq!(py_strip("\u{feff}x"), "\u{feff}x");
    }

    #[test]
    fn loads_reads_python_only_forms_with_notes() {
        let (value, notes) = python_loads("[NaN, Infinity, -Infinity, 1e400, 2]").unwrap();
        assert_eq!(value, json!([null, null, null, null, 2]));
        assert_eq!(notes.len(), 4);
        let (value, notes) = python_loads(r#"{"a": "\ud800x", "b": "\ud83d\ude00"}"#).unwrap();
        assert_eq!(value, json!({"a": "\u{fffd}x", "b": "😀"}));
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn loads_keeps_strings_and_errors_as_they_are() {
        assert_eq!(python_loads(r#"["NaN", "Infinity"]"#).unwrap().0, json!(["NaN", "Infinity"]));
        assert!(python_loads("NaNa").is_err());
        assert!(python_loads("-NaN").is_err());
        assert!(python_loads("{NaN: 1}").is_err());
        assert!(python_loads("\u{feff}{}").is_err());
        assert_eq!(python_loads(r#"{"a":1,"a":2}"#).unwrap().0, json!({"a": 2}));
        assert_eq!(python_loads("[-0, -0.0, \"-0\", -01]").ok(), None);
        assert_eq!(python_loads("[-0, -0.0, \"-0\", -0e1]").unwrap(), (json!([0, -0.0, "-0", -0.0]), vec![]));
    }

    #[test]
    fn rewrite_survives_odd_input() {
        for text in ["\\u", "\"\\u12", "\"\\ud800\\u", "-", "1e", "1.", "\"", "\"\\", "-Inf"] {
            let _ = python_rewrite(text);
        }
    }
}
