//! The case matrix as a provider's batch input: each prompt × case (× its json/jsonl twin) planned as
//! `run` plans it, one input line per request and the manifest import reads. `batch export` writes
//! it beside its `-o`; `eval --batch` into the data directory before it submits.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::format::input_line;
use super::manifest::{Entry, Exported, Manifest};
use super::{custom_id, Engine};
use crate::compare::{twin_of, twin_type};
use crate::output::Profile;
use crate::prompt::file::{PromptFile, ProviderSettings};
use crate::prompt::template::Variables;
use crate::provider::Request;
use crate::run::record::now_ms;
use crate::run::{RunSetup, SetupOptions};

/// Which cases of each prompt go into the batch.
#[derive(Clone, Debug, PartialEq)]
pub enum CaseChoice {
    /// The prompt's own variables, once (no case).
    Default,
    /// Every case of each prompt (a prompt without cases is sent once).
    All,
    /// These cases, by name (each must be one of every prompt's).
    Named(Vec<String>),
}

/// What to export.
#[derive(Clone, Debug)]
pub struct ExportRequest {
    pub prompts: Vec<PathBuf>,
    pub engine: Engine,
    pub cases: CaseChoice,
    /// A dataset's rows alone, in place of the prompts' cases.
    pub cases_file: Option<PathBuf>,
    /// Each prompt's json/jsonl twin too.
    pub twins: bool,
    /// `--var` values, over every case.
    pub variables: Variables,
    /// The command line's provider settings over each prompt's `[provider]`.
    pub overrides: ProviderSettings,
    pub profile: Option<Profile>,
    /// The batch input file the manifest names.
    pub input: PathBuf,
}

/// An exported batch: its manifest, its input lines (JSONL) and the models they name.
pub struct Export {
    pub manifest: Manifest,
    pub lines: String,
    pub models: Vec<String>,
    /// The variable the key is read from in place of the provider's own: the first prompt's
    /// `[provider] key_env`, as a live run of it reads it.
    pub key_env: Option<String>,
    /// The base URL the prompts' settings name (`--base-url`, else `[provider] base_url`).
    pub base_url: Option<String>,
}

/// A case to export: its name, whether it is one of the prompt's `[[cases]]`, and the variables laid
/// over the prompt's.
type CaseSpec = (Option<String>, bool, Variables);

/// Plans every request of `request` (each prompt's dataset read and checked first); nothing is written.
pub fn export(request: &ExportRequest) -> anyhow::Result<Export> {
    let created_at_ms = now_ms();
    let tag = tag_for(&request.prompts, created_at_ms);
    let variables = &request.variables;
    let (mut prompts, mut entries) = (Vec::new(), Vec::<Entry>::new());
    let mut lines = String::new();
    let mut models = Vec::new();
    let (mut key_env, mut base_url) = (None, None);
    for path in &request.prompts {
        let mut prompt = PromptFile::load(path)?;
        let base_dir = crate::run::setup::base_dir(path);
        crate::dataset::read_into(&mut prompt, path, &base_dir, request.cases_file.as_deref(), variables)?;
        // A cases file: that file's rows alone, each a case of the prompt now (scored on import).
        let file_cases: Option<Vec<CaseSpec>> = match (&request.cases_file, &prompt.dataset) {
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
        if request.twins {
            let Some(other) = twin_type(prompt.response_type) else {
                bail!("--twins: {}: a text prompt has no json/jsonl twin", path.display());
            };
            let twin = twin_of(&prompt, &base_dir, other).with_context(|| format!("--twins: {}", path.display()))?;
            sides.push(twin.prompt);
        }
        for side in &sides {
            let exported = Exported::new(path, side)?;
            let options = SetupOptions {
                max_turns: Some(1),
                profile: request.profile,
                ..SetupOptions::from_flags(request.overrides.clone())?
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
            if key_env.is_none() {
                key_env.clone_from(&setup.key_env);
            }
            if base_url.is_none() {
                base_url.clone_from(&settings.base_url);
            }
            let cases = match &file_cases {
                Some(cases) => cases.clone(),
                None => prompt_cases(&request.cases, side, variables)?,
            };
            for (case, prompt_case, variables) in cases {
                let id = custom_id(&tag, entries.len() + 1, &side.id, case.as_deref());
                let mut entry = Entry {
                    custom_id: id.clone(),
                    prompt: prompts.len(),
                    case,
                    prompt_case,
                    variables,
                    profile: request.profile,
                    settings: settings.clone(),
                    request: Request::default(),
                };
                let plan = entry.plan_for(&setup)?;
                entry.request = plan.request;
                let (line, _) = input_line(request.engine, &id, &entry.request);
                lines.push_str(&serde_json::to_string(&line)?);
                lines.push('\n');
                entries.push(entry);
            }
            prompts.push(exported);
        }
    }
    let manifest =
        Manifest { tag, engine: request.engine, created_at_ms, input: request.input.clone(), prompts, entries };
    Ok(Export { manifest, lines, models, key_env, base_url })
}

/// The cases of one prompt: the default, every case, or the ones named; `--var` over each.
fn prompt_cases(choice: &CaseChoice, prompt: &PromptFile, variables: &Variables) -> anyhow::Result<Vec<CaseSpec>> {
    match choice {
        CaseChoice::Named(names) => {
            for name in names {
                prompt.case(name)?;
            }
            Ok(names.iter().map(|name| (Some(name.clone()), true, variables.clone())).collect())
        }
        CaseChoice::All if !prompt.cases.is_empty() => {
            Ok(prompt.cases.iter().map(|c| (Some(c.name.clone()), true, variables.clone())).collect())
        }
        CaseChoice::All | CaseChoice::Default => Ok(vec![(None, false, variables.clone())]),
    }
}

/// Six hexadecimal digits that tell this export's `custom_id`s from any other's.
fn tag_for(prompts: &[PathBuf], created_at_ms: u64) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (prompts, created_at_ms, std::process::id()).hash(&mut hasher);
    format!("{:06x}", hasher.finish() & 0xff_ffff)
}

/// Where `eval --batch` keeps the input file of batch `tag`: beside its manifest in the data directory.
pub fn kept_input(tag: &str) -> anyhow::Result<PathBuf> {
    let manifest = Manifest::kept_path(tag)?;
    Ok(manifest.with_extension("jsonl"))
}

/// Writes the input file, its manifest beside it when `beside` (`batch export`), and the manifest in
/// the data directory, where import finds it by tag; returns that copy's path, or why it was not kept.
pub fn write(export: &Export, input: &Path, beside: bool) -> anyhow::Result<Result<PathBuf, anyhow::Error>> {
    if let Some(dir) = input.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        crate::run::history::create_dir(dir).map_err(anyhow::Error::msg)?;
    }
    crate::prompt::file::write_atomic(input, &export.lines).with_context(|| format!("writing {}", input.display()))?;
    if beside {
        export.manifest.save(&Manifest::beside(input))?;
    }
    Ok(Manifest::kept_path(&export.manifest.tag).and_then(|path| export.manifest.save(&path).map(|()| path)))
}
