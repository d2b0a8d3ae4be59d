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

use serde_json::Value;

use super::record::Scan;

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
    /// The version the cached items were judged at, and the items.
    cached: Option<(u64, Vec<Value>)>,
    /// The items of the open pretty-printed record, by its first line and reopen count (kept across lines: they do not
    /// change while the record stays open, see `Lenient::open_record_unchanged_by`).
    open_record: Option<((usize, usize), Vec<Value>)>,
}

impl Tail {
    /// Brings the scan up to `pending`, the text after `line` completed lines.
    pub fn catch_up(&mut self, line: usize, pending: &str) {
        if line != self.line {
            let open_record = self.open_record.take();
            *self = Tail { line, version: self.version + 1, open_record, ..Tail::default() };
        }
        let mut changed = false;
        for &byte in pending.as_bytes().get(self.scanned..).unwrap_or_default() {
            let was_inside = self.scan.inside();
            self.scan.feed_byte(byte);
            changed |= !(was_inside && self.scan.inside());
        }
        self.scanned = pending.len();
        self.version += u64::from(changed);
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
