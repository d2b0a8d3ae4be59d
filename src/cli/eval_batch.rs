//! `eval --batch` and `eval --batch-resume ID`: a dataset eval handed to the provider's batch engine
//! through the batch path (export → submit → wait → fetch → import), scored into an eval record that
//! is saved, printed (`--json`), reported (`-o`) and ends with the exit codes of a live eval. A
//! provider without batches is bad input (exit 2) naming it; a batch the provider failed is an error
//! naming it and why; ctrl-c while waiting stops the wait (the batch goes on) and prints the id.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::json;

use super::eval::{finish, said, EvalRunArgs};
use crate::batch::export::{self, CaseChoice, ExportRequest};
use crate::batch::manifest::Manifest;
use crate::batch::remote::{Remote, Status};
use crate::batch::submitted::Submitted;
use crate::batch::Engine;
use crate::eval::session::{self, Store};
use crate::eval::ModelSpec;
use crate::output::ResponseType;
use crate::run::SetupOptions;

/// The first pause between two looks at a running batch (then twice as long each time, up to a
/// minute).
const FIRST_POLL: Duration = Duration::from_secs(1);

/// `eval --batch` (submit, then wait unless `--no-wait`) or `eval --batch-resume ID`.
pub fn run(args: &EvalRunArgs) -> anyhow::Result<ExitCode> {
    // The reports replace no input (the prompts, `--cases`) before anything is submitted.
    let inputs: Vec<std::path::PathBuf> = args.prompts.iter().chain(&args.cases_file).cloned().collect();
    session::check_reports(&super::eval::reports(args)?, &inputs)?;
    if let Some(id) = &args.batch_resume {
        let Some(submitted) = Submitted::find(id)? else {
            bail!(
                "--batch-resume {id:?}: no batch of that id was submitted by `eval --batch` from this data directory ({})",
                Submitted::path(id)?.parent().map(|p| p.display().to_string()).unwrap_or_default()
            );
        };
        let manifest = Manifest::find(&submitted.tag)?;
        let base_url = args.flags.base_url.clone().or(submitted.base_url);
        let remote = Remote::from_env(submitted.engine, base_url.as_deref(), submitted.key_env.as_deref())?;
        let baseline = baseline(args, &manifest)?;
        return wait_and_score(args, &remote, id, &manifest, baseline);
    }
    let request = export_request(args)?;
    let mut exported = export::export(&request)?;
    if exported.models.len() > 1 && request.engine != Engine::Anthropic {
        bail!(
            "eval --batch: the prompts name {} models ({}): an {} batch takes one model; give --model",
            exported.models.len(),
            exported.models.join(", "),
            request.engine.provider()
        );
    }
    let tag = exported.manifest.tag.clone();
    let input = export::kept_input(&tag)?;
    exported.manifest.input.clone_from(&input);
    export::write(&exported, &input, false)?
        .with_context(|| format!("eval --batch: keeping the manifest of batch {tag} in the data directory"))?;
    let remote = Remote::from_env(request.engine, exported.base_url.as_deref(), exported.key_env.as_deref())?;
    // The baseline is found before anything is submitted (a missing one is bad input, exit 2).
    let baseline = baseline(args, &exported.manifest)?;
    let name = input.file_name().map_or_else(|| "batch.jsonl".into(), |n| n.to_string_lossy().into_owned());
    let status = runtime()?.block_on(remote.submit(&exported.lines, &name))?;
    let submitted = Submitted {
        id: status.id.clone(),
        tag,
        engine: request.engine,
        base_url: exported.base_url.clone(),
        key_env: exported.key_env.clone(),
    };
    submitted.save().with_context(|| format!("eval --batch: remembering batch {}", status.id))?;
    super::note!(
        "submitted {} requests as {} batch {} ({})",
        exported.manifest.entries.len(),
        request.engine.provider(),
        status.id,
        status.status
    );
    if args.no_wait {
        super::note!("resume with: tunebench eval --batch-resume {}", status.id);
        if args.json {
            super::print_json(&json!({"batch": status, "tag": submitted.tag,
                                      "resume": format!("tunebench eval --batch-resume {}", status.id)}))?;
        } else {
            super::sayln!("{}", status.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    wait_and_score(args, &remote, &status.id, &exported.manifest, baseline)
}

/// The baseline `--baseline` names for the eval of the batch `manifest` exports (`last`: as for a
/// live eval of the same prompts on the same model).
fn baseline(args: &EvalRunArgs, manifest: &Manifest) -> anyhow::Result<Option<crate::eval::EvalRecord>> {
    let found = args.baseline.as_deref().map(|which| session::batch_baseline(manifest, which, &Store::DataDir, None));
    Ok(found.transpose()?)
}

/// The export `args` ask for: every case of each prompt (or those named, or a dataset's), once, on
/// the provider's batch engine.
fn export_request(args: &EvalRunArgs) -> anyhow::Result<ExportRequest> {
    if args.repeat > 1 {
        bail!("eval --batch: --repeat {}: a batch answers each cell once; run repeats live", args.repeat);
    }
    if args.models.len() > 1 {
        bail!(
            "eval --batch: {} --model given: a batch runs on one model; submit one eval per model",
            args.models.len()
        );
    }
    if args.flags.structured_list().len() > 1 {
        bail!("eval --batch: --structured names several modes: a batch runs in one; submit one eval per mode");
    }
    if let Some(config) = args.prompts.iter().find(|p| crate::promptfoo::is_config(p)) {
        bail!("eval --batch: {}: a promptfoo config runs live; give prompt files (TOML)", config.display());
    }
    let first = args.prompts.first().context("eval --batch: no prompt file given")?;
    let twins = match args.types.as_slice() {
        [] => false,
        [ResponseType::Json, ResponseType::Jsonl] | [ResponseType::Jsonl, ResponseType::Json] => true,
        other => bail!(
            "eval --batch: --types {}: a batch takes each prompt as it is, or with its twin (--types json,jsonl)",
            other.iter().map(|t| format!("{t:?}").to_lowercase()).collect::<Vec<_>>().join(",")
        ),
    };
    let mut overrides = args.flags.provider_settings(None);
    if let Some(spec) = args.models.first() {
        let spec = ModelSpec::parse(spec)?;
        if let Some(kind) = spec.provider {
            overrides.name = Some(kind.name().to_string());
        }
        overrides.model = spec.model;
    }
    // The provider the first prompt resolves to names the batch engine.
    let prompt = crate::prompt::file::PromptFile::load(first)?;
    let settings = crate::run::setup::settings(&prompt, &SetupOptions::from_flags(overrides.clone())?)?;
    let Some(engine) = Engine::of_provider(settings.provider) else {
        bail!(
            "eval --batch: provider {} has no batch engine (openai, anthropic and vllm have one): run the eval without --batch",
            settings.provider.name()
        );
    };
    overrides.name = Some(engine.provider().to_string());
    Ok(ExportRequest {
        prompts: args.prompts.clone(),
        engine,
        cases: if args.cases.is_empty() { CaseChoice::All } else { CaseChoice::Named(args.cases.clone()) },
        cases_file: args.cases_file.clone(),
        twins,
        variables: args.flags.variables()?,
        overrides,
        profile: args.profile,
        // Named once the batch's tag is known (beside its manifest in the data directory).
        input: std::path::PathBuf::new(),
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// Waits for batch `id` (ctrl-c stops waiting: exit 130 with the id to resume with), fetches its
/// results, imports and scores them, and ends as an eval does.
fn wait_and_score(
    args: &EvalRunArgs,
    remote: &Remote,
    id: &str,
    manifest: &Manifest,
    baseline: Option<crate::eval::EvalRecord>,
) -> anyhow::Result<ExitCode> {
    let runtime = runtime()?;
    let human = !args.json;
    let mut last = String::new();
    let waited = runtime.block_on(async {
        tokio::select! {
            status = remote.wait(id, FIRST_POLL, |status| {
                let line = format!("batch {}: {} ({} of {} requests done)", status.id, status.status, status.done, status.total);
                if human && line != last {
                    super::note!("{line}");
                    last = line;
                }
            }) => Some(status),
            _ = super::interrupt::interrupted() => None,
        }
    });
    let Some(status) = waited else {
        super::note!(
            "stopped waiting; batch {id} goes on at the provider. Resume with: tunebench eval --batch-resume {id}"
        );
        return Ok(ExitCode::from(super::interrupt::EXIT_SIGNALLED));
    };
    let status = status?;
    failed(&status)?;
    let text = runtime.block_on(remote.results(&status, args.max_results_bytes))?;
    let (finished, imported) =
        runtime.block_on(session::score_batch(manifest, &text, !args.no_history, baseline, &Store::DataDir))?;
    for error in &imported.errors {
        let at = error.custom_id.as_deref().map(|id| format!(" ({id})")).unwrap_or_default();
        let line = format!("batch {id} result line {}{at}: {}", error.line, error.message);
        super::note!("tunebench: warning: {}", crate::safe_text::escape_controls(&line));
    }
    if !imported.missing.is_empty() {
        super::note!(
            "tunebench: warning: batch {id} has no result for {} of {} requests (their cells are left out)",
            imported.missing.len(),
            manifest.entries.len()
        );
    }
    said(&finished);
    finish(args, &finished.record)
}

/// A batch that ended without results: an error naming it, its status and the provider's reasons.
fn failed(status: &Status) -> anyhow::Result<()> {
    if status.results.is_empty() {
        let why = if status.errors.is_empty() { String::new() } else { format!(": {}", status.errors.join("; ")) };
        bail!(
            "{} batch {} ended {} with no results ({} of {} requests failed){why}",
            status.engine.provider(),
            status.id,
            status.status,
            status.failed,
            status.total
        );
    }
    Ok(())
}
