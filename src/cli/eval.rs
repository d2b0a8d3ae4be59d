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
use crate::eval::pipeline::{self, EvalEvent, Pipeline};
use crate::eval::report_file::ReportFormat;
use crate::eval::{rerun, store, EvalOptions, EvalPlan, EvalRecord, ModelSpec};
use crate::output::{Profile, ResponseType};
use crate::provider::kind::ProviderKind;
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

/// The baseline `--baseline` names, read before anything runs (a bad one is bad input).
pub fn baseline(args: &EvalRunArgs, plan: &EvalPlan) -> anyhow::Result<Option<EvalRecord>> {
    let Some(which) = &args.baseline else { return Ok(None) };
    Ok(Some(plan.baseline(which, None).with_context(|| format!("--baseline {which}"))?))
}

fn run_eval(args: &EvalRunArgs) -> anyhow::Result<ExitCode> {
    reports(args)?;
    if let Some(tag) = &args.from_batch {
        refuse_replacing(args, Vec::new())?;
        let mut record = store::find_batch(tag)?;
        if let Some(which) = &args.baseline {
            let base = store::find(which, None).with_context(|| format!("--baseline {which}"))?;
            record.delta = Some(diff::delta(&base, &record));
        }
        return finish(args, &record);
    }
    if args.batch || args.batch_resume.is_some() {
        return super::eval_batch::run(args);
    }
    let mut options = options(args)?;
    let mut plan =
        EvalPlan::new(&options)?.with_judge(args.judge.as_deref())?.with_embedder(args.embedder.as_deref())?;
    for warning in &plan.warnings {
        super::note!("tunebench: warning: {warning}");
    }
    if let Some(which) = &args.filter_failing {
        let earlier = plan.baseline(which, None).with_context(|| format!("--filter-failing {which}"))?;
        let rows: std::collections::HashSet<&str> = plan.rows.iter().flatten().map(String::as_str).collect();
        let failing: Vec<String> =
            rerun::failing_cases(&earlier).into_iter().flatten().filter(|name| rows.contains(name.as_str())).collect();
        if failing.is_empty() {
            super::note!("no case failed or errored in eval {}: nothing to run", earlier.id);
            return Ok(ExitCode::SUCCESS);
        }
        super::note!("re-running the {} cases that failed or errored in eval {}", failing.len(), earlier.id);
        options.cases = failing;
        plan = EvalPlan::new(&options)?.with_judge(args.judge.as_deref())?.with_embedder(args.embedder.as_deref())?;
    }
    let kept = match args.retry_errors {
        false => Vec::new(),
        true => {
            let last = plan.baseline("last", None).context("--retry-errors")?;
            let (kept, errored) = rerun::retry_errors(&mut plan, &last);
            let new = plan.cells.len() - errored;
            let new = if new > 0 { format!(" and {new} it did not run") } else { String::new() };
            super::note!(
                "re-running the {errored} errored cells of eval {}{new}, {} kept from it",
                last.id,
                kept.len()
            );
            kept
        }
    };
    refuse_overwriting_inputs(args, &plan)?;
    let base = baseline(args, &plan)?;
    fetch_local_model(args, &plan)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let mut record = run_plan(args, &plan, &runtime, super::interrupt::interrupted())?;
    if args.retry_errors {
        rerun::merge(&mut record, kept);
    }
    if let Some(base) = &base {
        record.delta = Some(diff::delta(base, &record));
    }
    save(&record);
    finish(args, &record).map(super::interrupt::exit_code)
}

/// The report files asked for, each with the flag that asked and its format: `--junit`, `--csv`, then
/// every `-o` by its extension (an unknown one is bad input, before anything runs).
pub fn reports(args: &EvalRunArgs) -> anyhow::Result<Vec<(&'static str, &Path, ReportFormat)>> {
    let mut reports = Vec::new();
    reports.extend(args.junit.as_deref().map(|path| ("--junit", path, ReportFormat::Junit)));
    reports.extend(args.csv.as_deref().map(|path| ("--csv", path, ReportFormat::Csv)));
    for path in &args.outputs {
        reports.push(("-o", path.as_path(), ReportFormat::of(path).map_err(anyhow::Error::msg)?));
    }
    Ok(reports)
}

/// No report (`-o`, `--junit`, `--csv`) names an input: a prompt file, a file a prompt names, the
/// transcript (bad input, before anything runs).
pub fn refuse_overwriting_inputs(args: &EvalRunArgs, plan: &EvalPlan) -> anyhow::Result<()> {
    let mut inputs = plan.watched_files();
    inputs.extend(args.transcript.clone());
    refuse_replacing(args, inputs)
}

/// The one rule of every report writer, checked before anything runs: a report replaces no input
/// (`inputs`, with the prompt files and `--cases`), and nothing but an earlier report of its kind
/// (never a FIFO, a device, a folder, a prompt file or a dataset the shell's glob handed over).
pub fn refuse_replacing(args: &EvalRunArgs, mut inputs: Vec<PathBuf>) -> anyhow::Result<()> {
    inputs.extend(args.prompts.iter().cloned());
    inputs.extend(args.cases_file.clone());
    for (flag, output, format) in reports(args)? {
        crate::files::refuse_overwriting(flag, output, &inputs).map_err(anyhow::Error::msg)?;
        format.may_replace(flag, output).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Fetches the default local model when a column needs it and it is missing (as `run` does).
pub fn fetch_local_model(args: &EvalRunArgs, plan: &EvalPlan) -> anyhow::Result<()> {
    #[cfg(feature = "local")]
    {
        let needs = plan
            .columns
            .iter()
            .any(|c| c.setup.settings.provider == ProviderKind::Local && c.setup.settings.model.is_empty());
        if needs && !args.no_fetch {
            use crate::provider::local::fetch;
            if fetch::installed_model().is_err() {
                fetch::fetch(&mut super::model::show_progress)?;
            }
        }
    }
    #[cfg(not(feature = "local"))]
    let _ = (args, plan, ProviderKind::Local);
    Ok(())
}

/// Runs every cell of `plan`, progress on stderr (unless `--json`); the record, not yet saved.
pub fn run_plan(
    args: &EvalRunArgs,
    plan: &EvalPlan,
    runtime: &tokio::runtime::Runtime,
    cancel: impl std::future::Future<Output = crate::run::Stop> + Send,
) -> anyhow::Result<EvalRecord> {
    let concurrency = plan.concurrency(args.concurrency);
    let human = !args.json;
    if human {
        human::plan_line(plan, concurrency);
    }
    let total = plan.cells.len();
    let mut done = 0;
    let pipeline = Pipeline { plan, concurrency, record_history: !args.no_history, wrap: None };
    let ran = runtime.block_on(pipeline::run(
        pipeline,
        |event| {
            if let EvalEvent::CellScored { scored, .. } = &event {
                done += 1;
                if human {
                    human::progress(plan, done, total, scored);
                }
            }
        },
        cancel,
    ))?;
    for warning in &ran.warnings {
        super::note!("tunebench: warning: {warning}");
    }
    Ok(ran.record)
}

/// Keeps the record in the data directory (a warning when it cannot).
pub fn save(record: &EvalRecord) {
    match store::save(record) {
        Ok(path) => super::note!("eval {} recorded in {}", record.id, path.display()),
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
    for (_, path, format) in reports(args)? {
        crate::prompt::file::write_atomic_with(path, |out| format.write(record, out))
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
