//! The manifest of an exported batch: per `custom_id`, the prompt as exported (TOML, a `schema_file`
//! inlined, the twin itself when the entry is one), its case, variables, profile, the run settings and
//! the request sent. Import rebuilds each run's plan from it, so answers are judged as `run` judges
//! them even after the prompt file has changed. Written beside the batch file and kept in the data
//! directory under `batches/<tag>.json`, where import finds it by the tag in the `custom_id`s.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::cli::input::setup_for_prompt;
use crate::output::Profile;
use crate::prompt::file::PromptFile;
use crate::prompt::template::Variables;
use crate::provider::Request;
use crate::run::{history, Reading, RunPlan, RunSettings};

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
    pub entries: Vec<Entry>,
}

/// One request of the batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub custom_id: String,
    /// The prompt file the entry came from (errors name it).
    pub prompt_path: PathBuf,
    /// The prompt as exported, as TOML.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The `--var` values laid over the case.
    #[serde(default, skip_serializing_if = "Variables::is_empty")]
    pub variables: Variables,
    /// `--profile`, over the prompt's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    pub settings: RunSettings,
    /// The run's request (before the provider's own mode steps, which [`super::format`] applies).
    pub request: Request,
}

impl Entry {
    /// The entry for `prompt` (a twin already derived) and `case`; `prompt_path` is where the prompt
    /// (or the prompt it is the twin of) lives. Returns the entry and its run plan.
    pub fn new(
        custom_id: String,
        prompt_path: &Path,
        prompt: &PromptFile,
        case: Option<&str>,
        variables: &Variables,
        profile: Option<Profile>,
        settings: &RunSettings,
    ) -> anyhow::Result<(Self, RunPlan)> {
        let base_dir = base_dir(prompt_path);
        let mut exported = prompt.clone();
        if exported.schema_file.is_some() {
            exported.inline_schema(&base_dir)?;
        }
        let text = exported.to_toml_string()?;
        let mut entry = Self {
            custom_id,
            prompt_path: prompt_path.to_path_buf(),
            prompt: text,
            case: case.map(str::to_string),
            variables: variables.clone(),
            profile,
            settings: settings.clone(),
            request: Request::default(),
        };
        let reading = entry.reading(&exported)?;
        let plan = entry.plan_of(&exported, reading)?;
        entry.request = plan.request.clone();
        Ok((entry, plan))
    }

    /// The run plan of this entry: the exported prompt read back and planned as `run` plans it, with
    /// the request that was sent, and one turn (a batch answer gets no retry).
    pub fn plan(&self) -> anyhow::Result<RunPlan> {
        let prompt = self.prompt_file()?;
        let reading = self.reading(&prompt)?;
        self.plan_for(&prompt, reading)
    }

    /// The prompt as exported.
    pub fn prompt_file(&self) -> anyhow::Result<PromptFile> {
        PromptFile::from_toml_str(&self.prompt, &self.prompt_path)
            .with_context(|| format!("the manifest's copy of prompt {}", self.prompt_path.display()))
    }

    /// How `prompt` (this entry's, read back) reads and checks an answer: the costly part of a plan
    /// (the schema compiled), shared by the entries of one prompt.
    pub fn reading(&self, prompt: &PromptFile) -> anyhow::Result<Reading> {
        let setup = setup_for_prompt(prompt, &self.prompt_path, &base_dir(&self.prompt_path), self.profile)?;
        Ok(Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check })
    }

    /// The plan of this entry from its prompt and reading, with the request that was sent.
    pub fn plan_for(&self, prompt: &PromptFile, reading: Reading) -> anyhow::Result<RunPlan> {
        let mut plan = self.plan_of(prompt, reading)?;
        plan.request = self.request.clone();
        Ok(plan)
    }

    fn plan_of(&self, prompt: &PromptFile, reading: Reading) -> anyhow::Result<RunPlan> {
        let base_dir = base_dir(&self.prompt_path);
        let settings = RunSettings { max_turns: 1, ..self.settings.clone() };
        let plan = RunPlan::new(prompt, &base_dir, self.case.as_deref(), &self.variables, &settings, reading)
            .with_context(|| format!("prompt {}", self.prompt_path.display()))?;
        Ok(plan)
    }
}

fn base_dir(prompt_path: &Path) -> PathBuf {
    prompt_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}

impl Manifest {
    /// The entry of `custom_id`.
    pub fn entry(&self, custom_id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.custom_id == custom_id)
    }

    /// The manifest written beside the batch file `input`: `batch.jsonl` → `batch.manifest.json`.
    pub fn beside(input: &Path) -> PathBuf {
        let stem = input.file_stem().map_or_else(|| "batch".into(), |s| s.to_string_lossy().into_owned());
        input.with_file_name(format!("{stem}.manifest.json"))
    }

    /// Where the data directory keeps the manifest of batch `tag`.
    pub fn kept_path(tag: &str) -> anyhow::Result<PathBuf> {
        Ok(history::data_dir()?.join("batches").join(format!("{tag}.json")))
    }

    /// Writes the manifest to `path` atomically.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self)?;
        crate::prompt::file::write_atomic(path, &text).with_context(|| format!("writing {}", path.display()))
    }

    /// Reads a manifest, naming the file and what is wrong with it.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read manifest {}", path.display()))?;
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
