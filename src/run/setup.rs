//! One run setup for every front end (`run`, `compare`, `batch export`, the workbench, the benches):
//! a prompt (loaded from its file, or as edited in memory) and what the front end says (provider
//! settings over the prompt's `[provider]`, turns, profile, variables, what a replay plays) become
//! the resolved settings, the reading, each case's plan and the provider that answers it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::{self, CacheMode};
use super::factory::{concurrency_for, env_var, Concurrency, Lookup};
use super::{Job, ProviderChoice, Reading, RunError, RunPlan, RunSettings};
use crate::output::Profile;
use crate::prompt::file::{PromptFile, ProviderSettings};
use crate::prompt::reading::setup_for_prompt;
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::provider::replay::{Pace, Replay};
use crate::provider::{Provider, ProviderError};
use crate::schema::Check;

pub use super::target::{ReplayFrom, Target};

/// What a front end says about a run, laid over the prompt file.
#[derive(Clone, Debug, Default)]
pub struct SetupOptions {
    /// What the run is aimed at (provider, model, server, structured mode, max tokens, what a replay
    /// plays), over the prompt's `[provider]`: the only way a front end names them.
    pub target: Target,
    /// The rest of the command line over the prompt's `[provider]` (sampling, limits): naming a part
    /// of the target here is an error.
    pub overrides: ProviderSettings,
    pub max_turns: Option<u32>,
    pub context_tokens: Option<u32>,
    /// Over the prompt's profile.
    pub profile: Option<Profile>,
    /// `--var` values laid over every case.
    pub variables: Variables,
    /// The local model's sampling seed.
    pub seed: Option<u64>,
    /// Whether the providers answer through the response cache (`Off` by default).
    pub cache: CacheMode,
    /// The response cache's folder; `None`: `<cache dir>/responses`.
    pub cache_dir: Option<PathBuf>,
}

impl SetupOptions {
    /// The command line's provider settings as written: the target typed from them (a bad
    /// `--provider` or `--structured` named), the rest laid over the prompt as they are.
    pub fn from_flags(flags: ProviderSettings) -> Result<Self, RunError> {
        let (target, overrides) = Target::from_flags(flags)?;
        Ok(Self { target, overrides, ..Self::default() })
    }
}

/// A prompt ready to run: settings resolved, answers' reading and checks compiled once.
#[derive(Clone)]
pub struct RunSetup {
    pub prompt: PromptFile,
    /// The prompt file: it names the prompt in errors.
    pub path: PathBuf,
    /// The prompt's directory: it resolves `schema_file`.
    pub base_dir: PathBuf,
    pub reading: Reading,
    /// What one item is checked against (a truncation sweep's count).
    pub item_check: Option<Arc<dyn Check>>,
    pub settings: RunSettings,
    pub variables: Variables,
    pub replay: Option<ReplayFrom>,
    pub seed: Option<u64>,
    /// Whether [`Self::provider`] and [`Self::jobs`] answer through the response cache.
    pub cache: CacheMode,
    /// The response cache's folder; `None`: `<cache dir>/responses`.
    pub cache_dir: Option<PathBuf>,
    /// The environment variable the provider's key is read from in place of its own (the target's,
    /// else the prompt's `[provider] key_env`): a name, never the key.
    pub key_env: Option<String>,
    /// A key written in the prompt's source (the target's, else the prompt's `[provider]`'s), over
    /// `key_env`: sent to this setup's server alone.
    pub key: Option<crate::provider::ApiKey>,
}

impl RunSetup {
    /// The prompt file at `path`, set up with `options`.
    pub fn load(path: &Path, options: SetupOptions) -> anyhow::Result<Self> {
        Self::new(PromptFile::load(path)?, path, options)
    }

    /// `prompt` as held in memory (the workbench's edited prompt; a derived twin), named by `path`.
    pub fn new(prompt: PromptFile, path: &Path, options: SetupOptions) -> anyhow::Result<Self> {
        let settings = settings(&prompt, &options)?;
        let key_env = key_env(&prompt, &options)?;
        let key = options.target.key.clone().or_else(|| prompt.provider.key.clone());
        let setup = Self::with_settings(prompt, path, settings, options.profile)?;
        Ok(Self {
            key_env,
            key,
            variables: options.variables,
            replay: options.target.replay,
            seed: options.seed,
            cache: options.cache,
            cache_dir: options.cache_dir,
            ..setup
        })
    }

    /// [`Self::new`] without the checks: its plans' requests are exactly [`Self::new`]'s, but no schema
    /// is compiled and no answer could be judged. For a view redrawn every frame (the request preview).
    pub fn unchecked(prompt: PromptFile, path: &Path, options: SetupOptions) -> anyhow::Result<Self> {
        let settings = settings(&prompt, &options)?;
        let key_env = key_env(&prompt, &options)?;
        let key = options.target.key.clone().or_else(|| prompt.provider.key.clone());
        let profile = options.profile.or(prompt.profile).unwrap_or_default();
        Ok(Self {
            key_env,
            key,
            reading: Reading { response_type: prompt.response_type, profile, check: None },
            item_check: None,
            path: path.to_path_buf(),
            base_dir: base_dir(path),
            prompt,
            settings,
            variables: options.variables,
            replay: options.target.replay,
            seed: options.seed,
            cache: options.cache,
            cache_dir: options.cache_dir,
        })
    }

    /// `prompt` whose settings were resolved before (a batch manifest keeps each request's): the
    /// reading compiled once, for plans made with [`Self::plan_as`]; on the local model, its schema
    /// checked against the constrained decoder ([`super::decodable`]).
    pub fn with_settings(
        prompt: PromptFile,
        path: &Path,
        settings: RunSettings,
        profile: Option<Profile>,
    ) -> anyhow::Result<Self> {
        let base_dir = base_dir(path);
        let prompt_key = prompt.provider.key.clone();
        let setup = setup_for_prompt(&prompt, path, &base_dir, profile)?;
        super::decodable::check_prompt(&prompt, path, &base_dir, &settings)?;
        let reading = Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check };
        Ok(Self {
            prompt,
            path: path.to_path_buf(),
            base_dir,
            reading,
            item_check: setup.item_check,
            settings,
            variables: Variables::new(),
            replay: None,
            seed: None,
            cache: CacheMode::Off,
            cache_dir: None,
            key_env: None,
            key: prompt_key,
        })
    }

    /// The plan of one case (`None`: the prompt's own variables).
    pub fn plan(&self, case: Option<&str>) -> Result<RunPlan, RunError> {
        let mut plan = self.plan_as(case, &self.variables, &self.settings)?;
        plan.request.seed = self.seed;
        Ok(plan)
    }

    /// The plan of `case`, a case the prompt need not hold (a dataset row an eval reads when its cell
    /// runs): as [`Self::plan`] gives it, its variables over the prompt's and under the front end's.
    pub fn plan_of_case(&self, case: &crate::prompt::file::Case) -> Result<RunPlan, RunError> {
        let variables = crate::prompt::template::merge(&[&case.variables, &self.variables]);
        let mut plan = self.plan_as(None, &variables, &self.settings)?;
        plan.case = Some(case.name.clone());
        plan.variables = self.variables.clone();
        plan.request.seed = self.seed;
        Ok(plan)
    }

    /// The plan of one case with its own variables and settings (a batch request keeps both).
    pub fn plan_as(
        &self,
        case: Option<&str>,
        variables: &Variables,
        settings: &RunSettings,
    ) -> Result<RunPlan, RunError> {
        RunPlan::new(&self.prompt, &self.base_dir, case, variables, settings, self.reading.clone())
    }

    /// The provider the settings name (replay: the transcript, or in a batch the case's file beside it).
    pub fn choice(&self) -> ProviderChoice {
        let (transcript, pace) = match &self.replay {
            Some(ReplayFrom::File(path, pace)) => (Some(path.clone()), *pace),
            _ => (None, Pace::Instant),
        };
        ProviderChoice::new(&self.settings, transcript, pace)
    }

    /// The provider that answers `case` (`None` outside a batch).
    pub fn provider(&self, case: Option<&str>) -> Result<Arc<dyn Provider>, RunError> {
        self.provider_with(case, &env_var)
    }

    /// [`Self::provider`] reading the providers' variables through `lookup`; behind the response
    /// cache as [`Self::cache`] says (replay never is).
    pub fn provider_with(&self, case: Option<&str>, lookup: Lookup) -> Result<Arc<dyn Provider>, RunError> {
        let key_var = self.settings.provider.endpoint().map(|vars| vars.key_var);
        // The key written in the source, else the variable the prompt names, read as a grader's are.
        let server =
            crate::provider::endpoint::Server { base_url: None, key_env: self.key_env.clone(), key: self.key.clone() };
        let keyed = |name: &str| match key_var {
            Some(key_var) => server.read(key_var, name, lookup),
            None => lookup(name),
        };
        let lookup: Lookup = &keyed;
        let built = match &self.replay {
            Some(ReplayFrom::Transcript(transcript)) if self.settings.provider == ProviderKind::Replay => {
                Ok(Arc::new(Replay::new((**transcript).clone(), Pace::Instant)) as Arc<dyn Provider>)
            }
            _ => cache::provider(&self.choice(), case, lookup, self.cache, self.cache_dir.as_deref()),
        };
        match (built, &self.key_env, key_var) {
            // The key was looked for in the variable the prompt names: the advice names that one.
            (Err(RunError::Provider(ProviderError::Config { provider, message })), Some(own), Some(key_var)) => {
                let message = message.replace(&format!("set {key_var}"), &format!("set {own} (the prompt's key_env)"));
                Err(RunError::Provider(ProviderError::Config { provider, message }))
            }
            (built, ..) => built,
        }
    }

    /// One job per case: one provider shared by all (replay: each case its own recorded answer when
    /// `batch`).
    pub fn jobs(&self, cases: &[Option<String>], batch: bool) -> Result<Vec<Job>, RunError> {
        self.jobs_with(cases, batch, &env_var)
    }

    /// [`Self::jobs`] with the providers' variables read through `lookup` (the workbench's).
    pub fn jobs_with(&self, cases: &[Option<String>], batch: bool, lookup: Lookup) -> Result<Vec<Job>, RunError> {
        let shared = match self.settings.provider {
            ProviderKind::Replay => None,
            _ => Some(self.provider_with(None, lookup)?),
        };
        cases
            .iter()
            .map(|case| {
                let plan = self.plan(case.as_deref())?;
                let provider = match &shared {
                    Some(provider) => Arc::clone(provider),
                    None => self.provider_with(if batch { case.as_deref() } else { None }, lookup)?,
                };
                Ok(Job { provider, plan })
            })
            .collect()
    }

    /// How many runs go at once when none is given, and why.
    pub fn concurrency(&self) -> Concurrency {
        concurrency_for(&self.settings)
    }
}

/// The settings a run of `prompt` under `options` resolves to: the front end's target and options over
/// the prompt's `[provider]` (a replay with no model named plays under its transcript's). The one
/// place [`RunSettings::resolve`] is called: a run setup, a comparison's shared settings and the
/// workbench's schema lint all resolve here.
pub fn settings(prompt: &PromptFile, options: &SetupOptions) -> anyhow::Result<RunSettings> {
    let mut settings =
        RunSettings::resolve(prompt, &options.target, &options.overrides, options.max_turns, options.context_tokens)?;
    if settings.provider == ProviderKind::Replay && settings.model.is_empty() {
        settings.model = match &options.target.replay {
            Some(ReplayFrom::File(path, _)) => {
                Replay::from_file(path, Pace::Instant)?.transcript().header.model.clone()
            }
            Some(ReplayFrom::Transcript(transcript)) => transcript.header.model.clone(),
            None => String::new(),
        };
    }
    Ok(settings)
}

/// The environment variable a run's key is read from: the target's, else the prompt's `key_env`
/// (checked to be a variable's name, which is all that is ever shown).
fn key_env(prompt: &PromptFile, options: &SetupOptions) -> Result<Option<String>, RunError> {
    let Some(name) = options.target.key_env.clone().or_else(|| prompt.provider.key_env.clone()) else {
        return Ok(None);
    };
    if crate::names::is_env_name(&name) {
        Ok(Some(name))
    } else {
        Err(RunError::Setting(format!("key_env {name:?} is not the name of an environment variable")))
    }
}

/// The directory of a prompt file (`.` for a bare file name).
pub fn base_dir(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}
