//! TrustGraph prompt configuration: import into prompt files, export back, byte-exact for the
//! canonical form.
//!
//! TrustGraph keeps prompts in its configuration under the type `prompt`: a global `system` text,
//! `template-index` (the ids, in order) and one `template.<id>` entry per prompt holding `prompt`
//! (the template), `response-type` (`text`, `json`, `jsonl`; TrustGraph's default is `text`) and an
//! optional `schema` (for `jsonl`, of each line). A seed/config file holds these values as JSON; the
//! config service stores each value JSON-encoded in a string (what `PromptManager.load_config`
//! reads). Import accepts both, with or without the `{"prompt": …}` wrapper, plus a global `terms`
//! object (TrustGraph's global terms: variables under every prompt's own).
//!
//! Export writes the canonical form, which import reads back to the same prompts:
//! `{"prompt": {"system", "terms" (if any), "template-index", "template.<id>": {"prompt",
//! "response-type", "schema" (if any)}}}`, pretty-printed with two-space indents and a final newline.

use serde_json::{Map, Value};

use super::file::{PromptError, PromptFile};
use super::template::Variables;
use crate::output::ResponseType;

/// A TrustGraph prompt configuration, read: the global parts and one prompt file per template.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustGraphConfig {
    /// The global system text (`None` when the configuration has none: TrustGraph then says "Be helpful.").
    pub system: Option<String>,
    /// The global terms.
    pub terms: Variables,
    /// The prompts in `template-index` order, each carrying the global system and terms.
    pub prompts: Vec<PromptFile>,
    /// What the import ignored or interpreted, one sentence each.
    pub notes: Vec<String>,
}

/// The configuration JSON an export produced, and what it left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    pub json: String,
    pub notes: Vec<String>,
}

/// A configuration that cannot be imported, or prompts that cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum TrustGraphError {
    /// The configuration is not JSON.
    #[error("not JSON at line {line}, column {column}: {message}")]
    Json { line: usize, column: usize, message: String },
    /// A value has the wrong shape; `at` is its JSON Pointer in the configuration.
    #[error("at {at}: {message}")]
    Invalid { at: String, message: String },
    /// Prompts disagree on what TrustGraph holds once for all prompts.
    #[error("prompts `{first}` and `{second}` have a different {what}; a TrustGraph configuration has one {what} for all prompts")]
    Disagree { what: &'static str, first: String, second: String },
    /// Two prompts to export have one id.
    #[error("two prompts have the id `{id}`; TrustGraph names each template once")]
    DuplicateId { id: String },
    /// A prompt's schema file is not inlined yet.
    #[error("prompt `{id}`: its schema_file must be inlined before export (PromptFile::inline_schema)")]
    SchemaFile { id: String },
    /// A prompt's schema cannot be resolved.
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// Reads a TrustGraph prompt configuration (see the module docs for the accepted forms).
pub fn import(config_json: &str) -> Result<TrustGraphConfig, TrustGraphError> {
    let text = config_json.strip_prefix('\u{feff}').unwrap_or(config_json);
    let root: Value = serde_json::from_str(text).map_err(|e| TrustGraphError::Json {
        line: e.line(),
        column: e.column(),
        message: without_position(&e),
    })?;
    let Value::Object(root) = root else {
        return Err(invalid("", "expected a JSON object (a TrustGraph configuration)"));
    };
    let mut notes = Vec::new();
    let (section, base) = match root.get("prompt") {
        Some(Value::Object(section)) => {
            let others: Vec<&str> = root.keys().map(String::as_str).filter(|k| *k != "prompt").collect();
            if !others.is_empty() {
                notes.push(format!("ignored configuration types other than `prompt`: {}", others.join(", ")));
            }
            (section, "/prompt".to_string())
        }
        Some(_) => return Err(invalid("/prompt", "expected an object of prompt configuration entries")),
        None if root.contains_key("template-index") => (&root, String::new()),
        None => {
            return Err(invalid("", "no prompt configuration: expected a `prompt` object or a `template-index` entry"))
        }
    };
    let at = |key: &str| format!("{base}/{}", key.replace('~', "~0").replace('/', "~1"));
    // The config service stores every value JSON-encoded; a seed file holds plain JSON.
    let encoded = matches!(section.get("template-index"), Some(Value::String(_)));
    let decode = |key: &str| -> Result<Option<Value>, TrustGraphError> {
        match section.get(key) {
            Some(Value::String(s)) if encoded => serde_json::from_str(s)
                .map(Some)
                .map_err(|e| invalid(&at(key), &format!("a JSON-encoded value was expected: {e}"))),
            other => Ok(other.cloned()),
        }
    };

    let index = match decode("template-index")? {
        Some(Value::Array(ids)) => ids,
        Some(_) => return Err(invalid(&at("template-index"), "expected a list of prompt ids")),
        None => return Err(invalid(&at("template-index"), "missing: TrustGraph loads only the prompts listed there")),
    };
    let system = match decode("system") {
        Ok(Some(Value::String(s))) => Some(s),
        Ok(None) => None,
        Ok(Some(_)) => return Err(invalid(&at("system"), "expected a string")),
        Err(_) => {
            notes.push("`system` is not JSON-encoded like the other entries; taken as written".into());
            section.get("system").and_then(Value::as_str).map(str::to_string)
        }
    };
    let terms = match decode("terms")? {
        Some(Value::Object(terms)) => terms,
        None => Variables::new(),
        Some(_) => return Err(invalid(&at("terms"), "expected an object of term names and values")),
    };

    let mut prompts: Vec<PromptFile> = Vec::with_capacity(index.len());
    for (i, id) in index.iter().enumerate() {
        let Some(id) = id.as_str() else {
            return Err(invalid(&format!("{}/{i}", at("template-index")), "expected a prompt id (a string)"));
        };
        check_id(id).map_err(|m| invalid(&format!("{}/{i}", at("template-index")), &m))?;
        if prompts.iter().any(|p| p.id == id) {
            return Err(invalid(
                &format!("{}/{i}", at("template-index")),
                &format!("prompt id {id:?} is listed twice"),
            ));
        }
        let key = format!("template.{id}");
        let entry = match decode(&key)? {
            Some(Value::Object(entry)) => entry,
            Some(_) => return Err(invalid(&at(&key), "expected an object with `prompt`, `response-type`, `schema`")),
            None => return Err(invalid(&at(&key), &format!("missing: `template-index` lists {id:?}"))),
        };
        prompts.push(import_prompt(id, &entry, &at(&key), &system, &terms, &mut notes)?);
    }
    let listed: Vec<String> = prompts.iter().map(|p| format!("template.{}", p.id)).collect();
    let unlisted: Vec<&str> = section
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "system" | "template-index" | "terms") && !listed.iter().any(|l| l == k))
        .collect();
    if !unlisted.is_empty() {
        notes.push(format!(
            "ignored entries not in `template-index` (TrustGraph ignores them too): {}",
            unlisted.join(", ")
        ));
    }
    Ok(TrustGraphConfig { system, terms, prompts, notes })
}

fn import_prompt(
    id: &str,
    entry: &Map<String, Value>,
    at: &str,
    system: &Option<String>,
    terms: &Variables,
    notes: &mut Vec<String>,
) -> Result<PromptFile, TrustGraphError> {
    let template = match entry.get("prompt") {
        Some(Value::String(t)) => t.clone(),
        _ => return Err(invalid(&format!("{at}/prompt"), "missing or not a string: the prompt template")),
    };
    let response_type = match entry.get("response-type") {
        None => ResponseType::Text,
        Some(Value::String(t)) if t == "text" => ResponseType::Text,
        Some(Value::String(t)) if t == "json" => ResponseType::Json,
        Some(Value::String(t)) if t == "jsonl" => ResponseType::Jsonl,
        Some(other) => {
            return Err(invalid(
                &format!("{at}/response-type"),
                &format!("{other} is not one of \"text\", \"json\", \"jsonl\""),
            ))
        }
    };
    let mut schema = match entry.get("schema") {
        None | Some(Value::Null) => None,
        Some(s) => Some(s.clone()),
    };
    for (key, value) in entry {
        match key.as_str() {
            "prompt" | "response-type" | "schema" => {}
            "id" if value.as_str() == Some(id) => {}
            "object-schema" if schema.is_none() => {
                notes.push(format!(
                    "{id}: took `object-schema` as the schema (TrustGraph's prompt manager reads only `schema`)"
                ));
                schema = Some(value.clone());
            }
            other => notes.push(format!("{id}: ignored `{other}`")),
        }
    }
    let mut prompt = PromptFile::new(id, template);
    prompt.system = system.clone();
    prompt.response_type = response_type;
    prompt.schema = schema;
    prompt.terms = terms.clone();
    Ok(prompt)
}

/// Writes `prompts` as a canonical TrustGraph configuration. A signature becomes its JSON Schema;
/// a `schema_file` must be inlined first ([`PromptFile::inline_schema`], which knows the directory).
pub fn export(prompts: &[PromptFile]) -> Result<Exported, TrustGraphError> {
    let system = one_for_all(prompts, "system text", |p| p.system.as_ref())?;
    let terms = one_for_all(prompts, "set of terms", |p| Some(&p.terms).filter(|t| !t.is_empty()))?;
    let mut section = Map::new();
    if let Some(system) = system {
        section.insert("system".into(), Value::String(system.clone()));
    }
    if let Some(terms) = terms {
        section.insert("terms".into(), Value::Object(terms.clone()));
    }
    section.insert("template-index".into(), prompts.iter().map(|p| Value::String(p.id.clone())).collect());
    let mut notes = Vec::new();
    let mut left_out: Vec<(&str, usize)> = Vec::new();
    for prompt in prompts {
        if section.contains_key(&format!("template.{}", prompt.id)) {
            return Err(TrustGraphError::DuplicateId { id: prompt.id.clone() });
        }
        let mut entry = Map::new();
        entry.insert("prompt".into(), Value::String(prompt.template.clone()));
        entry.insert("response-type".into(), serde_json::to_value(prompt.response_type).unwrap_or(Value::Null));
        if prompt.schema_file.is_some() {
            return Err(TrustGraphError::SchemaFile { id: prompt.id.clone() });
        }
        if prompt.signature.is_some() {
            notes.push(format!("{}: signature written as its JSON Schema", prompt.id));
        }
        if let Some(resolved) = prompt.resolve_schema(std::path::Path::new("."))? {
            entry.insert("schema".into(), resolved.schema);
        }
        section.insert(format!("template.{}", prompt.id), Value::Object(entry));
        for (field, present) in [
            ("description", prompt.description.is_some()),
            ("variables", !prompt.variables.is_empty()),
            ("cases", !prompt.cases.is_empty()),
            ("max_turns", prompt.max_turns.is_some()),
            ("provider", !prompt.provider.is_empty()),
            ("profile", prompt.profile.is_some()),
        ] {
            if present {
                match left_out.iter_mut().find(|(f, _)| *f == field) {
                    Some((_, n)) => *n += 1,
                    None => left_out.push((field, 1)),
                }
            }
        }
    }
    if !left_out.is_empty() {
        let list: Vec<String> = left_out.iter().map(|(f, n)| format!("{f} ({n} of {})", prompts.len())).collect();
        notes.push(format!("left out, as a TrustGraph configuration has no place for them: {}", list.join(", ")));
    }
    let mut root = Map::new();
    root.insert("prompt".into(), Value::Object(section));
    let mut json = serde_json::to_string_pretty(&Value::Object(root))
        .map_err(|e| invalid("", &format!("cannot write JSON: {e}")))?;
    json.push('\n');
    Ok(Exported { json, notes })
}

/// The one value all prompts that have one agree on (`None` when none has one).
fn one_for_all<'a, T: PartialEq>(
    prompts: &'a [PromptFile],
    what: &'static str,
    get: impl Fn(&'a PromptFile) -> Option<&'a T>,
) -> Result<Option<&'a T>, TrustGraphError> {
    let mut found: Option<(&PromptFile, &T)> = None;
    for prompt in prompts {
        let Some(value) = get(prompt) else { continue };
        match found {
            Some((first, v)) if v != value => {
                return Err(TrustGraphError::Disagree { what, first: first.id.clone(), second: prompt.id.clone() })
            }
            Some(_) => {}
            None => found = Some((prompt, value)),
        }
    }
    Ok(found.map(|(_, v)| v))
}

/// An id becomes a file name (`<id>.toml`): no separators, no leading dot, no control characters.
fn check_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("prompt id {id:?} cannot be a file name (use letters, digits, `-`, `_`, `.`; no leading dot)"))
    }
}

/// serde_json's message without its " at line L column C" tail (the error says where already).
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    }
}

fn invalid(at: &str, message: &str) -> TrustGraphError {
    TrustGraphError::Invalid {
        at: if at.is_empty() { "the top level".into() } else { at.to_string() },
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests;
