//! Never lose work: the unsaved edits of a prompt written to a recovery file in the data directory
//! (at least once a second while there are edits), offered back on the next start. Of a dataset's
//! rows only those edited or deleted are kept (the rest are as saved).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::prompt::file::{write_atomic, Case, PromptFile};

/// The unsaved texts of one prompt file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// The prompt file the edits belong to (absolute when it could be made so).
    pub path: PathBuf,
    pub system: String,
    pub template: String,
    pub schema: String,
    /// Milliseconds since the Unix epoch when the edits were written.
    pub written_at_ms: u64,
    /// The variables, when they were edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<RecoveredVariables>,
}

/// Edited variables and cases: the prompt's `[variables]` and the cases as edited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveredVariables {
    pub variables: crate::prompt::template::Variables,
    /// Each saved case's variables, in case order: what files written before cases could be added,
    /// copied or deleted hold (read, no longer written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<crate::prompt::template::Variables>,
    /// The cases as edited, names and all: with `rows`, the prompt file's own cases alone (files
    /// written before datasets were listed hold every case here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_list: Option<Vec<crate::prompt::file::Case>>,
    /// The rows of the prompt's dataset that were edited or deleted (the others are as saved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Box<EditedRows>>,
}

/// What changed among a dataset's rows: the rows edited (as edited) and the names of those deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditedRows {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited: Vec<Case>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
}

/// `cases` (as edited) split for a recovery file: the prompt file's own cases, and what changed
/// among the rows of `saved`'s dataset (without one: every case is the file's own, no rows).
pub fn split_rows(saved: &PromptFile, cases: &[Case]) -> (Vec<Case>, Option<Box<EditedRows>>) {
    let Some(dataset) = &saved.dataset else { return (cases.to_vec(), None) };
    let saved_rows = saved.cases.get(dataset.first..).unwrap_or_default();
    let is_row: HashSet<&str> = saved_rows.iter().map(|c| c.name.as_str()).collect();
    let (rows, own): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| is_row.contains(c.name.as_str()));
    let now: HashMap<&str, &Case> = rows.into_iter().map(|c| (c.name.as_str(), c)).collect();
    let mut changed = EditedRows::default();
    for row in saved_rows {
        match now.get(row.name.as_str()) {
            Some(case) if *case != row => changed.edited.push((*case).clone()),
            Some(_) => {}
            None => changed.deleted.push(row.name.clone()),
        }
    }
    (own.into_iter().cloned().collect(), Some(Box::new(changed)))
}

/// The cases as a recovery file's `own` cases and `rows` left them, over `saved`'s dataset rows: the
/// file's own cases first, then each row of the dataset as saved, edited or left out.
pub fn join_rows(saved: &PromptFile, own: &[Case], rows: &EditedRows) -> Vec<Case> {
    let saved_rows = saved.dataset.as_ref().and_then(|d| saved.cases.get(d.first..)).unwrap_or_default();
    let edited: HashMap<&str, &Case> = rows.edited.iter().map(|c| (c.name.as_str(), c)).collect();
    let deleted: HashSet<&str> = rows.deleted.iter().map(String::as_str).collect();
    let rows = saved_rows
        .iter()
        .filter(|row| !deleted.contains(row.name.as_str()))
        .map(|row| edited.get(row.name.as_str()).copied().unwrap_or(row).clone());
    own.iter().cloned().chain(rows).collect()
}

/// The recovery file of `prompt` inside `data_dir`: one per prompt file, named after a hash of its path.
pub fn recovery_path(data_dir: &Path, prompt: &Path) -> PathBuf {
    let key = prompt.to_string_lossy();
    // FNV-1a: stable across builds and platforms (std's hasher is not).
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let stem = prompt.file_stem().map_or("prompt".into(), |s| s.to_string_lossy().into_owned());
    data_dir.join("recovery").join(format!("{stem}-{hash:016x}.json"))
}

/// Writes the edits atomically.
pub fn write(data_dir: &Path, recovery: &Recovery) -> Result<PathBuf, String> {
    let path = recovery_path(data_dir, &recovery.path);
    if let Some(dir) = path.parent() {
        crate::run::history::create_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(recovery).map_err(|e| e.to_string())?;
    write_atomic(&path, &text).map_err(|e| e.to_string())?;
    Ok(path)
}

/// The edits saved for `prompt`, if any; a damaged file is an error naming it.
pub fn read(data_dir: &Path, prompt: &Path) -> Result<Option<Recovery>, String> {
    let path = recovery_path(data_dir, prompt);
    match crate::files::read_text(&path, crate::files::RECOVERY) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| format!("recovery file {}: {e}", path.display())),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// What the recovery worker is asked to do. Only the last job asked for matters (a write after a
/// clear, or a clear after a write, decides what the file holds), so the worker is latest-wins and
/// the loop never waits for a large text to be serialised and written.
#[derive(Debug)]
pub enum Job {
    /// Write these edits (the path already absolute, the time already set).
    Write(Box<Recovery>),
    /// Delete the recovery file of this prompt (absolute).
    Clear(PathBuf),
}

/// Does `job` in `data_dir`; an error is said in words the workbench shows.
pub fn carry_out(data_dir: &Path, job: Job) -> Result<(), String> {
    match job {
        Job::Write(edits) => write(data_dir, &edits).map(|_| ()).map_err(|e| format!("recovery file not written: {e}")),
        Job::Clear(prompt) => clear(data_dir, &prompt),
    }
}

/// Deletes the recovery file of `prompt` (nothing to do when there is none).
pub fn clear(data_dir: &Path, prompt: &Path) -> Result<(), String> {
    let path = recovery_path(data_dir, prompt);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot delete {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_edits_read_back_and_clear() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = Path::new("/tmp/some/prompt.toml");
        assert_eq!(read(dir.path(), prompt).unwrap(), None);
        let edits = Recovery {
            path: prompt.to_path_buf(),
            system: "s".into(),
            template: "t {{x}}".into(),
            schema: "{}".into(),
            written_at_ms: 5,
            variables: None,
        };
        write(dir.path(), &edits).unwrap();
        assert_eq!(read(dir.path(), prompt).unwrap(), Some(edits));
        assert_eq!(read(dir.path(), Path::new("/tmp/other.toml")).unwrap(), None);
        clear(dir.path(), prompt).unwrap();
        assert_eq!(read(dir.path(), prompt).unwrap(), None);
    }

    #[test]
    fn the_last_job_decides_what_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = Path::new("/tmp/some/prompt.toml");
        let edits = |template: &str| Recovery {
            path: prompt.to_path_buf(),
            system: String::new(),
            template: template.into(),
            schema: "{}".into(),
            written_at_ms: 1,
            variables: None,
        };
        let done = |jobs: Vec<Job>| {
            // As the latest-wins worker does: only the newest waiting job runs.
            let last = jobs.into_iter().last().unwrap();
            carry_out(dir.path(), last).unwrap();
            read(dir.path(), prompt).unwrap().map(|r| r.template)
        };
        assert_eq!(done(vec![Job::Write(Box::new(edits("a"))), Job::Write(Box::new(edits("b")))]), Some("b".into()));
        assert_eq!(done(vec![Job::Write(Box::new(edits("c"))), Job::Clear(prompt.into())]), None);
        assert_eq!(done(vec![Job::Clear(prompt.into()), Job::Write(Box::new(edits("d")))]), Some("d".into()));
    }
}
