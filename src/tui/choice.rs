//! The run choice every screen starts its jobs with: the provider, model, structured mode, token
//! limit and case chosen in the workbench (alt-p, alt-o, alt-c), over the prompt's `[provider]`.

use std::path::PathBuf;

use crate::output::ResponseType;
use crate::prompt::file::PromptFile;
use crate::provider::kind::ProviderKind;
use crate::provider::StructuredMode;
use crate::run::Target;

/// The run settings chosen in the workbench.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub provider: ProviderKind,
    pub model: Option<String>,
    /// `None`: the prompt's, else the provider's default.
    pub structured: Option<StructuredMode>,
    pub max_tokens: Option<u32>,
    /// `None`: the prompt's default variables.
    pub case: Option<String>,
    /// The recorded answer the replay provider plays (the sample's transcript).
    pub transcript: Option<PathBuf>,
}

impl Choice {
    /// The structured mode a run of this choice asks for, and whether it is the provider's default
    /// (none chosen: the core's [`crate::run::plan::default_structured`], as `tunebench run` decides it).
    pub fn asked_mode(&self, response_type: ResponseType) -> (String, bool) {
        match self.structured {
            Some(mode) => (mode.to_string(), false),
            None => {
                let mode = crate::run::plan::default_structured(self.provider, response_type);
                (mode.to_string(), mode != StructuredMode::None)
            }
        }
    }

    /// What a run of this choice is aimed at (the run setup lays it over the prompt's `[provider]`);
    /// nothing replayed yet.
    pub fn target(&self) -> Target {
        Target {
            provider: Some(self.provider),
            model: self.model.clone(),
            base_url: None,
            structured: self.structured,
            max_tokens: self.max_tokens,
            key_env: None,
            key: None,
            replay: None,
        }
    }

    /// The choice a prompt's `[provider]` makes (no name: the replay, until the start-up picks one);
    /// an unknown provider or structured mode is an error naming it, before the workbench opens.
    pub fn of(prompt: &PromptFile) -> Result<Self, String> {
        let settings = &prompt.provider;
        let provider = match settings.name.as_deref() {
            None => ProviderKind::Replay,
            Some(name) => ProviderKind::parse(name)
                .ok_or_else(|| format!("[provider] name {name:?} is not a provider: {}", ProviderKind::names()))?,
        };
        let structured = match settings.structured.as_deref() {
            None => None,
            Some(text) => Some(StructuredMode::parse(text.trim()).ok_or_else(|| {
                format!("[provider] structured {text:?} is not a structured mode: none, json-object, json-schema, constrained")
            })?),
        };
        Ok(Self {
            provider,
            model: settings.model.clone(),
            structured,
            max_tokens: settings.max_tokens,
            case: None,
            transcript: None,
        })
    }
}
