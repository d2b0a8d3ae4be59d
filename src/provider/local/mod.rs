//! `local`: the embedded model — a GGUF instruct model of a family the engine runs (llama, qwen2, qwen3,
//! gemma3; SmolLM2-135M-Instruct by default) run in-process on the CPU by [`crate::engine`], streaming
//! one event per generated token, with schema-constrained decoding for json and jsonl answers. This is
//! the engine's adapter: a request becomes the engine's [`Ask`], its steps become the provider's
//! events, its errors the provider's.
//!
//! - [`fetch`]: where the model lives (the cache directory), `tunebench model fetch|path|info`.
//! - [`ollama_store`]: `ollama:NAME[:TAG]`, a model in Ollama's store, read in place.
//! - `answer`: [`Engine`], the engine loaded, answering [`Request`]s with [`Event`]s; a request's
//!   [`grammar`] and chat [`turns`]; [`load_options`] (the stored weights in the cache directory).
//! - `bench` (feature `testing`): the model's speed figures for `tunebench bench`; `bench_llama_cpp`:
//!   the same models run by llama.cpp in the same run (`bench --vs-llama-cpp`).
//!
//! Generation runs on its own thread; dropping the stream cancels it before the next token.

mod answer;
#[cfg(feature = "testing")]
pub mod bench;
#[cfg(feature = "testing")]
pub mod bench_llama_cpp;
#[cfg(feature = "testing")]
pub mod bench_sampling;
pub mod fetch;
pub mod ollama_store;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::engine::EngineError;
pub use crate::engine::{Backend, LoadOptions, DEFAULT_MAX_TOKENS};
pub use answer::{grammar, load_options, turns, Engine, Generated, PromptReuse};

use super::generate::generate;
use super::{Event, EventStream, Provider, ProviderError, Request};

const NAME: &str = "local";

/// What can go wrong with the local model (the engine's errors, and fetching the model); every message
/// names the file or value at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    /// The model file is missing, unreadable or not a model this build runs.
    #[error("{0}")]
    Model(String),
    /// Fetching the model failed.
    #[error("fetching the model: {0}")]
    Fetch(String),
    /// The grammar engine refused the schema or failed mid-answer.
    #[error("constrained decoding: {0}")]
    Constraint(String),
    /// Prompt and answer do not fit in the model's context.
    #[error("the prompt and answer need {needed} positions, more than the {context} of the model's context")]
    Context { needed: usize, context: usize },
}

impl From<EngineError> for LocalError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Model(message) => Self::Model(message),
            EngineError::Constraint(message) => Self::Constraint(message),
            EngineError::Context { needed, context } => Self::Context { needed, context },
        }
    }
}

impl From<LocalError> for ProviderError {
    fn from(error: LocalError) -> Self {
        match error {
            LocalError::Constraint(_) | LocalError::Context { .. } => {
                ProviderError::Server { provider: NAME.into(), message: error.to_string() }
            }
            other => ProviderError::Config { provider: NAME.into(), message: other.to_string() },
        }
    }
}

/// The local provider: one loaded model, answering one request at a time.
#[derive(Clone)]
pub struct Local {
    engine: Arc<Mutex<Engine>>,
    model: String,
    /// Warms and runs asked for so far: a warm that waited for the engine while a later warm or a run
    /// was asked for gives way to it (the user moved on to another case, or ran).
    warms: Arc<AtomicU64>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").field("model", &self.model).finish()
    }
}

fn lock(engine: &Mutex<Engine>) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Local {
    /// Loads the GGUF at `path`.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Self, LocalError> {
        let engine = Engine::load(path, options)?;
        let model = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        Ok(Self { engine: Arc::new(Mutex::new(engine)), model, warms: Arc::new(AtomicU64::new(0)) })
    }

    /// Loads `path`, or the default model from the cache directory (an error says how to fetch it).
    pub fn open(path: Option<&Path>) -> Result<Self, LocalError> {
        match path {
            Some(path) => Self::load(path, &load_options()),
            None => Self::load(&fetch::installed_model()?, &load_options()),
        }
    }

    /// The model file's name (without `.gguf`).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Gets ready to answer `request`: its prompt run through the model (kept in the prompt cache, so
    /// its run only runs the last token) and, for a constrained request, the grammar engine built.
    /// Returns `false`, having done nothing, when a later warm or a run was asked for while this one
    /// waited for the engine (only the newest prompt is worth running: the one the user will run); a
    /// warm under way stops at the end of its block when one is.
    pub fn warm(&self, request: &Request) -> Result<bool, LocalError> {
        let ticket = self.warms.fetch_add(1, Ordering::SeqCst) + 1;
        let newest = || self.warms.load(Ordering::SeqCst) == ticket;
        let mut engine = lock(&self.engine);
        if !newest() {
            return Ok(false);
        }
        engine.warm_while(request, &newest).map(|_| true)
    }

    /// Warms and runs asked for so far (tests).
    pub fn warms_asked(&self) -> u64 {
        self.warms.load(Ordering::SeqCst)
    }

    /// Runs `f` with the engine (tests, bench).
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut Engine) -> T) -> T {
        f(&mut lock(&self.engine))
    }
}

impl Provider for Local {
    fn name(&self) -> &str {
        NAME
    }

    fn stream(&self, request: &Request) -> EventStream {
        // A warm waiting for the engine, or under way, gives way to the run.
        self.warms.fetch_add(1, Ordering::SeqCst);
        let engine = Arc::clone(&self.engine);
        let request = request.clone();
        generate(move |emit| async move {
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
            let worker = std::thread::Builder::new().name("tunebench-local".into()).spawn(move || {
                let mut engine = lock(&engine);
                let mut send = |event: Event| sender.send(event).is_ok();
                if let Err(error) = engine.generate(&request, &mut send) {
                    send(Event::Error(error.into()));
                }
            });
            if let Err(error) = worker {
                let message = format!("cannot start the generation thread: {error}");
                emit.send(Event::Error(ProviderError::Server { provider: NAME.into(), message }));
                return;
            }
            while let Some(event) = receiver.recv().await {
                emit.send(event);
            }
        })
    }
}
