//! The history: every run record appended as one JSON line to `history.jsonl` in the data directory
//! (`TUNEBENCH_DATA_DIR`, else the platform's data directory from the `directories` crate), so
//! nothing typed or received is lost.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::record::RunRecord;

/// The variable that overrides the data directory (tests point it at a temporary directory).
pub const DATA_DIR_VAR: &str = "TUNEBENCH_DATA_DIR";
/// The history file's name inside the data directory.
pub const HISTORY_FILE: &str = "history.jsonl";

/// The history cannot be written or read; the message names the path.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("no data directory: this platform has no home directory; set {DATA_DIR_VAR}")]
    NoDataDir,
    #[error("history {}: {message}", .path.display())]
    Io { path: PathBuf, message: String },
}

/// The data directory: `TUNEBENCH_DATA_DIR` if set and not empty, else the platform's
/// (e.g. `~/.local/share/tunebench` on Linux).
pub fn data_dir() -> Result<PathBuf, HistoryError> {
    if let Some(dir) = std::env::var_os(DATA_DIR_VAR).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("", "", "tunebench")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or(HistoryError::NoDataDir)
}

/// The history file in the data directory.
pub fn history_path() -> Result<PathBuf, HistoryError> {
    Ok(data_dir()?.join(HISTORY_FILE))
}

/// Keeps `record` in the history, as every front end and job does (the one rule for what is kept):
/// a run stopped before its answer began is not (`Ok(None)`); any other run, cancelled ones too, is
/// appended (`Ok(Some(path))`).
pub fn keep(record: &RunRecord) -> Result<Option<PathBuf>, HistoryError> {
    let path = history_path()?;
    keep_in(&path, record).map(|kept| kept.then_some(path))
}

/// [`keep`] into the history file at `path`; `true` when the record was appended.
pub fn keep_in(path: &Path, record: &RunRecord) -> Result<bool, HistoryError> {
    if record.never_started() {
        return Ok(false);
    }
    append_to(path, record).map(|()| true)
}

/// Appends `record` to the history file; returns its path.
pub fn append(record: &RunRecord) -> Result<PathBuf, HistoryError> {
    let path = history_path()?;
    append_to(&path, record)?;
    Ok(path)
}

/// Appends `record` as one line to `path`, creating the file and its directory if needed.
///
/// The append is held by an exclusive lock on the file, and is one write. A line cut short earlier
/// (a killed process, a full disk, the file-size limit) is never glued to: the new line starts on a
/// line of its own. A write that fails part-way is taken back (the file is cut to its length before
/// it), so this append leaves no half line behind either.
pub fn append_to(path: &Path, record: &RunRecord) -> Result<(), HistoryError> {
    let io = |e: std::io::Error| HistoryError::Io { path: path.to_path_buf(), message: e.to_string() };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir).map_err(|message| HistoryError::Io { path: path.to_path_buf(), message })?;
    }
    let mut line = serde_json::to_string(record)
        .map_err(|e| HistoryError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).read(true).open(path).map_err(io)?;
    file.lock().map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        let message = "not a regular file: the history is appended to a regular file only".to_string();
        return Err(HistoryError::Io { path: path.to_path_buf(), message });
    }
    let length = metadata.len();
    if length > 0 && last_byte(&mut file, length).map_err(io)? != b'\n' {
        line.insert(0, '\n');
    }
    let written = file.write_all(line.as_bytes()).and_then(|()| file.flush());
    if let Err(error) = written {
        // Under the lock no other writer appended since: cut our own half line off again.
        let _ = file.set_len(length);
        return Err(io(error));
    }
    Ok(())
}

fn last_byte(file: &mut std::fs::File, length: u64) -> std::io::Result<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(length - 1))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Creates `dir` (and its parents), with an error that says which directory and what is in the way.
pub fn create_dir(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists || e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(format!(
                "cannot create the directory {}: a file of that name (or of a folder above it) is in the way; \
                 move it, or set {DATA_DIR_VAR} to another directory",
                dir.display()
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
            "cannot create the directory {}: permission denied; set {DATA_DIR_VAR} to a directory you can write",
            dir.display()
        )),
        Err(e) => Err(format!("cannot create the directory {}: {e}", dir.display())),
    }
}

/// The history file as read: its records, oldest first, and the lines that could not be read.
#[derive(Debug, Default)]
pub struct History {
    pub records: Vec<RunRecord>,
    /// Lines skipped: a line cut short by an interrupted write, one that is not JSON, or one that is
    /// not a run record (a stray line, or a record this build cannot read).
    pub skipped: Vec<Skipped>,
}

/// A history line that was skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub line: usize,
    pub message: String,
}

impl History {
    /// One warning per skipped line, naming the file.
    pub fn warnings(&self, path: &Path) -> Vec<String> {
        self.skipped
            .iter()
            .map(|s| format!("history {} line {}: skipped ({})", path.display(), s.line, s.message))
            .collect()
    }
}

/// Every record in a history file, read as [`RunRecord`]s. A line that does not read (a torn append,
/// a stray line, a record this build cannot read) is skipped and reported in [`History::skipped`] with
/// serde's reason, never fatal: an append-only log stays readable whatever happened to one write.
pub fn read(path: &Path) -> Result<History, HistoryError> {
    let bytes = match crate::files::read(path, crate::files::HISTORY) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(History::default()),
        Err(e) => return Err(HistoryError::Io { path: e.path, message: e.problem.to_string() }),
    };
    let mut history = History::default();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RunRecord>(line) {
            Ok(record) => history.records.push(record),
            Err(e) => history.skipped.push(Skipped { line: index + 1, message: why_skipped(line, &e) }),
        }
    }
    Ok(history)
}

/// Why `line` did not read, in words: serde's message and the column it points at.
fn why_skipped(line: &[u8], error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let message = crate::output::jsonl::serde_message(error);
    let object = line.trim_ascii_start().starts_with(b"{");
    match error.classify() {
        Category::Eof => "cut short: an append was interrupted".into(),
        Category::Data if !object => "not a run record: not a JSON object".into(),
        Category::Data => format!("not a run record: {message} (column {})", error.column()),
        Category::Syntax | Category::Io => format!("not JSON: {message} (column {})", error.column()),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
