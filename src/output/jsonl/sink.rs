//! Where judged JSONL records land: the verdicts, the items handed to the consumer and the counts,
//! plus the mapping of serde_json's error positions (byte columns) to 1-based character columns.

use serde_json::Value;

use crate::output::{Items, LineStatus, LineVerdict, Summary};
use crate::schema::{Check, SchemaIssue, Tape};

/// The lines a verdict covers: `line`, and `end_line` when a record spans several lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub line: usize,
    pub end_line: Option<usize>,
}

impl Span {
    pub fn line(line: usize) -> Span {
        Span { line, end_line: None }
    }
}

/// Below this many items a sink is copied on the calling thread.
const PARALLEL_COPY: usize = 8192;

/// Verdicts, items and counts, appended to as records are judged; never revised.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sink {
    pub lines: Vec<LineVerdict>,
    pub items: Items,
    pub summary: Summary,
}

impl Sink {
    pub fn skipped(&mut self, span: Span, reason: &str, repairs: Vec<String>) {
        self.summary.skipped += 1;
        self.push(span, LineStatus::Skipped { reason: reason.to_owned() }, repairs);
    }

    pub fn invalid(&mut self, span: Span, error: String, column: usize, repairs: Vec<String>) {
        self.summary.invalid_json += 1;
        self.push(span, LineStatus::InvalidJson { error, column }, repairs);
    }

    /// Checks `value` (when there is a check) and keeps it as an item if it passes.
    pub fn record(&mut self, check: Option<&dyn Check>, span: Span, value: Value, repairs: Vec<String>) {
        let verdict = check.map(|check| check.check(&value));
        self.judged(span, verdict, repairs, |items| items.push(value));
    }

    /// [`Sink::record`] of the object read from `text` onto `tape`, without building a value: checked
    /// on the tape and kept as its text.
    pub fn record_text(
        &mut self,
        check: Option<&dyn Check>,
        span: Span,
        text: &str,
        tape: &Tape,
        repairs: Vec<String>,
    ) {
        let verdict = check.map(|check| check.check_tape(tape));
        self.judged(span, verdict, repairs, |items| items.push_text(text));
    }

    /// A copy; a large one is copied on two threads when there are two (see [`Items::copy`]).
    pub fn copy(&self, threads: usize) -> Sink {
        let items = self.items.copy(threads >= 2 && self.items.len() >= PARALLEL_COPY);
        Sink { lines: self.lines.clone(), items, summary: self.summary }
    }

    /// Appends what `other` judged after this sink's verdicts.
    pub fn append(&mut self, other: Sink) {
        self.lines.extend(other.lines);
        self.items.append(other.items);
        let (sum, add) = (&mut self.summary, other.summary);
        sum.valid += add.valid;
        sum.invalid_json += add.invalid_json;
        sum.schema_error += add.schema_error;
        sum.skipped += add.skipped;
    }

    /// A record's verdict (`None` with no check); `keep` adds its item when it is valid.
    fn judged(
        &mut self,
        span: Span,
        verdict: Option<Result<Option<String>, Vec<SchemaIssue>>>,
        repairs: Vec<String>,
        keep: impl FnOnce(&mut Items),
    ) {
        match verdict {
            None | Some(Ok(_)) => {
                self.summary.valid += 1;
                keep(&mut self.items);
                let branch = verdict.and_then(Result::ok).flatten();
                self.push(span, LineStatus::Valid { branch }, repairs);
            }
            Some(Err(errors)) => {
                self.summary.schema_error += 1;
                self.push(span, LineStatus::SchemaError { errors }, repairs);
            }
        }
    }

    fn push(&mut self, span: Span, status: LineStatus, repairs: Vec<String>) {
        self.lines.push(LineVerdict { line: span.line, end_line: span.end_line, status, repairs });
    }
}

/// serde_json's message without its " at line X column Y" suffix.
pub(crate) fn error_message(error: &serde_json::Error) -> String {
    let mut message = error.to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    message
}

/// Byte offset in `text` of the byte serde_json's error points at (its line, and its byte column,
/// which is 1-based; for an early end it is the last byte read).
pub(crate) fn error_offset(text: &str, error: &serde_json::Error) -> usize {
    let mut start = 0;
    for _ in 1..error.line() {
        match text.get(start..).and_then(|rest| rest.find('\n')) {
            Some(newline) => start += newline + 1,
            None => break,
        }
    }
    (start + error.column().saturating_sub(1)).min(text.len())
}

/// 1-based column, in characters, of the character holding byte `offset` of `line` (the last
/// character when `offset` is past the end).
pub(crate) fn char_column(line: &str, offset: usize) -> usize {
    let end = offset.saturating_add(1).min(line.len());
    let starts = line.as_bytes().get(..end).map_or(0, |head| head.iter().filter(|b| (**b & 0xC0) != 0x80).count());
    starts.max(1)
}

/// Byte offset of `inner` inside `outer`, when `inner` is a subslice of it.
pub(crate) fn offset_in(outer: &str, inner: &str) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize).min(outer.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column_of(text: &str) -> (String, usize) {
        let error = serde_json::from_str::<Value>(text).unwrap_err();
        (error_message(&error), char_column(text, error_offset(text, &error)))
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(column_of(r#"{"é":x}"#), ("expected value".to_owned(), 6));
        assert_eq!(column_of(r#"{"a":"é"#), ("EOF while parsing a string".to_owned(), 7));
        assert_eq!(column_of(r#"{"a":1,}"#), ("trailing comma".to_owned(), 8));
    }

    #[test]
    fn a_large_sink_copied_on_two_threads_is_the_same_copy() {
        let mut sink = Sink::default();
        for n in 0..3 * PARALLEL_COPY + 4 {
            match n % 3 {
                0 => sink.record(None, Span::line(n + 1), serde_json::json!({"n": n, "s": "é"}), vec![format!("{n}")]),
                1 => sink.skipped(Span { line: n + 1, end_line: Some(n + 2) }, "prose", Vec::new()),
                _ => sink.invalid(Span::line(n + 1), "expected value".into(), n, Vec::new()),
            }
        }
        assert!(sink.items.len() > PARALLEL_COPY);
        for threads in [1, 2] {
            let copy = sink.copy(threads);
            assert_eq!((copy.lines, copy.items, copy.summary), (sink.lines.clone(), sink.items.clone(), sink.summary));
        }
    }

    #[test]
    fn offsets_follow_lines() {
        let text = "{\n\"a\":1,\n}";
        let error = serde_json::from_str::<Value>(text).unwrap_err();
        assert_eq!(error_offset(text, &error), text.len() - 1);
    }
}
