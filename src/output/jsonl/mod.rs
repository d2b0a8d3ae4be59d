//! The `jsonl` response type: an incremental parser that judges each line the moment its `\n` arrives,
//! under the `lenient` (default; also `ptc`), `strict` and `trustgraph` profiles.
//!
//! Rules shared by every profile:
//! - A line is what lies between two `\n`; verdicts carry 1-based physical line numbers of the answer.
//! - Blank lines get no verdict (they are never a record in any profile); fences and prose are reported
//!   as `skipped` with reason "fence" or "prose", never dropped silently.
//! - `invalid_json` carries serde_json's message without its position suffix, and the 1-based column in
//!   characters of the character the error points at (for an early end: the last character).
//! - A verdict, once in [`JsonlParser::lines`], is final. `items` holds exactly what the profile hands its
//!   consumer: the records that read and passed the check, in order.
//! - [`OutputParser::report`] judges the pending last line (no `\n` yet) as if the answer ended there,
//!   on a copy: the work is proportional to that tail plus copying the verdicts, never a re-parse.
//!
//! Profiles: `trustgraph` is TrustGraph's `parse_jsonl` + `invoke` filter exactly (see [`trustgraph`]);
//! `strict` reads every non-blank line as RFC 8259 JSON with nothing stripped (a CR before the `\n` is
//! JSON whitespace, so CRLF reads, as the JSON Lines format allows; NBSP, a BOM, fences and prose are
//! `invalid_json`; a blank line is one of only spaces, tabs and CR); `lenient` is described in
//! `jsonl/lenient.rs`. PtcRunner has no JSONL mode, so `ptc` behaves as `lenient` (the report still says `ptc`).

mod lenient;
mod python;
mod record;
mod sink;
pub mod trustgraph;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;

use self::sink::{char_column, error_message, error_offset, Sink, Span};
use super::{JsonlReport, LineVerdict, OutputParser, Profile, Report, ResponseType, Summary};
use crate::schema::Check;

pub use self::trustgraph::trustgraph_parse_jsonl;

/// Parses a `jsonl` answer fed chunk by chunk: a verdict per line as soon as the line completes.
pub struct JsonlParser {
    profile: Profile,
    check: Option<Arc<dyn Check>>,
    rules: Rules,
    sink: Sink,
    /// The text after the last `\n`: the line still arriving.
    pending: String,
    /// Lines whose `\n` has arrived.
    completed: usize,
    /// Verdicts already handed out by [`JsonlParser::take_new_lines`].
    taken: usize,
}

/// The per-profile state machine that turns completed lines into verdicts.
#[derive(Clone, Debug)]
enum Rules {
    Strict,
    Trustgraph(trustgraph::Trustgraph),
    Lenient(lenient::Lenient),
}

impl Rules {
    fn line(&mut self, sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str) {
        match self {
            Rules::Strict => strict_line(sink, check, line, raw),
            Rules::Trustgraph(rules) => rules.line(sink, check, line, raw),
            Rules::Lenient(rules) => rules.line(sink, check, line, raw),
        }
    }

    fn finish(&mut self, sink: &mut Sink, check: Option<&dyn Check>) {
        match self {
            Rules::Strict => {}
            Rules::Trustgraph(rules) => rules.finish(sink, check),
            Rules::Lenient(rules) => rules.finish(sink, check),
        }
    }
}

impl JsonlParser {
    /// A parser for `profile`, checking each record against `check` when given.
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>) -> JsonlParser {
        let rules = match profile {
            Profile::Strict => Rules::Strict,
            Profile::Trustgraph => Rules::Trustgraph(Default::default()),
            Profile::Lenient | Profile::Ptc => Rules::Lenient(Default::default()),
        };
        JsonlParser { profile, check, rules, sink: Sink::default(), pending: String::new(), completed: 0, taken: 0 }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The items of the records judged so far (completed lines only), as the profile hands them on.
    pub fn items(&self) -> &[Value] {
        &self.sink.items
    }

    /// Counts of the verdicts so far (completed lines only).
    pub fn summary(&self) -> Summary {
        self.sink.summary
    }

    /// How many lines have completed (their `\n` has arrived).
    pub fn completed_lines(&self) -> usize {
        self.completed
    }

    /// The verdicts that appeared since the last call (the live view's cheap way to follow along);
    /// `&lines()[seen..]` is the index-based equivalent.
    pub fn take_new_lines(&mut self) -> Vec<LineVerdict> {
        let new = self.sink.lines.get(self.taken..).unwrap_or_default().to_vec();
        self.taken = self.sink.lines.len();
        new
    }

    /// The final report, consuming the parser (no copy of the verdicts and items).
    pub fn into_report(mut self) -> Report {
        let check = self.check.as_deref();
        if !self.pending.is_empty() {
            self.rules.line(&mut self.sink, check, self.completed + 1, &self.pending);
        }
        self.rules.finish(&mut self.sink, check);
        let sink = std::mem::take(&mut self.sink);
        Report::Jsonl(self.report_of(sink))
    }

    fn report_of(&self, sink: Sink) -> JsonlReport {
        JsonlReport {
            response_type: ResponseType::Jsonl,
            profile: self.profile,
            items: sink.items,
            lines: sink.lines,
            summary: sink.summary,
        }
    }

    fn complete_line(&mut self, line: &str) {
        self.completed += 1;
        self.rules.line(&mut self.sink, self.check.as_deref(), self.completed, line);
    }
}

impl OutputParser for JsonlParser {
    fn feed(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(newline) = rest.find('\n') {
            let (line, after) = (rest.get(..newline).unwrap_or_default(), rest.get(newline + 1..).unwrap_or_default());
            if self.pending.is_empty() {
                self.complete_line(line);
            } else {
                let mut pending = std::mem::take(&mut self.pending);
                pending.push_str(line);
                self.complete_line(&pending);
                pending.clear();
                self.pending = pending;
            }
            rest = after;
        }
        self.pending.push_str(rest);
    }

    fn report(&self) -> Report {
        let mut sink = self.sink.clone();
        let mut rules = self.rules.clone();
        let check = self.check.as_deref();
        if !self.pending.is_empty() {
            rules.line(&mut sink, check, self.completed + 1, &self.pending);
        }
        rules.finish(&mut sink, check);
        Report::Jsonl(self.report_of(sink))
    }

    fn lines(&self) -> &[LineVerdict] {
        &self.sink.lines
    }
}

/// `strict`: the line as it stands must be one RFC 8259 JSON text.
fn strict_line(sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str) {
    if raw.bytes().all(|byte| matches!(byte, b' ' | b'\t' | b'\r')) {
        return;
    }
    match serde_json::from_str(raw) {
        Ok(value) => sink.record(check, Span::line(line), value, Vec::new()),
        Err(error) => {
            let column = char_column(raw, error_offset(raw, &error));
            sink.invalid(Span::line(line), error_message(&error), column, Vec::new());
        }
    }
}
