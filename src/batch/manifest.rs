//! The manifest of an exported batch: each prompt as exported, once (TOML, a `schema_file` inlined, a
//! twin as derived), and per `custom_id` its prompt, case, variables, profile, run settings and the
//! request sent. Import rebuilds each run's plan from it, so answers are judged as `run` judges them
//! even after the prompt file has changed. Written beside the batch file and kept in the data
//! directory under `batches/<tag>.json`, where import finds it by the tag in the `custom_id`s.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::output::Profile;
use crate::prompt::file::PromptFile;
use crate::prompt::template::Variables;
use crate::provider::Request;
use crate::run::{history, RunPlan, RunSettings, RunSetup};

/// Everything import needs to know about an exported batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The hexadecimal tag every `custom_id` of the batch starts with (`tb<tag>-`).
    pub tag: String,
    pub engine: Engine,
    /// When the batch file was written, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The batch input file as it was named on the command line.
    pub input: PathBuf,
    pub prompts: Vec<Exported>,
    pub entries: Vec<Entry>,
}

/// A prompt as exported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exported {
    /// The prompt file it came from (or that it is the twin of); errors name it.
    pub path: PathBuf,
    /// The prompt as TOML.
    pub toml: String,
}

/// One request of the batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub custom_id: String,
    /// Its prompt: an index into [`Manifest::prompts`].
    pub prompt: usize,
    /// The case's name: one of the prompt's `[[cases]]`, or a line of a cases file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The case is one of the prompt's `[[cases]]` (its variables come from the prompt).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt_case: bool,
    /// The variables laid over the prompt's (and its case's): `--var`, or a cases-file line.
    #[serde(default, skip_serializing_if = "Variables::is_empty")]
    pub variables: Variables,
    /// `--profile`, over the prompt's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    pub settings: RunSettings,
    /// The run's request (before the provider's own mode steps, which [`super::format`] applies).
    pub request: Request,
}

impl Exported {
    /// `prompt` (from `path`) as it goes into a manifest: a `schema_file` and a dataset's cases
    /// inlined, so the manifest stands alone.
    pub fn new(path: &Path, prompt: &PromptFile) -> anyhow::Result<Self> {
        let mut exported = prompt.clone();
        if exported.schema_file.is_some() {
            exported.inline_schema(&base_dir(path))?;
        }
        // A dataset's rows written as the copy's own cases: the import scores them without the file.
        exported.dataset = None;
        exported.cases_file = None;
        Ok(Self { path: path.to_path_buf(), toml: exported.to_toml_string()? })
    }

    /// The prompt read back.
    pub fn prompt_file(&self) -> anyhow::Result<PromptFile> {
        PromptFile::from_toml_str(&self.toml, &self.path)
            .with_context(|| format!("the manifest's copy of prompt {}", self.path.display()))
    }

    /// The run setup of the prompt (read back) under `profile`: the costly part of a plan (the schema
    /// compiled), shared by the entries of one prompt; each entry plans with its own settings.
    pub fn setup(
        &self,
        prompt: PromptFile,
        settings: RunSettings,
        profile: Option<Profile>,
    ) -> anyhow::Result<RunSetup> {
        RunSetup::with_settings(prompt, &self.path, settings, profile)
    }
}

impl Entry {
    /// The plan of this entry in its prompt's setup, planned as `run` plans it, with
    /// one turn (a batch answer gets no retry). Until `request` is set (at export) the plan's own
    /// request is the one to send; after, the plan carries the request that was sent.
    pub fn plan_for(&self, setup: &RunSetup) -> anyhow::Result<RunPlan> {
        let settings = RunSettings { max_turns: 1, ..self.settings.clone() };
        let case = if self.prompt_case { self.case.as_deref() } else { None };
        let mut plan = setup
            .plan_as(case, &self.variables, &settings)
            .with_context(|| format!("prompt {}", setup.path.display()))?;
        plan.case = self.case.clone();
        if !self.request.messages.is_empty() {
            plan.request = self.request.clone();
        }
        Ok(plan)
    }
}

fn base_dir(prompt_path: &Path) -> PathBuf {
    prompt_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}

impl Manifest {
    /// The variable the first of its prompts that names one reads its key from (`[provider] key_env`).
    pub fn key_env(&self) -> Option<String> {
        self.prompts.iter().find_map(|p| p.prompt_file().ok()?.provider.key_env)
    }

    /// The prompt of `entry` (`None` when the manifest is inconsistent).
    pub fn prompt_of(&self, entry: &Entry) -> Option<&Exported> {
        self.prompts.get(entry.prompt)
    }

    /// The manifest written beside the batch file `input`: `batch.jsonl` → `batch.manifest.json`.
    pub fn beside(input: &Path) -> PathBuf {
        let stem = input.file_stem().map_or_else(|| "batch".into(), |s| s.to_string_lossy().into_owned());
        input.with_file_name(format!("{stem}.manifest.json"))
    }

    /// Where the data directory keeps the manifest of batch `tag`.
    pub fn kept_path(tag: &str) -> anyhow::Result<PathBuf> {
        Ok(crate::names::inside(&history::data_dir()?.join("batches"), tag, ".json"))
    }

    /// Writes the manifest to `path` atomically.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            history::create_dir(dir).map_err(anyhow::Error::msg)?;
        }
        let text = serde_json::to_string(self)?;
        crate::prompt::file::write_atomic(path, &text).with_context(|| format!("writing {}", path.display()))
    }

    /// Reads a manifest, naming the file and what is wrong with it.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = crate::files::read_text(path, crate::files::MANIFEST)?;
        serde_json::from_str(&text)
            .with_context(|| format!("manifest {} is not a tunebench batch manifest", path.display()))
    }

    /// The manifest of the batch whose `custom_id`s carry `tag`, from the data directory.
    pub fn find(tag: &str) -> anyhow::Result<Self> {
        let path = Self::kept_path(tag)?;
        if !path.exists() {
            anyhow::bail!(
                "no manifest for batch tag {tag} in {}: give --manifest FILE (written beside the batch file by `batch export`)",
                path.display()
            );
        }
        Self::load(&path)
    }
}
