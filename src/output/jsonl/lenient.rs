//! The `lenient` profile (also used for `ptc`): what real models write around and inside a JSONL answer.
//!
//! Per line: surrounding whitespace (CR of CRLF included) and a byte order mark are removed; a fence line
//! (```` ``` ````, ```` ```json ````, ```` ```jsonl ````, `~~~`, opening or closing, closed or not) is skipped
//! as "fence", and a fence glued to a record (```` ```json{...} ````, ```` {...}``` ````) is removed and noted;
//! a line that does not start like JSON is skipped as "prose" unless it reads completely as JSON (a bare
//! `42` or `"x"` is a record, as in TrustGraph). A line starting like JSON is read as one or more values
//! (`{..} {..}` and `{..},{..}` give each, noted "record i of n"); a comma after the last record and
//! trailing commas inside are removed and noted; text that is not JSON after a record is ignored and
//! noted; `NaN`/`Infinity` read as null, noted. A non-empty array of objects is read as its elements
//! (each noted), unless the check accepts the array itself. A line that stays invalid is reported with
//! serde_json's error and column; nothing is guessed (tail repair belongs to the `json` parser).
//!
//! A line that starts like JSON and leaves an object or array open (outside a string) starts a
//! pretty-printed record: the following lines join it until its brackets close, and it gets ONE verdict
//! with `line` and `end_line`. A line that cannot continue it ends it as it stands (invalid, with the
//! error where the text stopped): a fence, a line that does not start like JSON inside an object (prose),
//! a line ending inside a string, or an unindented line that is a complete record on its own.

use super::record::{is_literal_start, judge, judge_object, record, starts_like_json, ObjectRead, Place, Scan};
use super::sink::{offset_in, Sink, Span};
use crate::schema::Check;

#[derive(Clone, Debug, Default)]
pub(crate) struct Lenient {
    block: Option<Block>,
}

/// The lines of a pretty-printed record so far.
#[derive(Clone, Debug)]
struct Block {
    text: String,
    first_line: usize,
    first_column: usize,
    /// Blank lines read since the last line with content (joined only if more content follows).
    blank_run: usize,
    scan: Scan,
    /// How many times a joined line closed every bracket (a value completed) and opened another:
    /// the values the record reads change only then.
    reopened: usize,
    notes: Vec<String>,
}

impl Block {
    fn judge(self, sink: &mut Sink, check: Option<&dyn Check>) {
        let place = Place { text: &self.text, first_line: self.first_line, first_column: self.first_column };
        judge(sink, check, &place, self.notes, false);
    }
}

impl Lenient {
    /// No pretty-printed record open: the next line is judged as if it were the first.
    pub fn is_at_rest(&self) -> bool {
        self.block.is_none()
    }

    pub fn line(&mut self, sink: &mut Sink, check: Option<&dyn Check>, line: usize, raw: &str) {
        let mut notes = Vec::new();
        let mut text = raw.trim();
        if let Some(block) = &mut self.block {
            if text.is_empty() {
                block.blank_run += 1;
                return;
            }
            if joins(raw, text) {
                block.text.extend(std::iter::repeat_n('\n', block.blank_run + 1));
                block.text.push_str(raw);
                block.blank_run = 0;
                if !stays_open(&mut block.scan, raw) {
                    block.reopened += 1;
                }
                if !block.scan.open() {
                    if let Some(block) = self.block.take() {
                        block.judge(sink, check);
                    }
                }
                return;
            }
            if let Some(block) = self.block.take() {
                block.judge(sink, check);
            }
        }
        if text.starts_with('\u{feff}') {
            text = text.trim_start_matches('\u{feff}').trim_start();
            notes.push("removed byte order mark".to_owned());
        }
        if text.is_empty() {
            return;
        }
        let span = Span::line(line);
        if is_fence(text) {
            match glued_opening_fence(text) {
                Some((fence, rest)) => {
                    notes.push(format!("removed opening fence `{fence}` glued to the record"));
                    text = rest;
                }
                None => return sink.skipped(span, "fence", notes),
            }
        }
        if let Some(head) = text.strip_suffix("```").or_else(|| text.strip_suffix("~~~")) {
            notes.push("removed closing fence glued to the end of the line".to_owned());
            text = head.trim_end_matches(['`', '~']).trim_end();
            if text.is_empty() {
                return sink.skipped(span, "fence", notes);
            }
        }
        let first_column = raw.get(..offset_in(raw, text)).map_or(0, |head| head.chars().count());
        if !starts_like_json(text) {
            return judge(sink, check, &Place { text, first_line: line, first_column }, notes, true);
        }
        let notes = match judge_object(sink, check, span, text, notes) {
            ObjectRead::Judged => return,
            ObjectRead::OtherValue(value, notes) => return record(sink, check, span, value, notes),
            ObjectRead::Unreadable(_, notes) => notes,
        };
        let scan = Scan::of(text);
        if scan.open() {
            let text = text.to_owned();
            self.block = Some(Block { text, first_line: line, first_column, blank_run: 0, scan, reopened: 0, notes });
            return;
        }
        judge(sink, check, &Place { text, first_line: line, first_column }, notes, false);
    }

    /// The open pretty-printed record's key (its first line, how often it reopened) and its scan.
    pub fn open_record(&self) -> Option<((usize, usize), Scan)> {
        self.block.as_ref().map(|block| ((block.first_line, block.reopened), block.scan))
    }

    /// The answer ends: an open pretty-printed record is judged as it stands.
    pub fn finish(&mut self, sink: &mut Sink, check: Option<&dyn Check>) {
        if let Some(block) = self.block.take() {
            block.judge(sink, check);
        }
    }
}

fn is_fence(text: &str) -> bool {
    text.starts_with("```") || text.starts_with("~~~")
}

/// For a line starting with a fence: the fence with its info string and the record glued after it,
/// when what follows starts like JSON (```` ```json{"a":1} ````); `None` for a fence line proper.
fn glued_opening_fence(text: &str) -> Option<(&str, &str)> {
    let marks = text.len() - text.trim_start_matches(['`', '~']).len();
    let info = text.get(marks..)?.chars().take_while(|c| c.is_ascii_alphanumeric() || "-_+.".contains(*c)).count();
    let fence = text.get(..marks + info)?;
    let rest = text.get(marks + info..)?.trim_start();
    (!rest.is_empty() && starts_like_json(rest)).then_some((fence, rest))
}

/// Feeds `line` to `scan`; false when some byte left no bracket open (`}{` closes the record's value
/// and opens another).
fn stays_open(scan: &mut Scan, line: &str) -> bool {
    line.bytes().fold(true, |open, byte| {
        scan.feed_byte(byte);
        open && scan.depth_open()
    })
}

/// Whether `pending`, the line still arriving (`content` the line from its first character that is
/// not white space, `line_scan` its scan from its start), leaves what the
/// open pretty-printed record reads unchanged, whether the answer ends now or later: the line is
/// blank, or it joins the record and, as `stayed_open` says, a bracket of the record stayed open
/// after each of its bytes. The record then reads the values it read when it last reopened (those
/// complete before the open one): no later byte completes a value while a bracket stays open, and no
/// repair reads an open text whole (comma removal and Python's forms move no quote or bracket). The
/// pending tail (`pending.rs`) keeps this up to date byte by byte, so that the truncation sweep
/// judges the record once per key (see [`Lenient::open_record`]).
pub(crate) fn leaves_unchanged(pending: &str, content: &str, line_scan: &Scan, stayed_open: bool) -> bool {
    content.is_empty() || (stayed_open && joins_scanned(pending, content, line_scan))
}

/// Whether line `raw` (`text` trimmed) joins an open pretty-printed record rather than ending it.
fn joins(raw: &str, text: &str) -> bool {
    joins_scanned(raw, text, &Scan::of(text))
}

/// [`joins`] with the line's scan from its start given (trailing blanks change no scan); only the
/// start of `text` is read, so it may keep its trailing white space.
fn joins_scanned(raw: &str, text: &str, line_scan: &Scan) -> bool {
    let complete_on_its_own = raw.starts_with(['{', '[']) && !line_scan.open() && !line_scan.in_string();
    !is_fence(text) && continues_json(text) && !complete_on_its_own
}

/// Whether a line can be part of a pretty-printed JSON value (as opposed to prose).
fn continues_json(text: &str) -> bool {
    match text.chars().next() {
        Some(c) => "\"{}[],:-".contains(c) || c.is_ascii_digit() || is_literal_start(text),
        None => true,
    }
}
