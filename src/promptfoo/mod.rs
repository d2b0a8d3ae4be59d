//! promptfoo configs (`promptfooconfig.yaml`) read as they are: the prompts, the providers and the
//! tests (inline, or `file://` CSV/JSONL/YAML read through `dataset`), each mistake an error naming
//! `file:line`, each key read but not acted on a listed warning. The semantics follow promptfoo's own
//! documentation (promptfoo.dev/docs/configuration/reference, …/prompts, …/test-cases,
//! …/expected-outputs); where a construct differs here, the error or the warning says so.

mod asserts;
mod cases;
mod columns;
mod node;
mod prompts;
mod providers;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::provider::kind::ProviderKind;
use node::{Node, Tree};

pub use asserts::{parse_expected, Assert};
pub use columns::{cases, check_of, columns, Column};

/// promptfoo's default grader (0.123.1, with an OpenAI key): the judge of an `llm-rubric` that names
/// none, unless `eval --judge` names another.
pub const DEFAULT_GRADER: &str = "openai:gpt-5.6-sol";

/// A config that cannot be read, or a bad value in it: where (`file:line`) and why.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {message}")]
pub struct PromptfooError {
    pub at: String,
    pub message: String,
}

/// A promptfoo config, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The config file.
    pub path: PathBuf,
    pub description: Option<String>,
    pub prompts: Vec<Prompt>,
    pub providers: Vec<Provider>,
    pub tests: Vec<Test>,
    /// `evaluateOptions.repeat`: runs per cell (1 when not given).
    pub repeat: u32,
    /// Keys read but not acted on, each with its `file:line`.
    pub warnings: Vec<String>,
}

/// One prompt: its label, its texts as our Jinja templates, and the schema a `raw` prompt's
/// `config.response_format` names.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub label: String,
    pub system: Option<String>,
    pub template: String,
    /// A `json_schema` response format's schema (the answer is JSON, in structured mode).
    pub schema: Option<Value>,
    /// The answer is JSON (`response_format` `json_object` or `json_schema`).
    pub json: bool,
    /// promptfoo hands code assertions the parsed answer (an inline `json_schema`).
    pub parsed: bool,
    pub at: String,
}

/// One provider: what serves it, the model, its label and settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Provider {
    /// The id as written (`openai:chat:gpt-4o-mini`): a test's `providers` filter matches it or the label.
    pub id: String,
    pub label: String,
    pub kind: ProviderKind,
    pub model: String,
    /// `config.apiBaseUrl` (a vLLM or other OpenAI-compatible server).
    pub base_url: Option<String>,
    /// The environment variable holding the key (`apiKeyEnvar`, or `apiKey: '{{ env.NAME }}'`).
    pub api_key_env: Option<String>,
    /// A key written in the config (`apiKey: sk-…`): used for this provider's requests, never
    /// printed, written or recorded.
    pub key: Option<crate::provider::ApiKey>,
    /// Its `response_format` makes promptfoo hand code assertions the parsed answer.
    pub parsed_output: bool,
    /// `config.stop`: the answer ends at any of these.
    pub stop: Vec<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// `config.response_format` as written (`json_object`, or `json_schema` with its schema).
    pub response_format: Option<Value>,
    pub at: String,
}

/// A grader or an embedder a config names: its id as a check writes it (`openai:gpt-4o-mini`), and
/// where it is called (its `config`'s base URL and key; empty: the provider's own variables).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRef {
    pub id: String,
    pub server: crate::provider::endpoint::Server,
}

/// One test: its name, its variables, its assertions and the score it must reach.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// The `description`, else `test N` and its variables.
    pub name: String,
    pub vars: Map<String, Value>,
    /// `defaultTest`'s assertions, then the test's own.
    pub asserts: Vec<Assert>,
    /// The test's `threshold`: it passes when its weighted score reaches it (else when every
    /// assertion passes).
    pub threshold: Option<f64>,
    /// The test's `providers` filter: it runs on the providers whose label or id these match (`openai:*`
    /// ends in a wildcard); `None`: on every provider.
    pub providers: Option<Vec<String>>,
    pub at: String,
}

impl Test {
    /// Whether the test runs on `provider` (its `providers` filter, as promptfoo matches it: the label
    /// or the id, a trailing `*` matching any rest).
    pub fn runs_on(&self, provider: &Provider) -> bool {
        let Some(filter) = &self.providers else { return true };
        filter.iter().any(|pattern| {
            [provider.label.as_str(), provider.id.as_str()].iter().any(|name| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
        })
    }
}

/// Where a node is: `file:line`.
pub(crate) struct Place<'a> {
    pub path: &'a Path,
}

impl Place<'_> {
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path.display())
    }

    pub fn error(&self, line: usize, message: impl Into<String>) -> PromptfooError {
        PromptfooError { at: self.at(line), message: message.into() }
    }
}

/// Top-level keys read and acted on.
const READ: [&str; 7] = ["description", "prompts", "providers", "tests", "defaultTest", "evaluateOptions", "env"];
/// Top-level keys that change nothing a run or a verdict depends on: read past, with a warning.
const IGNORED: [&str; 8] =
    ["outputPath", "sharing", "metadata", "tags", "writeLatestResults", "tracing", "author", "$schema"];
/// Top-level keys that change what runs or how it is judged, which tunebench does not do: refused.
const REFUSED: [&str; 9] = [
    "scenarios",
    "nunjucksFilters",
    "extensions",
    "derivedMetrics",
    "commandLineOptions",
    "redteam",
    "assertionTemplates",
    "targets",
    "defaultProvider",
];

/// Whether `path` is a promptfoo config rather than a prompt file: named `promptfooconfig…`, or a
/// text whose lines begin with the config's `prompts:` and `providers:` keys (a TOML prompt file
/// cannot: `prompts:` is not TOML). A file that cannot be read is not one (its reader says why).
pub fn is_config(path: &Path) -> bool {
    let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("promptfooconfig"));
    if named {
        return true;
    }
    let Ok(text) = crate::files::read_text(path, crate::files::PROMPT_FILE) else { return false };
    let starts = |key: &str| text.lines().any(|line| line.starts_with(key));
    starts("prompts:") && starts("providers:")
}

/// Reads the config at `path` (a regular file within the prompt file cap); its `file://` paths are
/// resolved in its folder, as a prompt file's are.
pub fn read(path: &Path) -> Result<Config, PromptfooError> {
    let text = crate::files::read_text(path, crate::files::PROMPT_FILE)
        .map_err(|e| PromptfooError { at: path.display().to_string(), message: e.problem.to_string() })?;
    let place = Place { path };
    let root = node::parse(&text).map_err(|(line, message)| place.error(line, format!("not YAML: {message}")))?;
    let Some(entries) = root.entries() else {
        return Err(place.error(root.line, format!("a promptfoo config is a mapping, not {}", root.kind())));
    };
    let base_dir = path.parent().unwrap_or(Path::new(""));
    let mut warnings = Vec::new();
    for (key, value) in &entries {
        if READ.contains(key) {
            continue;
        }
        if IGNORED.contains(key) {
            warnings.push(format!("{}: `{key}` is read past: it changes nothing tunebench runs", place.at(value.line)));
        } else if REFUSED.contains(key) {
            return Err(place.error(
                value.line,
                format!("`{key}` is not supported by tunebench (it would change what runs or how it is judged)"),
            ));
        } else {
            return Err(place
                .error(value.line, format!("unknown key `{key}`; a promptfoo config here holds {}", READ.join(", "))));
        }
    }
    let description = match entries.get("description") {
        None => None,
        Some(node) => Some(text_of(&place, node, "description")?.to_string()),
    };
    let Some(prompt_nodes) = entries.get("prompts") else {
        return Err(place.error(root.line, "the config names no `prompts`"));
    };
    let prompts = prompts::read(&place, base_dir, prompt_nodes, &mut warnings)?;
    let Some(provider_nodes) = entries.get("providers") else {
        return Err(place.error(root.line, "the config names no `providers`"));
    };
    let mut providers = providers::read(&place, provider_nodes)?;
    if let Some(env) = entries.get("env") {
        with_env(&place, env, &mut providers, &mut warnings)?;
    }
    let repeat = match entries.get("evaluateOptions") {
        Some(options) => evaluate_options(&place, options, &mut warnings)?,
        None => 1,
    };
    let tests = cases::read(
        &place,
        base_dir,
        entries.get("tests").copied(),
        entries.get("defaultTest").copied(),
        &mut warnings,
    )?;
    let graders_keyed = tests
        .iter()
        .flat_map(|t| &t.asserts)
        .flat_map(|a| [&a.grader, &a.embedder])
        .flatten()
        .any(|m| m.server.key.is_some());
    if providers.iter().any(|p| p.key.is_some()) || graders_keyed {
        warnings.push(format!(
            "{}: a key written in the config (`apiKey`) is sent to its own provider's server alone; tunebench never shows, writes or records it",
            path.display()
        ));
    }
    Ok(Config { path: path.to_path_buf(), description, prompts, providers, tests, repeat, warnings })
}

/// `env:`: the variables promptfoo sets for its providers. A provider's base URL and key variables
/// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, the variable its `apiKeyEnvar` names) are given to the
/// providers that set none themselves, as the config's own; any other variable is read past.
fn with_env(
    place: &Place,
    node: &Node,
    providers: &mut [Provider],
    warnings: &mut Vec<String>,
) -> Result<(), PromptfooError> {
    let Some(entries) = node.entries() else {
        return Err(place.error(node.line, format!("`env` is a mapping of variables, not {}", node.kind())));
    };
    let value = |name: &str| -> Option<String> {
        let node = entries.get(name)?;
        node.as_text().map(str::to_string).or_else(|| node.as_f64().map(|n| n.to_string()))
    };
    let mut used = std::collections::BTreeSet::new();
    for provider in providers.iter_mut() {
        let Some(vars) = provider.kind.endpoint() else { continue };
        if provider.base_url.is_none() {
            // promptfoo's Ollama provider reads OLLAMA_BASE_URL (tunebench's own variable is OLLAMA_HOST).
            let names: &[&str] = if provider.kind == ProviderKind::Ollama {
                &["OLLAMA_BASE_URL", vars.url_var]
            } else {
                &[vars.url_var]
            };
            if let Some((name, url)) = names.iter().find_map(|name| value(name).map(|url| (*name, url))) {
                provider.base_url = Some(url);
                used.insert(name.to_string());
            }
        }
        if provider.key.is_none() {
            let name = provider.api_key_env.clone().unwrap_or_else(|| vars.key_var.to_string());
            if let Some(key) = value(&name) {
                provider.key = crate::provider::ApiKey::new(key);
                used.insert(name);
            }
        }
    }
    let unused: Vec<&str> = entries.keys().filter(|k| !used.contains(**k)).copied().collect();
    if !unused.is_empty() {
        warnings.push(format!(
            "{}: `env` sets {} for no provider's base URL or key: read past",
            place.at(node.line),
            unused.join(", ")
        ));
    }
    Ok(())
}

/// `evaluateOptions`: `repeat` runs each cell that many times; `maxConcurrency`, `delay`, `cache` and the
/// rest change how fast, not what is judged: read past with a warning.
fn evaluate_options(place: &Place, node: &Node, warnings: &mut Vec<String>) -> Result<u32, PromptfooError> {
    let Some(entries) = node.entries() else {
        return Err(place.error(node.line, format!("`evaluateOptions` is a mapping, not {}", node.kind())));
    };
    let mut repeat = 1;
    for (key, value) in entries {
        if key == "repeat" {
            repeat = value
                .as_f64()
                .filter(|n| n.fract() == 0.0 && (1.0..=1000.0).contains(n))
                .map(|n| n as u32)
                .ok_or_else(|| {
                    place.error(
                        value.line,
                        format!("`repeat` is a whole number from 1 to 1000, not {}", value.to_json()),
                    )
                })?;
        } else {
            warnings.push(format!(
                "{}: `evaluateOptions.{key}` is read past: it changes how the eval runs, not its verdicts",
                place.at(value.line)
            ));
        }
    }
    Ok(repeat)
}

/// The config's text as a record keeps it: every key written in it (`apiKey: sk-…`, not a `{{ env.NAME
/// }}` reference) replaced by `[a key written in the config]`.
pub fn redacted(text: &str) -> String {
    static KEY: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(["']?apiKey["']?\s*:\s*)("[^"\n]*"|'[^'\n]*'|[^\s,}#'"][^,}\n#]*)"#).ok()
    });
    let Some(key) = KEY.as_ref() else { return text.to_string() };
    key.replace_all(text, |caps: &regex::Captures| {
        let value = caps[2].trim_matches(|c| c == '"' || c == '\'');
        if providers::env_reference(value).is_some() {
            caps[0].to_string()
        } else {
            format!("{}'[a key written in the config]'", &caps[1])
        }
    })
    .into_owned()
}

/// The text of `node`, else an error naming `what`.
pub(crate) fn text_of<'a>(place: &Place, node: &'a Node, what: &str) -> Result<&'a str, PromptfooError> {
    node.as_text().ok_or_else(|| place.error(node.line, format!("`{what}` is text, not {}", node.kind())))
}

/// The nodes of a list, or the one node when it is not a list (promptfoo takes either).
pub(crate) fn one_or_many(node: &Node) -> Vec<&Node> {
    match &node.tree {
        Tree::List(items) => items.iter().collect(),
        _ => vec![node],
    }
}

/// The keys of the mapping `node` (`what` names it), each checked against `known`.
pub(crate) fn mapping<'a>(
    place: &Place,
    node: &'a Node,
    what: &str,
    known: &[&str],
) -> Result<std::collections::BTreeMap<&'a str, &'a Node>, PromptfooError> {
    let entries =
        node.entries().ok_or_else(|| place.error(node.line, format!("{what} is a mapping, not {}", node.kind())))?;
    if let Some((key, value)) = entries.iter().find(|(key, _)| !known.contains(key)) {
        return Err(place.error(value.line, format!("unknown key `{key}` in {what}; it holds {}", known.join(", "))));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests;
