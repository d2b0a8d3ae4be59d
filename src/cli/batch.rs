//! `tunebench batch`: the case matrix as a provider's batch input file (`export`), the provider's
//! output read back into run records and scored as an eval (`import`), and the batch endpoints (`submit`, `status`,
//! `fetch`). JSON on stdout, progress on stderr; exit 1 when an imported answer fails or a line could
//! not be imported, 2 on a usage or input error.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::input::read_text;
use super::run_options::Sampling;
use crate::batch::format::input_line;
use crate::batch::import::{import, Imported};
use crate::batch::manifest::{Entry, Exported, Manifest};
use crate::batch::remote::Remote;
use crate::batch::{custom_id, tag_of, Engine};
use crate::compare::{twin_of, twin_type};
use crate::eval::batch::record_of_import;
use crate::eval::score::Verdict;
use crate::eval::EvalRecord;
use crate::output::Profile;
use crate::prompt::file::{write_atomic, PromptFile};
use crate::prompt::template::Variables;
use crate::provider::Request;
use crate::run::job::{self, record_transcripts, History, Transcripts};
use crate::run::record::now_ms;
use crate::run::{RunSetup, SetupOptions};

/// Options of `tunebench batch`.
#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    #[command(subcommand)]
    pub command: BatchCommand,
}

/// The batch subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BatchCommand {
    /// Write each prompt × case (and its json/jsonl twin with --twins) as the provider's batch input
    /// file, with a manifest beside it that `import` reads.
    Export(ExportArgs),
    /// Read a provider's batch output back into run records (history, compare and the workbench show
    /// them like live runs).
    Import(ImportArgs),
    /// Upload a batch input file and start the batch.
    Submit(SubmitArgs),
    /// Show where a batch stands.
    Status(RemoteArgs),
    /// Download an ended batch's results (and import them with --import).
    Fetch(FetchArgs),
}

/// Options of `batch export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The prompt files (TOML).
    #[arg(required = true)]
    pub prompts: Vec<PathBuf>,
    /// Whose batch format to write.
    #[arg(long, value_enum)]
    pub provider: Engine,
    /// The batch input file to write (JSONL).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Every test case of each prompt (a prompt without cases is sent once).
    #[arg(long, visible_alias = "all-cases", conflicts_with = "case")]
    pub cases: bool,
    /// One test case, by name.
    #[arg(long)]
    pub case: Option<String>,
    /// Cases from a dataset (.jsonl, .csv, .yaml) instead of the prompts' own, one case a row, read as
    /// `eval --cases` reads it (README, Datasets): a row's variables, name (else line-N) and expected
    /// answer; --var is laid over each.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cases", "case"])]
    pub cases_file: Option<PathBuf>,
    /// Each prompt's json/jsonl twin too, for every case.
    #[arg(long)]
    pub twins: bool,
    /// The model [default: the prompt's]; every line of a batch names one.
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub sampling: Sampling,
    /// How the answer is held to JSON [default: the prompt's, else none].
    #[arg(long, value_parser = ["none", "json-object", "json-schema"])]
    pub structured: Option<String>,
    /// Whose rules turn the answers into JSON on import [default: the prompt's, else lenient].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
}

/// Options of `batch import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The provider's batch output (JSONL; - for standard input).
    pub results: PathBuf,
    /// The manifest `export` wrote [default: found in the data directory by the batch tag].
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Print every run record as JSON ({"ok", "imported", "errors", "missing", "runs"}).
    #[arg(long)]
    pub json: bool,
    /// Do not append the runs to the history file.
    #[arg(long)]
    pub no_history: bool,
    /// Write each run's transcript to DIR/<prompt>.<case>.jsonl, for `compare PROMPT --all-cases
    /// --transcripts DIR/<prompt>.jsonl DIR/<twin>.jsonl`.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
}

/// Which provider's batch endpoints, and where.
#[derive(Debug, clap::Args)]
pub struct Endpoint {
    /// openai, anthropic or vllm [default: from the batch id (batch_… is openai, msgbatch_… anthropic),
    /// or the manifest beside the file].
    #[arg(long, value_enum)]
    pub provider: Option<Engine>,
    /// The API's base URL [default: OPENAI_BASE_URL, ANTHROPIC_BASE_URL or VLLM_BASE_URL, else the
    /// provider's].
    #[arg(long)]
    pub base_url: Option<String>,
}

/// Options of `batch submit`.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// The batch input file `export` wrote.
    pub file: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Options of `batch status`.
#[derive(Debug, clap::Args)]
pub struct RemoteArgs {
    /// The batch id `submit` printed.
    pub id: String,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Options of `batch fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The batch id `submit` printed.
    pub id: String,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// Where to write the results (JSONL).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Import the results at once (as `batch import`).
    #[arg(long)]
    pub import: bool,
    /// For --import: the manifest `export` wrote [default: found by the batch tag].
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// For --import: do not append the runs to the history file.
    #[arg(long)]
    pub no_history: bool,
    /// For --import: write each run's transcript to DIR/<prompt>.<case>.jsonl (see `batch import`).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
}

pub fn run(args: &BatchArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        BatchCommand::Export(args) => export(args),
        BatchCommand::Import(args) => {
            let text = read_text(&args.results)?;
            let into = Destinations { history: !args.no_history, transcripts: args.record.as_deref() };
            import_text(&text, &args.results, args.manifest.as_deref(), args.json, into)
        }
        BatchCommand::Submit(args) => submit(args),
        BatchCommand::Status(args) => {
            let remote = remote(&args.endpoint, Some(&args.id), None)?;
            let status = runtime()?.block_on(remote.status(&args.id))?;
            super::print_json(&status)?;
            Ok(ExitCode::SUCCESS)
        }
        BatchCommand::Fetch(args) => fetch(args),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

fn export(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let variables = args.sampling.variables()?;
    let overrides = args.sampling.provider_settings(
        Some(args.provider.provider().to_string()),
        args.model.clone(),
        None,
        args.structured.clone(),
    );
    let inputs: Vec<PathBuf> = args.prompts.iter().chain(&args.cases_file).cloned().collect();
    for output in [args.output.clone(), Manifest::beside(&args.output)] {
        crate::files::refuse_overwriting("--output", &output, &inputs).map_err(anyhow::Error::msg)?;
    }
    let created_at_ms = now_ms();
    let tag = tag_for(&args.prompts, created_at_ms);
    let (mut prompts, mut entries) = (Vec::new(), Vec::<Entry>::new());
    let mut lines = String::new();
    let mut models = Vec::new();
    for path in &args.prompts {
        let mut prompt = PromptFile::load(path)?;
        let base_dir = crate::run::setup::base_dir(path);
        crate::dataset::read_into(&mut prompt, path, &base_dir, args.cases_file.as_deref(), &variables)?;
        // `--cases-file`: that file's rows alone, each a case of the prompt now (scored on import).
        let file_cases: Option<Vec<CaseSpec>> = match (&args.cases_file, &prompt.dataset) {
            (Some(_), Some(dataset)) => Some(
                prompt
                    .cases
                    .iter()
                    .skip(dataset.first)
                    .map(|c| (Some(c.name.clone()), true, variables.clone()))
                    .collect(),
            ),
            _ => None,
        };
        let mut sides = vec![prompt.clone()];
        if args.twins {
            let base_dir = path.parent().unwrap_or(Path::new("."));
            let Some(other) = twin_type(prompt.response_type) else {
                bail!("--twins: {}: a text prompt has no json/jsonl twin", path.display());
            };
            let twin = twin_of(&prompt, base_dir, other).with_context(|| format!("--twins: {}", path.display()))?;
            sides.push(twin.prompt);
        }
        for side in &sides {
            let exported = Exported::new(path, side)?;
            let options = SetupOptions {
                max_turns: Some(1),
                profile: args.profile,
                ..SetupOptions::from_flags(overrides.clone())?
            };
            let setup = RunSetup::new(exported.prompt_file()?, path, options)?;
            let settings = &setup.settings;
            if settings.model.is_empty() {
                bail!(
                    "{}: no model: every line of a batch names its model; give --model, or set model in the prompt's [provider]",
                    path.display()
                );
            }
            if !models.contains(&settings.model) {
                models.push(settings.model.clone());
            }
            let cases = match &file_cases {
                Some(cases) => cases.clone(),
                None => prompt_cases(args, side, &variables)?,
            };
            for (case, prompt_case, variables) in cases {
                let id = custom_id(&tag, entries.len() + 1, &side.id, case.as_deref());
                let mut entry = Entry {
                    custom_id: id.clone(),
                    prompt: prompts.len(),
                    case,
                    prompt_case,
                    variables,
                    profile: args.profile,
                    settings: settings.clone(),
                    request: Request::default(),
                };
                let plan = entry.plan_for(&setup)?;
                entry.request = plan.request;
                let (line, _) = input_line(args.provider, &id, &entry.request);
                lines.push_str(&serde_json::to_string(&line)?);
                lines.push('\n');
                entries.push(entry);
            }
            prompts.push(exported);
        }
    }
    let manifest = Manifest {
        tag: tag.clone(),
        engine: args.provider,
        created_at_ms,
        input: args.output.clone(),
        prompts,
        entries,
    };
    write_atomic(&args.output, &lines).with_context(|| format!("writing {}", args.output.display()))?;
    let beside = Manifest::beside(&args.output);
    manifest.save(&beside)?;
    let kept = Manifest::kept_path(&tag).and_then(|path| manifest.save(&path).map(|()| path));
    let mut warnings = Vec::new();
    if let Err(error) = &kept {
        warnings.push(format!(
            "the manifest was not kept in the data directory ({error:#}): import with --manifest {}",
            beside.display()
        ));
    }
    if models.len() > 1 && args.provider != Engine::Anthropic {
        warnings.push(format!(
            "the lines name {} models ({}): an OpenAI batch takes one model per file; export each model separately",
            models.len(),
            models.join(", ")
        ));
    }
    for warning in &warnings {
        super::note!("tunebench: warning: {warning}");
    }
    super::note!(
        "wrote {} requests to {} (batch tag {tag}); manifest {}",
        manifest.entries.len(),
        args.output.display(),
        beside.display()
    );
    super::print_json(&json!({
        "file": args.output,
        "provider": args.provider,
        "tag": tag,
        "requests": manifest.entries.len(),
        "models": models,
        "manifest": beside,
        "kept": kept.ok(),
        "custom_ids": manifest.entries.iter().map(|e| e.custom_id.as_str()).collect::<Vec<_>>(),
        "warnings": warnings,
    }))?;
    Ok(ExitCode::SUCCESS)
}

/// A case to export: its name, whether it is one of the prompt's `[[cases]]`, and the variables laid
/// over the prompt's.
type CaseSpec = (Option<String>, bool, Variables);

/// The cases of one prompt: all (`--cases`), the one named, or the default; `--var` over each.
fn prompt_cases(args: &ExportArgs, prompt: &PromptFile, variables: &Variables) -> anyhow::Result<Vec<CaseSpec>> {
    let variables = variables.clone();
    if let Some(case) = &args.case {
        prompt.case(case)?;
        return Ok(vec![(Some(case.clone()), true, variables)]);
    }
    if args.cases && !prompt.cases.is_empty() {
        return Ok(prompt.cases.iter().map(|c| (Some(c.name.clone()), true, variables.clone())).collect());
    }
    Ok(vec![(None, false, variables)])
}

/// Six hexadecimal digits that tell this export's `custom_id`s from any other's.
fn tag_for(prompts: &[PathBuf], created_at_ms: u64) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (prompts, created_at_ms, std::process::id()).hash(&mut hasher);
    format!("{:06x}", hasher.finish() & 0xff_ffff)
}

fn manifest_for(given: Option<&Path>, text: &str, origin: &Path) -> anyhow::Result<Manifest> {
    if let Some(path) = given {
        return Manifest::load(path);
    }
    // The batch most lines belong to (the first seen of a tie): a line of another batch is one bad
    // line, reported by the import like any other, not the file's batch.
    let mut tags: std::collections::HashMap<String, (usize, usize)> = std::collections::HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let Ok(line) = serde_json::from_str::<Value>(line) else { continue };
        if let Some(tag) = line["custom_id"].as_str().and_then(tag_of) {
            tags.entry(tag.to_string()).or_insert((0, index)).0 += 1;
        }
    }
    let tag =
        tags.into_iter().max_by_key(|(_, (lines, first))| (*lines, std::cmp::Reverse(*first))).map(|(tag, _)| tag);
    let Some(tag) = tag else {
        bail!(
            "{}: no line carries a custom_id written by `batch export` (tb<tag>-...): give --manifest FILE",
            origin.display()
        );
    };
    Manifest::find(&tag)
}

/// Where imported runs go besides the report.
struct Destinations<'a> {
    history: bool,
    /// A directory for each run's transcript (`<prompt>.<case>.jsonl`).
    transcripts: Option<&'a Path>,
}

fn import_text(
    text: &str,
    origin: &Path,
    manifest: Option<&Path>,
    as_json: bool,
    into: Destinations,
) -> anyhow::Result<ExitCode> {
    let manifest = manifest_for(manifest, text, origin)?;
    let imported = runtime()?.block_on(import(&manifest, text));
    if into.history {
        for record in &imported.records {
            if let Err(error) = job::keep(record, &History::DataDir) {
                super::note!("tunebench: warning: the run was not added to the history: {error}");
                break;
            }
        }
    }
    if let Some(dir) = into.transcripts {
        let mut written = 0;
        for record in &imported.records {
            written += record_transcripts(record, &Transcripts::Folder(dir))
                .with_context(|| format!("recording the transcripts of {}", record.prompt))?
                .len();
        }
        super::note!("recorded {written} transcripts in {} (<prompt>.<case>.jsonl)", dir.display());
    }
    // Scored against the cases' expectations as `eval` scores a live run, and kept as an eval.
    let eval = record_of_import(&manifest, &imported.records)?;
    if let Err(error) = crate::eval::store::save(&eval) {
        super::note!("tunebench: warning: the batch's eval was not recorded: {error}");
    }
    let ok = eval.cells.iter().all(|c| c.score.verdict == Verdict::Pass)
        && imported.records.iter().all(|r| r.ok)
        && imported.errors.is_empty()
        && imported.missing.is_empty();
    report(&imported, &manifest, origin, as_json, ok, &eval)?;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn report(
    imported: &Imported,
    manifest: &Manifest,
    origin: &Path,
    as_json: bool,
    ok: bool,
    eval: &EvalRecord,
) -> anyhow::Result<()> {
    let passed = imported.records.iter().filter(|r| r.ok).count();
    if as_json {
        return super::print_json(&json!({
            "file": origin,
            "tag": manifest.tag,
            "ok": ok,
            "requests": manifest.entries.len(),
            "imported": imported.records.len(),
            "passed": passed,
            "errors": imported.errors,
            "missing": imported.missing,
            "eval": {"id": eval.id, "verdicts": eval.cells.iter().map(|c| json!({
                "case": c.case, "column": eval.column_label(c.column), "batch": c.run.batch,
                "verdict": c.score.verdict, "f1": c.score.f1(), "reason": c.score.reason})).collect::<Vec<_>>(),
                "totals": eval.totals},
            "runs": imported.records,
        }));
    }
    super::say!("{}", super::eval_human::report(eval));
    for record in &imported.records {
        super::note!("{}", record.summary_line());
        for warning in &record.warnings {
            super::note!("  warning: {}", crate::safe_text::escape_controls(warning));
        }
    }
    for error in &imported.errors {
        let id = error.custom_id.as_deref().map(|id| format!(" ({id})")).unwrap_or_default();
        let line = format!("{} line {}{id}: {}", origin.display(), error.line, error.message);
        super::note!("{}", crate::safe_text::escape_controls(&line));
    }
    if !imported.missing.is_empty() {
        let missing = imported.missing.join(", ");
        super::note!(
            "no result for {} requests: {}",
            imported.missing.len(),
            crate::safe_text::escape_controls(&missing)
        );
    }
    super::note!(
        "imported {} of {} requests from {} lines: {passed} ok, {} failed, {} lines not imported",
        imported.records.len(),
        manifest.entries.len(),
        imported.lines,
        imported.records.len() - passed,
        imported.errors.iter().filter(|e| !e.recorded).count()
    );
    super::note!("scored as eval {} (tunebench eval --from-batch {})", eval.id, manifest.tag);
    Ok(())
}

/// The endpoints: `--provider`, else the batch id's prefix, else the manifest beside `file`.
fn remote(endpoint: &Endpoint, id: Option<&str>, file: Option<&Path>) -> anyhow::Result<Remote> {
    let from_id = id.and_then(|id| {
        if id.starts_with("msgbatch_") {
            Some(Engine::Anthropic)
        } else if id.starts_with("batch_") {
            Some(Engine::Openai)
        } else {
            None
        }
    });
    let from_file = file.and_then(|f| Manifest::load(&Manifest::beside(f)).ok()).map(|m| m.engine);
    let Some(engine) = endpoint.provider.or(from_id).or(from_file) else {
        bail!("which provider? give --provider openai, anthropic or vllm");
    };
    Remote::from_env(engine, endpoint.base_url.as_deref())
}

fn submit(args: &SubmitArgs) -> anyhow::Result<ExitCode> {
    let text = read_text(&args.file)?;
    let remote = remote(&args.endpoint, None, Some(&args.file))?;
    let name = args.file.file_name().map_or_else(|| "batch.jsonl".into(), |n| n.to_string_lossy().into_owned());
    let status = runtime()?.block_on(remote.submit(&text, &name))?;
    super::note!("submitted {} as batch {} ({})", args.file.display(), status.id, status.status);
    super::print_json(&status)?;
    Ok(ExitCode::SUCCESS)
}

fn fetch(args: &FetchArgs) -> anyhow::Result<ExitCode> {
    let remote = remote(&args.endpoint, Some(&args.id), None)?;
    let runtime = runtime()?;
    let status = runtime.block_on(remote.status(&args.id))?;
    if !status.ended {
        super::note!(
            "batch {} is {} ({} of {} requests done): fetch it again once it has ended",
            status.id,
            status.status,
            status.done,
            status.total
        );
        super::print_json(&status)?;
        return Ok(ExitCode::from(1));
    }
    let text = runtime.block_on(remote.results(&status))?;
    drop(runtime);
    write_atomic(&args.output, &text).with_context(|| format!("writing {}", args.output.display()))?;
    super::note!(
        "wrote {} result lines to {}",
        text.lines().filter(|l| !l.trim().is_empty()).count(),
        args.output.display()
    );
    if !status.errors.is_empty() {
        super::note!("batch {} failed: {}", status.id, status.errors.join("; "));
    }
    if args.import {
        let into = Destinations { history: !args.no_history, transcripts: args.record.as_deref() };
        return import_text(&text, &args.output, args.manifest.as_deref(), false, into);
    }
    super::print_json(&status)?;
    Ok(ExitCode::SUCCESS)
}
