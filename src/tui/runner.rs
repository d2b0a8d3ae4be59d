//! The outside world of `update`: executes each [`Effect`] — runs on a tokio runtime (events back as
//! messages, cancel by aborting the task), saves, recovery files, sweeps and history reads on
//! background threads — and hands results back as [`Msg`]s on the loop's channel.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use crate::prompt::file::{named, write_atomic, write_over, OnDisk, PromptError, PromptFile};
use crate::prompt::reading::setup_for_prompt;
use crate::provider::replay::Pace;
use crate::run::history;
use crate::truncate::points::{Offsets, Points};
use crate::truncate::sweep::sweep_points;
use crate::tui::jobs::{Bridge, Job, Jobs};
use crate::tui::latest::Latest;
use crate::tui::log::Log;
use crate::tui::msg::{Effect, FetchNews, Msg, SaveFailed, SchemaFileSave, Start, SweepRequest};
use crate::tui::recovery;
use crate::tui::workbench::lint::LintRequest;
use crate::tui::workbench::request::Env;
use crate::tui::workbench::tokens::CountRequest;

/// Executes effects for the loop.
pub struct Runner {
    pub tx: Sender<Msg>,
    /// The run, the eval and the comparison: one runtime, one cancel map.
    jobs: Jobs,
    pub data_dir: Option<PathBuf>,
    pub log: Log,
    /// How a transcript file is replayed (recorded pace by default; `TUNEBENCH_REPLAY_SPEED`).
    pub pace: Pace,
    /// Whether `Copy` may write an OSC 52 sequence to the terminal (not under a test backend).
    pub clipboard: bool,
    /// Whether runs go to the history file.
    pub record_history: bool,
    /// The prompt file the workbench edits (its recovery file is the one cleared).
    pub prompt_path: Option<PathBuf>,
    /// Reads the providers' variables (the process environment).
    pub env: Env,
    /// The schema's lints and the request's token counts: one worker each, the newest job wins
    /// (started on first use).
    pub(crate) lints: Option<Latest<LintRequest>>,
    pub(crate) counts: Option<Latest<CountRequest>>,
    /// Writes and clears the recovery file off the loop: the newest job wins, and the last one is
    /// done before the workbench exits.
    pub(crate) recoveries: Option<Latest<recovery::Job>>,
}

impl Runner {
    pub fn new(tx: Sender<Msg>, data_dir: Option<PathBuf>) -> anyhow::Result<Runner> {
        let jobs = Jobs::new()?;
        let log = data_dir.as_deref().map(Log::open).unwrap_or_default();
        Ok(Runner {
            tx,
            jobs,
            data_dir,
            log,
            pace: Pace::Recorded,
            clipboard: false,
            record_history: true,
            prompt_path: None,
            env: crate::run::env_var,
            lints: None,
            counts: None,
            recoveries: None,
        })
    }

    /// Starts watching the prompt's files: every half second each is looked at, and when its size or
    /// time of change moved its text is sent as [`Msg::OnDisk`] (the update decides what it means).
    /// The watch ends with the workbench (its channel closed).
    pub fn watch(&self, paths: Vec<PathBuf>) {
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let stamp = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.len(), m.modified().ok()));
            let mut seen: Vec<_> = paths.iter().map(|p| stamp(p)).collect();
            loop {
                std::thread::sleep(std::time::Duration::from_millis(500));
                for (path, last) in paths.iter().zip(seen.iter_mut()) {
                    let now = stamp(path);
                    if now == *last {
                        continue;
                    }
                    *last = now;
                    let Ok(text) = read_watched(path) else { continue };
                    if tx.send(Msg::OnDisk { path: path.clone(), text }).is_err() {
                        return;
                    }
                }
            }
        });
    }

    /// Executes `effect`; messages that follow at once (a save's result) are returned, the rest arrive
    /// on the channel.
    pub fn execute(&mut self, effect: Effect) -> Vec<Msg> {
        match effect {
            Effect::Start(start) => self.start(start),
            Effect::Cancel(job) => {
                self.jobs.cancel(job);
                self.log.line(&format!("{} cancelled", job.name()));
                // The run's partial answer stays: its screen hears that its task stopped.
                if job == Job::Run {
                    vec![Msg::RunCancelled]
                } else {
                    Vec::new()
                }
            }
            Effect::Save { path, base, prompt, schema_text, schema_file } => {
                let result = save(&path, &base, &prompt, schema_text.as_deref(), schema_file.as_ref());
                self.log.line(&format!("save {}: {:?}", path.display(), result.as_ref().map(|_| ())));
                vec![Msg::Saved(result)]
            }
            Effect::WriteRecovery(mut edits) => {
                edits.path = absolute(&edits.path);
                edits.written_at_ms = crate::run::record::now_ms();
                self.recovery(recovery::Job::Write(Box::new(edits)))
            }
            Effect::ClearRecovery => match self.prompt_path.as_deref().map(absolute) {
                Some(path) => self.recovery(recovery::Job::Clear(path)),
                None => Vec::new(),
            },
            Effect::ComputeSweep(request) => {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    let (run, answer_len) = (request.run, request.answer.len());
                    let result = compute_sweep(&request);
                    let _ = tx.send(Msg::SweepReady { run, answer_len, sweep: result.map(Box::new) });
                });
                Vec::new()
            }
            Effect::WarmModel(request) => {
                let pace = self.pace;
                std::thread::spawn(move || {
                    let Ok(setup) = crate::tui::workbench::request::setup(&request, pace) else { return };
                    if let Ok(plan) = setup.plan(request.case.as_deref()) {
                        // Errors reach the user when the run meets them.
                        let _ = crate::run::warm_local_model(&setup.settings.model, &plan.request);
                    }
                });
                Vec::new()
            }
            Effect::FetchModel => {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    let mut last = String::new();
                    let mut progress = |text: String| {
                        if text != last {
                            last.clone_from(&text);
                            let _ = tx.send(Msg::ModelFetch(FetchNews::Progress(text)));
                        }
                    };
                    let result = crate::run::fetch_local_model(&mut progress);
                    let _ = tx.send(Msg::ModelFetch(FetchNews::Done(result)));
                });
                Vec::new()
            }
            Effect::LoadHistory { prompt_id } => {
                let tx = self.tx.clone();
                let path = self.data_dir.as_ref().map(|d| d.join(history::HISTORY_FILE));
                std::thread::spawn(move || {
                    let result = match path {
                        None => Err("no data directory: set TUNEBENCH_DATA_DIR".to_string()),
                        Some(path) => history::read(&path).map_err(|e| e.to_string()).map(|history| {
                            history.records.into_iter().rev().filter(|record| record.prompt == prompt_id).collect()
                        }),
                    };
                    let _ = tx.send(Msg::HistoryLoaded(result));
                });
                Vec::new()
            }
            Effect::Copy { text, file_name } => {
                let mut notes = Vec::new();
                if let Some(dir) = &self.data_dir {
                    let path = dir.join(&file_name);
                    match write_atomic(&path, &text) {
                        Ok(()) => notes.push(format!("written to {}", path.display())),
                        Err(e) => notes.push(format!("not written: {e}")),
                    }
                }
                if self.clipboard {
                    use std::io::Write;
                    let mut out = std::io::stdout();
                    let _ = write!(out, "\x1b]52;c;{}\x07", base64(text.as_bytes()));
                    let _ = out.flush();
                    notes.insert(0, "request copied as curl (terminal clipboard)".into());
                }
                vec![Msg::Note(notes.join("; "))]
            }
            Effect::Settle { edits } => {
                let tx = self.tx.clone();
                self.jobs.handle().spawn(async move {
                    tokio::time::sleep(crate::tui::msg::SETTLE).await;
                    let _ = tx.send(Msg::Settled { edits });
                });
                Vec::new()
            }
            Effect::Lint(request) => {
                if self.lints.is_none() {
                    let tx = self.tx.clone();
                    self.lints = Latest::new("lint", move |request: LintRequest| {
                        let _ = tx.send(Msg::Linted { asked: request.asked, lint: request.lint() });
                    })
                    .ok();
                }
                match &self.lints {
                    Some(lints) => lints.ask(*request),
                    None => return vec![Msg::Linted { asked: request.asked, lint: request.lint() }],
                }
                Vec::new()
            }
            Effect::CountTokens(request) => {
                if self.counts.is_none() {
                    let tx = self.tx.clone();
                    self.counts = Latest::new("token count", move |request: CountRequest| {
                        let asked = request.asked;
                        let _ = tx.send(Msg::TokensCounted { asked, counted: Box::new(request.count()) });
                    })
                    .ok();
                }
                match &self.counts {
                    Some(counts) => counts.ask(*request),
                    None => {
                        let asked = request.asked;
                        return vec![Msg::TokensCounted { asked, counted: Box::new(request.count()) }];
                    }
                }
                Vec::new()
            }
            Effect::LoadTokenizer { model } => {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    let tokenizer = crate::run::prompt_tokens::LocalTokenizer::open(&model);
                    let _ = tx.send(Msg::TokenizerLoaded { model, tokenizer });
                });
                Vec::new()
            }
            Effect::Rescore(request) => {
                crate::tui::eval::job::rescore(self.bridge(), *request);
                Vec::new()
            }
            Effect::ApproveInDataset(request) => crate::tui::eval::job::approve_in_dataset(self.bridge(), *request),
            Effect::FindModels { prompt } => {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    let _ = tx.send(Msg::ModelsFound(crate::run::models::find_models(&[prompt])));
                });
                Vec::new()
            }
            Effect::ListEvals { path } => {
                crate::tui::eval::job::list(self.bridge(), path);
                Vec::new()
            }
            Effect::OpenEval { id, file, against } => {
                crate::tui::eval::job::open(self.bridge(), id, file, against);
                Vec::new()
            }
            Effect::SweepCell { id, row, sweep } => {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    let sweep = compute_sweep(&sweep).map(Box::new);
                    let _ = tx.send(Msg::Eval { id, news: crate::tui::msg::EvalNews::Swept { row, sweep } });
                });
                Vec::new()
            }
            Effect::Quit => {
                self.finish_recovery();
                Vec::new()
            }
        }
    }

    /// Starts a screen's job on the job bridge; one that cannot start is that screen's news at once.
    fn start(&mut self, start: Start) -> Vec<Msg> {
        let (job, id) = (start.job(), start.id());
        let started = match start {
            Start::Run(request) => {
                crate::tui::workbench::job::start(self.bridge(), *request).map_err(|e| format!("cannot run: {e:#}"))
            }
            Start::Eval(request) => crate::tui::eval::job::start(self.bridge(), *request),
            Start::Compare(request) => crate::tui::compare::job::start(self.bridge(), *request),
            Start::Optimize(request) => {
                crate::tui::optimize::job::start(self.bridge(), *request);
                Ok(())
            }
        };
        match started {
            Ok(()) => Vec::new(),
            Err(message) => {
                self.log.line(&message);
                vec![job.not_started(id, message)]
            }
        }
    }

    /// Waits for the recovery worker's last job (the workbench is about to exit).
    fn finish_recovery(&mut self) {
        if let Some(worker) = self.recoveries.take() {
            worker.finish();
        }
    }

    /// Hands `job` to the recovery worker (started on first use); nothing to do without a data
    /// directory.
    fn recovery(&mut self, job: recovery::Job) -> Vec<Msg> {
        let Some(dir) = self.data_dir.clone() else { return Vec::new() };
        if self.recoveries.is_none() {
            let tx = self.tx.clone();
            let work = move |job| {
                if let Err(e) = recovery::carry_out(&dir, job) {
                    let _ = tx.send(Msg::Note(e));
                }
            };
            match Latest::new("recovery", work) {
                Ok(worker) => self.recoveries = Some(worker),
                Err(e) => return vec![Msg::Note(format!("recovery file not written: {e}"))],
            }
        }
        if let Some(worker) = &self.recoveries {
            worker.ask(job);
        }
        Vec::new()
    }

    /// What a job's start reads of the runner, lent to it with the jobs.
    fn bridge(&mut self) -> Bridge<'_> {
        Bridge {
            jobs: &mut self.jobs,
            tx: &self.tx,
            log: &mut self.log,
            data_dir: self.data_dir.as_deref(),
            pace: self.pace,
            env: self.env,
            record_history: self.record_history,
        }
    }
}

impl Drop for Runner {
    /// However the workbench ends, its last recovery write or clear is done (the jobs on blocking
    /// threads are told to stop when the bridge is dropped).
    fn drop(&mut self) {
        self.finish_recovery();
    }
}

/// The sweep of a finished (or cancelled) answer at every chunk cut, read as its prompt reads it.
pub fn compute_sweep(request: &SweepRequest) -> Result<crate::truncate::sweep::Sweep, String> {
    let base_dir = request.path.parent().unwrap_or(Path::new("."));
    let setup = setup_for_prompt(&request.prompt, &request.path, base_dir, None).map_err(|e| format!("{e:#}"))?;
    let ends = Offsets::from(request.chunk_ends.as_slice());
    Ok(sweep_points(&request.answer, Points::Ends(&ends), setup.profile, setup.item_check))
}

/// `path` made absolute against the working directory (left as is when that fails).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Standard base64 (for the OSC 52 clipboard sequence).
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Writes the prompt in place over `base` (and the schema file beside it over its own last text);
/// a file changed on disk since is reported with what it holds now, and not written.
fn save(
    path: &Path,
    base: &OnDisk,
    prompt: &PromptFile,
    schema_text: Option<&str>,
    schema_file: Option<&SchemaFileSave>,
) -> Result<Box<OnDisk>, SaveFailed> {
    let failed = |e: PromptError| match e {
        PromptError::ChangedOutside { path } => match read_watched(&path) {
            Ok(text) => SaveFailed::ChangedOutside { path, text },
            Err(e) => SaveFailed::Error(e),
        },
        other => SaveFailed::Error(other.to_string()),
    };
    if let Some(file) = schema_file {
        let base_dir = path.parent().unwrap_or(Path::new("."));
        let full = named::resolve(base_dir, "schema_file", &file.path, None).map_err(failed)?;
        if file.text != file.base {
            write_over(&full, &file.base, &file.text).map_err(failed)?;
        }
    }
    // The rows of the prompt's dataset edited here go back into their lines first (nothing is
    // written when one changed on disk since or was deleted here).
    crate::dataset::save_edits(&base.prompt, prompt).map_err(|e| SaveFailed::Error(e.to_string()))?;
    base.save(path, prompt, schema_text).map(Box::new).map_err(failed)
}

/// A watched file's text, through the bounded reader (a regular file within a prompt file's cap).
fn read_watched(path: &Path) -> Result<String, String> {
    crate::files::read_text(path, crate::files::PROMPT_FILE).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
