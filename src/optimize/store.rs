//! Optimization records on disk: one JSON file per optimization in `<data dir>/optimizations/`,
//! named by its id through the names rules, written atomically; listed newest first and read back by
//! id (or its start), `last`, or a file. A file that does not read is an error naming it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::record::{Optimization, FORMAT};
use super::OptimizeError;
use crate::run::history;

/// The folder of optimization records inside the data directory.
pub const OPTIMIZATIONS_DIR: &str = "optimizations";

/// The folder optimization records are kept in.
pub fn optimizations_dir() -> Result<PathBuf, OptimizeError> {
    Ok(history::data_dir().map_err(|e| OptimizeError::Store(e.to_string()))?.join(OPTIMIZATIONS_DIR))
}

/// Writes `record` into `dir` as `<id>.json`, atomically; the path.
pub fn save_in(dir: &Path, record: &Optimization) -> Result<PathBuf, OptimizeError> {
    history::create_dir(dir).map_err(OptimizeError::Store)?;
    let path = crate::names::inside(dir, &record.id, ".json");
    let text = serde_json::to_string(record).map_err(|e| OptimizeError::Store(e.to_string()))?;
    crate::prompt::file::write_atomic(&path, &text).map_err(|e| OptimizeError::Store(e.to_string()))?;
    Ok(path)
}

/// Reads an optimization record, naming the file and what is wrong with it.
pub fn load_file(path: &Path) -> Result<Optimization, OptimizeError> {
    let text = crate::files::read_text(path, crate::files::OPTIMIZATION_RECORD)
        .map_err(|e| OptimizeError::Input(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        OptimizeError::Input(format!("{}:{}:{}: not an optimization record: {e}", path.display(), e.line(), e.column()))
    })?;
    match value.get("optimization").and_then(serde_json::Value::as_u64) {
        Some(format) if format > u64::from(FORMAT) => Err(OptimizeError::Input(format!(
            "{}: optimization record format {format} was written by a newer tunebench (this one reads up to {FORMAT})",
            path.display()
        ))),
        Some(_) => serde_json::from_value(value)
            .map_err(|e| OptimizeError::Input(format!("{}: not an optimization record: {e}", path.display()))),
        None => Err(OptimizeError::Input(format!(
            "{}: not an optimization record (no \"optimization\" format number)",
            path.display()
        ))),
    }
}

/// An optimization in a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Listed {
    pub id: String,
    pub path: PathBuf,
    pub started_at_ms: u64,
    pub prompt: String,
    pub model: String,
    /// Candidates made, and those rejected.
    pub candidates: usize,
    pub rejected: usize,
    pub best: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

/// The record files in `dir`, newest first.
fn files(dir: &Path) -> Result<Vec<PathBuf>, OptimizeError> {
    crate::files::records_newest_first(dir).map_err(OptimizeError::Store)
}

/// Every optimization kept in `dir`, newest first; files that do not read come back as warnings.
pub fn list_in(dir: &Path) -> Result<(Vec<Listed>, Vec<String>), OptimizeError> {
    let mut listed = Vec::new();
    let mut warnings = Vec::new();
    for path in files(dir)? {
        match load_file(&path) {
            Ok(record) => listed.push(Listed {
                id: record.id.clone(),
                started_at_ms: record.started_at_ms,
                prompt: record.prompt.path.display().to_string(),
                model: record.model.clone(),
                candidates: record.candidates.len(),
                rejected: record.candidates.iter().filter(|c| c.rejected.is_some()).count(),
                best: record.best.clone(),
                cancelled: record.cancelled,
                path,
            }),
            Err(error) => warnings.push(format!("skipped: {error}")),
        }
    }
    Ok((listed, warnings))
}

/// The newest optimization of the prompt file `prompt` kept in `dir` (records that do not read are
/// passed over; none of this prompt is an error naming it).
pub fn newest_of(dir: &Path, prompt: &Path) -> Result<Optimization, OptimizeError> {
    let wanted = std::fs::canonicalize(prompt).unwrap_or_else(|_| prompt.to_path_buf());
    for path in files(dir)? {
        if let Ok(record) = load_file(&path) {
            if record.prompt.path == wanted {
                return Ok(record);
            }
        }
    }
    Err(OptimizeError::Input(format!(
        "no optimization of {} is recorded in {}: run `tunebench optimize {}` first (or give --from ID)",
        prompt.display(),
        dir.display(),
        prompt.display()
    )))
}

/// `last`, an id (or the start of exactly one), or a record file.
pub fn find_in(dir: &Path, which: &str) -> Result<Optimization, OptimizeError> {
    let which = which.trim();
    if which.ends_with(".json") || which.contains('/') || which.contains(std::path::MAIN_SEPARATOR) {
        return load_file(Path::new(which));
    }
    let all = files(dir)?;
    if which == "last" {
        return match all.first() {
            Some(path) => load_file(path),
            None => Err(OptimizeError::Input(format!("last: no optimization recorded in {}", dir.display()))),
        };
    }
    let matching: Vec<&PathBuf> =
        all.iter().filter(|p| p.file_stem().is_some_and(|s| s.to_string_lossy().starts_with(which))).collect();
    match matching.as_slice() {
        [one] => load_file(one),
        [] => Err(OptimizeError::Input(format!(
            "{which:?}: no optimization of that id in {} (see `tunebench optimize list`)",
            dir.display()
        ))),
        several => Err(OptimizeError::Input(format!(
            "{which:?}: {} optimizations start so; give more of the id",
            several.len()
        ))),
    }
}
