//! Helpers: fixtures, servers, collecting a stream, and building SSE chunks by hand.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tunebench::provider::http::HttpOptions;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::wire_server::{reply_from_recording, Reply, WireServer};
use tunebench::provider::{Event, EventStream, FinishReason, ProviderError, Usage};

/// A fixture file under `tests/fixtures/wire/`.
pub fn fixture(path: &str) -> String {
    let full = format!("{}/tests/fixtures/wire/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The reply that serves a recording again.
pub fn recorded(path: &str) -> Reply {
    reply_from_recording(&fixture(path), 1.0).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub async fn serve(replies: Vec<Reply>) -> WireServer {
    WireServer::start(replies).await.expect("bind 127.0.0.1")
}

/// Options with short limits so fault tests are quick.
pub fn quick() -> HttpOptions {
    HttpOptions {
        read_timeout: Duration::from_secs(5),
        max_retry_wait: Duration::from_secs(5),
        ..HttpOptions::default()
    }
}

pub fn openai(server: &WireServer, options: HttpOptions) -> OpenAi {
    OpenAi::new(&format!("{}/v1", server.url()), None, options).expect("provider")
}

pub async fn collect(stream: EventStream) -> Vec<Event> {
    tokio::time::timeout(Duration::from_secs(20), stream.collect()).await.expect("the stream ended in time")
}

/// The answer: every delta joined.
pub fn text(events: &[Event]) -> String {
    events.iter().filter_map(|e| if let Event::Delta(d) = e { Some(d.as_str()) } else { None }).collect()
}

pub fn deltas(events: &[Event]) -> Vec<&str> {
    events.iter().filter_map(|e| if let Event::Delta(d) = e { Some(d.as_str()) } else { None }).collect()
}

pub fn usage(events: &[Event]) -> Option<Usage> {
    events.iter().find_map(|e| if let Event::Usage(u) = e { Some(*u) } else { None })
}

/// The finish reason, asserting it is the last event.
pub fn finish(events: &[Event]) -> FinishReason {
    match events.last() {
        Some(Event::Finish(reason)) => reason.clone(),
        other => panic!("expected Finish last, got {other:?} in {events:?}"),
    }
}

/// The error, asserting it is the last event and the only one.
pub fn error(events: &[Event]) -> ProviderError {
    let errors = events.iter().filter(|e| matches!(e, Event::Error(_))).count();
    assert_eq!(errors, 1, "{events:?}");
    match events.last() {
        Some(Event::Error(error)) => error.clone(),
        other => panic!("expected Error last, got {other:?} in {events:?}"),
    }
}

/// One OpenAI streaming chunk as an SSE event.
pub fn oa_chunk(content: Option<&str>, finish_reason: Option<&str>) -> String {
    let delta = content.map_or(json!({}), |c| json!({"content": c}));
    let chunk = json!({"id":"chatcmpl-t","object":"chat.completion.chunk","model":"m",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish_reason}]});
    format!("data: {chunk}\n\n")
}

pub fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}
