//! The one eval pipeline every front end calls (the CLI, the workbench, batches through
//! [`super::batch`]): every cell of an [`EvalPlan`] run through its column's run setup and
//! `run::engine::run_batch_each` at the eval's concurrency, each run appended to the history and
//! scored the moment it ends, everything reported as [`EvalEvent`]s; the result is the
//! [`EvalRecord`]. A cell's case (a dataset row, read again) and its expectations are made with its
//! job and dropped once it is scored ([`CellCase`]): the eval holds the cells under way, not its cases.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::grade;
use super::plan::{Cell, EvalPlan, PlannedColumn};
use super::record::{CellRecord, EvalRecord, RunBrief, FORMAT};
use super::score::{score_graded, score_record, CaseScore, Expectations};
use super::EvalError;
use crate::prompt::expect::resolve::Resolver;
use crate::prompt::file::Case;
use crate::provider::kind::ProviderKind;
use crate::provider::Provider;
use crate::run::job::{self, History};
use crate::run::record::now_ms;
use crate::run::{engine, Job, RunEvent, RunRecord, Stop};

/// What an eval reports while it goes, in order per cell: a front end follows the eval from these.
#[derive(Clone, Debug, PartialEq)]
pub enum EvalEvent {
    /// Cell `cell` (an index into [`EvalPlan::cells`]) sent its first request.
    CellStarted { cell: usize },
    /// A piece of cell `cell`'s answer, as it arrived.
    Delta { cell: usize, text: String },
    /// Cell `cell`'s answer was refused and is asked for again with feedback (turn `turn`).
    Retry { cell: usize, turn: u32 },
    /// Cell `cell` ended and was scored; `run` is its run record (the answer a front end shows or
    /// approves as expected).
    CellScored { cell: usize, scored: Box<CellRecord>, run: Box<RunRecord> },
    /// Every cell ended (`cancelled`: a signal stopped the eval).
    Done { cancelled: bool },
}

/// Wraps a column's provider (the bench's answers from memory; the response cache is the run setup's).
pub type Wrap<'a> = &'a (dyn Fn(&PlannedColumn, Arc<dyn Provider>) -> Arc<dyn Provider> + Sync);

/// How the cells run.
pub struct Pipeline<'a> {
    pub plan: &'a EvalPlan,
    /// Runs at once (at least 1).
    pub concurrency: usize,
    /// Each cell's run record is appended to the history, as `run` does.
    pub record_history: bool,
    /// Wraps each column's provider (`None`: used as built).
    pub wrap: Option<Wrap<'a>>,
}

/// What came out: the record, and whether its runs reached the history.
#[derive(Debug)]
pub struct Ran {
    pub record: EvalRecord,
    pub history: HistoryKept,
}

/// Whether an eval's runs were appended to the history file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryKept {
    /// The eval keeps no history (`--no-history`, the optimizer's cells).
    Off,
    /// Every run that started is in the history.
    Every,
    /// The history could not be written (why): none of the eval's runs count as kept.
    NotWritten(String),
}

impl std::fmt::Display for HistoryKept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryKept::Off => write!(f, "the runs are not kept in the history"),
            HistoryKept::Every => write!(f, "the runs were added to the history"),
            HistoryKept::NotWritten(why) => write!(f, "the runs were not added to the history: {why}"),
        }
    }
}

/// Runs every cell, reporting to `sink`, stopped when `cancel` completes (runs under way keep their
/// partial answers; cells not started end as `error`, "not run"). An `Err` is a setup error (a
/// provider that cannot be built: a missing key, a bad URL), before any cell runs.
pub async fn run<F, C>(pipeline: Pipeline<'_>, sink: F, cancel: C) -> Result<Ran, EvalError>
where
    F: FnMut(EvalEvent) + Send,
    C: std::future::Future<Output = Stop> + Send,
{
    let plan = pipeline.plan;
    let started_at_ms = now_ms();
    let started = Instant::now();
    let judges = &super::graded::judges_for(plan).map_err(EvalError::Input)?;
    let jobs = Jobs::new(plan, pipeline.wrap)?;
    let sink = Mutex::new(sink);
    let emit = |event: EvalEvent| {
        let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (*sink)(event);
    };
    // Each cell's record as it is scored, in the order they end (sorted into the plan's at the end):
    // made room for once, and never copied into another list.
    let scored: Mutex<Vec<CellRecord>> = Mutex::new(Vec::with_capacity(plan.cells.len()));
    let not_written: Mutex<Option<String>> = Mutex::new(None);
    let cancelled = &std::sync::atomic::AtomicBool::new(false);
    // The cells under way: each one's case and expectations, from its job's making to its scoring.
    let under_way: Mutex<HashMap<usize, Arc<CellCase>>> = Mutex::new(HashMap::new());
    let (scored, not_written, emit, under_way) = (&scored, &not_written, &emit, &under_way);
    let case_of = move |index: usize| under_way.lock().unwrap_or_else(|p| p.into_inner()).get(&index).cloned();
    let on_event = |index: usize, event: RunEvent| match event {
        RunEvent::TurnStarted { turn: 1, .. } => emit(EvalEvent::CellStarted { cell: index }),
        RunEvent::TurnStarted { turn, .. } => emit(EvalEvent::Retry { cell: index, turn }),
        RunEvent::Delta(text) => emit(EvalEvent::Delta { cell: index, text }),
        _ => {}
    };
    // A cell with graded checks (`command`, `judge`) is scored once its graders answer: the runs and
    // the grading go on side by side, and a cancel stops both.
    let cancel = futures_util::FutureExt::shared(futures_util::FutureExt::boxed(cancel));
    let (to_grade, mut graded_queue) = tokio::sync::mpsc::unbounded_channel::<(usize, RunRecord)>();
    let finish = move |index: usize, record: &RunRecord, grades: &grade::Grades| {
        let Some(cell) = plan.cells.get(index) else { return };
        let case = under_way.lock().unwrap_or_else(|p| p.into_inner()).remove(&index);
        let expectations = case.as_ref().and_then(|c| c.expectations.as_ref());
        let mut cell_record = score_cell(plan, *cell, expectations, record, grades);
        cell_record.run = cell_record.run.with_case(case.as_ref().and_then(|c| c.case.as_ref()));
        emit(EvalEvent::CellScored {
            cell: index,
            scored: Box::new(cell_record.clone()),
            run: Box::new(record.clone()),
        });
        scored.lock().unwrap_or_else(|p| p.into_inner()).push(cell_record);
    };
    let on_record = move |index: usize, record: &RunRecord| {
        if plan.cells.get(index).is_none() {
            return;
        }
        if record.cancelled {
            cancelled.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if pipeline.record_history {
            if let Err(error) = job::keep(record, &History::DataDir) {
                not_written.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| error.to_string());
            }
        }
        let graded = case_of(index).and_then(|c| c.expectations.as_ref().map(super::graded::any)).unwrap_or(false)
            && !record.never_started();
        if !(graded && to_grade.send((index, record.clone())).is_ok()) {
            finish(index, record, &grade::Grades::default());
        }
    };
    // Each cell's job is made when a run is free for it: a 20,000-case eval holds the jobs under way,
    // not 20,000 rendered requests nor 20,000 cases. Every case was checked by the plan, so none fails
    // here (unless its dataset changed since); if one did, its cell is an `error` that says why.
    let each = plan.cells.iter().enumerate().filter_map(|(index, cell)| match jobs.job(cell) {
        Ok((job, case)) => {
            under_way.lock().unwrap_or_else(|p| p.into_inner()).insert(index, Arc::new(case));
            Some((index, job))
        }
        Err(error) => {
            scored.lock().unwrap_or_else(|p| p.into_inner()).push(not_made(plan, *cell, &error));
            None
        }
    });
    let runs = {
        let cancel = cancel.clone();
        async move {
            engine::run_batch_each(each, pipeline.concurrency.max(1), on_event, on_record, cancel).await;
        }
    };
    let grading = async {
        use futures_util::StreamExt;
        let mut waiting = futures_util::stream::FuturesUnordered::new();
        let mut pending: std::collections::BTreeMap<usize, RunRecord> = std::collections::BTreeMap::new();
        let (mut open, mut stopped) = (true, false);
        let stop_grade = |index: usize| -> grade::Grades {
            let checks = case_of(index).and_then(|c| c.expectations.as_ref().map(|e| e.checks.len()));
            let checks = vec![Some(Err("not graded: the eval was stopped".to_string())); checks.unwrap_or(0)];
            grade::Grades { checks, ..Default::default() }
        };
        loop {
            tokio::select! {
                next = graded_queue.recv(), if open => match next {
                    Some((index, record)) if stopped => finish(index, &record, &stop_grade(index)),
                    Some((index, record)) => {
                        pending.insert(index, record.clone());
                        let case = case_of(index);
                        waiting.push(async move {
                            let grades = match case.as_ref().and_then(|c| c.expectations.as_ref().map(|e| (c, e))) {
                                Some((case, expectations)) => super::graded::grade_cell(expectations, &record, &variables_of(plan, index, case, &record), judges).await,
                                None => grade::Grades::default(),
                            };
                            (index, grades)
                        });
                    }
                    None => open = false,
                },
                Some((index, grades)) = waiting.next(), if !waiting.is_empty() => {
                    if let Some(record) = pending.remove(&index) {
                        finish(index, &record, &grades);
                    }
                }
                _ = cancel.clone(), if !stopped && (open || !waiting.is_empty()) => {
                    // Dropping the gradings under way stops their programs.
                    stopped = true;
                    waiting = futures_util::stream::FuturesUnordered::new();
                    for (index, record) in std::mem::take(&mut pending) {
                        finish(index, &record, &stop_grade(index));
                    }
                }
                else => break,
            }
        }
    };
    tokio::join!(runs, grading);
    let cancelled = cancelled.load(std::sync::atomic::Ordering::SeqCst);
    emit(EvalEvent::Done { cancelled });
    let mut cells = std::mem::take(&mut *scored.lock().unwrap_or_else(|p| p.into_inner()));
    // The plan's order (row by row, column by column, repeat by repeat), sorted where they lie.
    cells.sort_unstable_by_key(|c| (c.row, c.column, c.repeat));
    let mut record = EvalRecord {
        eval: FORMAT,
        id: super::store::new_id(started_at_ms),
        started_at_ms,
        duration_ms: started.elapsed().as_millis() as u64,
        prompts: plan.prompts.clone(),
        columns: plan.columns(),
        rows: plan.rows.clone(),
        repeat: plan.repeat,
        cells,
        totals: Vec::new(),
        groups: Vec::new(),
        cancelled,
        batch: None,
        delta: None,
    };
    record.sum_up();
    let history = match not_written.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(why) => HistoryKept::NotWritten(why),
        None if pipeline.record_history => HistoryKept::Every,
        None => HistoryKept::Off,
    };
    Ok(Ran { record, history })
}

/// One job per cell, in the plan's order (see [`Jobs`]): the bench's measure of making them.
#[cfg(feature = "testing")]
pub(super) fn jobs(plan: &EvalPlan, wrap: Option<Wrap<'_>>) -> Result<Vec<Job>, EvalError> {
    let jobs = Jobs::new(plan, wrap)?;
    plan.cells.iter().map(|cell| jobs.job(cell).map(|(job, _)| job)).collect()
}

/// A cell's case as its job was made: the case (a dataset row read again; `None`: the prompt's own
/// variables) and its expectations, held until the cell is scored.
pub struct CellCase {
    pub case: Option<Case>,
    pub expectations: Option<Expectations>,
}

/// The cells' jobs, made one at a time: each column's provider built once (replay: each case its own
/// recorded answer), wrapped by `wrap`; each prompt's expectations resolved with its schema compiled once.
pub(super) struct Jobs<'a> {
    plan: &'a EvalPlan,
    shared: Vec<Option<Arc<dyn Provider>>>,
    wrap: Option<Wrap<'a>>,
    /// By [`super::plan::PromptCases::source`].
    resolvers: Vec<Resolver<'a>>,
}

impl<'a> Jobs<'a> {
    /// Builds the columns' providers and each prompt's resolver of expectations (every case was
    /// checked on every column by the plan, so an eval never starts half-checked).
    pub(super) fn new(plan: &'a EvalPlan, wrap: Option<Wrap<'a>>) -> Result<Self, EvalError> {
        let mut shared: Vec<Option<Arc<dyn Provider>>> = Vec::with_capacity(plan.columns.len());
        for column in &plan.columns {
            shared.push(match column.setup.settings.provider {
                // A replay with nothing recorded to play is bad input, before any cell runs (not an
                // eval of errors, recorded).
                ProviderKind::Replay if column.setup.replay.is_none() => {
                    let why =
                        "the replay provider plays a recorded transcript: give --transcript FILE (written by --record)";
                    return Err(setup_error(column, crate::run::RunError::Setting(why.into())));
                }
                ProviderKind::Replay => None,
                _ => {
                    let provider = column.setup.provider(None).map_err(|e| setup_error(column, e))?;
                    Some(wrap.map_or_else(|| Arc::clone(&provider), |wrap| wrap(column, Arc::clone(&provider))))
                }
            });
        }
        let resolvers = plan.sources.iter().map(|cases| cases.resolver()).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { plan, shared, wrap, resolvers })
    }

    /// Cell `cell`'s job: its case (read again when a dataset's) planned on its column, repeat k
    /// sampling with the seed + k; and the case with its expectations, to score the cell with.
    pub(super) fn job(&self, cell: &Cell) -> Result<(Job, CellCase), EvalError> {
        let column = self
            .plan
            .columns
            .get(cell.column)
            .ok_or_else(|| EvalError::Input(format!("cell of column {} which the plan lacks", cell.column)))?;
        let case = column.case(cell.row)?;
        let expectations = match self.resolvers.get(column.cases.source) {
            Some(resolver) => Some(column.cases.expectations(resolver, case.as_ref())?),
            None => None,
        };
        let mut run_plan = column.run_plan(case.as_ref()).map_err(|e| setup_error(column, e))?;
        // Repeat k samples with the seed + k (a run given no seed gets a fresh one from the engine).
        if crate::run::seed::samples(&run_plan.request) {
            run_plan.request.seed = run_plan.request.seed.map(|seed| crate::run::seed::for_repeat(seed, cell.repeat));
        }
        let provider = match self.shared.get(cell.column).cloned().flatten() {
            Some(provider) => provider,
            None => {
                let name = case.as_ref().map(|c| c.name.as_str());
                let provider = column.setup.provider(name).map_err(|e| setup_error(column, e))?;
                self.wrap.map_or_else(|| Arc::clone(&provider), |wrap| wrap(column, Arc::clone(&provider)))
            }
        };
        Ok((Job { provider, plan: run_plan }, CellCase { case, expectations }))
    }
}

fn setup_error(column: &PlannedColumn, e: crate::run::RunError) -> EvalError {
    EvalError::Input(format!("column {}: {e}", column.column.label))
}

/// The variables cell `index`'s request was rendered with: its case's over the prompt's, the
/// front end's `--var` values over both.
fn variables_of(
    plan: &EvalPlan,
    index: usize,
    case: &CellCase,
    record: &RunRecord,
) -> crate::prompt::template::Variables {
    let column = plan.cells.get(index).and_then(|cell| plan.columns.get(cell.column));
    let own = column.map(|c| c.setup.prompt.variables.clone()).unwrap_or_default();
    let mut variables = match &case.case {
        Some(case) => crate::prompt::template::merge(&[&own, &case.variables]),
        None => own,
    };
    variables.extend(record.variables.clone());
    variables
}

/// A finished run scored against its cell's expectations, with its graded checks' results (a cell a
/// signal stopped before it began is `error`, not run).
fn score_cell(
    plan: &EvalPlan,
    cell: Cell,
    expectations: Option<&Expectations>,
    record: &RunRecord,
    grades: &grade::Grades,
) -> CellRecord {
    let score = match expectations {
        _ if record.never_started() => not_run(record),
        Some(expectations) => score_graded(expectations, record, grades),
        None => score_record(&Default::default(), record),
    };
    CellRecord {
        row: cell.row,
        column: cell.column,
        repeat: cell.repeat,
        case: plan.rows.get(cell.row).cloned().flatten(),
        score,
        run: RunBrief::of(record),
    }
}

/// The record of a cell whose job could not be made (its dataset row could not be read again): an
/// `error`, not run, that says why.
fn not_made(plan: &EvalPlan, cell: Cell, error: &EvalError) -> CellRecord {
    let reason = format!("not run: {error}");
    CellRecord {
        row: cell.row,
        column: cell.column,
        repeat: cell.repeat,
        case: plan.rows.get(cell.row).cloned().flatten(),
        score: CaseScore::error(reason.clone()),
        run: RunBrief {
            started_at_ms: now_ms(),
            error: Some(error.to_string()),
            summary: reason,
            not_run: true,
            ..RunBrief::default()
        },
    }
}

/// The score of a cell that never ran.
fn not_run(record: &RunRecord) -> CaseScore {
    let why = record.warnings.last().cloned().unwrap_or_else(|| "stopped before it began".into());
    CaseScore::error(format!("not run: {why}"))
}
