//! One eval from start to end, the one owner every front end calls (`eval`, `eval --watch`, the eval
//! screen; batches through [`score_batch`] and [`from_batch`]): the plan, the cells to run again
//! (`--filter-failing`, `--retry-errors`), the baseline (one meaning, found before any request), the
//! default local model fetched by the one rule, the pipeline, the record saved and its delta. What
//! happens on the way is typed ([`Notice`], [`HistoryKept`]); front ends put it into words.
//!
//! `last` as a baseline means one thing everywhere: the newest eval in the store of the same prompt
//! files that shares a column with this one (the same prompt version on the same model and structured
//! mode), never this eval itself.

use std::path::PathBuf;

use super::pipeline::{self, EvalEvent, HistoryKept, Pipeline};
use super::report_file::ReportFormat;
use super::{diff, rerun, store, EvalError, EvalOptions, EvalPlan, EvalRecord};
use crate::batch::manifest::Manifest;
use crate::provider::FetchProgress;
use crate::run::Stop;

/// The eval to compare with.
#[derive(Clone, Debug)]
pub enum Baseline {
    /// `last`, an eval's id (or its start), or an eval record file.
    Named(String),
    /// A record at hand (`--watch`'s run before).
    Record(Box<EvalRecord>),
    /// `last` when there is one, else none (the eval screen's, which asks for no baseline by name).
    LastIfAny,
}

/// Which cells run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Rerun {
    /// Every cell of the plan.
    #[default]
    Every,
    /// Only the cases that failed or errored in an earlier eval (`last`, an id or a file).
    Failing(String),
    /// Only the cells that errored in the last eval; the others are kept from its record.
    Errors,
}

/// Where evals are kept (and `last` is looked for).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Store {
    /// The data directory's evals folder.
    #[default]
    DataDir,
    /// This evals folder.
    In(PathBuf),
    /// No store: nothing is saved, and `last` names nothing.
    Off,
}

impl Store {
    /// The folder, or why there is none.
    pub fn dir(&self) -> Result<PathBuf, EvalError> {
        match self {
            Store::DataDir => store::evals_dir(),
            Store::In(dir) => Ok(dir.clone()),
            Store::Off => Err(EvalError::Store("the eval store is off in this session".into())),
        }
    }
}

/// A report the front end writes once the eval ends: checked before anything runs, so that it never
/// replaces an input or a file that is not an earlier report of its kind.
#[derive(Clone, Debug)]
pub struct Report {
    /// The flag that asked for it (`-o`, `--junit`, `--csv`), named in a refusal.
    pub flag: &'static str,
    pub path: PathBuf,
    pub format: ReportFormat,
}

/// What an eval is asked to do.
#[derive(Clone, Debug, Default)]
pub struct EvalJob {
    pub options: EvalOptions,
    /// `--judge`: the model of `judge` checks naming none.
    pub judge: Option<String>,
    /// `--embedder`: the embedding model of `similar` checks naming none.
    pub embedder: Option<String>,
    /// Runs at once (`None`: the providers' own).
    pub concurrency: Option<usize>,
    pub rerun: Rerun,
    pub baseline: Option<Baseline>,
    /// Each cell's run is appended to the history.
    pub history: bool,
    /// The default local model may be fetched when a column needs it.
    pub fetch_model: bool,
    pub store: Store,
    /// The reports to be written (checked, not written, here).
    pub reports: Vec<Report>,
    /// Inputs besides the plan's files that no report may replace (a replay's transcript).
    pub inputs: Vec<PathBuf>,
}

/// Something the eval says on its way, before or beside its cells.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// A warning of the plan's reading (a promptfoo key written in the config, an option not used).
    Plan(String),
    /// `--filter-failing`: these many cases failed or errored in eval `eval` and run again.
    RerunFailing { eval: String, cases: usize },
    /// `--retry-errors`: the cells that errored in eval `eval` run again, with those it does not
    /// have; the others are kept from it.
    RetryErrors { eval: String, errored: usize, not_in_it: usize, kept: usize },
    /// The default local model is being fetched.
    Fetching(FetchProgress),
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Plan(warning) => write!(f, "warning: {warning}"),
            Notice::RerunFailing { eval, cases } => {
                write!(f, "re-running the {cases} cases that failed or errored in eval {eval}")
            }
            Notice::RetryErrors { eval, errored, not_in_it, kept } => {
                let new = if *not_in_it > 0 { format!(" and {not_in_it} it did not run") } else { String::new() };
                write!(f, "re-running the {errored} errored cells of eval {eval}{new}, {kept} kept from it")
            }
            Notice::Fetching(progress) => write!(f, "local model: {}", crate::run::progress_in_words(progress)),
        }
    }
}

/// What a front end follows an eval by.
pub enum SessionEvent<'a> {
    Notice(Notice),
    /// The plan is made and the baseline found; the cells start next.
    Planned {
        plan: &'a EvalPlan,
        concurrency: usize,
        baseline: Option<&'a EvalRecord>,
    },
    /// A cell's progress.
    Eval(EvalEvent),
}

/// How an eval ended.
#[derive(Debug)]
pub enum Ended {
    Ran(Box<Finished>),
    /// `--filter-failing`: no case failed or errored in eval `eval`; nothing ran.
    NothingFailed {
        eval: String,
    },
}

/// A finished eval.
#[derive(Debug)]
pub struct Finished {
    /// The record, its delta against the baseline set.
    pub record: EvalRecord,
    pub baseline: Option<EvalRecord>,
    /// Where the record was saved, or why not.
    pub saved: Result<PathBuf, String>,
    pub history: HistoryKept,
}

/// Runs the eval `job` asks for, reporting to `sink`, stopped when `cancel` completes. `Err` is bad
/// input (a prompt, a baseline, a report that would replace an input, a model that cannot be
/// fetched), found before any request is sent; or a provider that cannot be built.
pub async fn run<F, C>(job: &EvalJob, mut sink: F, cancel: C) -> Result<Ended, EvalError>
where
    F: FnMut(SessionEvent<'_>) + Send,
    C: std::future::Future<Output = Stop> + Send,
{
    let mut options = job.options.clone();
    let mut plan = planned(job, &options)?;
    for warning in &plan.warnings {
        sink(SessionEvent::Notice(Notice::Plan(warning.clone())));
    }
    if let Rerun::Failing(which) = &job.rerun {
        let earlier = plan
            .baseline(which, Some(&job.store.dir()?))
            .map_err(|e| EvalError::Input(format!("--filter-failing {which}: {e}")))?;
        let rows: std::collections::HashSet<&str> = plan.rows.iter().flatten().map(String::as_str).collect();
        let failing: Vec<String> =
            rerun::failing_cases(&earlier).into_iter().flatten().filter(|name| rows.contains(name.as_str())).collect();
        if failing.is_empty() {
            return Ok(Ended::NothingFailed { eval: earlier.id });
        }
        sink(SessionEvent::Notice(Notice::RerunFailing { eval: earlier.id.clone(), cases: failing.len() }));
        options.cases = failing;
        plan = planned(job, &options)?;
    }
    let kept = match job.rerun {
        Rerun::Errors => {
            let last = plan
                .baseline("last", Some(&job.store.dir()?))
                .map_err(|e| EvalError::Input(format!("--retry-errors: {e}")))?;
            let (kept, errored) = rerun::retry_errors(&mut plan, &last);
            let not_in_it = plan.cells.len() - errored;
            sink(SessionEvent::Notice(Notice::RetryErrors { eval: last.id, errored, not_in_it, kept: kept.len() }));
            kept
        }
        _ => Vec::new(),
    };
    refuse_replacing(job, &plan)?;
    let baseline = match &job.baseline {
        None => None,
        Some(Baseline::Record(record)) => Some((**record).clone()),
        Some(Baseline::Named(which)) => Some(
            plan.baseline(which, Some(&job.store.dir()?))
                .map_err(|e| EvalError::Input(format!("--baseline {which}: {e}")))?,
        ),
        Some(Baseline::LastIfAny) => job.store.dir().ok().and_then(|dir| plan.baseline("last", Some(&dir)).ok()),
    };
    let runs = plan.columns.iter().map(|c| (c.setup.settings.provider, c.setup.settings.model.as_str()));
    if job.fetch_model && crate::run::needs_default_model(runs) {
        crate::run::fetch_default_model(&mut |p| sink(SessionEvent::Notice(Notice::Fetching(p))), true)
            .map_err(EvalError::Input)?;
    }
    let concurrency = plan.concurrency(job.concurrency);
    sink(SessionEvent::Planned { plan: &plan, concurrency, baseline: baseline.as_ref() });
    let pipeline = Pipeline { plan: &plan, concurrency, record_history: job.history, wrap: None };
    let ran = pipeline::run(pipeline, |event| sink(SessionEvent::Eval(event)), cancel).await?;
    let mut record = ran.record;
    if job.rerun == Rerun::Errors {
        rerun::merge(&mut record, kept);
    }
    Ok(Ended::Ran(Box::new(finish(record, baseline, &job.store, ran.history))))
}

/// The plan of `options` with the job's judge and embedder.
fn planned(job: &EvalJob, options: &EvalOptions) -> Result<EvalPlan, EvalError> {
    EvalPlan::new(options)?.with_judge(job.judge.as_deref())?.with_embedder(job.embedder.as_deref())
}

/// The one rule of every report, checked before anything runs: a report replaces no input (the plan's
/// files, the prompts and dataset asked for, the job's other inputs), and nothing but an earlier
/// report of its kind.
fn refuse_replacing(job: &EvalJob, plan: &EvalPlan) -> Result<(), EvalError> {
    let mut inputs = plan.watched_files();
    inputs.extend(job.inputs.iter().cloned());
    inputs.extend(job.options.prompts.iter().cloned());
    inputs.extend(job.options.cases_file.clone());
    check_reports(&job.reports, &inputs)
}

/// [`refuse_replacing`] for reports of `inputs` alone (a batch's, before anything is submitted).
pub fn check_reports(reports: &[Report], inputs: &[PathBuf]) -> Result<(), EvalError> {
    for report in reports {
        crate::files::refuse_overwriting(report.flag, &report.path, inputs).map_err(EvalError::Input)?;
        report.format.may_replace(report.flag, &report.path).map_err(EvalError::Input)?;
    }
    Ok(())
}

/// The record's delta against `baseline`, the record saved in `store`.
fn finish(mut record: EvalRecord, baseline: Option<EvalRecord>, store: &Store, history: HistoryKept) -> Finished {
    set_delta(&mut record, baseline.as_ref());
    let saved = store.dir().and_then(|dir| store::save_in(&dir, &record)).map_err(|e| e.to_string());
    Finished { record, baseline, saved, history }
}

/// The baseline `which` of an eval of the batch `manifest` exports (its prompts, on its columns),
/// found before anything is submitted; `except` an eval that is the batch's own.
pub fn batch_baseline(
    manifest: &Manifest,
    which: &str,
    store: &Store,
    except: Option<&str>,
) -> Result<EvalRecord, EvalError> {
    let set = super::record::prompt_set(manifest.prompts.iter().map(|p| p.path.as_path()));
    let columns = super::batch::columns_of(manifest)?;
    store::baseline_except(&store.dir()?, which, &set, &columns, except)
        .map_err(|e| EvalError::Input(format!("--baseline {which}: {e}")))
}

/// A fetched batch's results scored as an eval (`eval --batch`, `batch import`): its runs kept in the
/// history as `history` says, the record compared with `baseline` (found before the batch was
/// submitted or waited for) and saved in `store`.
pub async fn score_batch(
    manifest: &Manifest,
    results: &str,
    history: bool,
    baseline: Option<EvalRecord>,
    store: &Store,
) -> Result<(Finished, crate::batch::import::Imported), EvalError> {
    let keep = if history { crate::run::job::History::DataDir } else { crate::run::job::History::Off };
    let scored = super::batch::score_results(manifest, results, &keep).await?;
    let kept = match (history, scored.history_error) {
        (false, _) => HistoryKept::Off,
        (true, Some(why)) => HistoryKept::NotWritten(why),
        (true, None) => HistoryKept::Every,
    };
    Ok((finish(scored.record, baseline, store, kept), scored.imported))
}

/// The eval an imported batch `tag` was scored into (`--from-batch`), compared with the baseline
/// `which` (never itself); nothing is saved again.
pub fn from_batch(tag: &str, which: Option<&str>, store: &Store) -> Result<Finished, EvalError> {
    let mut record = store::find_batch_in(&store.dir()?, tag)?;
    let baseline = match which {
        Some(which) => Some(
            store::baseline_except(&store.dir()?, which, &record.prompt_set(), &record.columns, Some(&record.id))
                .map_err(|e| EvalError::Input(format!("--baseline {which}: {e}")))?,
        ),
        None => None,
    };
    set_delta(&mut record, baseline.as_ref());
    Ok(Finished { record, baseline, saved: Err("read from the store".into()), history: HistoryKept::Off })
}

/// The record's delta against `baseline` (left as it is without one).
fn set_delta(record: &mut EvalRecord, baseline: Option<&EvalRecord>) {
    if let Some(base) = baseline {
        record.delta = Some(diff::delta(base, record));
    }
}

/// `after` compared with `before` (the eval screen's opened eval, a rescored cell): the delta.
pub fn compare(before: &EvalRecord, after: &EvalRecord) -> diff::Delta {
    diff::delta(before, after)
}
