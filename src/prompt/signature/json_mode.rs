//! PtcRunner's JSON mode (loop/json_mode.ex @ec1a0b9d): reading an answer against a signature (the
//! list-wrapper and object-only rules, `:any` unchecked), the retry loop over successive answers, and
//! the prompt texts it sends (system prompt, user message with its Expected Output, error feedback).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::types::{SigType, Signature};
use super::validate::SigIssue;
use crate::output::json::ptc_extract_json;
use crate::output::JsonErrorKind;
use crate::schema::{Check, SchemaIssue};

/// `priv/prompts/json-system.md` (the text between its markers, trimmed).
pub const SYSTEM_PROMPT: &str = "<output_format>\nYou are a helpful assistant that returns structured JSON responses.\n\nReturn ONLY valid JSON matching the expected format. No explanation, no markdown code blocks, just the JSON object.\n</output_format>";

/// `priv/prompts/json-user.md`.
const USER_TEMPLATE: &str = "<task>\n{{task}}\n</task>\n\n<expected_output>\n{{output_instruction}}\n{{field_descriptions}}\n\nExample format:\n```json\n{{example_output}}\n```\n</expected_output>";

/// `priv/prompts/json-error.md`.
const ERROR_TEMPLATE: &str = "<error_feedback>\nYour response was not valid JSON or didn't match the expected format.\n\nError: {{error_message}}\n\nYour response was:\n{{invalid_response}}\n\nPlease return valid JSON matching this format:\n{{expected_format}}\n</error_feedback>";

/// Why an answer (or the whole loop) failed, as PtcRunner's `Step.fail` names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonModeError {
    /// No JSON, invalid JSON, or JSON of the wrong shape (reason `json_parse_error`).
    #[error("{message}")]
    JsonParse { message: String },
    /// JSON that fails the signature (reason `validation_error`); `message` is PtcRunner's
    /// `path: message; …` text, `issues` the same with JSON Pointer paths.
    #[error("{message}")]
    Validation { message: String, issues: Vec<SchemaIssue> },
    /// `max_turns` was 0: no answer was asked for (reason `max_turns_exceeded`).
    #[error("Exceeded max_turns limit of {max_turns}")]
    MaxTurnsExceeded { max_turns: usize },
    /// The loop was given no answer to read (reason `no_answer`).
    #[error("no answer was given")]
    NoAnswer,
}

impl JsonModeError {
    /// PtcRunner's fail reason: `json_parse_error`, `validation_error`, `max_turns_exceeded`, or
    /// tunebench's `no_answer`.
    pub fn reason(&self) -> &'static str {
        match self {
            JsonModeError::JsonParse { .. } => "json_parse_error",
            JsonModeError::Validation { .. } => "validation_error",
            JsonModeError::MaxTurnsExceeded { .. } => "max_turns_exceeded",
            JsonModeError::NoAnswer => "no_answer",
        }
    }

    fn parse(message: &str) -> Self {
        JsonModeError::JsonParse { message: message.to_owned() }
    }
}

const NOT_AN_OBJECT: &str = "Response must be a JSON object, not an array or primitive";

/// Reads one answer as PtcRunner's JSON mode does: PtcRunner's extraction, then the shape rules
/// (a list signature takes a bare array or `{"items": [...]}`; any other signature takes only an
/// object), then validation (skipped for `() -> :any`). The value returned is PtcRunner's
/// `Step.return`: the list unwrapped, every map key's `-` turned into `_` (KeyNormalizer).
pub fn accept(sig: &Signature, answer: &str) -> Result<Value, JsonModeError> {
    let parsed = ptc_extract_json(answer).map_err(|kind| match kind {
        JsonErrorKind::NoJsonFound => JsonModeError::parse("No valid JSON found in response"),
        JsonErrorKind::InvalidJson | JsonErrorKind::SchemaError => JsonModeError::parse("JSON parse error"),
    })?;
    accept_value(sig, &parsed).map(|value| normalize_keys(value.clone()))
}

/// The shape rules and validation of [`accept`] on an already decoded value; returns the part of
/// `value` that is the result (the list inside an `{"items": …}` wrapper, else `value` itself),
/// keys untouched.
pub fn accept_value<'v>(sig: &Signature, value: &'v Value) -> Result<&'v Value, JsonModeError> {
    let expects_list = matches!(sig.returns, SigType::List(_));
    let result = match value {
        Value::Object(map) if expects_list => match map.get("items") {
            Some(items @ Value::Array(_)) => items,
            _ => return Err(JsonModeError::parse("Expected {\"items\": [...]} wrapper for array response")),
        },
        Value::Object(_) => value,
        Value::Array(_) if expects_list => value,
        _ => return Err(JsonModeError::parse(NOT_AN_OBJECT)),
    };
    if sig.returns == SigType::Any {
        return Ok(result);
    }
    sig.validate_segments(result).map_err(|issues| JsonModeError::Validation {
        message: format_issues(&issues),
        issues: issues.into_iter().map(SchemaIssue::from).collect(),
    })?;
    Ok(result)
}

/// PtcRunner's `format_validation_errors/1`: `path.to.field: message`, joined with `; `.
pub fn format_issues(issues: &[SigIssue]) -> String {
    let parts: Vec<String> = issues.iter().map(|issue| format!("{}: {}", issue.dotted_path(), issue.message)).collect();
    parts.join("; ")
}

/// The loop over successive answers: turn `n` reads `answers[n-1]`, stopping at the first accepted
/// one or after `max_turns`. Returns the outcome and the number of turns used. When the answers run
/// out before `max_turns`, the last answer's error stands (PtcRunner would ask the model again).
pub fn run_turns(sig: &Signature, answers: &[&str], max_turns: usize) -> (Result<Value, JsonModeError>, usize) {
    if max_turns == 0 {
        return (Err(JsonModeError::MaxTurnsExceeded { max_turns }), 0);
    }
    let mut outcome = Err(JsonModeError::NoAnswer);
    let mut turns = 0;
    for answer in answers.iter().take(max_turns) {
        turns += 1;
        outcome = accept(sig, answer);
        if outcome.is_ok() {
            break;
        }
    }
    (outcome, turns)
}

/// The user message PtcRunner sends after a failed answer: the error, the answer (cut to 500
/// characters), and the expected format.
pub fn feedback(sig: &Signature, answer: &str, error: &JsonModeError) -> String {
    ERROR_TEMPLATE
        .replace("{{error_message}}", &error.to_string())
        .replace("{{invalid_response}}", &truncate(answer, 500))
        .replace("{{expected_format}}", &example_output(sig))
}

/// The first user message: the task (the rendered prompt) and the Expected Output section.
/// `descriptions` are PtcRunner's `field_descriptions` (for the return map's own fields).
pub fn user_message(sig: &Signature, task: &str, descriptions: &BTreeMap<String, String>) -> String {
    USER_TEMPLATE
        .replace("{{task}}", task)
        .replace("{{output_instruction}}", output_instruction(sig))
        .replace("{{field_descriptions}}", &field_descriptions(sig, descriptions))
        .replace("{{example_output}}", &example_output(sig))
}

/// The Expected Output section's text (what the user message puts inside `<expected_output>`).
pub fn expected_output(sig: &Signature, descriptions: &BTreeMap<String, String>) -> String {
    format!(
        "{}\n{}\n\nExample format:\n```json\n{}\n```",
        output_instruction(sig),
        field_descriptions(sig, descriptions),
        example_output(sig)
    )
}

/// "Return a JSON array:" for a list signature, else "Return a JSON object with these fields:".
pub fn output_instruction(sig: &Signature) -> &'static str {
    match sig.returns {
        SigType::List(_) => "Return a JSON array:",
        _ => "Return a JSON object with these fields:",
    }
}

/// One line per field of a map return type (``- `name` (type) - description``), else the type in
/// parentheses.
pub fn field_descriptions(sig: &Signature, descriptions: &BTreeMap<String, String>) -> String {
    match &sig.returns {
        SigType::Fields(fields) => {
            let lines: Vec<String> = fields
                .iter()
                .map(|(name, ty)| {
                    let description = match descriptions.get(name) {
                        Some(text) if !text.is_empty() => format!(" - {text}"),
                        _ => String::new(),
                    };
                    format!("- `{name}` ({}){description}", type_label(ty))
                })
                .collect();
            lines.join("\n")
        }
        SigType::Any => "(Return your response directly as a JSON object - no wrapper needed)".into(),
        other => format!("({})", type_label(other)),
    }
}

/// PtcRunner's `format_type_name/1`.
pub fn type_label(ty: &SigType) -> String {
    match ty {
        SigType::String | SigType::Keyword => "string".into(),
        SigType::Int => "integer".into(),
        SigType::Float => "number".into(),
        SigType::Bool => "boolean".into(),
        SigType::Any => "any".into(),
        SigType::Map | SigType::Fields(_) => "object".into(),
        SigType::Datetime => "ISO 8601 datetime string with offset (e.g. \"2026-05-03T09:14:00Z\")".into(),
        SigType::List(inner) => format!("array of {}", type_label(inner)),
        SigType::Optional(inner) => format!("{} (optional)", type_label(inner)),
    }
}

/// The example answer, pretty-printed as `Jason.encode!(…, pretty: true)` does (map keys sorted, as a
/// small Elixir map's are).
pub fn example_output(sig: &Signature) -> String {
    serde_json::to_string_pretty(&example_value(&sig.returns)).unwrap_or_default()
}

/// PtcRunner's `build_example_value/1`.
pub fn example_value(ty: &SigType) -> Value {
    match ty {
        SigType::String => "...".into(),
        SigType::Int => 0.into(),
        SigType::Float => 0.0.into(),
        SigType::Bool => true.into(),
        SigType::Keyword => "keyword".into(),
        SigType::Datetime => "2026-05-03T09:14:00Z".into(),
        SigType::Any => serde_json::json!({"data": "...", "key": "value"}),
        SigType::Map => Value::Object(Map::new()),
        SigType::List(inner) => Value::Array(vec![example_value(inner)]),
        SigType::Optional(inner) => example_value(inner),
        SigType::Fields(fields) => {
            let sorted: BTreeMap<&str, Value> =
                fields.iter().map(|(name, ty)| (name.as_str(), example_value(ty))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        }
    }
}

/// Over `max` bytes: the first `max` characters and `...` (PtcRunner's `truncate/2`).
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push_str("...");
    cut
}

/// KeyNormalizer.normalize_keys: every object key's `-` becomes `_`, at any depth (iterative, so no
/// value is too deep).
pub fn normalize_keys(mut value: Value) -> Value {
    let mut stack = vec![&mut value];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if map.keys().any(|key| key.contains('-')) {
                    let old = std::mem::take(map);
                    *map = old.into_iter().map(|(k, v)| (k.replace('-', "_"), v)).collect();
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    value
}

/// A signature as a [`Check`] under the JSON-mode answer rules (shape, then validation): what the
/// `ptc` profile uses when a prompt's schema is a signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerCheck(pub Signature);

impl Check for AnswerCheck {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        match accept_value(&self.0, value) {
            Ok(_) => Ok(None),
            Err(JsonModeError::Validation { issues, .. }) => Err(issues),
            Err(other) => Err(vec![SchemaIssue { path: String::new(), message: other.to_string() }]),
        }
    }
}

#[cfg(test)]
#[path = "json_mode_tests.rs"]
mod tests;
