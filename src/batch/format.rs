//! The providers' own batch files: one input line per request (OpenAI Batch API and vLLM `run-batch`:
//! `{custom_id, method, url, body}`; Anthropic Message Batches: `{custom_id, params}`), and one result
//! line per request read back into an [`Outcome`] (the answer text, finish reason and usage, or the
//! provider's error for that request).

use serde_json::{json, Value};

use super::Engine;
use crate::provider::{anthropic, first_attempt, openai, FinishReason, ModeReport, ProviderError, Request, Usage};
use crate::schema::kind_of;

/// The chat-completions path every OpenAI-format input line names.
pub const CHAT_COMPLETIONS: &str = "/v1/chat/completions";

/// The batch input line for `request` under `custom_id`, and the mode report of what it asks for:
/// exactly the body `run` would send on its first attempt (a batch has no second one).
pub fn input_line(engine: Engine, custom_id: &str, request: &Request) -> (Value, ModeReport) {
    let (sent, mode) = sent_request(engine, request);
    let line = match engine {
        Engine::Openai | Engine::Vllm => {
            json!({"custom_id": custom_id, "method": "POST", "url": CHAT_COMPLETIONS, "body": openai::chat_body(&sent)})
        }
        Engine::Anthropic => json!({"custom_id": custom_id, "params": anthropic::message_body(&sent)}),
    };
    (line, mode)
}

/// The request as the engine's provider sends it first, and how its structured mode was settled.
pub fn sent_request(engine: Engine, request: &Request) -> (Request, ModeReport) {
    let offered = match engine {
        Engine::Openai | Engine::Vllm => openai::OFFERED,
        Engine::Anthropic => anthropic::OFFERED,
    };
    first_attempt(engine.provider(), offered, request)
}

/// What one request of a batch came back with.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub custom_id: String,
    /// The answer (empty when the request failed).
    pub text: String,
    pub finish: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// The provider's error for this request: its error object, a non-200 status, canceled, expired.
    pub error: Option<ProviderError>,
    /// When the provider created the answer (milliseconds since the Unix epoch), if it says.
    pub created_at_ms: Option<u64>,
}

/// Reads one result line of either provider's format (told apart by shape: Anthropic's lines carry
/// `result`, OpenAI's `response` or `error`). The message of an `Err` names what is missing or wrong.
pub fn read_result(engine: Engine, text: &str) -> Result<Outcome, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(line) = &value else {
        return Err(format!("expected a JSON object, got {}", kind_of(&value)));
    };
    let custom_id = match line.get("custom_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(other) if !other.is_null() => return Err(format!("custom_id is {}, not a string", kind_of(other))),
        _ => return Err("no custom_id: the line cannot be matched to a request".into()),
    };
    let mut outcome =
        Outcome { custom_id, text: String::new(), finish: None, usage: None, error: None, created_at_ms: None };
    if let Some(result) = line.get("result") {
        anthropic_result(&mut outcome, result)?;
    } else if line.contains_key("response") || line.contains_key("error") {
        openai_result(engine, &mut outcome, line)?;
    } else {
        return Err("neither `response` nor `error` (OpenAI) nor `result` (Anthropic): not a batch result line".into());
    }
    Ok(outcome)
}

fn failed(engine: Engine, outcome: &Outcome, message: String) -> ProviderError {
    ProviderError::Batch { provider: engine.provider().to_string(), custom_id: outcome.custom_id.clone(), message }
}

/// `{"code": .., "message": ..}` (OpenAI) or `{"type": .., "message": ..}` (Anthropic) in words.
fn error_words(error: &Value) -> String {
    let message = error["message"].as_str().unwrap_or_default();
    let code = error["code"].as_str().or(error["type"].as_str()).unwrap_or_default();
    match (code, message) {
        ("", "") => crate::safe_text::escape_controls(&error.to_string()).into_owned(),
        ("", message) => message.to_string(),
        (code, "") => code.to_string(),
        (code, message) => format!("{code}: {message}"),
    }
}

fn openai_result(engine: Engine, outcome: &mut Outcome, line: &serde_json::Map<String, Value>) -> Result<(), String> {
    if let Some(error) = line.get("error").filter(|e| !e.is_null()) {
        outcome.error = Some(failed(engine, outcome, format!("failed: {}", error_words(error))));
        return Ok(());
    }
    let response = &line["response"];
    if !response.is_object() {
        return Err(format!("`response` is {}, and there is no `error`", kind_of(response)));
    }
    let body = &response["body"];
    let status = response["status_code"].as_u64().unwrap_or(200);
    if status != 200 {
        let words = body.get("error").map_or_else(|| error_words(body), error_words);
        outcome.error = Some(failed(engine, outcome, format!("failed with HTTP {status}: {words}")));
        return Ok(());
    }
    let choice = &body["choices"][0];
    if !choice.is_object() {
        return Err("the response body has no choices[0] (expected a chat.completion)".into());
    }
    outcome.text = choice["message"]["content"].as_str().unwrap_or_default().to_string();
    outcome.finish = choice["finish_reason"].as_str().map(FinishReason::parse);
    let usage = &body["usage"];
    if let (Some(input), Some(output)) = (usage["prompt_tokens"].as_u64(), usage["completion_tokens"].as_u64()) {
        outcome.usage =
            Some(Usage { input_tokens: input, output_tokens: output, estimated: false, cached_input_tokens: 0 });
    }
    outcome.created_at_ms = body["created"].as_u64().map(|seconds| seconds.saturating_mul(1000));
    Ok(())
}

fn anthropic_result(outcome: &mut Outcome, result: &Value) -> Result<(), String> {
    let engine = Engine::Anthropic;
    match result["type"].as_str() {
        Some("succeeded") => {
            let message = &result["message"];
            let Some(blocks) = message["content"].as_array() else {
                return Err("a succeeded result without message.content".into());
            };
            outcome.text = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .concat();
            outcome.finish = message["stop_reason"].as_str().map(anthropic::finish_reason);
            let usage = &message["usage"];
            if let (Some(input), Some(output)) = (usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()) {
                outcome.usage = Some(Usage {
                    input_tokens: input,
                    output_tokens: output,
                    estimated: false,
                    cached_input_tokens: 0,
                });
            }
        }
        Some("errored") => {
            // `error` is an error response: {"type": "error", "error": {"type": .., "message": ..}}.
            let error = &result["error"];
            let inner = if error["error"].is_object() { &error["error"] } else { error };
            outcome.error = Some(failed(engine, outcome, format!("failed: {}", error_words(inner))));
        }
        Some("canceled") => {
            outcome.error = Some(failed(engine, outcome, "was canceled before it was processed".into()))
        }
        Some("expired") => {
            outcome.error = Some(failed(engine, outcome, "expired: the batch ended before it was processed".into()))
        }
        Some(other) => return Err(format!("result type {other:?} is not succeeded, errored, canceled or expired")),
        None => return Err("`result` has no type".into()),
    }
    Ok(())
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
