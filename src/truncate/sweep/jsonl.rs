//! The `jsonl` strategy in a sweep: the profile's JSONL parser fed cut by cut; the items at a cut
//! are the records judged so far (a prefix of the final list) plus what the pending tail gives.
//!
//! The tail (the line still arriving, a held or open record) is judged by the parser's report, which
//! costs time proportional to the judged state. It is judged again only when it can have changed:
//! the pending line's own scan ([`LineScan`]) says it is FROZEN at both cuts when it sits inside a
//! string, or inside an open `{`/`[` that starts the line, with no line end and no value closed at
//! its top level in between: then every profile reads the same (an unfinished record) both times.

use std::sync::Arc;

use serde_json::Value;

use crate::output::jsonl::JsonlParser;
use crate::output::{OutputParser, Profile, Report};
use crate::schema::Check;
use crate::truncate::strategy::CutFigures;

/// A strings-aware scan of the pending line (reset at each `\n`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LineScan {
    first: Option<u8>,
    depth: i64,
    in_string: bool,
    escaped: bool,
    /// Values closed at the line's top level (a bracket back to depth 0, a top-level string ended).
    closed: usize,
    lines: usize,
}

impl LineScan {
    fn feed(&mut self, chunk: &str) {
        for &byte in chunk.as_bytes() {
            if byte == b'\n' {
                *self = LineScan { lines: self.lines + 1, ..LineScan::default() };
                continue;
            }
            if self.first.is_none() && !matches!(byte, b' ' | b'\t' | b'\r') {
                self.first = Some(byte);
            }
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        self.closed += usize::from(self.depth <= 0);
                    }
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    self.closed += usize::from(self.depth <= 0);
                }
                _ => {}
            }
        }
    }

    /// Inside a string, or inside the open bracket that starts the line.
    fn frozen(&self) -> bool {
        self.in_string || (self.depth > 0 && matches!(self.first, Some(b'{' | b'[')))
    }

    /// The tail judged at `self` is still the tail at `now`.
    fn same_tail(&self, now: &LineScan) -> bool {
        self.frozen() && now.frozen() && self.lines == now.lines && self.closed == now.closed
    }
}

pub struct JsonlTrack {
    parser: JsonlParser,
    scan: LineScan,
    /// The scan where the tail was last judged, and what it gave.
    judged: Option<(LineScan, Option<usize>)>,
    /// Per cut: records judged, and the index of the tail's items in `tails` (when it gives any).
    at_cut: Vec<(usize, Option<usize>)>,
    tails: Vec<Vec<Value>>,
    full: Vec<Value>,
}

impl JsonlTrack {
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>, cuts: usize) -> JsonlTrack {
        JsonlTrack {
            parser: JsonlParser::new(profile, check),
            scan: LineScan::default(),
            judged: None,
            at_cut: Vec::with_capacity(cuts),
            tails: Vec::new(),
            full: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &str) {
        self.parser.feed(chunk);
        self.scan.feed(chunk);
    }

    /// The items the pending tail (the last line, a held or open record) gives if the answer ended here.
    fn tail(&self) -> Vec<Value> {
        // The parser's report judges the tail on a copy of its state; a cheaper accessor for the
        // tail alone would save copying the judged items at each cut.
        let judged = self.parser.items().len();
        match self.parser.report() {
            Report::Jsonl(mut report) if report.items.len() > judged => report.items.split_off(judged),
            _ => Vec::new(),
        }
    }

    pub fn record(&mut self) {
        let at = match self.judged {
            Some((scan, at)) if scan.same_tail(&self.scan) => at,
            _ => {
                let tail = self.tail();
                let at = (!tail.is_empty()).then(|| {
                    self.tails.push(tail);
                    self.tails.len() - 1
                });
                self.judged = Some((self.scan, at));
                at
            }
        };
        self.at_cut.push((self.parser.items().len(), at));
    }

    /// The items of the whole answer (call once everything is fed).
    pub fn full_items(&mut self) -> Vec<Value> {
        let mut full = self.parser.items().to_vec();
        full.extend(self.tail());
        self.full = full.clone();
        full
    }

    pub fn figures(&self, reference: &[Value]) -> Vec<CutFigures> {
        let mut corrupt_before = Vec::with_capacity(self.full.len() + 1);
        corrupt_before.push(0);
        for (at, item) in self.full.iter().enumerate() {
            let last = corrupt_before.last().copied().unwrap_or(0);
            corrupt_before.push(last + usize::from(reference.get(at) != Some(item)));
        }
        self.at_cut
            .iter()
            .map(|&(judged, tail)| {
                let tail = tail.and_then(|at| self.tails.get(at)).map(Vec::as_slice).unwrap_or_default();
                let tail_corrupt =
                    tail.iter().enumerate().filter(|(at, item)| reference.get(judged + at) != Some(item)).count();
                CutFigures {
                    items: judged + tail.len(),
                    corrupt: corrupt_before.get(judged).copied().unwrap_or(0) + tail_corrupt,
                }
            })
            .collect()
    }
}
