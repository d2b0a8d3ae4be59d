//! A CSV dataset read record by record (the csv crate's reader): the header names the columns, each
//! record is one row of text cells; a record longer than [`ROW_BYTES`] is refused. Each record's line
//! is counted here ([`Lines`]): the csv crate places a record at the line ending before it and counts
//! a CRLF file's lines short.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::jsonl::not_utf8;
use super::row::{Cells, RowAt};
use super::{open, DatasetError, Take, ROW_BYTES};

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    let starts = Rc::new(RefCell::new(Starts { in_ending: true, ..Starts::default() }));
    let file = BufReader::new(Lines { inner: open(path)?, starts: Rc::clone(&starts) });
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(file);
    let headers = reader.byte_headers().map_err(|e| csv_error(path, &e, &starts))?.clone();
    let mut columns: Vec<String> = Vec::with_capacity(headers.len());
    for (index, header) in headers.iter().enumerate() {
        let header = if index == 0 { header.strip_prefix("\u{feff}".as_bytes()).unwrap_or(header) } else { header };
        let name = std::str::from_utf8(header).map_err(|e| not_utf8(path, 1, header, &e))?.trim().to_string();
        let at = RowAt { path, line: 1 };
        if name.is_empty() {
            return Err(at.error(format!("column {} has no name; the first line names every column", index + 1)));
        }
        if columns.contains(&name) {
            return Err(at.error(format!("two columns are named `{name}`")));
        }
        columns.push(name);
    }
    let mut record = csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, &e, &starts)),
        }
        let line = record.position().map_or(0, |p| starts.borrow_mut().line_at(p.byte()));
        let at = RowAt { path, line };
        if record.as_slice().len() > ROW_BYTES {
            return Err(at.error(format!("a row longer than {ROW_BYTES} bytes, the most one row may take")));
        }
        let mut row = Map::with_capacity(columns.len());
        for (column, cell) in columns.iter().zip(record.iter()) {
            let text = std::str::from_utf8(cell).map_err(|e| {
                let error = not_utf8(path, line, cell, &e);
                at.error(format!("column `{column}`: {}", error.message))
            })?;
            row.insert(column.clone(), Value::String(text.to_string()));
        }
        take(row, Cells::Text, at)?;
    }
}

/// A record the csv reader refused (a row of another width, a read error), at its line.
fn csv_error(path: &Path, e: &csv::Error, starts: &RefCell<Starts>) -> DatasetError {
    let line = e.position().map(|p| starts.borrow_mut().line_at(p.byte()));
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
}

impl Starts {
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

    /// The line of a record the csv reader places at `byte` (the first text at or after it). Asked
    /// in increasing order.
    fn line_at(&mut self, byte: u64) -> usize {
        while self.pending.front().is_some_and(|(at, _)| *at < byte) {
            self.pending.pop_front();
        }
        self.pending.front().map_or(self.newlines + 1, |(_, line)| *line)
    }
}

/// The dataset file read through, its line starts noted in [`Starts`].
struct Lines<R> {
    inner: R,
    starts: Rc<RefCell<Starts>>,
}

impl<R: Read> Read for Lines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.starts.borrow_mut().saw(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}
