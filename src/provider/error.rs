//! Provider errors a user can act on, and the API key type that never prints itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::safe_text::escape_controls;

/// An API key. Its `Debug` shows only that a key is there; it is sent in headers and nowhere else.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key; `None` for an empty or blank one.
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(Self(key))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        // Keys shorter than 4 bytes could match ordinary text; they are not worth hiding anyway.
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Why a request failed. Every message names the provider, and the URL, status or value at fault;
/// API keys never appear in it. Serializable, so transcripts and history keep it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderError {
    /// The provider is not set up (missing key, bad URL, unreadable transcript).
    #[error("{provider}: {message}")]
    Config { provider: String, message: String },
    /// No connection could be made.
    #[error("{provider}: cannot reach {url}: {message}. Is the server running, and is the base URL right?")]
    Connect { provider: String, url: String, message: String },
    /// The server answered with an error status.
    #[error("{provider}: HTTP {status} from {url}: {message}{}", hint_suffix(.hint))]
    Http { provider: String, url: String, status: u16, message: String, hint: Option<String> },
    /// The connection broke while the answer was streaming.
    #[error("{provider}: the connection broke mid-stream after {received_bytes} bytes: {message}")]
    Broken { provider: String, received_bytes: u64, message: String },
    /// No byte arrived within the read timeout.
    #[error("{provider}: no data from the server for {} (read timeout); the stream stalled", wait_text(.after_ms))]
    Stalled { provider: String, after_ms: u64 },
    /// A line or event of the stream is not what the API sends.
    #[error("{provider}: malformed {what}: {message}; received: {snippet}")]
    Malformed { provider: String, what: String, message: String, snippet: String },
    /// One line or event grew past the size limit.
    #[error("{provider}: one line of the stream is longer than the {limit_bytes}-byte limit; stopped reading")]
    TooLarge { provider: String, limit_bytes: u64 },
    /// The server answered 2xx with a body of the wrong type.
    #[error("{provider}: expected {expected} from {url}, got content type {got:?}: {snippet}")]
    ContentType { provider: String, url: String, expected: String, got: String, snippet: String },
    /// The server sent an error inside an accepted stream.
    #[error("{provider}: the server reported an error mid-stream: {message}")]
    Server { provider: String, message: String },
    /// One request of a provider batch did not succeed (its error object, or canceled, or expired).
    #[error("{provider} batch: request {custom_id} {message}")]
    Batch { provider: String, custom_id: String, message: String },
}

/// A wait as people say it: `300 ms`, `2 s`, `1.5 s`.
fn wait_text(ms: &u64) -> String {
    match *ms {
        ms if ms < 1000 => format!("{ms} ms"),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{:.1} s", ms as f64 / 1000.0),
    }
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref().map(|h| format!(". {h}")).unwrap_or_default()
}

impl ProviderError {
    /// The HTTP status, for errors that have one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The error with `key` cut out of every field (server bodies may echo what they were sent).
    pub(crate) fn redacted(self, key: Option<&ApiKey>) -> Self {
        let Some(key) = key else { return self };
        let Value::Object(mut fields) = self.to_value() else { return self };
        for value in fields.values_mut() {
            if let Value::String(text) = value {
                *text = key.redact(text);
            }
        }
        serde_json::from_value(Value::Object(fields)).unwrap_or(self)
    }

    /// The error as the JSON value a transcript's end line carries.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads back an error written by [`Self::to_value`]; any other value becomes a `Server` error.
    pub fn from_value(provider: &str, value: &Value) -> Self {
        serde_json::from_value(value.clone())
            .unwrap_or_else(|_| Self::Server { provider: provider.to_string(), message: snippet(&value.to_string()) })
    }
}

/// Up to 300 characters of `text`, control characters escaped, marked when cut.
pub(crate) fn snippet(text: &str) -> String {
    const MAX: usize = 300;
    let trimmed = text.trim();
    let mut cut: String = trimmed.chars().take(MAX).collect();
    if cut.len() < trimmed.len() {
        cut.push_str(&format!("… ({} bytes in all)", trimmed.len()));
    }
    escape_controls(&cut).into_owned()
}

/// The message inside an error body: OpenAI's `error.message`, Anthropic's `error.message`,
/// Ollama's `error`, FastAPI's `detail`, or the body text itself.
pub(crate) fn body_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let found = [&value["error"]["message"], &value["error"], &value["detail"], &value["message"]]
            .into_iter()
            .find_map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                Value::Object(_) | Value::Array(_) => None,
                other => Some(other.to_string()),
            });
        if let Some(message) = found {
            return snippet(&message);
        }
    }
    if body.trim().is_empty() {
        return "(empty body)".to_string();
    }
    snippet(body)
}

/// A `reqwest` error with its whole source chain ("error sending request: connection refused").
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(key.redact("bad key sk-secret-123 given"), "bad key [redacted] given");
        assert!(ApiKey::new("  ").is_none());
    }

    #[test]
    fn messages_come_out_of_every_error_body_shape() {
        assert_eq!(body_message(r#"{"error":{"message":"too long","type":"x"}}"#), "too long");
        assert_eq!(body_message(r#"{"error":"model 'x' not found"}"#), "model 'x' not found");
        assert_eq!(body_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(body_message(r#"{"type":"error","error":{"type":"a","message":"Overloaded"}}"#), "Overloaded");
        assert_eq!(body_message("Internal Server Error"), "Internal Server Error");
        assert_eq!(body_message(""), "(empty body)");
        let long = "x".repeat(1000);
        assert!(body_message(&long).ends_with("(1000 bytes in all)"));
        assert_eq!(snippet("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }

    #[test]
    fn errors_round_trip_through_transcript_values() {
        let error = ProviderError::Http {
            provider: "openai".into(),
            url: "http://h/v1/chat/completions".into(),
            status: 401,
            message: "bad key".into(),
            hint: Some("Set OPENAI_API_KEY".into()),
        };
        assert_eq!(
            error.to_string(),
            "openai: HTTP 401 from http://h/v1/chat/completions: bad key. Set OPENAI_API_KEY"
        );
        assert_eq!(ProviderError::from_value("openai", &error.to_value()), error);
        let other = ProviderError::from_value("openai", &serde_json::json!({"weird": 1}));
        assert!(matches!(other, ProviderError::Server { .. }));
    }
}
