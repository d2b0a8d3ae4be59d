//! The run job: a prompt's cases taken from a run setup to kept records — the local model fetched
//! when the run needs it and it is missing, the runs (bounded, cancellable), each record kept in the
//! history (never a run stopped before its answer began) and its transcripts written. `tunebench run`
//! runs through it whole, and so does the workbench's run; the comparison and the eval keep their
//! records through [`keep`], and `compare --record` and `batch import --transcripts` have their
//! records' transcripts written by [`record_transcripts`] (where they go: [`Transcripts`]): the rules
//! live here once.

use std::future::Future;
use std::path::{Path, PathBuf};

use super::factory::transcript_path;
use super::history::{self, HistoryError};
use super::limits::Stop;
use super::{engine, RunError, RunEvent, RunRecord, RunSetup};

/// Where the records of a job are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum History {
    /// Not kept (`--no-history`).
    Off,
    /// The history file of the data directory.
    DataDir,
    /// This history file (the workbench's data directory; tests).
    File(PathBuf),
}

/// One run job: these cases of the setup's prompt, how many at once, where the records go.
#[derive(Clone)]
pub struct RunJob {
    pub setup: RunSetup,
    /// `None`: the prompt's own variables; several make a batch when [`Self::batch`].
    pub cases: Vec<Option<String>>,
    /// The cases are a batch (`--all-cases`): a replay plays each case's file, transcripts are named
    /// by case.
    pub batch: bool,
    /// Runs at once; `None`: the provider's default ([`RunSetup::concurrency`]).
    pub concurrency: Option<usize>,
    pub history: History,
    /// Write each run's transcripts over this file name (see [`transcript_path`]).
    pub transcripts: Option<PathBuf>,
}

/// What a job did beside its records: the files written and what could not be kept.
#[derive(Debug, Default)]
pub struct Ran {
    /// One per case, in order.
    pub records: Vec<RunRecord>,
    /// The runs at once the job used.
    pub concurrency: usize,
    /// The history file each record went to (`None`: not kept, or a run stopped before it began).
    pub kept: Vec<Option<PathBuf>>,
    /// The transcript files written.
    pub recorded: Vec<PathBuf>,
    /// What went wrong on the side (a history or transcript not written).
    pub warnings: Vec<String>,
}

impl RunJob {
    /// How many runs go at once: the one asked for, else the provider's default (at least 1).
    pub fn concurrency(&self) -> usize {
        self.concurrency.unwrap_or_else(|| self.setup.concurrency().runs).max(1)
    }

    /// Whether the job runs the default local model and it is not fetched yet (then
    /// [`fetch_local_model`](super::fetch_local_model) gets it, or the run fails saying why).
    pub fn needs_local_model(&self) -> bool {
        super::needs_default_model([(self.setup.settings.provider, self.setup.settings.model.as_str())])
    }

    /// Runs every case (`sink` gets each event with its case's index), until each ends or `cancel`
    /// resolves; then keeps each record and writes its transcripts.
    pub async fn run<F, C>(&self, sink: F, cancel: C) -> Result<Ran, RunError>
    where
        F: FnMut(usize, RunEvent) + Send,
        C: Future<Output = Stop> + Send,
    {
        let jobs = self.setup.jobs(&self.cases, self.batch)?;
        Ok(self.run_jobs(&jobs, sink, cancel).await)
    }

    /// [`Self::run`] of jobs the front end made from this job's setup and cases (the workbench reads
    /// the providers' variables its own way and feeds its truncation chart from the run's sweep):
    /// the runs, each record kept and its transcripts written, as for [`Self::run`].
    pub async fn run_jobs<F, C>(&self, jobs: &[engine::Job], sink: F, cancel: C) -> Ran
    where
        F: FnMut(usize, RunEvent) + Send,
        C: Future<Output = Stop> + Send,
    {
        let concurrency = self.concurrency();
        let records = engine::run_batch_until(jobs, concurrency, sink, cancel).await;
        let mut ran = Ran { concurrency, ..Ran::default() };
        for record in &records {
            match keep(record, &self.history) {
                Ok(path) => ran.kept.push(path),
                Err(error) => {
                    ran.kept.push(None);
                    ran.warnings.push(format!("the run was not added to the history: {error}"));
                }
            }
            if let Some(base) = &self.transcripts {
                match record_transcripts(record, &Transcripts::File { base, batch: self.batch }) {
                    Ok(paths) => ran.recorded.extend(paths),
                    Err(error) => ran.warnings.push(format!("the transcript was not recorded: {error}")),
                }
            }
        }
        ran.records = records;
        ran
    }
}

/// Keeps `record` in `history` by the one rule ([`history::keep_in`]): a run stopped before its
/// answer began is not kept (`Ok(None)`); any other run is appended (`Ok(Some(file))`).
pub fn keep(record: &RunRecord, history: &History) -> Result<Option<PathBuf>, HistoryError> {
    match history {
        History::Off => Ok(None),
        History::DataDir => history::keep(record),
        History::File(path) => history::keep_in(path, record).map(|kept| kept.then(|| path.clone())),
    }
}

/// Where the transcripts of a job's records go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transcripts<'a> {
    /// Over this file name (`--record`), a turn's number beside it after the first; in a batch the
    /// case's name too (see [`transcript_path`]).
    File { base: &'a Path, batch: bool },
    /// Into this folder, named by prompt and case (`<prompt>.<case>.jsonl`): a provider batch's
    /// imported runs.
    Folder(&'a Path),
}

/// Writes the transcripts of `record` where `to` says; returns the paths.
pub fn record_transcripts(record: &RunRecord, to: &Transcripts) -> std::io::Result<Vec<PathBuf>> {
    match *to {
        Transcripts::File { base, batch } => {
            write_transcripts(record, base, if batch { record.case.as_deref() } else { None })
        }
        Transcripts::Folder(dir) => {
            let base = crate::names::inside(dir, &record.prompt, ".jsonl");
            write_transcripts(record, &base, record.case.as_deref())
        }
    }
}

/// Writes every turn of `record` as a transcript file (see [`transcript_path`]); returns the paths.
pub fn write_transcripts(record: &RunRecord, base: &Path, case: Option<&str>) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    if let Some(dir) = base.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))?;
    }
    for turn in &record.turns {
        let path = transcript_path(base, case, turn.turn);
        std::fs::write(&path, turn.transcript.to_jsonl())
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}
