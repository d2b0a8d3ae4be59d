//! The oracle corpus's scripted server (tests/fixtures/promptfoo_oracle/server.py) in-process: the same
//! matching rule over the same `answers.json`, on the same routes (OpenAI chat and embeddings,
//! Anthropic messages, Ollama chat), so tunebench and promptfoo are asked and answered alike.
//! tunebench streams: the answers go out as each API's stream (server.py answers promptfoo's
//! unstreamed requests with the same text).

use std::sync::Arc;

use serde_json::{json, Value};
use tunebench::provider::wire_server::{Received, Reply, WireServer};

/// One entry of `answers.json`.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Entry {
    #[serde(default = "any_model")]
    model: String,
    #[serde(default)]
    marker: String,
    answer: Option<String>,
    embedding: Option<Vec<f64>>,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    delay_ms: Option<u64>,
    status: Option<u16>,
    error: Option<String>,
}

fn any_model() -> String {
    "*".to_string()
}

/// The request's text as server.py reads it: the last message's content (parts joined by newlines),
/// else the body's `prompt`.
fn request_text(body: &Value) -> String {
    let content = match body.get("messages").and_then(Value::as_array).and_then(|m| m.last()) {
        Some(Value::Object(last)) => last.get("content"),
        _ => return body.get("prompt").and_then(Value::as_str).unwrap_or_default().to_string(),
    };
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(text) => Some(text.clone()),
                Value::Object(part) => part.get("text").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The first entry of the kind asked (`answer` or `embedding`) whose model and marker fit.
fn entry<'a>(entries: &'a [Entry], model: &str, text: &str, embedding: bool) -> Option<&'a Entry> {
    entries.iter().find(|e| {
        let kind = if embedding { e.embedding.is_some() } else { e.answer.is_some() };
        kind && (e.model == "*" || e.model == model) && text.contains(&e.marker)
    })
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The reply server.py gives `received`, as the stream tunebench asks for.
fn reply(entries: &[Entry], received: &Received) -> Reply {
    let body = received.json();
    let model = body.get("model").and_then(Value::as_str).unwrap_or_default().to_string();
    let path = received.path.split('?').next().unwrap_or_default();
    if path.ends_with("/embeddings") {
        let inputs: Vec<String> = match body.get("input") {
            Some(Value::String(text)) => vec![text.clone()],
            Some(Value::Array(items)) => {
                items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string)).collect()
            }
            _ => vec![String::new()],
        };
        // Each input its own vector (promptfoo asks one input at a time; tunebench all at once).
        let mut data = Vec::new();
        for (index, input) in inputs.iter().enumerate() {
            let Some(found) = entry(entries, &model, input, true) else {
                return Reply::status(
                    400,
                    "application/json",
                    r#"{"error":{"message":"no embedding for this input"}}"#,
                );
            };
            data.push(json!({"object": "embedding", "index": index, "embedding": found.embedding}));
        }
        return Reply::status(
            200,
            "application/json",
            &json!({"object": "list", "data": data, "model": model}).to_string(),
        );
    }
    let text = request_text(&body);
    let found = entry(entries, &model, &text, false);
    if let Some(status) = found.and_then(|e| e.status) {
        let message = found.and_then(|e| e.error.clone()).unwrap_or_default();
        let error = json!({"error": {"message": message, "type": "invalid_request_error"}});
        return Reply::status(status, "application/json", &error.to_string());
    }
    let answer = found.and_then(|e| e.answer.clone()).unwrap_or_else(|| "no answer for this request".to_string());
    let finish = found.and_then(|e| e.finish_reason.clone()).unwrap_or_else(|| "stop".to_string());
    let prompt_tokens = found.and_then(|e| e.prompt_tokens).unwrap_or(10);
    let completion_tokens = found.and_then(|e| e.completion_tokens).unwrap_or_else(|| words(&answer));
    let delay = found.and_then(|e| e.delay_ms).map(std::time::Duration::from_millis);
    let pieces: Vec<String> = answer.split_inclusive(' ').map(str::to_string).collect();
    let mut reply = if path.ends_with("/messages") {
        anthropic(&model, &pieces, &finish, prompt_tokens, completion_tokens)
    } else if path.ends_with("/api/chat") {
        ollama(&model, &pieces, &finish, prompt_tokens, completion_tokens)
    } else {
        Reply::chat_stream(&answer, &finish, Some((prompt_tokens, completion_tokens)))
    };
    if let Some(delay) = delay {
        reply.steps.insert(0, tunebench::provider::wire_server::Step::Sleep(delay));
    }
    reply
}

/// Anthropic's message stream.
fn anthropic(model: &str, pieces: &[String], finish: &str, input: u64, output: u64) -> Reply {
    let stop = match finish {
        "length" => "max_tokens",
        "stop" => "end_turn",
        other => other,
    };
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut reply = Reply::chunked("text/event-stream; charset=utf-8").chunk(event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_oracle", "type": "message", "role": "assistant",
            "content": [], "model": model, "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": 1}}}),
    ));
    reply = reply.chunk(event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ));
    for piece in pieces {
        reply = reply.chunk(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        ));
    }
    reply
        .chunk(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})))
        .chunk(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": output}}),
        ))
        .chunk(event("message_stop", json!({"type": "message_stop"})))
        .end()
}

/// Ollama's NDJSON chat stream.
fn ollama(model: &str, pieces: &[String], finish: &str, input: u64, output: u64) -> Reply {
    let mut reply = Reply::chunked("application/x-ndjson");
    for piece in pieces {
        let line = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": piece}, "done": false});
        reply = reply.chunk(format!("{line}\n"));
    }
    let last = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": finish,
        "prompt_eval_count": input, "eval_count": output});
    reply.chunk(format!("{last}\n")).end()
}

/// A server answering from `entries`, on its own runtime (kept alive by the caller).
pub fn start(entries: Vec<Entry>) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let entries = Arc::new(entries);
    let server = runtime.block_on(WireServer::start_handler(move |received| reply(&entries, received))).unwrap();
    (runtime, server)
}
