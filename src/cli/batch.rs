//! `tunebench batch`: the case matrix as a provider's batch input file (`export`), the provider's
//! output read back into run records and scored as an eval (`import`), and the batch endpoints (`submit`, `status`,
//! `fetch`). JSON on stdout, progress on stderr; exit 1 when an imported answer fails or a line could
//! not be imported, 2 on a usage or input error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::input::read_text;
use super::run_options::Sampling;
use crate::batch::export::{self, CaseChoice, ExportRequest};
use crate::batch::import::Imported;
use crate::batch::manifest::Manifest;
use crate::batch::remote::Remote;
use crate::batch::submitted::Submitted;
use crate::batch::{tag_of, Engine};
use crate::eval::score::Verdict;
use crate::eval::EvalRecord;
use crate::output::Profile;
use crate::run::job::{record_transcripts, Transcripts};

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
    /// The environment variable holding the key, in place of the provider's own [default: the one
    /// the batch's prompts name in `[provider] key_env`].
    #[arg(long, value_name = "NAME")]
    pub key_env: Option<String>,
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
    /// The most bytes of results taken; a larger download stops there and nothing is kept.
    #[arg(long, value_name = "BYTES", default_value_t = crate::batch::remote::RESULTS_BYTES)]
    pub max_results_bytes: u64,
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
    let cases = match (&args.case, args.cases) {
        (Some(case), _) => CaseChoice::Named(vec![case.clone()]),
        (None, true) => CaseChoice::All,
        (None, false) => CaseChoice::Default,
    };
    let request = ExportRequest {
        prompts: args.prompts.clone(),
        engine: args.provider,
        cases,
        cases_file: args.cases_file.clone(),
        twins: args.twins,
        variables: args.sampling.variables()?,
        overrides,
        profile: args.profile,
        input: args.output.clone(),
    };
    let exported = export::export(&request)?;
    let kept = export::write(&exported, &args.output, true)?;
    let (manifest, models, tag) = (&exported.manifest, &exported.models, &exported.manifest.tag);
    let beside = Manifest::beside(&args.output);
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
    // Imported, kept in the history, scored against the cases' expectations as `eval` scores a live
    // run, and kept as an eval: the core's eval session for batches.
    let store = crate::eval::session::Store::DataDir;
    let (finished, imported) =
        runtime()?.block_on(crate::eval::session::score_batch(&manifest, text, into.history, None, &store))?;
    if let crate::eval::pipeline::HistoryKept::NotWritten(_) = &finished.history {
        super::note!("tunebench: warning: {}", finished.history);
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
    if let Err(error) = &finished.saved {
        super::note!("tunebench: warning: the batch's eval was not recorded: {error}");
    }
    let eval = finished.record;
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

/// The endpoints: `--provider`, else the batch id's prefix, else the manifest beside `file`, else
/// what `submit` remembered of batch `id`; the key from `--key-env`, else the remembered or the
/// manifest's prompts' `[provider] key_env`, else the provider's own variable.
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
    let submitted = id.and_then(|id| Submitted::find(id).ok().flatten());
    let manifest = file.and_then(|f| Manifest::load(&Manifest::beside(f)).ok());
    let Some(engine) =
        endpoint.provider.or(from_id).or(manifest.as_ref().map(|m| m.engine)).or(submitted.as_ref().map(|s| s.engine))
    else {
        bail!("which provider? give --provider openai, anthropic or vllm");
    };
    let key_env = endpoint
        .key_env
        .clone()
        .or_else(|| submitted.as_ref().and_then(|s| s.key_env.clone()))
        .or_else(|| manifest.as_ref().and_then(|m| m.key_env()));
    let base_url = endpoint.base_url.clone().or_else(|| submitted.and_then(|s| s.base_url));
    Remote::from_env(engine, base_url.as_deref(), key_env.as_deref())
}

fn submit(args: &SubmitArgs) -> anyhow::Result<ExitCode> {
    let text = read_text(&args.file)?;
    let remote = remote(&args.endpoint, None, Some(&args.file))?;
    let name = args.file.file_name().map_or_else(|| "batch.jsonl".into(), |n| n.to_string_lossy().into_owned());
    let status = runtime()?.block_on(remote.submit(&text, &name))?;
    super::note!("submitted {} as batch {} ({})", args.file.display(), status.id, status.status);
    if let Ok(manifest) = Manifest::load(&Manifest::beside(&args.file)) {
        let submitted = Submitted {
            id: status.id.clone(),
            tag: manifest.tag.clone(),
            engine: remote.engine(),
            base_url: args.endpoint.base_url.clone(),
            key_env: args.endpoint.key_env.clone().or_else(|| manifest.key_env()),
        };
        if let Err(error) = submitted.save() {
            super::note!("tunebench: warning: batch {} was not remembered: {error:#}", status.id);
        }
    }
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
    // Streamed into the file as it downloads (never held whole), within --max-results-bytes.
    let mut fetched = None;
    let mut refused = None;
    let written = crate::prompt::file::write_atomic_with(&args.output, |out| {
        match runtime.block_on(remote.results_to(&status, out, args.max_results_bytes)) {
            Ok(done) => fetched = Some(done),
            Err(error) => refused = Some(error),
        }
        match &refused {
            Some(error) => Err(std::io::Error::other(format!("{error:#}"))),
            None => Ok(()),
        }
    });
    drop(runtime);
    if let Some(error) = refused {
        return Err(error);
    }
    written.with_context(|| format!("writing {}", args.output.display()))?;
    super::note!("wrote {} result lines to {}", fetched.unwrap_or_default().lines, args.output.display());
    if !status.errors.is_empty() {
        super::note!("batch {} failed: {}", status.id, status.errors.join("; "));
    }
    if args.import {
        let text = read_text(&args.output)?;
        let into = Destinations { history: !args.no_history, transcripts: args.record.as_deref() };
        return import_text(&text, &args.output, args.manifest.as_deref(), false, into);
    }
    super::print_json(&status)?;
    Ok(ExitCode::SUCCESS)
}
