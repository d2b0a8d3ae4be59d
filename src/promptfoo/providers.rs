//! A config's `providers` (promptfoo.dev/docs/providers): `openai:chat:MODEL` / `openai:MODEL`,
//! `anthropic:messages:MODEL`, `ollama:chat:MODEL` / `ollama:MODEL`, as strings or `{id, label,
//! config}` objects. vLLM and other OpenAI-compatible servers are `openai:chat:MODEL` with
//! `config.apiBaseUrl`. A key is named by its environment variable (`apiKeyEnvar`, or `apiKey: '{{
//! env.NAME }}'`) or written in the config (`apiKey: sk-no-key-required`), as promptfoo takes it: used
//! for that provider's requests alone, never shown or recorded. A grader's or an embedder's provider
//! block (`options.provider`, an assertion's `provider`) reads the same `config` keys ([`server_of`]).

use super::node::Node;
use super::{mapping, one_or_many, text_of, Place, PromptfooError, Provider};
use crate::provider::endpoint::Server;
use crate::provider::kind::ProviderKind;
use crate::provider::ApiKey;

const OBJECT_KEYS: [&str; 3] = ["id", "label", "config"];
const CONFIG_KEYS: [&str; 9] = [
    "apiBaseUrl",
    "apiKey",
    "apiKeyEnvar",
    "temperature",
    "max_tokens",
    "response_format",
    "apiHost",
    "num_predict",
    "stop",
];

pub(super) fn read(place: &Place, node: &Node) -> Result<Vec<Provider>, PromptfooError> {
    let mut providers = Vec::new();
    for item in one_or_many(node) {
        let provider = match item.as_text() {
            Some(id) => from_id(place, item.line, id)?,
            None => {
                let entries = mapping(place, item, "a provider", &OBJECT_KEYS)?;
                let id = entries.get("id").ok_or_else(|| {
                    place.error(item.line, "a provider object needs an `id` (e.g. openai:chat:gpt-4o-mini)")
                })?;
                let mut provider = from_id(place, id.line, text_of(place, id, "id")?)?;
                if let Some(label) = entries.get("label") {
                    provider.label = text_of(place, label, "label")?.to_string();
                }
                if let Some(config) = entries.get("config") {
                    settings(place, config, &mut provider)?;
                }
                provider
            }
        };
        if let Some(first) = providers.iter().find(|p: &&Provider| p.label == provider.label) {
            return Err(PromptfooError {
                at: provider.at.clone(),
                message: format!(
                    "a second provider labelled {:?} (the first is at {}); give each a `label`",
                    provider.label, first.at
                ),
            });
        }
        providers.push(provider);
    }
    if providers.is_empty() {
        return Err(place.error(node.line, "`providers` lists no provider"));
    }
    Ok(providers)
}

/// A provider from its id (`openai:chat:gpt-4o-mini`).
fn from_id(place: &Place, line: usize, id: &str) -> Result<Provider, PromptfooError> {
    let parts: Vec<&str> = id.splitn(3, ':').collect();
    let (kind, model) = match parts.as_slice() {
        ["openai", "chat", model] | ["openai", model] if !model.is_empty() && *model != "chat" => {
            (ProviderKind::Openai, *model)
        }
        ["anthropic", "messages", model] | ["anthropic", model] if !model.is_empty() && *model != "messages" => {
            (ProviderKind::Anthropic, *model)
        }
        ["ollama", "chat", model] | ["ollama", model] if !model.is_empty() && *model != "chat" => {
            (ProviderKind::Ollama, *model)
        }
        _ => {
            return Err(place.error(
                line,
                format!(
                    "unknown provider {id:?}; tunebench runs openai:chat:MODEL (also vLLM and other OpenAI-compatible servers, with config.apiBaseUrl), anthropic:messages:MODEL and ollama:chat:MODEL"
                ),
            ))
        }
    };
    Ok(Provider {
        id: id.to_string(),
        label: id.to_string(),
        kind,
        model: model.to_string(),
        base_url: None,
        api_key_env: None,
        key: None,
        parsed_output: false,
        stop: Vec::new(),
        temperature: None,
        max_tokens: None,
        response_format: None,
        at: place.at(line),
    })
}

/// A provider's `config`, read into `provider`.
fn settings(place: &Place, config: &Node, provider: &mut Provider) -> Result<(), PromptfooError> {
    let entries = mapping(place, config, "a provider's `config`", &CONFIG_KEYS)?;
    for (key, value) in entries {
        match key {
            "apiBaseUrl" | "apiHost" => {
                let url = text_of(place, value, key)?;
                let url = if key == "apiHost" { format!("https://{url}") } else { url.to_string() };
                provider.base_url = Some(url);
            }
            "apiKeyEnvar" => provider.api_key_env = Some(env_name(place, value.line, text_of(place, value, key)?)?),
            "apiKey" => {
                let text = value.as_text().ok_or_else(|| {
                    place.error(
                        value.line,
                        format!("`apiKey` is text (a key, or '{{{{ env.NAME }}}}'), not {}", value.kind()),
                    )
                })?;
                match env_reference(text) {
                    Some(name) => provider.api_key_env = Some(env_name(place, value.line, name)?),
                    None => provider.key = ApiKey::new(text),
                }
            }
            "temperature" => {
                let t = value.as_f64().filter(|t| (0.0..=2.0).contains(t)).ok_or_else(|| {
                    place.error(value.line, format!("`temperature` is a number from 0 to 2, not {}", value.to_json()))
                })?;
                provider.temperature = Some(t);
            }
            // `num_predict`: Ollama's name for the most tokens of the answer.
            "max_tokens" | "num_predict" => {
                let n = value
                    .as_f64()
                    .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= f64::from(u32::MAX))
                    .ok_or_else(|| {
                        place
                            .error(value.line, format!("`{key}` is a whole number, 1 or more, not {}", value.to_json()))
                    })?;
                provider.max_tokens = Some(n as u32);
            }
            "response_format" => {
                let format = super::prompts::schema_of(place, value)?;
                provider.parsed_output = format.parsed();
                provider.response_format = Some(format.value);
            }
            "stop" => {
                let stops: Option<Vec<String>> = match value.to_json() {
                    serde_json::Value::String(one) => Some(vec![one]),
                    serde_json::Value::Array(all) => all.iter().map(|s| s.as_str().map(str::to_string)).collect(),
                    _ => None,
                };
                provider.stop = stops.ok_or_else(|| {
                    place.error(value.line, format!("`stop` is text or a list of texts, not {}", value.to_json()))
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where the grader or embedder `node` names is called (a provider id alone: its provider's own
/// variables; `{id, config}`: the config's `apiBaseUrl`/`apiHost`, `apiKeyEnvar`, `apiKey`), read as a
/// top-level provider's `config` is.
pub(super) fn server_of(place: &Place, node: &Node) -> Result<Server, PromptfooError> {
    let Some(entries) = node.entries() else { return Ok(Server::default()) };
    let Some(config) = entries.get("config") else { return Ok(Server::default()) };
    let mut provider = from_id(place, node.line, "openai:grader")?;
    settings(place, config, &mut provider)?;
    Ok(Server { base_url: provider.base_url, key_env: provider.api_key_env, key: provider.key })
}

/// `NAME` from `{{ env.NAME }}` or `${NAME}`.
pub(super) fn env_reference(text: &str) -> Option<&str> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix("{{").and_then(|t| t.strip_suffix("}}")) {
        return inner.trim().strip_prefix("env.");
    }
    text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))
}

/// `name`, checked to be an environment variable's name.
fn env_name(place: &Place, line: usize, name: &str) -> Result<String, PromptfooError> {
    if crate::names::is_env_name(name) {
        Ok(name.to_string())
    } else {
        Err(place.error(line, format!("{name:?} is not the name of an environment variable")))
    }
}
