//! A `--model` value read: which provider it names (or none, for a bare name) and which model.

use super::EvalError;
use crate::provider::kind::ProviderKind;

/// A `--model` value: `local`, `openai:gpt-4o-mini`, `ollama:qwen2.5`, `vllm:NAME`, a `.gguf` path
/// (the local model), or a bare `NAME` (that model on the front end's provider, as `run` reads it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// The provider the spec names (`None`: a bare name, on the front end's provider).
    pub provider: Option<ProviderKind>,
    /// The model (`None`: `local` alone, the default model).
    pub model: Option<String>,
    /// As given.
    pub text: String,
}

impl ModelSpec {
    /// Reads a spec; an empty one is an error that names it.
    pub fn parse(text: &str) -> Result<Self, EvalError> {
        let trimmed = text.trim();
        let spec = |provider, model: Option<&str>| Self {
            provider,
            model: model.map(str::to_string),
            text: trimmed.to_string(),
        };
        if trimmed.is_empty() {
            return Err(EvalError::Input(format!(
                "--model {text:?}: give a model (local, openai:gpt-4o-mini, ollama:qwen2.5, vllm:NAME, a .gguf file or a NAME)"
            )));
        }
        if let Some(kind) = ProviderKind::parse(trimmed) {
            return Ok(spec(Some(kind), None));
        }
        if let Some((prefix, model)) = trimmed.split_once(':') {
            if let Some(kind) = ProviderKind::parse(prefix) {
                if model.trim().is_empty() {
                    return Err(EvalError::Input(format!(
                        "--model {text:?}: no model after {prefix:?} (e.g. {prefix}:NAME, or {prefix} alone for its default)"
                    )));
                }
                return Ok(spec(Some(kind), Some(model.trim())));
            }
        }
        if trimmed.to_ascii_lowercase().ends_with(".gguf") {
            return Ok(spec(Some(ProviderKind::Local), Some(trimmed)));
        }
        Ok(spec(None, Some(trimmed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs_name_a_provider_a_gguf_or_a_bare_model() {
        let parse = |text: &str| ModelSpec::parse(text).unwrap();
        assert_eq!((parse("local").provider, parse("local").model), (Some(ProviderKind::Local), None));
        let openai = parse("openai:gpt-4o-mini");
        assert_eq!((openai.provider, openai.model.as_deref()), (Some(ProviderKind::Openai), Some("gpt-4o-mini")));
        let ollama = parse("ollama:qwen2.5:7b");
        assert_eq!((ollama.provider, ollama.model.as_deref()), (Some(ProviderKind::Ollama), Some("qwen2.5:7b")));
        let gguf = parse("models/tiny.Q4.GGUF");
        assert_eq!((gguf.provider, gguf.model.as_deref()), (Some(ProviderKind::Local), Some("models/tiny.Q4.GGUF")));
        let bare = parse("qwen2.5:7b");
        assert_eq!((bare.provider, bare.model.as_deref()), (None, Some("qwen2.5:7b")));
        assert!(ModelSpec::parse(" ").unwrap_err().to_string().contains("give a model"));
        assert!(ModelSpec::parse("vllm:").unwrap_err().to_string().contains("no model after \"vllm\""));
    }
}
