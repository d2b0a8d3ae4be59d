//! A CSV dataset read record by record (the csv crate's reader): the header names the columns, each
//! record is one row of text cells; a record longer than [`ROW_BYTES`] is refused, as soon as the
//! reading passes it (the file is read no further than that past a row's start). Each record's line
//! is counted here ([`Lines`]): the csv crate places a record at the line ending before it and counts
//! a CRLF file's lines short.

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::jsonl::{not_utf8, TakeAt};
use super::row::{Cells, RowAt};
use super::{open, DatasetError, Take, ROW_BYTES};

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    scan(path, 0, 1, &mut |row, how, at, _| take(row, how, at).map(|()| true))
}

/// Reads the rows from byte `offset` of the file (where the record on line `first_line` starts, or 0
/// for the first), the columns named by the header line, each row handed to `take` with the byte
/// offset its first cell starts at, until the file ends or `take` returns `false`.
pub(super) fn scan(path: &Path, offset: u64, first_line: usize, take: &mut TakeAt<'_>) -> Result<(), DatasetError> {
    if offset == 0 {
        return read_from(path, open(path)?, take);
    }
    let columns = {
        let (mut reader, starts) = reader_of(open(path)?, 0, 1, true);
        columns(path, &mut reader, &starts)?
    };
    let mut file = open(path)?;
    file.seek(SeekFrom::Start(offset)).map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
    let (reader, starts) = reader_of(file, offset, first_line, false);
    records(path, reader, &columns, &starts, offset, take)
}

/// Reads the rows of the CSV text `inner` gives (the file at `path`, from its start): its header,
/// then each row handed to `take`, as [`scan`] does.
pub(super) fn read_from<R: Read>(path: &Path, inner: R, take: &mut TakeAt<'_>) -> Result<(), DatasetError> {
    let (mut reader, starts) = reader_of(inner, 0, 1, true);
    let columns = columns(path, &mut reader, &starts)?;
    records(path, reader, &columns, &starts, 0, take)
}

/// A csv reader of `inner` (read from byte `offset` of its file, on line `first_line`), its line
/// starts noted, and refusing to read a row much past [`ROW_BYTES`] (see [`Starts::limit`]).
#[allow(clippy::type_complexity)]
fn reader_of<R: Read>(
    inner: R,
    offset: u64,
    first_line: usize,
    headers: bool,
) -> (csv::Reader<BufReader<Lines<R>>>, Rc<RefCell<Starts>>) {
    let mut starts = Starts { in_ending: true, offset, newlines: first_line.saturating_sub(1), ..Starts::default() };
    starts.row_at(offset);
    let starts = Rc::new(RefCell::new(starts));
    let file = BufReader::new(Lines { inner, starts: Rc::clone(&starts) });
    (csv::ReaderBuilder::new().has_headers(headers).from_reader(file), starts)
}

/// The header line's column names: each named, none twice.
fn columns<R: Read>(
    path: &Path,
    reader: &mut csv::Reader<R>,
    starts: &RefCell<Starts>,
) -> Result<Vec<String>, DatasetError> {
    let headers = reader.byte_headers().map_err(|e| csv_error(path, &e, starts))?.clone();
    let mut columns: Vec<String> = Vec::with_capacity(headers.len());
    // The names seen, to find a second one at once (a header of 100,000 columns is checked in one pass).
    let mut seen: HashSet<String> = HashSet::with_capacity(headers.len());
    for (index, header) in headers.iter().enumerate() {
        let header = if index == 0 { header.strip_prefix("\u{feff}".as_bytes()).unwrap_or(header) } else { header };
        let name = std::str::from_utf8(header).map_err(|e| not_utf8(path, 1, header, &e))?.trim().to_string();
        let at = RowAt { path, line: 1 };
        if name.is_empty() {
            return Err(at.error(format!("column {} has no name; the first line names every column", index + 1)));
        }
        if !seen.insert(name.clone()) {
            return Err(at.error(format!("two columns are named `{name}`")));
        }
        columns.push(name);
    }
    Ok(columns)
}

/// The records `reader` reads (from byte `base` of the file), each a row of `columns`.
fn records<R: Read>(
    path: &Path,
    mut reader: csv::Reader<R>,
    columns: &[String],
    starts: &RefCell<Starts>,
    base: u64,
    take: &mut TakeAt<'_>,
) -> Result<(), DatasetError> {
    let mut record = csv::ByteRecord::new();
    loop {
        starts.borrow_mut().row_at(base + reader.position().byte());
        match reader.read_byte_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, &e, starts)),
        }
        let (start, line) = record.position().map_or((base, 0), |p| starts.borrow_mut().start_at(base + p.byte()));
        let at = RowAt { path, line };
        if record.as_slice().len() > ROW_BYTES {
            return Err(at.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take")));
        }
        if record.len() != columns.len() {
            return Err(at.error(format!(
                "a row of {} cells; the header names {} columns",
                record.len(),
                columns.len()
            )));
        }
        let mut row = Map::with_capacity(columns.len());
        for (column, cell) in columns.iter().zip(record.iter()) {
            let text = std::str::from_utf8(cell).map_err(|e| {
                let error = not_utf8(path, line, cell, &e);
                at.error(format!("column `{column}`: {}", error.message))
            })?;
            row.insert(column.clone(), Value::String(text.to_string()));
        }
        if !take(row, Cells::Text, at, start)? {
            return Ok(());
        }
    }
}

/// A record the csv reader refused (a row of another width, a read error), at its line.
fn csv_error(path: &Path, e: &csv::Error, starts: &RefCell<Starts>) -> DatasetError {
    let starts = starts.borrow();
    if starts.over {
        let line = starts.line_near(starts.row_from);
        return RowAt { path, line }.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take"));
    }
    let line = e.position().map(|p| starts.line_near(p.byte()));
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("a row of {len} cells; the header names {expected_len} columns")
        }
        csv::ErrorKind::Io(io) => format!("cannot read: {io}"),
        _ => e.to_string(),
    };
    match line {
        Some(line) => RowAt { path, line }.error(message),
        None => DatasetError::file(path, message),
    }
}

/// Where the text after each run of line endings begins, and on which line, as the file is read.
#[derive(Default)]
struct Starts {
    /// The bytes read so far, and the line endings (`\n`) among them.
    offset: u64,
    newlines: usize,
    /// Whether the last byte read ended a line (`\r` or `\n`; at the start, as if one had).
    in_ending: bool,
    /// (offset, line) of each byte that follows a line ending, not yet asked about (a reader's buffer).
    pending: VecDeque<(u64, usize)>,
    /// Where the row being read begins, and the offset past which the file is not read while it is
    /// read ([`Starts::row_at`]): a row is refused as soon as it passes [`ROW_BYTES`], never held whole.
    row_from: u64,
    limit: u64,
    /// Whether a read stopped at `limit`.
    over: bool,
}

/// Bytes the readers may hold ahead of the row being read (the csv reader's buffer and ours, 8 KiB each).
const READ_AHEAD: u64 = 64 << 10;

impl Starts {
    /// A row (or the header) begins at byte `offset`: the file is read at most [`ROW_BYTES`] past it
    /// (and what the buffers read ahead).
    fn row_at(&mut self, offset: u64) {
        self.row_from = offset;
        self.limit = offset.saturating_add(ROW_BYTES as u64 + READ_AHEAD);
    }

    fn saw(&mut self, bytes: &[u8]) {
        for (i, byte) in bytes.iter().enumerate() {
            let ending = matches!(byte, b'\r' | b'\n');
            if !ending && self.in_ending {
                self.pending.push_back((self.offset + i as u64, self.newlines + 1));
            }
            if *byte == b'\n' {
                self.newlines += 1;
            }
            self.in_ending = ending;
        }
        self.offset += bytes.len() as u64;
    }

    /// Where the record the csv reader places at `byte` begins (the first text at or after it) and
    /// its line. Asked in increasing order.
    fn start_at(&mut self, byte: u64) -> (u64, usize) {
        while self.pending.front().is_some_and(|(at, _)| *at < byte) {
            self.pending.pop_front();
        }
        self.pending.front().copied().unwrap_or((self.offset, self.newlines + 1))
    }

    /// The line of the text at or after `byte`, for an error (nothing forgotten).
    fn line_near(&self, byte: u64) -> usize {
        self.pending.iter().find(|(at, _)| *at >= byte).map_or(self.newlines + 1, |(_, line)| *line)
    }
}

/// The dataset file read through, its line starts noted in [`Starts`].
struct Lines<R> {
    inner: R,
    starts: Rc<RefCell<Starts>>,
}

impl<R: Read> Read for Lines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = {
            let mut starts = self.starts.borrow_mut();
            if starts.offset >= starts.limit && !buf.is_empty() {
                starts.over = true;
                return Err(std::io::Error::other("a row longer than the most one row may take"));
            }
            usize::try_from(starts.limit - starts.offset).unwrap_or(usize::MAX).min(buf.len())
        };
        let buf = buf.get_mut(..room).unwrap_or_default();
        let n = self.inner.read(buf)?;
        self.starts.borrow_mut().saw(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}
