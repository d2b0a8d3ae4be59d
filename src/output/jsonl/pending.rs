//! The pending tail's view: what the line still arriving (with a held or open record before it) adds if
//! the answer ends now, and a lazily advanced scan of that line that says when the answer cannot have
//! changed, so a caller asking at every cut (the truncation sweep) pays only for the tail, once.
//!
//! Why a frozen line gives the same items: while every byte fed since the last look left the pending
//! line inside a string or an open bracket (counted from the line's start), no value was completed, so
//! no profile reads anything new: a text ending inside a string or bracket never reads as a whole (not
//! even repaired: comma removal and Python's forms move no quote or bracket), and reading a sequence
//! yields only the values that closed before the error; the other decisions (fence, prose, joining an
//! open record, TrustGraph's first-line and held-line rules) depend on the line's first characters only,
//! which are fixed once a quote or bracket has arrived.
//!
//! And while the pending line leaves the same open pretty-printed record unchanged (it joins it and a
//! bracket of the record stays open; see `lenient::leaves_unchanged`), the tail gives that
//! record's items, across bytes and completed lines alike: so a pretty-printed answer's version stands
//! for as long as its record stays open, whatever its lines do inside it.

use serde_json::Value;

use super::lenient::leaves_unchanged;
use super::record::Scan;

/// An open pretty-printed record's key (its first line, how often it reopened) and scan.
pub(crate) type OpenRecord = ((usize, usize), Scan);

/// The scan of the pending line, advanced lazily, and the last items it gave.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    /// Lines completed when this scan started (a new line restarts it).
    line: usize,
    /// Bytes of the pending line scanned so far.
    scanned: usize,
    scan: Scan,
    /// Changes whenever fed text may have changed what the tail gives.
    version: u64,
    /// The open record the pending line started under (see [`Record`]).
    record: Option<Record>,
    /// The lowest bracket depth of the line's scan after any of its bytes (0 before any).
    min_depth: i64,
    /// Where the pending line's content starts (its first character that is not white space), once
    /// it has arrived.
    content_at: Option<usize>,
    /// The key of the open record the pending line leaves unchanged, as of the last catch-up: while
    /// it stays the same, the tail gives that record's items whatever else the line does.
    unchanged: Option<(usize, usize)>,
    /// The version the cached items were judged at, and the items.
    cached: Option<(u64, Vec<Value>)>,
    /// The items of the open pretty-printed record, by its first line and reopen count (kept across lines: they do not
    /// change while the record stays open, see `lenient::leaves_unchanged`).
    open_record: Option<((usize, usize), Vec<Value>)>,
}

/// The open record the pending line started under.
#[derive(Clone, Copy, Debug)]
struct Record {
    key: (usize, usize),
    /// Its scan when the line started.
    start: Scan,
    /// Its scan advanced over the line; followed only when it started inside a string (otherwise
    /// the line's own scan and `start` give it).
    scan: Scan,
    /// A bracket of the record stayed open after every byte of the line.
    stayed_open: bool,
}

impl Record {
    /// Follows the line's `new` bytes (every byte, when it started inside a string), `min_depth` the
    /// lowest depth of the line's own scan so far. Started outside a string, the record's scan is the
    /// line's, `start`'s depth deeper.
    fn follow(&mut self, new: &[u8], min_depth: i64) {
        if self.start.in_string() {
            for &byte in new {
                self.scan.feed_byte(byte);
                self.stayed_open &= self.scan.depth_open();
            }
        } else {
            self.stayed_open = self.start.depth() + min_depth > 0;
        }
    }
}

impl Tail {
    /// Brings the scan up to `pending`, the text after `line` completed lines, with `record` the open
    /// pretty-printed record the line started under (lenient only).
    pub fn catch_up(&mut self, line: usize, pending: &str, record: impl FnOnce() -> Option<OpenRecord>) {
        if line == self.line && pending.len() == self.scanned {
            return;
        }
        let before = self.unchanged;
        let mut changed = line != self.line;
        if changed {
            let (open_record, version, cached) = (self.open_record.take(), self.version, self.cached.take());
            let record = record().map(|(key, scan)| Record { key, start: scan, scan, stayed_open: true });
            *self = Tail { line, version, open_record, cached, record, unchanged: before, ..Tail::default() };
        }
        let new = pending.as_bytes().get(self.scanned..).unwrap_or_default();
        for &byte in new {
            let was_inside = self.scan.inside();
            self.scan.feed_byte(byte);
            changed |= !(was_inside && self.scan.inside());
            self.min_depth = self.min_depth.min(self.scan.depth());
        }
        self.scanned = pending.len();
        // Unless a byte left the line's strings and brackets, the line's first characters and its own
        // scan are as they were, and a record that started outside a string is still open (its
        // depth is the line's plus the depth it started at, which is at least one).
        let record_in_string = self.record.is_some_and(|record| record.start.in_string());
        if !changed && !record_in_string {
            return;
        }
        if let Some(record) = &mut self.record {
            record.follow(new, self.min_depth);
        }
        if self.content_at.is_none() {
            let content = pending.trim_start();
            self.content_at = (!content.is_empty()).then(|| pending.len() - content.len());
        }
        let content = self.content_at.and_then(|at| pending.get(at..)).unwrap_or_default();
        self.unchanged = self
            .record
            .as_ref()
            .filter(|record| leaves_unchanged(pending, content, &self.scan, record.stayed_open))
            .map(|record| record.key);
        let same_record = self.unchanged.is_some() && self.unchanged == before;
        if !same_record && (changed || self.unchanged != before) {
            self.version += 1;
        }
    }

    /// The key of the open record the pending line leaves unchanged (see [`Tail::catch_up`]).
    pub fn unchanged(&self) -> Option<(usize, usize)> {
        self.unchanged
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn is_open(&self) -> bool {
        self.scan.inside()
    }

    /// The items cached at the current version, if any.
    pub fn cached(&self) -> Option<&Vec<Value>> {
        self.cached.as_ref().filter(|(at, _)| *at == self.version).map(|(_, items)| items)
    }

    /// Takes the items cached at the current version out of the cache, if any.
    pub fn take_cached(&mut self) -> Option<Vec<Value>> {
        self.cached.take().filter(|(at, _)| *at == self.version).map(|(_, items)| items)
    }

    /// The items kept for the open record `key` (its first line, how often it reopened), if any.
    pub fn open_record(&self, key: (usize, usize)) -> Option<&Vec<Value>> {
        self.open_record.as_ref().filter(|(at, _)| *at == key).map(|(_, items)| items)
    }

    pub fn keep_open_record(&mut self, key: (usize, usize), items: Vec<Value>) {
        self.open_record = Some((key, items));
    }

    pub fn cache(&mut self, items: Vec<Value>) {
        self.cached = Some((self.version, items));
    }
}
