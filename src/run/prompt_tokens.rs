//! How many tokens a run's first request takes before it is sent, against the model's context window
//! and the answer's max tokens: with the local model's own tokenizer over its chat template (exactly
//! what the model reads), else with o200k over the messages' text (an estimate for servers, whose
//! tokenizers and chat formats differ).

use std::path::PathBuf;
use std::sync::Arc;

use super::plan::RunPlan;
use crate::provider::kind::ProviderKind;
use crate::provider::Request;

/// What counts a request's tokens.
#[derive(Clone, Debug)]
pub enum Tokenizer {
    /// OpenAI's o200k over the messages' text.
    O200k,
    /// A local model's own tokenizer and chat template.
    Local(Arc<LocalTokenizer>),
}

impl Tokenizer {
    /// What the count is of: `o200k`, or the local model's file.
    pub fn id(&self) -> String {
        match self {
            Tokenizer::O200k => "o200k".into(),
            Tokenizer::Local(local) => local.model.display().to_string(),
        }
    }

    /// Whether its count is what the model reads (the local model's own), not an estimate.
    pub fn exact(&self) -> bool {
        matches!(self, Tokenizer::Local(_))
    }

    /// The tokens of `request`'s messages: the local model's prompt as its chat template renders it,
    /// or the sum of o200k over each message's text.
    pub fn count(&self, request: &Request) -> Result<usize, String> {
        match self {
            Tokenizer::O200k => {
                Ok(request.messages.iter().map(|m| crate::truncate::tokens::count_o200k(&m.content)).sum())
            }
            Tokenizer::Local(local) => local.count(request),
        }
    }
}

/// A request's size against its limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSize {
    /// The prompt's tokens.
    pub tokens: usize,
    /// Counted by the model's own tokenizer (else an o200k estimate).
    pub exact: bool,
    /// What the answer may take (`None`: the server's default, unknown here).
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens.
    pub context: u32,
}

impl PromptSize {
    /// Prompt and answer together do not fit in the context window.
    pub fn over(&self) -> bool {
        self.tokens as u64 + u64::from(self.max_tokens.unwrap_or(0)) > u64::from(self.context)
    }
}

/// The limits `plan` runs under on `provider`: the answer's max tokens (the local model's default when
/// none is set) and the context window (the local model's positions as the workbench loads it, and
/// the model's own when `tokenizer` is that model's; else the plan's).
pub fn limits(plan: &RunPlan, provider: ProviderKind, tokenizer: &Tokenizer) -> (Option<u32>, u32) {
    if provider != ProviderKind::Local {
        return (plan.request.max_tokens, plan.context_tokens);
    }
    let (max_tokens, positions) = local_limits();
    let context = match tokenizer {
        Tokenizer::Local(local) => local.context.min(positions),
        Tokenizer::O200k => positions,
    };
    (plan.request.max_tokens.or(max_tokens), context)
}

#[cfg(feature = "local")]
fn local_limits() -> (Option<u32>, u32) {
    use crate::engine::{LoadOptions, DEFAULT_MAX_TOKENS};
    (Some(DEFAULT_MAX_TOKENS), u32::try_from(LoadOptions::default().context).unwrap_or(u32::MAX))
}

#[cfg(not(feature = "local"))]
fn local_limits() -> (Option<u32>, u32) {
    (None, super::plan::DEFAULT_CONTEXT_TOKENS)
}

/// A local model's tokenizer and chat template, read from its GGUF's metadata (not its weights).
pub struct LocalTokenizer {
    /// The GGUF file.
    pub model: PathBuf,
    /// The model's context length (its metadata's).
    pub context: u32,
    #[cfg(feature = "local")]
    tokenizer: crate::engine::tokenizer::TextTokenizer,
    #[cfg(feature = "local")]
    template: crate::engine::chat::ChatTemplate,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenizer").field("model", &self.model).field("context", &self.context).finish()
    }
}

impl LocalTokenizer {
    /// The tokenizer of the local model `model` names (empty: the default cached model), read once per
    /// process: the GGUF's header only (vocabulary, merges, chat template), never its weights.
    #[cfg(feature = "local")]
    pub fn open(model: &str) -> Result<Arc<Self>, String> {
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        static READ: OnceLock<Mutex<HashMap<PathBuf, Arc<LocalTokenizer>>>> = OnceLock::new();
        let path = super::factory::local_model_file(model).map_err(|e| e.to_string())?;
        let read = READ.get_or_init(Default::default);
        if let Some(tokenizer) = read.lock().unwrap_or_else(|p| p.into_inner()).get(&path) {
            return Ok(Arc::clone(tokenizer));
        }
        let tokenizer = Arc::new(Self::read(path.clone())?);
        // Two threads may have read it at once: the first one kept is the one every caller gets.
        let mut read = read.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Arc::clone(read.entry(path).or_insert(tokenizer)))
    }

    /// Without the local model, there is nothing to open.
    #[cfg(not(feature = "local"))]
    pub fn open(_model: &str) -> Result<Arc<Self>, String> {
        Err("this build has no local model (built without the `local` feature)".into())
    }

    /// Reads the GGUF at `path` as the engine does when it loads (tokenizer, chat template, context).
    #[cfg(feature = "local")]
    fn read(path: PathBuf) -> Result<Self, String> {
        use crate::engine::chat::ChatTemplate;
        use crate::engine::tokenizer::TextTokenizer;
        let (content, _) = crate::engine::gguf::open(&path).map_err(|e| e.to_string())?;
        let tokenizer = TextTokenizer::from_gguf(&content).map_err(|e| e.to_string())?;
        let template = ChatTemplate::of_gguf(&path, &content, &tokenizer).map_err(|e| e.to_string())?;
        let plan = crate::engine::arch::Plan::of(&content).map_err(|e| e.to_string())?;
        let context = u32::try_from(plan.config.context).unwrap_or(u32::MAX);
        Ok(Self { model: path, context, tokenizer, template })
    }

    /// The tokens of the prompt the model reads for `request` (its chat template rendered, then encoded).
    #[cfg(feature = "local")]
    pub fn count(&self, request: &Request) -> Result<usize, String> {
        let text = self.template.render(&crate::provider::local::turns(request)).map_err(|e| e.to_string())?;
        self.tokenizer.encode(&text).map(|ids| ids.len()).map_err(|e| e.to_string())
    }

    #[cfg(not(feature = "local"))]
    pub fn count(&self, _request: &Request) -> Result<usize, String> {
        Err("this build has no local model".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o200k_counts_every_message() {
        let request = Request::new("m").system("You are terse.").user("Say hello to the world.");
        let each: usize =
            ["You are terse.", "Say hello to the world."].iter().map(|t| crate::truncate::tokens::count_o200k(t)).sum();
        assert_eq!(Tokenizer::O200k.count(&request), Ok(each));
        assert!(each > 4);
    }

    #[test]
    fn over_means_prompt_and_answer_exceed_the_window() {
        let size = |tokens, max_tokens| PromptSize { tokens, exact: false, max_tokens, context: 100 };
        assert!(!size(60, Some(40)).over());
        assert!(size(61, Some(40)).over());
        assert!(!size(100, None).over());
        assert!(size(101, None).over());
    }
}
