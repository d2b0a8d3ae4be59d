//! The peers' JSON extraction, reproduced exactly: TrustGraph's `parse_json` and PtcRunner's `JsonParser.parse`.
//!
//! See `tests/fixtures/cases.jsonl` and the peers' SEMANTICS.md §1.1 (TrustGraph) and §2.1 (PtcRunner).

use serde_json::Value;

use crate::output::JsonErrorKind;

const FENCE: &str = "```";

/// TrustGraph's `parse_json` (prompt_manager.py:86-95): the FIRST ```` ```json ```` / ```` ``` ```` fenced
/// block (lazy, case-sensitive tag, stripped), else the whole text stripped, handed to Python's `json.loads`.
///
/// Python `json.loads` semantics, as close as serde can carry them: any top-level value; duplicate keys,
/// last one wins (keeping the first key's position, as a Python dict does); `NaN`, `Infinity` and
/// `-Infinity` are ACCEPTED as Python does, but a JSON value cannot hold them, so each becomes `null`;
/// a BOM is not whitespace to `str.strip()` and is rejected ("Unexpected UTF-8 BOM"). The error is the
/// decoder's message; TrustGraph's `invoke` turns any of them into "JSON parse fail".
pub fn trustgraph_parse_json(text: &str) -> Result<Value, String> {
    trustgraph_detail(text).map_err(|failure| failure.message)
}

/// PtcRunner's `JsonParser.parse/1` (json_parser.ex:62-79): the first fenced block (`(?:json)?` tag,
/// capture trimmed) decoded with no fallback when it is not JSON; an empty block, or no block, falls
/// through to raw extraction: the trimmed text's leading `{`/`[`, else the first `{` or `[` anywhere,
/// matched by bracket counting that tracks strings and escapes (only that candidate is tried).
/// Unbalanced brackets give `NoJsonFound`, a balanced candidate that is not RFC 8259 gives `InvalidJson`.
///
/// One deliberate difference: PtcRunner slices the embedded candidate with a byte index counted as
/// graphemes (a bug when the prose before it is not ASCII); here the slice is where the bracket is.
pub fn ptc_extract_json(text: &str) -> Result<Value, JsonErrorKind> {
    ptc_detail(text).map_err(|(kind, _)| kind)
}

/// Why a peer's extraction failed, and the byte offset in the answer where its decoder stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub at: Option<usize>,
}

/// [`trustgraph_parse_json`] with the failure's position in `text`.
pub fn trustgraph_detail(text: &str) -> Result<Value, Failure> {
    let candidate = match first_fenced_block(text, "json", 0) {
        Some(block) => python_strip(block),
        None => python_strip(text),
    };
    let start = offset_in(text, candidate);
    if candidate.starts_with('\u{feff}') {
        return Err(Failure {
            message: "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)".into(),
            at: Some(start),
        });
    }
    let rewritten = python_constants_to_null(candidate);
    serde_json::from_str(&rewritten).map_err(|error| Failure {
        at: Some(start + serde_offset(&rewritten, &error).min(candidate.len())),
        message: error.to_string(),
    })
}

/// [`ptc_extract_json`] with a message and, for `InvalidJson`, the decoder's position in `text`.
pub fn ptc_detail(text: &str) -> Result<Value, (JsonErrorKind, Failure)> {
    let decode = |candidate: &str| {
        decode_rfc8259(candidate).map_err(|error| {
            let at = offset_in(text, candidate) + serde_offset(candidate, &error);
            (JsonErrorKind::InvalidJson, Failure { message: format!("invalid JSON: {error}"), at: Some(at) })
        })
    };
    if let Some(block) = first_fenced_block(text, "json", 0) {
        let trimmed = elixir_trim(block);
        if !trimmed.is_empty() {
            return decode(trimmed);
        }
    }
    let no_json = |message: &str| (JsonErrorKind::NoJsonFound, Failure { message: message.into(), at: None });
    let trimmed = elixir_trim(text);
    let start = if trimmed.starts_with(['{', '[']) {
        trimmed
    } else {
        match text.find(['{', '[']) {
            Some(at) => text.get(at..).unwrap_or_default(),
            None => return Err(no_json("no JSON found: no fenced block and no `{` or `[`")),
        }
    };
    match ptc_matching_bracket(start) {
        Some(candidate) => decode(candidate),
        None => Err(no_json("no JSON found: the first `{` or `[` is never closed")),
    }
}

/// The byte offset of `inner` (a subslice) in `outer`.
fn offset_in(outer: &str, inner: &str) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize).min(outer.len())
}

/// The byte offset in `text` of a serde_json error's line and column.
fn serde_offset(text: &str, error: &serde_json::Error) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(error.line().saturating_sub(1)).map(str::len).sum();
    (line_start + error.column().saturating_sub(1)).min(text.len())
}

/// Strict RFC 8259 decoding of one whole value (JSON whitespace around it allowed), as Jason.decode
/// does. Nesting deeper than serde_json's limit (128) is an error, never a stack overflow.
pub fn decode_rfc8259(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text)
}

/// The capture of the first fenced block: the first ```` ``` ```` in the text, an optional `tag`
/// right after it, and everything up to the next ```` ``` ```` (lazy). `None` when there is no pair.
/// This is `re.search(r'```(?:json)?(.*?)```', DOTALL)` and PtcRunner's
/// `~r/```(?:json)?\s*\n?([\s\S]*?)\n?```/` once their captures are stripped.
pub fn first_fenced_block<'t>(text: &'t str, tag: &str, from: usize) -> Option<&'t str> {
    let open = from + text.get(from..)?.find(FENCE)?;
    let mut body_start = open + FENCE.len();
    if text.get(body_start..)?.starts_with(tag) {
        body_start += tag.len();
    }
    let close = body_start + text.get(body_start..)?.find(FENCE)?;
    text.get(body_start..close)
}

/// PtcRunner's `find_matching_bracket`: `text` starts with `{` or `[`; count only that bracket kind,
/// toggle strings on every unescaped `"` (inside or out), and return the text through the bracket
/// that brings the depth back to zero.
fn ptc_matching_bracket(text: &str) -> Option<&str> {
    let (open, close) = if text.starts_with('{') { (b'{', b'}') } else { (b'[', b']') };
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (at, &byte) in text.as_bytes().iter().enumerate() {
        if escaped {
            escaped = false;
        } else if in_string && byte == b'\\' {
            escaped = true;
        } else if byte == b'"' {
            in_string = !in_string;
        } else if !in_string && byte == open {
            depth += 1;
        } else if !in_string && byte == close {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return text.get(..=at);
            }
        }
    }
    None
}

/// Python's `str.strip()` with no argument: `str.isspace` characters, which are Unicode White_Space
/// plus the separators U+001C..U+001F.
pub fn python_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Elixir's `String.trim/1`: Unicode whitespace except the non-breaking spaces (U+00A0, U+2007, U+202F).
/// The BOM (U+FEFF) is not whitespace to it.
pub fn elixir_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}'))
}

/// Rewrites Python's `NaN`, `Infinity` and `-Infinity` literals (outside strings) to `null`, so that
/// text Python's `json.loads` accepts decodes; the text is borrowed unchanged when there are none.
fn python_constants_to_null(text: &str) -> std::borrow::Cow<'_, str> {
    const CONSTANTS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            at += 1;
            continue;
        }
        if byte == b'"' {
            in_string = true;
        } else if matches!(byte, b'-' | b'I' | b'N') {
            let rest = text.get(at..).unwrap_or_default();
            if let Some(constant) = CONSTANTS.iter().find(|c| rest.starts_with(**c)) {
                let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
                buffer.push_str(text.get(copied..at).unwrap_or_default());
                buffer.push_str("null");
                at += constant.len();
                copied = at;
                continue;
            }
        }
        at += 1;
    }
    match out {
        Some(mut buffer) => {
            buffer.push_str(text.get(copied..).unwrap_or_default());
            std::borrow::Cow::Owned(buffer)
        }
        None => std::borrow::Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trustgraph_takes_the_first_fenced_block_only() {
        let text = "a ```json\n{\"first\": 1}\n``` b ```json\n{\"second\": 2}\n```";
        assert_eq!(trustgraph_parse_json(text), Ok(json!({"first": 1})));
        assert_eq!(trustgraph_parse_json("```{\"a\":1}```"), Ok(json!({"a": 1})));
    }

    #[test]
    fn trustgraph_rejects_what_python_rejects() {
        for text in [
            "Result: {\"a\":1}",
            "```jsonl\n{\"a\":1}\n```",
            "```JSON\n{\"a\":1}\n```",
            "```json\n{\"a\":1}",
            "\u{feff}{\"a\":1}",
            "",
            "{\"a\":1,}",
        ] {
            assert!(trustgraph_parse_json(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn trustgraph_accepts_python_constants_and_unicode_whitespace() {
        assert_eq!(trustgraph_parse_json("[NaN, -Infinity, \"NaN\"]"), Ok(json!([null, null, "NaN"])));
        assert_eq!(trustgraph_parse_json("\u{a0}\u{1f} 0 \u{2028}"), Ok(json!(0)));
        assert_eq!(trustgraph_parse_json("{\"a\":1,\"b\":2,\"a\":3}"), Ok(json!({"a": 3, "b": 2})));
    }

    #[test]
    fn ptc_block_first_then_raw() {
        assert_eq!(ptc_extract_json("x {\"raw\":1}\n```json\n{\"b\":2}\n```"), Ok(json!({"b": 2})));
        assert_eq!(ptc_extract_json("```json\n{bad}\n``` {\"a\":1}"), Err(JsonErrorKind::InvalidJson));
        assert_eq!(ptc_extract_json("```jsonl\n{\"a\":1}\n```"), Err(JsonErrorKind::InvalidJson));
        assert_eq!(ptc_extract_json("```json\n```\n"), Err(JsonErrorKind::NoJsonFound));
        assert_eq!(ptc_extract_json("```\n```\n[1]"), Ok(json!([1])));
    }

    #[test]
    fn ptc_raw_extraction_tries_one_candidate() {
        assert_eq!(ptc_extract_json("{\"a\":1}{\"b\":2}"), Ok(json!({"a": 1})));
        assert_eq!(ptc_extract_json("[note] {\"a\":1}"), Err(JsonErrorKind::InvalidJson));
        assert_eq!(ptc_extract_json("see {\"a\": \"}\"} ok"), Ok(json!({"a": "}"})));
        assert_eq!(ptc_extract_json("{\"a\": [1, 2"), Err(JsonErrorKind::NoJsonFound));
        assert_eq!(ptc_extract_json("{a: 1}"), Err(JsonErrorKind::InvalidJson));
        assert_eq!(ptc_extract_json("Résultat: {\"a\":1}"), Ok(json!({"a": 1})));
        assert_eq!(ptc_extract_json(""), Err(JsonErrorKind::NoJsonFound));
        assert_eq!(ptc_extract_json("\u{feff}{\"a\":1}"), Ok(json!({"a": 1})));
    }

    #[test]
    fn deep_nesting_is_an_error_not_an_overflow() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(ptc_extract_json(&deep), Err(JsonErrorKind::InvalidJson));
        assert!(trustgraph_parse_json(&deep).is_err());
    }
}
