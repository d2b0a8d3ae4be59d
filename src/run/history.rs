//! The history: every run record appended as one JSON line to `history.jsonl` in the data directory
//! (`TUNEBENCH_DATA_DIR`, else the platform's data directory from the `directories` crate), so
//! nothing typed or received is lost.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

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
    #[error("history {} line {line}: {message}", .path.display())]
    Malformed { path: PathBuf, line: usize, message: String },
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

/// Appends `record` to the history file; returns its path.
pub fn append(record: &RunRecord) -> Result<PathBuf, HistoryError> {
    let path = history_path()?;
    append_to(&path, record)?;
    Ok(path)
}

/// Appends `record` as one line to `path`, creating the file and its directory if needed. The line is
/// written with a single call on a file opened for appending, so concurrent runs never interleave.
pub fn append_to(path: &Path, record: &RunRecord) -> Result<(), HistoryError> {
    let io = |e: std::io::Error| HistoryError::Io { path: path.to_path_buf(), message: e.to_string() };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut line = serde_json::to_string(record)
        .map_err(|e| HistoryError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
    file.write_all(line.as_bytes()).map_err(io)
}

/// Every record in a history file, oldest first (as JSON values: the file outlives any one build).
pub fn read(path: &Path) -> Result<Vec<Value>, HistoryError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HistoryError::Io { path: path.to_path_buf(), message: e.to_string() }),
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|e| HistoryError::Malformed {
                path: path.to_path_buf(),
                line: index + 1,
                message: e.to_string(),
            })
        })
        .collect()
}
