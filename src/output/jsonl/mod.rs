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
//!   on a copy: the work is proportional to that tail plus copying the verdicts, never a re-parse
//!   (a large copy is made on two threads; [`JsonlParser::into_report`] makes none).
//!
//! Speed (see `lines.rs`, `record.rs`, `value.rs`): a large chunk's complete lines (64 KiB and 4096
//! lines or more) are judged on every core and merged in order, with exactly the verdicts of judging
//! them one by one; a record that is one object is read onto a reused tape, checked there and kept as
//! its text (see `output/items.rs`), and other values are read with each object allocated once at its
//! exact size.
//!
//! The pending tail alone, for callers that ask at every cut (the truncation sweep), never copying the
//! judged state; for every prefix, profile and check, `report().items == items() ++ pending_items()`:
//! - [`JsonlParser::pending_items`]`(&self) -> Vec<Value>`: the items the tail (the line still arriving,
//!   with a held or open record before it) adds if the answer ends now, checked as `report()` checks.
//!   Cost: the pending record only; a repeated call at an unchanged [`JsonlParser::pending_version`]
//!   returns the cached items (a clone of them); [`JsonlParser::take_pending_items`] hands them over
//!   and keeps no copy, for a caller that asks once per version.
//! - [`JsonlParser::pending_version`]`(&self) -> u64`: changes whenever the text fed since the last call
//!   may have changed `pending_items`; equal versions mean equal `pending_items`. Amortised O(1) per
//!   byte fed (a lazy scan of the pending line only).
//! - [`JsonlParser::pending_is_open`]`(&self) -> bool`: the pending line is now inside a string or an
//!   open bracket (counted from the line's start). While it stays so byte after byte, the version stands.
//!
//! Profiles: `trustgraph` is TrustGraph's `parse_jsonl` + `invoke` filter exactly (see [`trustgraph`]);
//! `strict` reads every non-blank line as RFC 8259 JSON with nothing stripped (a CR before the `\n` is
//! JSON whitespace, so CRLF reads, as the JSON Lines format allows; NBSP, a BOM, fences and prose are
//! `invalid_json`; a blank line is one of only spaces, tabs and CR); `lenient` is described in
//! `jsonl/lenient.rs`. PtcRunner has no JSONL mode, so `ptc` behaves as `lenient` (the report still says `ptc`).

mod lenient;
mod lines;
mod pending;
mod python;
mod record;
mod sink;
pub mod trustgraph;
mod value;

#[cfg(test)]
pub(crate) use self::value::tests::json_text as random_json_text;

#[cfg(test)]
mod tests;

use std::cell::{RefCell, RefMut};
use std::sync::Arc;

use serde_json::Value;

use self::record::ObjectRead;
use self::sink::{char_column, error_message, error_offset, Sink, Span};
use super::{Items, JsonlReport, LineVerdict, OutputParser, Profile, Report, ResponseType, Summary};
use crate::schema::Check;

pub use self::lines::cores;
/// serde_json's message without its " at line X column Y" suffix.
pub(crate) use self::sink::error_message as serde_message;
pub use self::trustgraph::trustgraph_parse_jsonl;
/// Reads one JSON text as `serde_json::from_str` does (objects allocated at their exact size).
pub(crate) use self::value::from_str as read_value;

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
    /// The lazily kept view of the pending tail (see [`JsonlParser::pending_items`]).
    tail: RefCell<pending::Tail>,
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

    /// The state between two records: nothing open or held, past the first line with content.
    fn at_rest(&self) -> Rules {
        match self {
            Rules::Strict => Rules::Strict,
            Rules::Trustgraph(_) => Rules::Trustgraph(trustgraph::Trustgraph::at_rest()),
            Rules::Lenient(_) => Rules::Lenient(Default::default()),
        }
    }

    /// Whether the lines still to come are judged exactly as from [`Rules::at_rest`].
    fn is_at_rest(&self) -> bool {
        match self {
            Rules::Strict => true,
            Rules::Trustgraph(rules) => rules.is_at_rest(),
            Rules::Lenient(rules) => rules.is_at_rest(),
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
        JsonlParser {
            profile,
            check,
            rules,
            sink: Sink::default(),
            pending: String::new(),
            completed: 0,
            taken: 0,
            tail: RefCell::default(),
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The items of the records judged so far (completed lines only), as the profile hands them on.
    pub fn items(&self) -> &Items {
        &self.sink.items
    }

    /// The items the pending tail adds if the answer ends now: `report().items` is `items()` followed by
    /// these. Costs the pending record only, and a clone of cached items while the version stands.
    pub fn pending_items(&self) -> Vec<Value> {
        let mut tail = self.tail();
        if let Some(items) = tail.cached() {
            return items.clone();
        }
        let items = self.judge_tail(&mut tail);
        tail.cache(items.clone());
        items
    }

    /// As [`JsonlParser::pending_items`], for a caller that asks once per version (the sweep): the
    /// items are handed over and no copy is kept (a cached one is taken out of the cache).
    pub fn take_pending_items(&self) -> Vec<Value> {
        let mut tail = self.tail();
        match tail.take_cached() {
            Some(items) => items,
            None => self.judge_tail(&mut tail),
        }
    }

    /// The items the tail adds, judged now (an open record's are kept for its key).
    fn judge_tail(&self, tail: &mut pending::Tail) -> Vec<Value> {
        match tail.unchanged() {
            Some(key) => match tail.open_record(key) {
                Some(items) => items.clone(),
                None => {
                    let items = self.judge_open_record().items.into_values();
                    tail.keep_open_record(key, items.clone());
                    items
                }
            },
            None => self.judge_pending().items.into_values(),
        }
    }

    /// The verdicts of the open record as it stands (without the pending line).
    fn judge_open_record(&self) -> Sink {
        let mut sink = Sink::default();
        self.rules.clone().finish(&mut sink, self.check.as_deref());
        sink
    }

    /// Changes whenever the text fed since the last call may have changed [`JsonlParser::pending_items`].
    pub fn pending_version(&self) -> u64 {
        self.tail().version()
    }

    /// Whether the pending line is inside a string or an open bracket (counted from its start).
    pub fn pending_is_open(&self) -> bool {
        self.tail().is_open()
    }

    /// The tail's scan, brought up to the text fed so far.
    fn tail(&self) -> RefMut<'_, pending::Tail> {
        let mut tail = self.tail.borrow_mut();
        tail.catch_up(self.completed, &self.pending, || match &self.rules {
            Rules::Lenient(rules) => rules.open_record(),
            Rules::Strict | Rules::Trustgraph(_) => None,
        });
        tail
    }

    /// The verdicts of the pending tail alone, as if the answer ended now, judged on a copy of the rules
    /// (which hold only the open or held record).
    fn judge_pending(&self) -> Sink {
        let mut sink = Sink::default();
        let mut rules = self.rules.clone();
        let check = self.check.as_deref();
        if !self.pending.is_empty() {
            rules.line(&mut sink, check, self.completed + 1, &self.pending);
        }
        rules.finish(&mut sink, check);
        sink
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
        if !self.pending.is_empty() {
            let Some(newline) = rest.bytes().position(|byte| byte == b'\n') else {
                self.pending.push_str(rest);
                return;
            };
            let mut pending = std::mem::take(&mut self.pending);
            pending.push_str(rest.get(..newline).unwrap_or_default());
            self.complete_line(&pending);
            pending.clear();
            self.pending = pending;
            rest = rest.get(newline + 1..).unwrap_or_default();
        }
        // The complete lines left, judged in one run (on every core when there are many), then the tail.
        let (run, tail) = rest.rfind('\n').map_or(("", rest), |newline| rest.split_at(newline + 1));
        if !run.is_empty() {
            let check = self.check.as_deref();
            self.completed += lines::judge_run(&mut self.rules, &mut self.sink, check, self.completed, run);
        }
        self.pending.push_str(tail);
    }

    fn report(&self) -> Report {
        let mut sink = self.sink.copy(lines::cores());
        sink.append(self.judge_pending());
        Report::Jsonl(self.report_of(sink))
    }

    fn into_report(self: Box<Self>) -> Report {
        JsonlParser::into_report(*self)
    }

    fn lines(&self) -> &[LineVerdict] {
        &self.sink.lines
    }

    fn items(&self) -> Option<&Items> {
        Some(&self.sink.items)
    }
}

/// `strict`: the line as it stands must be one RFC 8259 JSON text.
fn strict_line(sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str) {
    if raw.bytes().all(|byte| matches!(byte, b' ' | b'\t' | b'\r')) {
        return;
    }
    let span = Span::line(line);
    let read = match record::judge_object(sink, check, span, raw, Vec::new()) {
        ObjectRead::Judged => return,
        ObjectRead::OtherValue(value, _) => Ok(value),
        ObjectRead::Unreadable(error, _) => Err(error),
    };
    match read {
        Ok(value) => sink.record(check, span, value, Vec::new()),
        Err(error) => {
            let column = char_column(raw, error_offset(raw, &error));
            sink.invalid(span, error_message(&error), column, Vec::new());
        }
    }
}
