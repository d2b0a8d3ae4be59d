//! Eval records on disk: one JSON file per eval in `<data dir>/evals/`, named by its id (which starts
//! with the time, so names sort by age), written atomically; listed, and read back typed by id, by
//! `last` (the last eval of the same prompt files) or from a file. A file that does not read is a
//! clear error naming it.

use std::path::{Path, PathBuf};

use super::record::{EvalRecord, FORMAT};
use super::EvalError;
use crate::run::history;

/// The folder of eval records inside the data directory.
pub const EVALS_DIR: &str = "evals";

/// The folder eval records are kept in.
pub fn evals_dir() -> Result<PathBuf, EvalError> {
    Ok(history::data_dir().map_err(|e| EvalError::Store(e.to_string()))?.join(EVALS_DIR))
}

/// A new eval id: `YYYYMMDD-HHMMSS-mmmxx` (UTC, `mmm` the milliseconds, so ids sort by time), `xx`
/// from the process and a counter, so two evals of one millisecond differ.
pub fn new_id(started_at_ms: u64) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let salt = u64::from(std::process::id())
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(COUNTER.fetch_add(1, Ordering::SeqCst).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    format!("{}-{:03}{:02x}", compact_utc(started_at_ms), started_at_ms % 1000, (salt >> 56) & 0xff)
}

/// Milliseconds since the epoch as `YYYYMMDD-HHMMSS` (UTC).
fn compact_utc(ms: u64) -> String {
    let (date, time) = utc(ms);
    format!("{}-{}", date.replace('-', ""), time.replace(':', ""))
}

/// `(YYYY-MM-DD, HH:MM:SS)` in UTC (Howard Hinnant's `civil_from_days`).
pub fn utc(ms: u64) -> (String, String) {
    let secs = ms / 1000;
    let (days, day_secs) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!("{:02}:{:02}:{:02}", day_secs / 3600, day_secs / 60 % 60, day_secs % 60),
    )
}

/// Writes `record` into `dir` as `<id>.json`, atomically; returns the path.
pub fn save_in(dir: &Path, record: &EvalRecord) -> Result<PathBuf, EvalError> {
    history::create_dir(dir).map_err(EvalError::Store)?;
    let path = crate::names::inside(dir, &record.id, ".json");
    // Streamed to the file: a 20,000-cell record is never held a second time as text.
    crate::prompt::file::write_atomic_with(&path, |out| {
        serde_json::to_writer(out, record).map_err(std::io::Error::from)
    })
    .map_err(|e| EvalError::Store(e.to_string()))?;
    Ok(path)
}

/// Writes `record` into the data directory's evals folder.
pub fn save(record: &EvalRecord) -> Result<PathBuf, EvalError> {
    save_in(&evals_dir()?, record)
}

/// Reads an eval record from `path`, naming the file and what is wrong with it.
pub fn load_file(path: &Path) -> Result<EvalRecord, EvalError> {
    let text = crate::files::read_text(path, crate::files::EVAL_RECORD).map_err(|e| EvalError::Input(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        EvalError::Input(format!("{}:{}:{}: not an eval record: {e}", path.display(), e.line(), e.column()))
    })?;
    match value.get("eval").and_then(serde_json::Value::as_u64) {
        Some(format) if format > u64::from(FORMAT) => {
            return Err(EvalError::Input(format!(
                "{}: eval record format {format} was written by a newer tunebench (this one reads up to {FORMAT})",
                path.display()
            )))
        }
        Some(_) => {}
        None => {
            return Err(EvalError::Input(format!("{}: not an eval record (no \"eval\" format number)", path.display())))
        }
    }
    serde_json::from_value(value).map_err(|e| EvalError::Input(format!("{}: not an eval record: {e}", path.display())))
}

/// An eval in a listing: its file and what it was, without its cells.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Listed {
    pub id: String,
    pub path: PathBuf,
    pub started_at_ms: u64,
    pub prompts: Vec<String>,
    pub columns: Vec<String>,
    pub cells: usize,
    pub passed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The prompt files as a set ([`EvalRecord::prompt_set`]): which evals are of one prompt.
    #[serde(skip)]
    pub prompt_set: Vec<String>,
}

/// The record files in `dir`, newest first (by name, which starts with the time).
fn files(dir: &Path) -> Result<Vec<PathBuf>, EvalError> {
    crate::files::records_newest_first(dir).map_err(EvalError::Store)
}

/// Every eval kept in `dir`, newest first; files that do not read are returned as warnings.
pub fn list_in(dir: &Path) -> Result<(Vec<Listed>, Vec<String>), EvalError> {
    let mut listed = Vec::new();
    let mut warnings = Vec::new();
    for path in files(dir)? {
        match load_file(&path) {
            Ok(record) => listed.push(Listed {
                id: record.id.clone(),
                started_at_ms: record.started_at_ms,
                prompts: record.prompts.iter().map(|p| p.id.clone()).collect(),
                columns: record.columns.iter().map(|c| c.label.clone()).collect(),
                cells: record.cells.len(),
                passed: record.cells.iter().filter(|c| c.score.verdict == super::score::Verdict::Pass).count(),
                batch: record.batch.clone(),
                prompt_set: record.prompt_set(),
                path,
            }),
            Err(error) => warnings.push(format!("skipped: {error}")),
        }
    }
    Ok((listed, warnings))
}

/// Which eval: `last` (of the prompt set given), an id (or the start of one, when only one matches),
/// or a record file.
pub fn find_in(dir: &Path, which: &str, prompt_set: Option<&[String]>) -> Result<EvalRecord, EvalError> {
    let which = which.trim();
    let as_path = Path::new(which);
    if which.ends_with(".json") || which.contains(std::path::MAIN_SEPARATOR) || which.contains('/') {
        if as_path.is_file() {
            return load_file(as_path);
        }
        if which.contains('/') || which.contains(std::path::MAIN_SEPARATOR) {
            return Err(EvalError::Input(format!("{which}: no such eval record file")));
        }
    }
    if which == "last" {
        for path in files(dir)? {
            let record = load_file(&path).map_err(|e| unreadable(&path, &e))?;
            if prompt_set.is_none_or(|set| record.prompt_set() == set) {
                return Ok(record);
            }
        }
        return Err(EvalError::Input(match prompt_set {
            Some(_) => format!("--baseline last: no earlier eval of these prompt files in {}", dir.display()),
            None => format!("last: no eval recorded in {}", dir.display()),
        }));
    }
    let exact = crate::names::inside(dir, which, ".json");
    if exact.is_file() {
        return load_file(&exact);
    }
    let matching: Vec<PathBuf> = files(dir)?
        .into_iter()
        .filter(|p| p.file_stem().is_some_and(|s| s.to_string_lossy().starts_with(which)))
        .collect();
    match matching.as_slice() {
        [one] => load_file(one),
        [] => Err(EvalError::Input(format!(
            "{which:?}: no eval of that id in {} (see `tunebench eval list`), nor a record file",
            dir.display()
        ))),
        several => Err(EvalError::Input(format!(
            "{which:?}: {} evals start so ({}); give more of the id",
            several.len(),
            several.iter().filter_map(|p| p.file_stem()).map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// A record that cannot be read where `last` is looked for: said, never skipped (an older record would
/// silently stand in for the newest).
fn unreadable(path: &Path, error: &EvalError) -> EvalError {
    EvalError::Input(format!(
        "last: the eval record {} cannot be read ({error}); move it away, or name the eval by its id",
        path.display()
    ))
}

/// The baseline of an eval of `prompt_set` on `columns`: as [`find_in`], except that `last` is the
/// newest eval of these prompt files that has one of `columns` (the same prompt version on the same
/// model and structured mode, [`super::plan::Column::same_as`]): an eval on another model is never
/// the baseline of this one.
pub fn baseline_in(
    dir: &Path,
    which: &str,
    prompt_set: &[String],
    columns: &[super::plan::Column],
) -> Result<EvalRecord, EvalError> {
    baseline_except(dir, which, prompt_set, columns, None)
}

/// [`baseline_in`], where `last` is never the eval `except` (an imported batch's own record).
pub fn baseline_except(
    dir: &Path,
    which: &str,
    prompt_set: &[String],
    columns: &[super::plan::Column],
    except: Option<&str>,
) -> Result<EvalRecord, EvalError> {
    if which.trim() != "last" {
        return find_in(dir, which, Some(prompt_set));
    }
    for path in files(dir)? {
        let record = load_file(&path).map_err(|e| unreadable(&path, &e))?;
        let shares = record.columns.iter().any(|old| columns.iter().any(|new| new.same_as(old)));
        if record.prompt_set() == prompt_set && shares && except != Some(record.id.as_str()) {
            return Ok(record);
        }
    }
    let models: Vec<String> = columns.iter().map(super::plan::Column::model_and_mode).collect();
    Err(EvalError::Input(format!(
        "--baseline last: no earlier eval of these prompt files on {} in {}",
        models.join("; "),
        dir.display()
    )))
}

/// [`baseline_in`] the data directory's evals folder.
pub fn baseline(which: &str, prompt_set: &[String], columns: &[super::plan::Column]) -> Result<EvalRecord, EvalError> {
    baseline_in(&evals_dir()?, which, prompt_set, columns)
}

/// [`find_in`] the data directory's evals folder.
pub fn find(which: &str, prompt_set: Option<&[String]>) -> Result<EvalRecord, EvalError> {
    find_in(&evals_dir()?, which, prompt_set)
}

/// The eval recorded for the imported batch `tag` (the newest when it was imported twice).
pub fn find_batch_in(dir: &Path, tag: &str) -> Result<EvalRecord, EvalError> {
    let tag = tag.trim().trim_start_matches("tb");
    for path in files(dir)? {
        let Ok(record) = load_file(&path) else { continue };
        if record.batch.as_deref() == Some(tag) {
            return Ok(record);
        }
    }
    Err(EvalError::Input(format!(
        "--from-batch {tag}: no imported batch of that tag in {} (import it with `tunebench batch import`)",
        dir.display()
    )))
}
