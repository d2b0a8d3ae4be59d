//! Reading one lenient record text (a line, or the lines of a pretty-printed record): one or more JSON
//! values separated by whitespace or commas, trailing commas repaired, a JSON array of objects read as
//! its elements; every change noted, errors placed at their line and character column.

use std::cell::RefCell;

use serde_json::Value;

use super::python::python_rewrite;
use super::sink::{char_column, error_message, error_offset, Sink, Span};
use super::value::Exact;
use crate::schema::{Check, Tape};

thread_local! {
    /// The tape records are read onto, reused from record to record (see [`judge_object`]).
    static TAPE: RefCell<Tape> = RefCell::default();
}

/// What reading a record text as one object gave (see [`judge_object`]).
pub(crate) enum ObjectRead {
    /// One object with distinct keys: judged into the sink, kept as its text.
    Judged,
    /// JSON, but not one object with distinct keys: its value, to be judged as such.
    OtherValue(Value, Vec<String>),
    /// Not one JSON text: serde_json's error, which reading it as a value gives too.
    Unreadable(serde_json::Error, Vec<String>),
}

/// Reads `text` onto the thread's tape and, when it is one object with distinct keys (nearly every
/// record), judges it from the tape: checked without building a value and kept as text.
pub(crate) fn judge_object(
    sink: &mut Sink,
    check: Option<&dyn Check>,
    span: Span,
    text: &str,
    notes: Vec<String>,
) -> ObjectRead {
    TAPE.with_borrow_mut(|tape| {
        let outcome = match tape.read(text) {
            Err(error) => ObjectRead::Unreadable(error, notes),
            Ok(()) if !tape.is_object() || tape.repeats_keys() => ObjectRead::OtherValue(tape.to_value(), notes),
            Ok(()) => {
                sink.record_text(check, span, text, tape, notes);
                ObjectRead::Judged
            }
        };
        tape.release_if_large();
        outcome
    })
}

/// Brace depth and string state of JSON text read so far, byte by byte (no recursion, any depth).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scan {
    depth: i64,
    in_string: bool,
    escape: bool,
}

impl Scan {
    pub fn of(text: &str) -> Scan {
        let mut scan = Scan::default();
        scan.feed(text);
        scan
    }

    pub fn feed(&mut self, text: &str) {
        text.bytes().for_each(|byte| self.feed_byte(byte));
    }

    pub fn feed_byte(&mut self, byte: u8) {
        if self.in_string {
            match byte {
                _ if self.escape => self.escape = false,
                b'\\' => self.escape = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            return;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth -= 1,
            _ => {}
        }
    }

    /// Inside an object or array, outside any string: more lines may complete it.
    pub fn open(&self) -> bool {
        self.depth > 0 && !self.in_string
    }

    /// How many objects and arrays are open (negative when more closed than opened).
    pub fn depth(&self) -> i64 {
        self.depth
    }

    /// An object or array is open (inside a string or not).
    pub fn depth_open(&self) -> bool {
        self.depth > 0
    }

    pub fn in_string(&self) -> bool {
        self.in_string
    }

    /// Inside a string or an open object/array (outside a string, depth counted from the scan's start).
    pub fn inside(&self) -> bool {
        self.in_string || self.depth > 0
    }
}

/// A record text and where it sits in the answer.
pub(crate) struct Place<'t> {
    /// The text: its first line starts `first_column` characters into physical line `first_line`;
    /// each `\n` in it is the start of the next physical line.
    pub text: &'t str,
    pub first_line: usize,
    pub first_column: usize,
}

impl Place<'_> {
    /// Physical line and 1-based character column of byte `offset` of the text.
    fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let head = self.text.as_bytes().get(..offset).unwrap_or_default();
        let newlines = head.iter().filter(|b| **b == b'\n').count();
        let line_start = head.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
        let line_text = self.text.get(line_start..).unwrap_or_default();
        let mut column = char_column(line_text, offset - line_start);
        if newlines == 0 {
            column += self.first_column;
        }
        (self.first_line + newlines, column)
    }

    /// "column C" on the first line, "line L column C" elsewhere.
    fn describe(&self, offset: usize) -> String {
        match self.position(offset) {
            (line, column) if line == self.first_line => format!("column {column}"),
            (line, column) => format!("line {line} column {column}"),
        }
    }

    fn span(&self) -> Span {
        let last = self.first_line + self.text.bytes().filter(|b| *b == b'\n').count();
        Span { line: self.first_line, end_line: (last > self.first_line).then_some(last) }
    }
}

/// Judges a record text into `sink`. `prose` says the text does not start like JSON: it counts only if
/// it reads completely, else it is skipped as prose.
pub(crate) fn judge(sink: &mut Sink, check: Option<&dyn Check>, place: &Place, mut notes: Vec<String>, prose: bool) {
    let span = place.span();
    let first = if prose {
        read_sequence(place.text, true)
    } else {
        match judge_object(sink, check, span, place.text, notes) {
            ObjectRead::Judged => return,
            ObjectRead::OtherValue(value, kept) => {
                notes = kept;
                Sequence { values: vec![value], comma_after_last: None, error: None }
            }
            ObjectRead::Unreadable(_, kept) => {
                notes = kept;
                read_sequence(place.text, false)
            }
        }
    };
    let read = if first.error.is_none() {
        first
    } else {
        match repaired(place, &mut notes) {
            Some(repaired) => repaired,
            None => first,
        }
    };
    if read.error.is_some() && (prose || (read.values.is_empty() && !starts_like_json(place.text))) {
        sink.skipped(span, "prose", notes);
        return;
    }
    if read.comma_after_last.is_some() {
        // Located in the text as given (a repaired text has other offsets): its last non-blank byte.
        let comma = place.text.trim_end().len().saturating_sub(1);
        notes.push(format!("removed comma after the record at {}", place.describe(comma)));
    }
    let mut error = read.error;
    if let Some(trailing) = error.as_ref().filter(|_| !read.values.is_empty()) {
        if !starts_like_json(place.text.get(trailing.start..).unwrap_or_default()) {
            notes.push(format!("ignored text after the record at {}", place.describe(trailing.start)));
            error = None;
        }
    }
    let count = read.values.len();
    let where_ = if span.end_line.is_some() { "in these lines" } else { "on this line" };
    for (index, value) in read.values.into_iter().enumerate() {
        let mut repairs = notes.clone();
        if count > 1 {
            repairs.push(format!("record {} of {count} {where_}", index + 1));
        }
        record(sink, check, span, value, repairs);
    }
    if let Some(error) = error {
        let (line, column) = place.position(error.offset);
        let mut message = error.message;
        if line != span.line {
            message.push_str(&format!(" (line {line})"));
        }
        sink.invalid(span, message, column, notes);
    }
}

/// The text read after trailing-comma removal and then Python's forms, when either makes it read fully.
fn repaired(place: &Place, notes: &mut Vec<String>) -> Option<Sequence> {
    let mut text = place.text.to_owned();
    let mut changes = Vec::new();
    if let Some((fixed, commas)) = remove_trailing_commas(&text) {
        changes.extend(commas.iter().map(|at| format!("removed trailing comma at {}", place.describe(*at))));
        text = fixed;
        let read = read_sequence(&text, true);
        if read.error.is_none() {
            notes.extend(changes);
            return Some(read);
        }
    }
    let (rewritten, rewrites) = python_rewrite(&text)?;
    let read = read_sequence(&rewritten, true);
    read.error.is_none().then(|| {
        notes.extend(changes);
        notes.extend(rewrites);
        read
    })
}

/// One value read: a record, or, for a non-empty array of objects that the check does not accept as a
/// whole (or with no check), its elements, each noted.
pub(crate) fn record(sink: &mut Sink, check: Option<&dyn Check>, span: Span, value: Value, notes: Vec<String>) {
    let split = match &value {
        Value::Array(elements) => {
            !elements.is_empty()
                && elements.iter().all(Value::is_object)
                && check.is_none_or(|check| check.check(&value).is_err())
        }
        _ => false,
    };
    match value {
        Value::Array(elements) if split => {
            let count = elements.len();
            for (index, element) in elements.into_iter().enumerate() {
                let mut repairs = notes.clone();
                repairs.push(format!("element {} of {count} of a JSON array, read as a record", index + 1));
                sink.record(check, span, element, repairs);
            }
        }
        value => sink.record(check, span, value, notes),
    }
}

/// Whether a text starts like a JSON record (`{`, or `[` followed by something a JSON value starts with),
/// rather than prose such as "[Note] ...".
pub(crate) fn starts_like_json(text: &str) -> bool {
    let text = text.trim_start();
    if text.starts_with('{') {
        return true;
    }
    let Some(inner) = text.strip_prefix('[') else { return false };
    let inner = inner.trim_start();
    match inner.chars().next() {
        None => true,
        Some(c) => "{[\"]-".contains(c) || c.is_ascii_digit() || is_literal_start(inner),
    }
}

pub(crate) fn is_literal_start(text: &str) -> bool {
    ["true", "false", "null"].iter().any(|literal| text.starts_with(literal))
}

struct ReadError {
    /// Byte offset of the error in the text.
    offset: usize,
    /// Where the value that failed started.
    start: usize,
    message: String,
}

/// Values read from a text, the comma after the last one if any, and the error that stopped reading.
struct Sequence {
    values: Vec<Value>,
    comma_after_last: Option<usize>,
    error: Option<ReadError>,
}

/// Reads the values of `text` one after the other; `try_whole` first tries it as one value (the
/// caller passes false when it already found that it is not one).
fn read_sequence(text: &str, try_whole: bool) -> Sequence {
    let mut read = Sequence { values: Vec::new(), comma_after_last: None, error: None };
    if try_whole {
        if let Ok(value) = super::value::from_str(text) {
            read.values.push(value);
            return read;
        }
    }
    let mut at = skip_whitespace(text, 0);
    while at < text.len() {
        if !read.values.is_empty() && text.as_bytes().get(at) == Some(&b',') {
            let comma = at;
            at = skip_whitespace(text, at + 1);
            if at >= text.len() {
                read.comma_after_last = Some(comma);
                break;
            }
        }
        let rest = text.get(at..).unwrap_or_default();
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Exact>();
        match stream.next() {
            Some(Ok(Exact(value))) => {
                at += stream.byte_offset();
                read.values.push(value);
            }
            Some(Err(error)) => {
                let offset = at + error_offset(rest, &error);
                read.error = Some(ReadError { offset, start: at, message: error_message(&error) });
                break;
            }
            None => break,
        }
        at = skip_whitespace(text, at);
    }
    read
}

fn skip_whitespace(text: &str, from: usize) -> usize {
    let rest = text.as_bytes().get(from..).unwrap_or_default();
    from + rest.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count()
}

/// The text without commas that directly precede `}` or `]` (outside strings), and their offsets.
fn remove_trailing_commas(text: &str) -> Option<(String, Vec<usize>)> {
    let bytes = text.as_bytes();
    let mut commas = Vec::new();
    let mut scan = Scan::default();
    for (at, byte) in bytes.iter().enumerate() {
        let outside = !scan.in_string;
        scan.feed_byte(*byte);
        if outside && *byte == b',' {
            let next = skip_whitespace(text, at + 1);
            if matches!(bytes.get(next), Some(b'}' | b']')) {
                commas.push(at);
            }
        }
    }
    if commas.is_empty() {
        return None;
    }
    let mut fixed = String::with_capacity(text.len());
    let mut copied = 0;
    for at in &commas {
        fixed.push_str(text.get(copied..*at).unwrap_or_default());
        copied = at + 1;
    }
    fixed.push_str(text.get(copied..).unwrap_or_default());
    Some((fixed, commas))
}
