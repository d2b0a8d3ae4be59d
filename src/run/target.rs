//! What a run is aimed at, typed once where the user names it: the provider, the model, the server,
//! the structured mode, the output tokens and what a replay plays. The command line's flags and the
//! workbench's choice both become a [`Target`], and a run setup takes the front end's choice only as
//! one (the prompt's `[provider]` fills in what it leaves open).

use std::path::PathBuf;

use super::RunError;
use crate::prompt::file::ProviderSettings;
use crate::provider::kind::ProviderKind;
use crate::provider::replay::Pace;
use crate::provider::StructuredMode;
use crate::truncate::transcript::Transcript;

/// What a replay plays.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayFrom {
    /// A transcript file (and, in a batch, each case's file beside it), at this pace.
    File(PathBuf, Pace),
    /// A transcript in memory (a history record's), instantly.
    Transcript(Box<Transcript>),
}

/// The front end's choice of what a run is aimed at; `None` leaves it to the prompt's `[provider]`,
/// else to the defaults (local, or openai when a base URL is given; no model; the structured mode of
/// [`super::plan::default_structured`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    pub provider: Option<ProviderKind>,
    /// Empty: the server's default (or, on `local`, the default cached model).
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub structured: Option<StructuredMode>,
    pub max_tokens: Option<u32>,
    /// The environment variable holding the server's key in place of the provider's own (a promptfoo
    /// provider's `apiKeyEnvar`); `None`: the prompt's `key_env`, else the provider's variable.
    pub key_env: Option<String>,
    /// A key written in the config that names this target's server (a promptfoo grader's `apiKey`),
    /// over `key_env`; held in memory only.
    pub key: Option<crate::provider::ApiKey>,
    /// What the replay provider plays (a replay with no model named plays under its transcript's).
    pub replay: Option<ReplayFrom>,
}

impl Target {
    /// Runs on `provider`, everything else the prompt's.
    pub fn on(provider: ProviderKind) -> Self {
        Self { provider: Some(provider), ..Self::default() }
    }

    /// A replay of `from` (the provider is the replay).
    pub fn replaying(from: ReplayFrom) -> Self {
        Self { replay: Some(from), ..Self::on(ProviderKind::Replay) }
    }

    /// The command line's provider settings as written, split into the target (each bad value named
    /// with its flag: `--provider`, `--structured`) and the rest (sampling, limits), which a run setup
    /// lays over the prompt's `[provider]` as they are.
    pub fn from_flags(flags: ProviderSettings) -> Result<(Self, ProviderSettings), RunError> {
        let provider = match flags.name.as_deref() {
            None => None,
            Some(name) => Some(ProviderKind::parse(name).ok_or_else(|| {
                RunError::Setting(format!("{name:?} (from --provider) is not a provider: {}", ProviderKind::names()))
            })?),
        };
        let structured = match flags.structured.as_deref() {
            None => None,
            Some(text) => Some(StructuredMode::parse(text.trim()).ok_or_else(|| {
                RunError::Setting(format!(
                    "{text:?} (from --structured) is not a structured mode: none, json-object, json-schema, constrained"
                ))
            })?),
        };
        let target = Self {
            provider,
            model: flags.model.clone(),
            base_url: flags.base_url.clone(),
            structured,
            max_tokens: flags.max_tokens,
            key_env: None,
            key: None,
            replay: None,
        };
        let rest =
            ProviderSettings { name: None, model: None, base_url: None, structured: None, max_tokens: None, ..flags };
        Ok((target, rest))
    }

    /// `self` with a replayed file played at `pace` (a front end that plays files at its own pace).
    pub fn at_pace(mut self, pace: Pace) -> Self {
        if let Some(ReplayFrom::File(_, at)) = &mut self.replay {
            *at = pace;
        }
        self
    }

    /// Whether the settings `rest` name any part of a target (they must come as a [`Target`]).
    pub(crate) fn named_in(rest: &ProviderSettings) -> Option<&'static str> {
        [
            (rest.name.is_some(), "the provider"),
            (rest.model.is_some(), "the model"),
            (rest.base_url.is_some(), "the base URL"),
            (rest.structured.is_some(), "the structured mode"),
            (rest.max_tokens.is_some(), "max_tokens"),
        ]
        .into_iter()
        .find_map(|(set, what)| set.then_some(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_typed_where_they_are_given_and_the_rest_passes_as_written() {
        let flags = ProviderSettings {
            name: Some("ollama".into()),
            model: Some("qwen".into()),
            structured: Some(" json-schema ".into()),
            max_tokens: Some(50),
            temperature: Some(0.5),
            ..ProviderSettings::default()
        };
        let (target, rest) = Target::from_flags(flags).unwrap();
        assert_eq!(target.provider, Some(ProviderKind::Ollama));
        assert_eq!((target.model.as_deref(), target.structured), (Some("qwen"), Some(StructuredMode::JsonSchema)));
        assert_eq!(target.max_tokens, Some(50));
        assert_eq!(rest, ProviderSettings { temperature: Some(0.5), ..ProviderSettings::default() });
        let bad = |flags: ProviderSettings| Target::from_flags(flags).map(|_| ()).unwrap_err().to_string();
        let error = bad(ProviderSettings { name: Some("gpt".into()), ..ProviderSettings::default() });
        assert!(error.contains("\"gpt\" (from --provider) is not a provider: openai"), "{error}");
        let error = bad(ProviderSettings { structured: Some("strict".into()), ..ProviderSettings::default() });
        assert!(error.contains("\"strict\" (from --structured) is not a structured mode"), "{error}");
    }
}
