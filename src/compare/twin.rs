//! Twin prompts: the json-array twin of a jsonl prompt and back. The output-format part of the
//! template is swapped ([`super::twin_text`]), the schema of one line is wrapped as
//! `{"type": "array", "items": S}` (or unwrapped), a signature's output `T` becomes `[T]` (or back),
//! the id gains or loses `-json`, the description's "(JSONL: one object per line)" becomes "(one JSON
//! array)"; everything else (system, variables, cases, provider, profile) is identical.

use std::path::Path;

use serde_json::{json, Value};

use super::twin_text::{swap_template, Direction};
use crate::output::ResponseType;
use crate::prompt::file::{PromptError, PromptFile};

const LINES_NOTE: &str = " (JSONL: one object per line)";
const ARRAY_NOTE: &str = " (one JSON array)";

/// A derived twin and what the derivation changed, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Twin {
    pub prompt: PromptFile,
    pub notes: Vec<String>,
}

/// Why a prompt has no twin of the asked type.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    #[error("prompt `{id}` is a {from} prompt: it has no {to} twin (twins turn json into jsonl and back)")]
    NotStructured { id: String, from: &'static str, to: &'static str },
    #[error("prompt `{id}`: its schema does not describe an array ({{\"type\": \"array\", \"items\": ...}}), so it has no jsonl twin")]
    NotAnArray { id: String },
    #[error("prompt `{id}`: its signature's output {output:?} is not a list ([...]), so it has no jsonl twin")]
    SignatureNotAList { id: String, output: String },
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// The response type of a prompt's twin: json for jsonl and jsonl for json; a text prompt has none.
pub fn twin_type(of: ResponseType) -> Option<ResponseType> {
    match of {
        ResponseType::Jsonl => Some(ResponseType::Json),
        ResponseType::Json => Some(ResponseType::Jsonl),
        ResponseType::Text => None,
    }
}

/// The twin of `prompt` whose response type is `to` (the prompt itself, unchanged, when it already
/// is). `base_dir` resolves a `schema_file`, which the twin carries inline (wrapped or unwrapped).
pub fn twin_of(prompt: &PromptFile, base_dir: &Path, to: ResponseType) -> Result<Twin, TwinError> {
    if prompt.response_type == to {
        return Ok(Twin { prompt: prompt.clone(), notes: vec!["the prompt itself (already this type)".into()] });
    }
    let direction = match (prompt.response_type, to) {
        (ResponseType::Jsonl, ResponseType::Json) => Direction::ToArray,
        (ResponseType::Json, ResponseType::Jsonl) => Direction::ToLines,
        _ => {
            let (id, from, to) = (prompt.id.clone(), type_name(prompt.response_type), type_name(to));
            return Err(TwinError::NotStructured { id, from, to });
        }
    };
    let mut twin = prompt.clone();
    let mut notes = Vec::new();
    twin.response_type = to;
    twin.id = match direction {
        Direction::ToArray => format!("{}-json", prompt.id),
        Direction::ToLines => {
            prompt.id.strip_suffix("-json").map_or_else(|| format!("{}-jsonl", prompt.id), str::to_string)
        }
    };
    twin.description = prompt.description.as_ref().map(|d| match direction {
        Direction::ToArray => d.replace(LINES_NOTE, ARRAY_NOTE),
        Direction::ToLines => d.replace(ARRAY_NOTE, LINES_NOTE),
    });
    let (template, template_notes) = swap_template(&prompt.template, direction);
    twin.template = template;
    notes.extend(template_notes);
    if let Some(signature) = &prompt.signature {
        twin.signature = Some(swap_signature(&prompt.id, signature, direction)?);
        notes.push(match direction {
            Direction::ToArray => "signature: output wrapped as a list".to_string(),
            Direction::ToLines => "signature: output unwrapped from its list".to_string(),
        });
    } else {
        let schema = match (&prompt.schema, &prompt.schema_file) {
            (Some(schema), _) => Some(schema.clone()),
            (None, Some(file)) => {
                notes.push(format!("schema: {} read and carried inline", file.display()));
                prompt.resolve_schema(base_dir)?.map(|r| r.schema)
            }
            (None, None) => None,
        };
        twin.schema_file = None;
        twin.schema = match schema {
            Some(schema) => Some(match direction {
                Direction::ToArray => {
                    notes.push("schema: wrapped as {\"type\": \"array\", \"items\": ...}".into());
                    json!({"type": "array", "items": schema})
                }
                Direction::ToLines => {
                    let (items, dropped) = unwrap_array(&prompt.id, schema)?;
                    notes.push("schema: the array's items schema taken as the schema of each line".into());
                    if !dropped.is_empty() {
                        notes.push(format!("schema: array keywords dropped: {}", dropped.join(", ")));
                    }
                    items
                }
            }),
            None => {
                notes.push("schema: none (answers are checked as well-formed JSON only)".into());
                None
            }
        };
    }
    Ok(Twin { prompt: twin, notes })
}

fn type_name(response_type: ResponseType) -> &'static str {
    match response_type {
        ResponseType::Text => "text",
        ResponseType::Json => "json",
        ResponseType::Jsonl => "jsonl",
    }
}

/// The `items` schema of an array schema, and the other keywords it had (dropped by the twin).
fn unwrap_array(id: &str, schema: Value) -> Result<(Value, Vec<String>), TwinError> {
    let not_array = || TwinError::NotAnArray { id: id.to_string() };
    let Value::Object(mut map) = schema else { return Err(not_array()) };
    if map.get("type") != Some(&Value::from("array")) {
        return Err(not_array());
    }
    let items = map.remove("items").filter(Value::is_object).ok_or_else(not_array)?;
    map.remove("type");
    let dropped = map.keys().filter(|k| *k != "$defs" && *k != "definitions").cloned().collect();
    let mut items = items;
    // Definitions the items refer to stay reachable.
    if let (Some(defs), Value::Object(target)) = (map.get("$defs").or(map.get("definitions")), &mut items) {
        let key = if map.contains_key("$defs") { "$defs" } else { "definitions" };
        target.entry(key.to_string()).or_insert_with(|| defs.clone());
    }
    Ok((items, dropped))
}

/// A signature's output wrapped as `[T]` or unwrapped from it; the inputs are kept as written.
fn swap_signature(id: &str, signature: &str, direction: Direction) -> Result<String, TwinError> {
    let (inputs, output) = match signature.rfind("->") {
        Some(at) => (signature.get(..at + 2).unwrap_or_default(), signature.get(at + 2..).unwrap_or_default()),
        None => ("", signature),
    };
    let space = if inputs.is_empty() { "" } else { " " };
    let trimmed = output.trim();
    let swapped = match direction {
        Direction::ToArray => format!("[{trimmed}]"),
        Direction::ToLines => match trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Some(inner) => inner.trim().to_string(),
            None => return Err(TwinError::SignatureNotAList { id: id.to_string(), output: trimmed.to_string() }),
        },
    };
    Ok(format!("{}{space}{swapped}", inputs.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_wrap_and_unwrap_their_output() {
        let wrapped = swap_signature("p", "(text :string) -> {name :string}", Direction::ToArray).unwrap();
        assert_eq!(wrapped, "(text :string) -> [{name :string}]");
        assert_eq!(swap_signature("p", &wrapped, Direction::ToLines).unwrap(), "(text :string) -> {name :string}");
        assert_eq!(swap_signature("p", "{a :int}", Direction::ToArray).unwrap(), "[{a :int}]");
        let error = swap_signature("p", "() -> {a :int}", Direction::ToLines).unwrap_err().to_string();
        assert!(error.contains("\"{a :int}\" is not a list"), "{error}");
    }

    #[test]
    fn only_array_schemas_unwrap() {
        let (items, dropped) =
            unwrap_array("p", json!({"type": "array", "items": {"type": "object"}, "minItems": 1})).unwrap();
        assert_eq!((items, dropped), (json!({"type": "object"}), vec!["minItems".to_string()]));
        let error = unwrap_array("p", json!({"type": "object"})).unwrap_err().to_string();
        assert!(error.contains("prompt `p`") && error.contains("does not describe an array"), "{error}");
    }

    #[test]
    fn text_prompts_have_no_twin() {
        let prompt = PromptFile::new("greet", "Hello");
        let error = twin_of(&prompt, Path::new("."), ResponseType::Json).unwrap_err().to_string();
        assert!(error.contains("`greet` is a text prompt"), "{error}");
    }
}
