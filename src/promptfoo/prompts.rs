//! A config's `prompts` (promptfoo.dev/docs/configuration/prompts): inline text, `file://` text files
//! (prompts split on lines of `---`), `file://` chat JSON files and inline chat JSON (`[{role,
//! content}]`: one optional system message and one user message), and `{id, label, raw, config}`
//! objects. Nunjucks templates are compiled as our Jinja templates: `{{ var }}`, `{% if %}`,
//! `{% for %}` and the common filters mean the same; a construct minijinja does not know (Nunjucks'
//! `dump` filter, custom filters) is an error at the prompt's line. `file://` prompts in JavaScript or
//! Python are refused.

use std::path::Path;

use serde_json::Value;

use super::node::Node;
use super::{mapping, one_or_many, text_of, Place, Prompt, PromptfooError};
use crate::prompt::file::named;
use crate::prompt::template::{Part, Template};

/// What a prompt object may hold.
const OBJECT_KEYS: [&str; 4] = ["id", "label", "raw", "config"];

pub(super) fn read(
    place: &Place,
    base_dir: &Path,
    node: &Node,
    warnings: &mut Vec<String>,
) -> Result<Vec<Prompt>, PromptfooError> {
    let mut prompts = Vec::new();
    for item in one_or_many(node) {
        if let Some(text) = item.as_text() {
            prompts.extend(from_text(place, base_dir, item.line, text, None)?);
            continue;
        }
        let entries = mapping(place, item, "a prompt", &OBJECT_KEYS)?;
        let label = entries.get("label").map(|n| text_of(place, n, "label")).transpose()?;
        let mut read = match (entries.get("raw"), entries.get("id")) {
            (Some(raw), None) => from_text(place, base_dir, raw.line, text_of(place, raw, "raw")?, label)?,
            (None, Some(id)) => from_text(place, base_dir, id.line, text_of(place, id, "id")?, label)?,
            (Some(raw), Some(_)) => return Err(place.error(raw.line, "a prompt gives `raw` or `id`, not both")),
            (None, None) => {
                return Err(place.error(item.line, "a prompt object needs `raw` (its text) or `id` (file://…)"))
            }
        };
        if let Some(config) = entries.get("config") {
            let format = response_format(place, config, warnings)?;
            for prompt in &mut read {
                prompt.schema.clone_from(&format.schema);
                prompt.json = format.json;
                prompt.parsed = format.parsed();
            }
        }
        prompts.extend(read);
    }
    if prompts.is_empty() {
        return Err(place.error(node.line, "`prompts` lists no prompt"));
    }
    let mut seen = std::collections::HashMap::new();
    for prompt in &prompts {
        if let Some(first) = seen.insert(prompt.label.clone(), prompt.at.clone()) {
            return Err(PromptfooError {
                at: prompt.at.clone(),
                message: format!(
                    "a second prompt labelled {:?} (the first is at {first}); give each a `label`",
                    prompt.label
                ),
            });
        }
    }
    Ok(prompts)
}

/// The prompts `text` gives: a `file://` path's, chat JSON's, or the text itself.
fn from_text(
    place: &Place,
    base_dir: &Path,
    line: usize,
    text: &str,
    label: Option<&str>,
) -> Result<Vec<Prompt>, PromptfooError> {
    let at = place.at(line);
    let Some(name) = text.strip_prefix("file://") else {
        // promptfoo labels an inline prompt by its text.
        let label = label.map_or_else(|| text.to_string(), str::to_string);
        return Ok(vec![one(place, line, label, text)?]);
    };
    let name = Path::new(name);
    let extension = name.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if matches!(extension.as_str(), "js" | "cjs" | "mjs" | "ts" | "py" | "jinja" | "j2")
        || name.to_string_lossy().contains(':')
    {
        return Err(place.error(line, format!("the prompt {text:?} is code (or a function in a file); tunebench reads text and chat JSON prompts only")));
    }
    let (path, contents) = named::read(base_dir, "prompts", name, None, crate::files::PROMPT_FILE)
        .map_err(|e| PromptfooError { at: at.clone(), message: e.to_string() })?;
    let shown = format!("file://{}", name.display());
    if extension == "json" {
        let label = label.map_or(shown, str::to_string);
        return Ok(vec![one(place, line, label, &contents)?]);
    }
    // A text file holds one prompt, or several separated by a line of `---`.
    let parts: Vec<&str> = split_prompts(&contents);
    let many = parts.len() > 1;
    let mut prompts = Vec::new();
    for (index, part) in parts.into_iter().enumerate() {
        let label = match (label, many) {
            (Some(label), false) => label.to_string(),
            (Some(label), true) => format!("{label} {}", index + 1),
            (None, false) => shown.clone(),
            (None, true) => format!("{shown} {}", index + 1),
        };
        let mut prompt = one(place, line, label, part).map_err(|e| PromptfooError {
            at: e.at,
            message: format!("{} (prompt {} of {})", e.message, index + 1, path.display()),
        })?;
        prompt.at = at.clone();
        prompts.push(prompt);
    }
    Ok(prompts)
}

/// A text file's prompts: the parts between lines that are `---` alone.
fn split_prompts(contents: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in contents.split_inclusive('\n') {
        if line.trim_end() == "---" {
            parts.push(&contents[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    parts.push(&contents[start..]);
    parts.into_iter().map(|p| p.trim_matches('\n')).filter(|p| !p.trim().is_empty()).collect()
}

/// One prompt from its text: chat JSON (`[{role, content}]`) or a template.
fn one(place: &Place, line: usize, label: String, text: &str) -> Result<Prompt, PromptfooError> {
    let (system, template) = match chat(text) {
        Some(messages) => chat_parts(place, line, &messages)?,
        None => (None, text.to_string()),
    };
    for (part, source) in [(Part::System, system.as_deref()), (Part::Template, Some(template.as_str()))] {
        if let Some(source) = source {
            // minijinja finds an unknown filter only when it renders: Nunjucks' own is refused here.
            if source.split('|').skip(1).any(|after| after.trim_start().starts_with("dump")) {
                return Err(place.error(
                    line,
                    format!(
                        "the prompt {label:?} uses Nunjucks' `dump` filter, which is `tojson` here; write `| tojson`"
                    ),
                ));
            }
            Template::compile(part, source).map_err(|e| {
                place.error(line, format!("the prompt {label:?} is not a template tunebench reads: {e}"))
            })?;
        }
    }
    Ok(Prompt { label, system, template, schema: None, json: false, parsed: false, at: place.at(line) })
}

/// `text` as chat messages, when it is a JSON list of `{role, content}`.
fn chat(text: &str) -> Option<Vec<Value>> {
    if !text.trim_start().starts_with('[') {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(messages)) if messages.iter().all(|m| m.get("role").is_some()) => Some(messages),
        _ => None,
    }
}

/// The system and user texts of chat messages: at most one system message, then one user message.
fn chat_parts(place: &Place, line: usize, messages: &[Value]) -> Result<(Option<String>, String), PromptfooError> {
    let mut system = None;
    let mut user = None;
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        let Some(content) = message.get("content").and_then(Value::as_str) else {
            return Err(place.error(line, format!("a chat message's `content` is text here (role {role:?})")));
        };
        match (role, &system, &user) {
            ("system", None, None) => system = Some(content.to_string()),
            ("user", _, None) => user = Some(content.to_string()),
            _ => {
                return Err(place.error(
                    line,
                    format!("a chat prompt here is one system message and one user message; a {role:?} message comes where tunebench has no turn for it"),
                ))
            }
        }
    }
    let user = user.ok_or_else(|| place.error(line, "a chat prompt needs a user message"))?;
    Ok((system, user))
}

/// A prompt's `config`: `response_format` read (the schema of a `json_schema`), anything else warned.
fn response_format(place: &Place, config: &Node, warnings: &mut Vec<String>) -> Result<Format, PromptfooError> {
    let entries = config
        .entries()
        .ok_or_else(|| place.error(config.line, format!("a prompt's `config` is a mapping, not {}", config.kind())))?;
    let mut result = Format { schema: None, json: false, value: Value::Null, from_file: false };
    for (key, value) in entries {
        if key != "response_format" {
            warnings.push(format!(
                "{}: a prompt's `config.{key}` is read past (set it on the provider)",
                place.at(value.line)
            ));
            continue;
        }
        result = schema_of(place, value)?;
    }
    Ok(result)
}

/// A `response_format` read: the schema it names, whether the answer is JSON, the format as sent.
pub(super) struct Format {
    pub schema: Option<Value>,
    pub json: bool,
    pub value: Value,
    /// Read from a `file://`: promptfoo then hands assertions the answer's text, not the object.
    pub from_file: bool,
}

impl Format {
    /// Whether promptfoo hands `javascript`/`python` assertions the parsed answer: an inline
    /// `json_schema` (not `json_object`, not a schema from a file), as promptfoo 0.123.1 does.
    pub fn parsed(&self) -> bool {
        self.schema.is_some() && !self.from_file
    }
}

/// The schema a `response_format` names, and whether the answer is JSON.
pub(super) fn schema_of(place: &Place, node: &Node) -> Result<Format, PromptfooError> {
    // `response_format: file://schema.json` is the format read from that file (inside the config's folder).
    let (format, from_file) = match node.as_text().and_then(|t| t.strip_prefix("file://")) {
        Some(file) => {
            let base_dir = place.path.parent().unwrap_or(Path::new(""));
            let (_, text) = named::read(base_dir, "response_format", Path::new(file), None, crate::files::INPUT_TEXT)
                .map_err(|e| place.error(node.line, e.to_string()))?;
            let value = serde_json::from_str::<Value>(&text)
                .map_err(|e| place.error(node.line, format!("the response format in {file:?} is not JSON: {e}")))?;
            (value, true)
        }
        None => (node.to_json(), false),
    };
    let read = |schema: Option<Value>, json: bool| Format { schema, json, value: format.clone(), from_file };
    match format.get("type").and_then(Value::as_str) {
        Some("json_object") => Ok(read(None, true)),
        Some("json_schema") => match format.pointer("/json_schema/schema") {
            Some(schema @ Value::Object(_)) => Ok(read(Some(schema.clone()), true)),
            _ => Err(place.error(node.line, "a `json_schema` response format needs `json_schema.schema`, an object")),
        },
        Some("text") => Ok(read(None, false)),
        other => Err(place.error(
            node.line,
            format!(
                "`response_format.type` is json_object, json_schema or text, not {}",
                other.map_or("missing".to_string(), |t| format!("{t:?}"))
            ),
        )),
    }
}
