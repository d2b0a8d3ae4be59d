//! What is sent to a provider: messages, model, sampling limits and the structured-output mode.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    /// A previous answer of the model (earlier turns of a retry with feedback).
    Assistant,
}

impl Role {
    /// The role's name on the wire of every supported API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

/// How the answer is held to JSON (a run setting; ARCHITECTURE.md, "Rules written once").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StructuredMode {
    /// Prompt only (the schema, if any, is described in the prompt).
    #[default]
    None,
    /// The server guarantees well-formed JSON; the schema goes in the prompt.
    JsonObject,
    /// The server's strict schema mode (`response_format` json_schema, Ollama `format`).
    JsonSchema,
    /// Schema-constrained decoding of the local model.
    Constrained,
}

impl StructuredMode {
    /// The mode's name as the CLI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::JsonObject => "json-object",
            Self::JsonSchema => "json-schema",
            Self::Constrained => "constrained",
        }
    }

    /// Reads a CLI name (`none`, `json-object`, `json-schema`, `constrained`).
    pub fn parse(text: &str) -> Option<Self> {
        [Self::None, Self::JsonObject, Self::JsonSchema, Self::Constrained].into_iter().find(|m| m.as_str() == text)
    }
}

impl std::fmt::Display for StructuredMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request to a model. It holds no credentials, so it can be written to transcripts and history as is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model name (may be empty for servers that serve one model).
    #[serde(default)]
    pub model: String,
    /// System, user and earlier assistant messages, in order.
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    #[serde(default)]
    pub structured: StructuredMode,
    /// The JSON Schema of the answer (for json, of the whole answer; for jsonl, of each line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The answer is JSON Lines and `schema` describes each line (the local model constrains line by line).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub jsonl: bool,
    /// The sampling seed (the local model; the same seed gives the same answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The local model's repetition penalty (llama.cpp's `--repeat-penalty`); none or 1 is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    /// How many of the answer's last tokens the penalty looks at (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_last_n: Option<u32>,
    /// Ask an OpenAI-compatible server for each token's probability and the runner-up (`logprobs`,
    /// `top_logprobs: 2`); the local model always reports them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// The local model thinks first, at most this many tokens, before its answer (a chat template with
    /// a thinking mode, Qwen3's); the thought is sent apart ([`Event::Thinking`](super::Event::Thinking)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u32>,
}

impl Request {
    /// An empty request for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self { model: model.into(), ..Self::default() }
    }

    /// Adds a system message.
    pub fn system(self, content: impl Into<String>) -> Self {
        self.message(Role::System, content)
    }

    /// Adds a user message.
    pub fn user(self, content: impl Into<String>) -> Self {
        self.message(Role::User, content)
    }

    /// Adds an earlier answer of the model (a previous turn).
    pub fn assistant(self, content: impl Into<String>) -> Self {
        self.message(Role::Assistant, content)
    }

    /// Adds a message.
    pub fn message(mut self, role: Role, content: impl Into<String>) -> Self {
        self.messages.push(Message { role, content: content.into() });
        self
    }

    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    pub fn stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the structured-output mode and the schema it enforces.
    pub fn structured(mut self, mode: StructuredMode, schema: Option<Value>) -> Self {
        self.structured = mode;
        self.schema = schema;
        self
    }

    /// Every system message, joined by blank lines (APIs with one top-level system prompt).
    pub fn system_text(&self) -> String {
        let parts: Vec<&str> =
            self.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
        parts.join("\n\n")
    }

    /// The user and assistant messages, in order.
    pub fn turns(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(|m| m.role != Role::System)
    }

    /// All message text, for counting input tokens when a server reports none.
    pub(crate) fn input_text(&self) -> String {
        let parts: Vec<&str> = self.messages.iter().map(|m| m.content.as_str()).collect();
        parts.join("\n")
    }

    /// This request with the schema described in the system prompt (prompt-based JSON).
    /// Unchanged when there is no schema.
    pub fn with_schema_in_prompt(&self) -> Self {
        let mut request = self.clone();
        let Some(schema) = &self.schema else { return request };
        let text = schema_instructions(schema);
        match request.messages.iter_mut().rev().find(|m| m.role == Role::System) {
            Some(system) => {
                system.content.push_str("\n\n");
                system.content.push_str(&text);
            }
            None => request.messages.insert(0, Message { role: Role::System, content: text }),
        }
        request
    }
}

/// The prompt text that asks for JSON matching `schema` when the server cannot enforce it.
pub fn schema_instructions(schema: &Value) -> String {
    let schema_text = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "Answer with JSON only: no prose and no code fence. The JSON must validate against this JSON Schema:\n{schema_text}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_and_serializes_without_empty_fields() {
        let request = Request::new("m").system("be brief").user("hi").max_tokens(8);
        let value = serde_json::to_value(&request).unwrap();
        assert_eq!(
            value,
            json!({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],
                   "max_tokens":8,"structured":"none"})
        );
        let back: Request = serde_json::from_value(value).unwrap();
        assert_eq!(back, request);
    }

    #[test]
    fn schema_goes_into_the_last_system_message_or_a_new_one() {
        let schema = json!({"type":"object"});
        let with = Request::new("m").system("s").user("u").structured(StructuredMode::JsonSchema, Some(schema.clone()));
        let prompted = with.with_schema_in_prompt();
        assert!(prompted.messages[0].content.starts_with("s\n\nAnswer with JSON only"), "{prompted:?}");
        assert!(prompted.messages[0].content.contains("\"type\": \"object\""));
        let without_system = Request::new("m").user("u").structured(StructuredMode::JsonObject, Some(schema));
        let prompted = without_system.with_schema_in_prompt();
        assert_eq!(prompted.messages[0].role, Role::System);
        assert_eq!(prompted.messages.len(), 2);
        assert_eq!(Request::new("m").user("u").with_schema_in_prompt().messages.len(), 1);
    }

    #[test]
    fn modes_have_cli_names() {
        for mode in
            [StructuredMode::None, StructuredMode::JsonObject, StructuredMode::JsonSchema, StructuredMode::Constrained]
        {
            assert_eq!(StructuredMode::parse(mode.as_str()), Some(mode));
            assert_eq!(serde_json::to_value(mode).unwrap(), json!(mode.as_str()));
        }
        assert_eq!(StructuredMode::parse("json_schema"), None);
    }
}
