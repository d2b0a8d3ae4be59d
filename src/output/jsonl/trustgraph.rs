//! The `trustgraph` profile: TrustGraph's `PromptManager.parse_jsonl` + `invoke`'s per-object filter
//! (SEMANTICS.md §1.2), as a batch function and as a line-by-line state machine with the same result.
//!
//! `parse_jsonl` strips the whole text (Python `str.strip()`), removes an opening fence with
//! `re.sub(r'^```(?:json|jsonl)?\s*\n?', '', text)` when the text starts with ```, drops the last three
//! characters when the text ends with ```, then strips, splits on `\n`, strips each line, skips empty
//! lines and lines starting with ```, and keeps every line `json.loads` reads (any JSON value).
//!
//! Streamed, those whole-text rules touch only two lines. The first line with content gets the
//! opening-fence rule, known when it completes. The last line with content loses a glued closing ```,
//! which only the end of the answer can tell: a completed line whose content ends with ``` is held back
//! (no verdict yet) until a later line with content arrives (then it is judged as an ordinary line) or
//! the answer ends (then it is judged without its last three characters). Every other verdict is final
//! the moment its line completes, and no verdict is ever revised. Since a JSON value never ends with a
//! backtick, holding such a line back never delays an item that an ordinary line could give.
//!
//! Verdicts: a line `json.loads` refuses is `invalid_json` (TrustGraph only logs it), a line starting with
//! ``` (or emptied by the fence rules) is `skipped` "fence"; line numbers are those of the answer, not
//! Python's count after stripping. Where a `serde_json::Value` cannot hold Python's result: `NaN`,
//! `±Infinity` and numbers beyond a float become `null`, a lone surrogate U+FFFD (each noted in the
//! verdict's `repairs`); integers beyond 64 bits become floats; nesting deeper than 128 levels is
//! `invalid_json` (Python reads it up to its recursion limit, then raises out of `parse_jsonl`).

use serde_json::Value;

use super::python::{py_lstrip, py_strip, python_loads};
use super::sink::{char_column, error_message, error_offset, offset_in, Sink, Span};
use crate::schema::Check;

/// TrustGraph's `PromptManager.parse_jsonl(text)` (and its copy in the agent extractor), no schema.
pub fn trustgraph_parse_jsonl(text: &str) -> Vec<Value> {
    let mut text = py_strip(text);
    if text.starts_with("```") {
        text = strip_opening_fence(text);
    }
    if let Some(head) = text.strip_suffix("```") {
        text = head;
    }
    py_strip(text)
        .split('\n')
        .map(py_strip)
        .filter(|line| !line.is_empty() && !line.starts_with("```"))
        .filter_map(|line| python_loads(line).ok().map(|(value, _)| value))
        .collect()
}

/// `re.sub(r'^```(?:json|jsonl)?\s*\n?', '', text)` for a text starting with ```. The alternation tries
/// `json` first and the rest always matches, so `jsonl` is never taken: "```jsonl" leaves "l".
fn strip_opening_fence(text: &str) -> &str {
    let rest = text.strip_prefix("```").unwrap_or(text);
    py_lstrip(rest.strip_prefix("json").unwrap_or(rest))
}

/// The line-by-line form of [`trustgraph_parse_jsonl`] with `invoke`'s schema filter.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trustgraph {
    /// A line with content has completed (the opening-fence rule is behind us).
    seen_content: bool,
    /// A completed line whose content ends with ```: judged once it is known whether it is the last.
    held: Option<Held>,
}

#[derive(Clone, Debug)]
struct Held {
    line: usize,
    raw: String,
    /// Byte range of the content (after stripping and the opening-fence rule) inside `raw`.
    content: (usize, usize),
}

impl Trustgraph {
    /// The state after a line with content, nothing held: where a run of lines can be judged from
    /// without knowing the lines before it.
    pub fn at_rest() -> Trustgraph {
        Trustgraph { seen_content: true, held: None }
    }

    pub fn is_at_rest(&self) -> bool {
        self.seen_content && self.held.is_none()
    }

    pub fn line(&mut self, sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str) {
        let stripped = py_strip(raw);
        if stripped.is_empty() {
            return;
        }
        let content =
            if self.seen_content || !stripped.starts_with("```") { stripped } else { strip_opening_fence(stripped) };
        self.seen_content = true;
        if let Some(held) = self.held.take() {
            judge(sink, check, held.line, &held.raw, &held.raw[held.content.0..held.content.1], false);
        }
        if content.ends_with("```") {
            let start = offset_in(raw, content);
            self.held = Some(Held { line, raw: raw.to_owned(), content: (start, start + content.len()) });
            return;
        }
        judge(sink, check, line, raw, content, false);
    }

    /// The answer ends: a held line is the last line with content, and loses its closing ```.
    pub fn finish(&mut self, sink: &mut Sink, check: Option<&dyn Check>) {
        if let Some(held) = self.held.take() {
            judge(sink, check, held.line, &held.raw, &held.raw[held.content.0..held.content.1], true);
        }
    }
}

/// One line's fate; `content` is a subslice of `raw`; `last` drops a closing ```.
fn judge(sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str, content: &str, last: bool) {
    let span = Span::line(line);
    let content = match content.strip_suffix("```") {
        Some(head) if last => py_strip(head),
        _ => content,
    };
    if content.is_empty() || content.starts_with("```") {
        // Only fence pieces make a line with content empty here.
        sink.skipped(span, "fence", Vec::new());
        return;
    }
    match python_loads(content) {
        Ok((value, notes)) => sink.record(check, span, value, notes),
        Err(error) => {
            let start = offset_in(raw, content);
            let column = char_column(raw, start + error_offset(content, &error));
            sink.invalid(span, error_message(&error), column, Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn batch_follows_the_python_quirks() {
        let cases: &[(&str, Value)] = &[
            ("```jsonl\n{\"a\":1}\n```", json!([{"a": 1}])),
            ("```json {\"a\":1}\n{\"b\":2}```", json!([{"a": 1}, {"b": 2}])),
            ("{\"a\":1}\n{\"b\":2}```", json!([{"a": 1}, {"b": 2}])),
            ("\u{a0}{\"a\":1}\u{a0}\r\n\u{3000}[1,2]", json!([{"a": 1}, [1, 2]])),
            ("1\n\"x\"\nnull\ntrue\n{\"a\":1} {\"b\":2}", json!([1, "x", null, true])),
            ("\u{feff}{\"a\":1}\n{\"b\":2}", json!([{"b": 2}])),
            ("~~~\n{\"a\":1}\n~~~", json!([{"a": 1}])),
            ("{\n  \"a\": 1\n}", json!([])),
            ("{\"a\":NaN,\"a\":2}", json!([{"a": 2}])),
            ("```python\n{\"a\":1}", json!([{"a": 1}])),
            ("```", json!([])),
            ("``````", json!([])),
            ("```json```", json!([])),
            ("Here:\n```json\n{\"a\":1}\n```\nDone!", json!([{"a": 1}])),
        ];
        for (text, expected) in cases {
            assert_eq!(&Value::Array(trustgraph_parse_jsonl(text)), expected, "{text:?}");
        }
    }
}
