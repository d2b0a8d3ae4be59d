//! `tunebench eval`: every case of one or more prompts (× models × the json/jsonl twin × repeats) run
//! through the eval pipeline, scored against the cases' expectations, recorded in the data directory
//! and printed as a matrix (or `--json`), reports written by `-o FILE` (`--junit`, `--csv`); `eval list`,
//! `eval diff A B`, `--watch`; `--batch` and `--batch-resume ID` (`eval_batch.rs`).
//!
//! Exit codes: 0 every cell passed; 1 a cell failed, was truncated or got no answer, or (with
//! `--fail-on-regression`) a cell regressed against the baseline; 2 bad input; 3 the provider could
//! not be reached at all (every cell `error`); 4 a check could not be evaluated (a promptfoo assertion
//! that needs code or another model: its cells are `error`, each listed by case and type); 130
//! stopped by ctrl-c.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::eval_human as human;
use super::run_options::SetupFlags;
use crate::eval::diff::{self, Delta};
use crate::eval::pipeline::{EvalEvent, HistoryKept};
use crate::eval::report_file::ReportFormat;
use crate::eval::session::{self, Baseline, Ended, EvalJob, Finished, Notice, Report, Rerun, SessionEvent, Store};
use crate::eval::{store, EvalOptions, EvalRecord, ModelSpec};
use crate::output::{Profile, ResponseType};
use crate::provider::replay::Pace;
use crate::run::{CacheMode, ReplayFrom, SetupOptions};

/// The exit code when no cell got an answer: the provider could not be reached at all.
pub const EXIT_UNREACHABLE: u8 = 3;
/// The exit code when a check could not be evaluated (a promptfoo assertion tunebench does not map
/// yet: `javascript`, `python`, `llm-rubric`, `similar`, …): the eval is incomplete, never passed.
pub const EXIT_NOT_EVALUATED: u8 = 4;

/// Options of `tunebench eval`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    #[command(flatten)]
    pub run: EvalRunArgs,
}

/// `eval list` and `eval diff`.
#[derive(Debug, clap::Subcommand)]
pub enum EvalCommand {
    /// The evals recorded in the data directory, newest first.
    List(ListArgs),
    /// Compare two recorded evals case by case, check by check and field by field (A before, B after).
    Diff(DiffArgs),
}

/// Options of `eval list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `eval diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The earlier eval: an id (or its start), `last`, or an eval record file.
    pub a: String,
    /// The later eval: an id (or its start), `last`, or an eval record file.
    pub b: String,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when B regressed anywhere against A.
    #[arg(long)]
    pub fail_on_regression: bool,
}

/// Options of an eval run.
#[derive(Debug, clap::Args)]
pub struct EvalRunArgs {
    /// The prompt files (TOML): each a column (or one per model with several --model); or a promptfoo
    /// config (promptfooconfig.yaml): a column per prompt × provider, a row per test.
    #[arg(required_unless_present_any = ["from_batch", "batch_resume"])]
    pub prompts: Vec<PathBuf>,
    /// Only this case (repeat for several) [default: every case of each prompt].
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// A dataset of cases (.jsonl, .csv, .yaml), one case a row, in place of each prompt's own
    /// `cases_file` (see README, Datasets).
    #[arg(long = "cases", value_name = "FILE", visible_alias = "cases-file")]
    pub cases_file: Option<PathBuf>,
    /// A model to run every prompt on (repeat to compare models): local, openai:gpt-4o-mini,
    /// ollama:qwen2.5, vllm:NAME, a .gguf file, or a NAME on --provider [default: as `run`].
    #[arg(long = "model", value_name = "SPEC")]
    pub models: Vec<String>,
    /// Runs per cell: a cell shows k/N passes, the report pass^N per case and flaky cases.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Runs at once [default: the provider's: 1 for a server on this machine or the local model, 4 for
    /// remote APIs, 8 for replay].
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Each prompt in these response types, e.g. json,jsonl: the prompt itself and its derived twin,
    /// scored against the same expected items.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub types: Vec<ResponseType>,
    #[command(flatten)]
    pub flags: SetupFlags,
    /// Whose rules turn the answers into JSON [default: each prompt's, else lenient].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// The sampling seed (with --temperature above 0): repeat k uses the seed + k; without it each run a fresh one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Local model: do not fetch the default model when it is missing (fail instead).
    #[arg(long)]
    pub no_fetch: bool,
    /// For --provider replay: the recorded answers (`run --all-cases --record FILE` wrote FILE.CASE.jsonl).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// For --provider replay: recorded, instant, or a speed such as 10x.
    #[arg(long, default_value = "instant")]
    pub replay_speed: String,
    /// Print the whole eval record as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a report, its format by the extension (repeat for several): .json (the eval record),
    /// .jsonl (a line per cell), .csv, .xml (JUnit), .html (one self-contained page).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub outputs: Vec<PathBuf>,
    /// Write the eval as JUnit XML (a testsuite per column, a testcase per case × column); as -o FILE.xml.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write every cell as a CSV line; as -o FILE.csv.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Compare with an earlier eval: `last` (of these prompt files), an id, or an eval record file.
    #[arg(long, value_name = "last|ID|FILE")]
    pub baseline: Option<String>,
    /// Exit 1 on any regression against the baseline, even when every cell still passes.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Ask the provider every time (no answer from the response cache).
    #[arg(long)]
    pub no_cache: bool,
    /// The model that grades `judge` checks naming none (and promptfoo's llm-rubric): `local`, or
    /// PROVIDER:MODEL (`openai:gpt-4o-mini`, `ollama:qwen2.5`).
    #[arg(long, value_name = "MODEL")]
    pub judge: Option<String>,
    /// The embedding model of `similar` checks and fields naming none (and promptfoo's `similar`):
    /// PROVIDER:MODEL (`openai:text-embedding-3-small`, `ollama:nomic-embed-text`); wins over the
    /// prompt's `[eval] embedder`.
    #[arg(long, value_name = "MODEL")]
    pub embedder: Option<String>,
    /// Run again whenever a prompt file (or its schema or expected files) changes; print the changes.
    #[arg(long, conflicts_with_all = ["from_batch", "json"])]
    pub watch: bool,
    /// Print the matrix of an imported provider batch (its tag, as in tb<tag>-...) instead of running.
    #[arg(long, value_name = "TAG", conflicts_with_all = ["prompts", "models", "repeat", "types"])]
    pub from_batch: Option<String>,
    /// Hand the eval to the provider's batch engine (openai, anthropic, vllm): the case matrix exported
    /// and submitted, then waited for (ctrl-c stops waiting and prints the id to resume with), its
    /// results scored into an eval record as a live eval's answers are.
    #[arg(long, conflicts_with_all = ["from_batch", "watch", "filter_failing", "retry_errors", "transcript", "batch_resume"])]
    pub batch: bool,
    /// With --batch: print the batch id and return once it is submitted (`--batch-resume ID` later).
    #[arg(long, requires = "batch")]
    pub no_wait: bool,
    /// Wait for the batch `eval --batch` submitted as ID, then fetch and score its results.
    #[arg(long, value_name = "ID",
          conflicts_with_all = ["prompts", "from_batch", "watch", "models", "repeat", "types", "cases", "cases_file"])]
    pub batch_resume: Option<String>,
    /// With --batch or --batch-resume: the most bytes of results taken; a larger download stops
    /// there and nothing is scored.
    #[arg(long, value_name = "BYTES", default_value_t = crate::batch::remote::RESULTS_BYTES)]
    pub max_results_bytes: u64,
    /// Do not append the cells' runs to the history file.
    #[arg(long)]
    pub no_history: bool,
    /// Run only the cases that failed or errored in an earlier eval of these prompts: `last` (bare
    /// `--filter-failing`), or `--filter-failing=ID` (an id or an eval record file).
    #[arg(long, value_name = "last|ID", num_args = 0..=1, require_equals = true, default_missing_value = "last",
          conflicts_with_all = ["from_batch", "watch"])]
    pub filter_failing: Option<String>,
    /// Run only the cells that errored in the last eval of these prompts; the others are kept from its
    /// record, and the new record holds both.
    #[arg(long, conflicts_with_all = ["filter_failing", "from_batch", "watch"])]
    pub retry_errors: bool,
    /// A promptfoo config's cells judged by tunebench's rule: an answer that does not fit its
    /// `response_format` schema fails, one cut at the token limit is `truncated` (promptfoo's rule,
    /// the default there, judges by the assertions alone and says the schema's result beside).
    #[arg(long)]
    pub schema_verdict: bool,
    /// Set the variables of a dotenv file (KEY=VALUE lines: provider keys, base URLs) for this eval;
    /// a variable already in the environment wins. Values are never printed or recorded.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

pub fn run(args: &EvalArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = args.run.env_file.as_deref().filter(|_| args.command.is_none()) {
        for key in super::env_file::load(path)? {
            super::note!("tunebench: {key} is set in the environment already: --env-file's value is not used");
        }
    } else if args.command.is_none() {
        // promptfoo reads the `.env` beside its config by default; so does an eval of the config, and
        // of a suite `import promptfoo` wrote (its `.env` holds the keys the config wrote).
        let suite = |path: &Path| {
            crate::files::read_text(path, crate::files::PROMPT_FILE).is_ok_and(|t| crate::eval::suite::is_suite(&t))
        };
        let configs = args.run.prompts.iter().filter(|p| crate::promptfoo::is_config(p) || suite(p));
        let beside: Vec<PathBuf> = configs
            .map(|config| crate::run::setup::base_dir(config).join(".env"))
            .filter(|env| env.is_file())
            .collect();
        if let Some(env) = beside.first() {
            let kept = super::env_file::load(env)
                .map_err(|e| anyhow::anyhow!("{}", e.to_string().replace("--env-file", &env.display().to_string())))?;
            super::note!("tunebench: read {} (beside the promptfoo config, as promptfoo does)", env.display());
            for key in kept {
                super::note!(
                    "tunebench: {key} is set in the environment already: {}'s value is not used",
                    env.display()
                );
            }
        }
    }
    match &args.command {
        Some(EvalCommand::List(list)) => list_evals(list),
        Some(EvalCommand::Diff(diff)) => diff_evals(diff),
        None if args.run.watch => super::eval_watch::watch(&args.run),
        None => run_eval(&args.run),
    }
}

/// The eval's options from the command line.
pub fn options(args: &EvalRunArgs) -> anyhow::Result<EvalOptions> {
    let pace = Pace::parse(&args.replay_speed).with_context(|| {
        format!("--replay-speed {:?}: use recorded, instant, or a speed such as 10x", args.replay_speed)
    })?;
    let models = args.models.iter().map(|m| ModelSpec::parse(m)).collect::<Result<Vec<_>, _>>()?;
    // `--structured a,b`: a column per mode, each column's mode set by the plan.
    let structured = args.flags.structured_list();
    let setup = if structured.is_empty() {
        args.flags.setup_options(None)?
    } else {
        args.flags.setup_options_each_mode(None)?
    };
    Ok(EvalOptions {
        prompts: args.prompts.clone(),
        cases: args.cases.clone(),
        cases_file: args.cases_file.clone(),
        models,
        repeat: args.repeat,
        types: args.types.clone(),
        structured,
        schema_verdict: args.schema_verdict,
        setup: super::run::replaying(
            SetupOptions { profile: args.profile, seed: args.seed, cache: cache_mode(args), cache_dir: None, ..setup },
            args.transcript.clone().map(|path| ReplayFrom::File(path, pace)),
        ),
    })
}

/// The response cache: used unless `--no-cache`; `--repeat` above 1 takes fresh answers (and
/// records them, so the next eval of the same requests is served at once).
fn cache_mode(args: &EvalRunArgs) -> CacheMode {
    match (args.no_cache, args.repeat) {
        (true, _) => CacheMode::Off,
        (false, 0 | 1) => CacheMode::Use,
        (false, _) => CacheMode::Refresh,
    }
}

/// The eval `args` ask for, as the core's one eval session takes it.
pub fn job(args: &EvalRunArgs) -> anyhow::Result<EvalJob> {
    Ok(EvalJob {
        options: options(args)?,
        judge: args.judge.clone(),
        embedder: args.embedder.clone(),
        concurrency: args.concurrency,
        rerun: match (&args.filter_failing, args.retry_errors) {
            (Some(which), _) => Rerun::Failing(which.clone()),
            (None, true) => Rerun::Errors,
            (None, false) => Rerun::Every,
        },
        baseline: args.baseline.clone().map(Baseline::Named),
        history: !args.no_history,
        fetch_model: !args.no_fetch,
        store: Store::DataDir,
        reports: reports(args)?,
        inputs: args.transcript.iter().cloned().collect(),
    })
}

fn run_eval(args: &EvalRunArgs) -> anyhow::Result<ExitCode> {
    let reports = reports(args)?;
    if let Some(tag) = &args.from_batch {
        session::check_reports(&reports, &args.prompts)?;
        let finished = session::from_batch(tag, args.baseline.as_deref(), &Store::DataDir)?;
        return finish(args, &finished.record);
    }
    if args.batch || args.batch_resume.is_some() {
        return super::eval_batch::run(args);
    }
    let job = job(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match run_job(args, &job, &runtime, super::interrupt::interrupted())? {
        Ended::NothingFailed { eval } => {
            super::note!("no case failed or errored in eval {eval}: nothing to run");
            Ok(ExitCode::SUCCESS)
        }
        Ended::Ran(finished) => {
            said(&finished);
            finish(args, &finished.record).map(super::interrupt::exit_code)
        }
    }
}

/// The report files asked for, each with the flag that asked and its format: `--junit`, `--csv`, then
/// every `-o` by its extension (an unknown one is bad input, before anything runs).
pub fn reports(args: &EvalRunArgs) -> anyhow::Result<Vec<Report>> {
    let mut reports = Vec::new();
    let report = |flag, path: &Path, format| Report { flag, path: path.to_path_buf(), format };
    reports.extend(args.junit.as_deref().map(|path| report("--junit", path, ReportFormat::Junit)));
    reports.extend(args.csv.as_deref().map(|path| report("--csv", path, ReportFormat::Csv)));
    for path in &args.outputs {
        reports.push(report("-o", path, ReportFormat::of(path).map_err(anyhow::Error::msg)?));
    }
    Ok(reports)
}

/// Runs `job` through the core's eval session, its notices and each cell's end on stderr (the
/// cells' progress not with `--json`).
pub fn run_job(
    args: &EvalRunArgs,
    job: &EvalJob,
    runtime: &tokio::runtime::Runtime,
    cancel: impl std::future::Future<Output = crate::run::Stop> + Send,
) -> anyhow::Result<Ended> {
    run_job_seeing(args, job, runtime, cancel, &mut |_| {})
}

/// [`run_job`], every event also shown to `also` (`--watch` takes the files to watch from the plan).
pub fn run_job_seeing(
    args: &EvalRunArgs,
    job: &EvalJob,
    runtime: &tokio::runtime::Runtime,
    cancel: impl std::future::Future<Output = crate::run::Stop> + Send,
    also: &mut (dyn FnMut(&SessionEvent<'_>) + Send),
) -> anyhow::Result<Ended> {
    let human = !args.json;
    let (mut labels, mut repeats, mut total, mut done) = (Vec::new(), false, 0, 0);
    let ended = runtime.block_on(session::run(
        job,
        |event| {
            also(&event);
            match event {
                SessionEvent::Notice(Notice::Fetching(progress)) => super::model::show_progress(progress),
                SessionEvent::Notice(notice @ Notice::Plan(_)) => super::note!("tunebench: {notice}"),
                SessionEvent::Notice(notice) => super::note!("{notice}"),
                SessionEvent::Planned { plan, concurrency, .. } => {
                    labels = plan.columns.iter().map(|c| c.column.label.clone()).collect();
                    (repeats, total) = (plan.repeat > 1, plan.cells.len());
                    if human {
                        human::plan_line(plan, concurrency);
                    }
                }
                SessionEvent::Eval(EvalEvent::CellScored { scored, .. }) => {
                    done += 1;
                    if human {
                        let column = labels.get(scored.column).map_or("?", String::as_str);
                        human::progress(column, repeats, done, total, &scored);
                    }
                }
                SessionEvent::Eval(_) => {}
            }
        },
        cancel,
    ))?;
    Ok(ended)
}

/// Says where the record was kept and whether the runs reached the history.
pub fn said(finished: &Finished) {
    if let HistoryKept::NotWritten(_) = &finished.history {
        super::note!("tunebench: warning: {}", finished.history);
    }
    match &finished.saved {
        Ok(path) => super::note!("eval {} recorded in {}", finished.record.id, path.display()),
        Err(error) => super::note!("tunebench: warning: the eval was not recorded: {error}"),
    }
}

/// Prints the record and writes the report files; the exit code.
pub fn finish(args: &EvalRunArgs, record: &EvalRecord) -> anyhow::Result<ExitCode> {
    write_reports(args, record)?;
    if args.json {
        super::print_json(record)?;
    } else {
        super::say!("{}", human::report(record));
    }
    Ok(exit_code(record, record.delta.as_ref(), args.fail_on_regression))
}

/// Writes every report asked for (each file replaced atomically, written as it is made).
pub fn write_reports(args: &EvalRunArgs, record: &EvalRecord) -> anyhow::Result<()> {
    for Report { path, format, .. } in reports(args)? {
        crate::prompt::file::write_atomic_with(&path, |out| format.write(record, out))
            .with_context(|| format!("writing {}", path.display()))?;
        super::note!("wrote {}", path.display());
    }
    Ok(())
}

/// 0 all passed; 1 a cell did not pass, or a regression with `fail_on_regression`; 3 no cell got an
/// answer (the provider could not be reached); 4 a check could not be evaluated.
pub fn exit_code(record: &EvalRecord, delta: Option<&Delta>, fail_on_regression: bool) -> ExitCode {
    if record.unreachable() {
        return ExitCode::from(EXIT_UNREACHABLE);
    }
    if !record.not_evaluated().is_empty() {
        return ExitCode::from(EXIT_NOT_EVALUATED);
    }
    let regressed = delta.is_some_and(|d| d.regressed > 0);
    if !record.all_passed() || (fail_on_regression && regressed) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn list_evals(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let dir = store::evals_dir()?;
    let (listed, warnings) = store::list_in(&dir)?;
    for warning in &warnings {
        super::note!("tunebench: warning: {warning}");
    }
    if args.json {
        super::print_json(&listed)?;
    } else {
        for eval in &listed {
            super::sayln!("{}", human::listed_line(eval));
        }
        super::note!("{} evals in {}", listed.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn diff_evals(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let a = store::find(&args.a, None).with_context(|| format!("eval diff: A = {}", args.a))?;
    let b = store::find(&args.b, None).with_context(|| format!("eval diff: B = {}", args.b))?;
    let compared = diff::diff(&a, &b);
    if args.json {
        super::print_json(&compared)?;
    } else {
        super::say!("{}", human::eval_diff(&a, &b, &compared));
    }
    Ok(if args.fail_on_regression && compared.regressed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
