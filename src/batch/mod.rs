//! Provider batch engines: the case matrix (each prompt × each case, and its json/jsonl twin when
//! asked) written as a provider's own batch input file, and the provider's batch output read back
//! into the run records a live run writes, so history, compare and the workbench show them alike.
//!
//! ```text
//! prompts × cases ─RunPlan─▶ manifest::Manifest ─format::input_line─▶ batch.jsonl ─submit─▶ provider
//!                                  │ (beside it, and in the data directory)            │
//! results.jsonl ◀─fetch────────────┼───────────────────────────────────────────────────┘
//!   └─format::read_result─▶ Outcome ─import::import (engine::run, one turn)─▶ RunRecord ─▶ history
//! ```
//!
//! - [`format`]: the input and result lines of OpenAI's Batch API (also vLLM's `run-batch`) and
//!   Anthropic's Message Batches.
//! - [`manifest`]: what import needs to judge each answer as `run` would (the prompt as exported,
//!   its case, variables, settings and the request sent), keyed by `custom_id`.
//! - [`import`]: result lines → run records; errors per line, the rest still imported.
//! - [`export`]: the case matrix planned into input lines and a manifest (`batch export`, `eval --batch`).
//! - [`remote`]: submit, status, wait and fetch against the providers' batch endpoints.
//! - [`submitted`]: a submitted batch remembered by its id, for `eval --batch-resume`.

pub mod export;
pub mod format;
pub mod import;
pub mod manifest;
pub mod remote;
pub mod submitted;

use serde::{Deserialize, Serialize};

/// The batch engines a case matrix can be written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// OpenAI's Batch API (`/v1/files` + `/v1/batches`), or any server that speaks it.
    Openai,
    /// Anthropic's Message Batches (`/v1/messages/batches`).
    Anthropic,
    /// A vLLM cluster: OpenAI's batch file format, run with `vllm run-batch` or its batch endpoints.
    Vllm,
}

impl Engine {
    /// The batch engine of `provider` (`None`: it has none).
    pub fn of_provider(provider: crate::provider::kind::ProviderKind) -> Option<Self> {
        use crate::provider::kind::ProviderKind;
        match provider {
            ProviderKind::Openai => Some(Self::Openai),
            ProviderKind::Anthropic => Some(Self::Anthropic),
            ProviderKind::Vllm => Some(Self::Vllm),
            ProviderKind::Ollama | ProviderKind::Local | ProviderKind::Replay => None,
        }
    }

    /// The provider that answers the same requests live (`run --provider ...`).
    pub fn provider(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
            Self::Vllm => "vllm",
        }
    }
}

/// The longest `custom_id` Anthropic accepts (`^[a-zA-Z0-9_-]{1,64}$`); OpenAI's are kept as short.
pub const MAX_CUSTOM_ID: usize = 64;

/// The `custom_id` of request `index` of batch `tag`: `tb<tag>-<index>-<prompt>-<case>`, with every
/// character outside `[A-Za-z0-9_-]` written as `_`, cut to [`MAX_CUSTOM_ID`] characters.
pub fn custom_id(tag: &str, index: usize, prompt: &str, case: Option<&str>) -> String {
    let mut id = format!("tb{tag}-{index:05}-{prompt}");
    if let Some(case) = case {
        id.push('-');
        id.push_str(case);
    }
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(MAX_CUSTOM_ID)
        .collect()
}

/// The batch tag a `custom_id` written by [`custom_id`] carries (`None` for any other id).
pub fn tag_of(custom_id: &str) -> Option<&str> {
    let rest = custom_id.strip_prefix("tb")?;
    let (tag, _) = rest.split_once('-')?;
    (!tag.is_empty() && tag.chars().all(|c| c.is_ascii_hexdigit())).then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_are_what_anthropic_accepts_and_carry_their_tag() {
        let id = custom_id("a1b2c3", 7, "extract topics", Some("long/text é"));
        assert_eq!(id, "tba1b2c3-00007-extract_topics-long_text__");
        assert_eq!(tag_of(&id), Some("a1b2c3"));
        let long = custom_id("a1b2c3", 1, &"p".repeat(100), None);
        assert_eq!(long.len(), MAX_CUSTOM_ID);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(tag_of("request-1"), None);
        assert_eq!(tag_of("tbzz-1"), None);
    }
}
