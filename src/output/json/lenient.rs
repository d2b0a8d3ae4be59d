//! The `lenient` profile's search for the answer's value, incrementally: a BOM, prose before and after,
//! fences (```` ```json ````, ```` ```jsonl ````, any tag, unclosed), and restarts after a false start.
//!
//! Rules (a pure function of the text, whatever the chunking):
//! - The content starts after a leading BOM, or after the first fence line (```` ``` ```` at the start of
//!   a line, after optional spaces or tabs, with its tag) if there is one: the first fenced block wins
//!   over a value found in prose before it.
//! - A candidate starts at the content's first non-blank character if that can start a value, else at
//!   the first `{` or `[`. It is read with trailing commas tolerated. If it breaks the grammar the
//!   search goes on FROM THE BYTE THAT BROKE IT (so the search stays linear); nesting deeper than
//!   `MAX_DEPTH` ends the search.
//! - After a complete value: blanks, a closing fence and, after an array or object, prose are ignored;
//!   prose after a scalar (`42 items: [...]`) means the scalar was prose, and the search goes on.
//! - A scalar candidate that breaks (`no json here` starts like `null`) was prose too: only a candidate
//!   that starts with `{` or `[` leaves an error to report when no value is found.

use serde_json::Value;

use super::build::{Builder, ItemMark, Mode, OpenItem};
use super::scan::{Fed, Grammar, ScanError, Scanner};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Looking for a candidate.
    Search,
    /// Reading a candidate.
    Value,
    /// The value is complete; watching for a first fence (which would win) or prose after a scalar.
    After,
    /// Nothing more can change the value (or a fatal error ended the search).
    Finished,
}

/// Fence detection, byte by byte: ```` ``` ```` at the start of a line after spaces or tabs.
#[derive(Clone, Copy, Debug)]
struct LineStart {
    at_start: bool,
    ticks: u8,
    in_fence_line: bool,
}

#[derive(Clone, Debug)]
pub struct Lenient {
    phase: Phase,
    scanner: Scanner,
    builder: Builder,
    line: LineStart,
    /// Only blanks since the content started: a scalar may start the value.
    fresh: bool,
    fence: Option<usize>,
    content_start: usize,
    candidate_start: usize,
    value_end: Option<usize>,
    bom: bool,
    epoch: usize,
    retired: Vec<(Vec<Value>, Vec<ItemMark>)>,
    first_error: Option<ScanError>,
    fatal: Option<ScanError>,
    pos: usize,
}

impl Default for Lenient {
    fn default() -> Self {
        Lenient {
            phase: Phase::Search,
            scanner: Scanner::new(Grammar::LENIENT, 0),
            builder: Builder::new(true),
            line: LineStart { at_start: true, ticks: 0, in_fence_line: false },
            fresh: true,
            fence: None,
            content_start: 0,
            candidate_start: 0,
            value_end: None,
            bom: false,
            epoch: 0,
            retired: Vec::new(),
            first_error: None,
            fatal: None,
            pos: 0,
        }
    }
}

impl Lenient {
    /// Reads `text[self.pos..]`; `text` is the whole answer so far.
    pub fn feed(&mut self, text: &str) {
        let bytes = text.as_bytes();
        if self.pos == 0 && text.starts_with('\u{feff}') {
            self.bom = true;
            self.pos = '\u{feff}'.len_utf8();
            self.content_start = self.pos;
        }
        while self.pos < bytes.len() {
            match self.phase {
                Phase::Search => self.search(bytes),
                Phase::Value => self.read_candidate(text),
                Phase::After => self.after(bytes),
                Phase::Finished => self.pos = bytes.len(),
            }
        }
    }

    fn search(&mut self, bytes: &[u8]) {
        while let Some(&byte) = bytes.get(self.pos) {
            if self.line.in_fence_line {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'+' | b'.') {
                    self.pos += 1;
                    continue;
                }
                self.line.in_fence_line = false;
                self.fresh = true;
                self.content_start = self.pos;
            }
            if self.fence_byte(byte) {
                self.pos += 1;
                self.content_start = self.pos;
                if self.fence.is_none() {
                    self.fence = Some(self.pos - 3);
                }
                continue;
            }
            let starts = matches!(byte, b'{' | b'[')
                || (self.fresh && matches!(byte, b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'));
            if starts {
                self.candidate_start = self.pos;
                self.scanner = Scanner::new(Grammar::LENIENT, self.pos);
                self.phase = Phase::Value;
                return;
            }
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                self.fresh = false;
            }
            self.pos += 1;
        }
    }

    fn read_candidate(&mut self, text: &str) {
        let chunk = text.get(self.pos..).unwrap_or_default();
        match self.scanner.feed(chunk, &mut self.builder) {
            Fed::More => self.pos = text.len(),
            Fed::Done(read) => {
                self.pos += read;
                self.value_end = Some(self.pos);
                self.line = LineStart { at_start: false, ticks: 0, in_fence_line: false };
                self.phase = Phase::After;
            }
            Fed::Failed => {
                let Some(error) = self.scanner.error().cloned() else { return };
                if error.fatal {
                    self.fatal = Some(error);
                    self.phase = Phase::Finished;
                    return;
                }
                self.pos = error.at.max(self.candidate_start + 1).min(text.len());
                if matches!(text.as_bytes().get(self.candidate_start), Some(b'{' | b'[')) {
                    self.first_error.get_or_insert(error);
                }
                self.restart();
                self.fresh = false;
                let before = text.as_bytes().get(..self.pos).unwrap_or_default();
                let line_start = before.iter().rev().take_while(|b| matches!(b, b' ' | b'\t')).count();
                let at_start = before.len() == line_start || before.get(before.len() - line_start - 1) == Some(&b'\n');
                self.line = LineStart { at_start, ticks: 0, in_fence_line: false };
            }
        }
    }

    fn after(&mut self, bytes: &[u8]) {
        let scalar = self.builder.mode() == Mode::Single && self.builder.items().first().is_some_and(is_scalar);
        while let Some(&byte) = bytes.get(self.pos) {
            if !scalar && byte != b'`' {
                self.skip_to_backtick(bytes);
                continue;
            }
            if self.fence_byte(byte) {
                self.pos += 1;
                if self.fence.is_some() {
                    self.phase = Phase::Finished;
                } else {
                    self.fence = Some(self.pos - 3);
                    self.restart();
                    self.line.in_fence_line = true;
                    self.phase = Phase::Search;
                }
                return;
            }
            let blank = matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'`');
            if !blank && scalar {
                self.restart();
                self.fresh = false;
                self.phase = Phase::Search;
                return;
            }
            self.pos += 1;
        }
    }

    /// After an array or object only a fence matters: reads up to the next backtick in one pass,
    /// leaving the fence detector as [`Lenient::fence_byte`] would (none of these bytes is a backtick).
    fn skip_to_backtick(&mut self, bytes: &[u8]) {
        let mut at_start = self.line.at_start && self.line.ticks == 0;
        let start = self.pos;
        while let Some(&byte) = bytes.get(self.pos) {
            match byte {
                b'`' => break,
                b'\n' => at_start = true,
                b' ' | b'\t' => {}
                _ => at_start = false,
            }
            self.pos += 1;
        }
        if self.pos > start {
            self.line = LineStart { at_start, ticks: 0, in_fence_line: false };
        }
    }

    /// Feeds the fence detector; true when `byte` completes a fence mark at the start of a line.
    fn fence_byte(&mut self, byte: u8) -> bool {
        let line = &mut self.line;
        match byte {
            b'\n' => *line = LineStart { at_start: true, ticks: 0, in_fence_line: false },
            b'`' if line.at_start => {
                line.ticks += 1;
                if line.ticks == 3 {
                    *line = LineStart { at_start: false, ticks: 0, in_fence_line: true };
                    return true;
                }
            }
            b' ' | b'\t' if line.at_start && line.ticks == 0 => {}
            _ => *line = LineStart { at_start: false, ticks: 0, in_fence_line: false },
        }
        false
    }

    /// Drops the candidate (its items are kept for the sweep) and starts a new epoch.
    fn restart(&mut self) {
        let mut old = std::mem::replace(&mut self.builder, Builder::new(true));
        self.retired.push(old.take_counted());
        self.epoch += 1;
        self.value_end = None;
        self.phase = Phase::Search;
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    pub fn builder(&self) -> &Builder {
        &self.builder
    }

    /// How many times the candidate was dropped; items of epoch `e` stay readable with [`Lenient::epoch_items`].
    pub fn epoch(&self) -> usize {
        self.epoch
    }

    /// The items epoch `epoch` counted ([`Builder::counted`]: as they stood if a second `"items"` key
    /// moved them into the object).
    pub fn epoch_items(&self, epoch: usize) -> &[Value] {
        match self.retired.get(epoch) {
            Some((items, _)) => items,
            None if epoch == self.epoch => self.builder.counted().0,
            None => &[],
        }
    }

    /// Where each item of [`Lenient::epoch_items`] completed.
    pub fn epoch_marks(&self, epoch: usize) -> &[ItemMark] {
        match self.retired.get(epoch) {
            Some((_, marks)) => marks,
            None if epoch == self.epoch => self.builder.counted().1,
            None => &[],
        }
    }

    pub fn fatal(&self) -> Option<&ScanError> {
        self.fatal.as_ref()
    }

    pub fn first_error(&self) -> Option<&ScanError> {
        self.first_error.as_ref()
    }

    pub fn bom(&self) -> bool {
        self.bom
    }

    pub fn fence(&self) -> Option<usize> {
        self.fence
    }

    pub fn content_start(&self) -> usize {
        self.content_start
    }

    pub fn candidate_start(&self) -> usize {
        self.candidate_start
    }

    pub fn value_end(&self) -> Option<usize> {
        self.value_end
    }

    /// The value is complete as the text stands (a root number at the end counts).
    pub fn complete(&self) -> bool {
        matches!(self.phase, Phase::After | Phase::Finished) && self.fatal.is_none()
            || (self.phase == Phase::Value && self.scanner.complete_at_end())
    }

    /// The item in progress, when a candidate is being read.
    pub fn open_item(&self) -> Option<OpenItem> {
        match self.phase {
            Phase::Value => self.builder.open_item(&self.scanner),
            _ => None,
        }
    }

    /// The value as if the text ended here (repaired), when a candidate was found.
    pub fn value(&self) -> Option<Value> {
        match self.phase {
            Phase::Value => self.builder.materialise(&self.scanner),
            Phase::After | Phase::Finished if self.fatal.is_none() => self.builder.root(),
            _ => None,
        }
    }
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}
