//! `anthropic`: the Messages API with `stream: true` — `message_start` (input tokens),
//! `content_block_delta` (text), `message_delta` (`stop_reason`, output tokens), `message_stop`, `error`.

use std::sync::Arc;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::endpoint;
use super::error::{body_message, snippet};
use super::generate::{generate, Emit};
use super::http::{self, guarded_body, media_type, HttpOptions, Target};
use super::modes::{first_attempt, Ladder};
use super::outgoing::{Header, Outgoing};
use super::sse::{sse_units, Units};
use super::turn::Answer;
use super::{ApiKey, Event, EventStream, FinishReason, ModeReport, Provider, ProviderError, Request, StructuredMode};

/// The base URL used when none is given.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is sent when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
const NAME: &str = "anthropic";
const KEY_VAR: &str = super::kind::ANTHROPIC.key_var;
/// The modes this provider offers: none, the schema is described in the prompt.
pub const OFFERED: &[StructuredMode] = &[StructuredMode::None];

/// Anthropic's Messages API (or a server that speaks it).
#[derive(Clone, Debug)]
pub struct Anthropic {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base_url: String,
    base_hint: &'static str,
    key: Option<ApiKey>,
    client: reqwest::Client,
    options: HttpOptions,
}

impl Anthropic {
    /// A provider for `base_url` (with or without a trailing `/v1`).
    pub fn new(base_url: &str, key: Option<ApiKey>, options: HttpOptions) -> Result<Self, ProviderError> {
        Self::build(base_url, "the base URL given", key, options)
    }

    /// `base_url` if given, else `ANTHROPIC_BASE_URL`, else Anthropic's; the key from `ANTHROPIC_API_KEY`
    /// (required for Anthropic's own URL).
    /// The variables are read through `lookup` (the process environment: `run::factory::env_var`).
    pub fn from_lookup(
        base_url: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let found = endpoint::resolve(&super::kind::ANTHROPIC, base_url, lookup)?;
        Self::build(&found.url, found.hint, found.key, options)
    }

    fn build(
        base_url: &str,
        base_hint: &'static str,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let base_url = base(base_url);
        let client = http::client(NAME, &base_url, &options)?;
        Ok(Self { inner: Arc::new(Inner { base_url, base_hint, key, client, options }) })
    }

    /// The Messages URL requests go to.
    pub fn url(&self) -> String {
        messages_url(&self.inner.base_url)
    }
}

/// What an [`Anthropic::from_lookup`] provider sends for `request`, and how its structured mode was
/// settled, without building the provider.
pub fn first_request(
    base_url: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
    request: &Request,
) -> Result<(Outgoing, ModeReport), ProviderError> {
    let found = endpoint::resolve(&super::kind::ANTHROPIC, base_url, lookup)?;
    let base_url = base(&found.url);
    http::parse_base(NAME, &base_url)?;
    let (sent, mode) = first_attempt(NAME, OFFERED, request);
    Ok((outgoing(&base_url, found.key.is_some(), &sent), mode))
}

/// A base URL as the provider keeps it (without a trailing `/v1`).
fn base(base_url: &str) -> String {
    let trimmed = base_url.trim().trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string()
}

fn messages_url(base_url: &str) -> String {
    format!("{base_url}/v1/messages")
}

/// The request sent for `sent` (at its settled mode) to the server at `base_url`, with the key when
/// there is one: what [`Provider::stream`] sends.
fn outgoing(base_url: &str, has_key: bool, sent: &Request) -> Outgoing {
    Outgoing::post(messages_url(base_url), body(sent))
        .header(Header::text("anthropic-version", API_VERSION))
        .key_header("x-api-key", "", has_key.then_some(KEY_VAR))
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        NAME
    }

    fn stream(&self, request: &Request) -> EventStream {
        let inner = Arc::clone(&self.inner);
        let request = request.clone();
        generate(move |emit| async move { inner.run(request, emit).await })
    }
}

fn body(request: &Request) -> Value {
    let mut body = message_body(request);
    body["stream"] = json!(true);
    body
}

/// The Messages API parameters as the provider sends them, without `stream`: what a Message
/// Batches request carries as its `params`.
pub fn message_body(request: &Request) -> Value {
    let messages: Vec<Value> =
        request.turns().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    let system = request.system_text();
    if !system.is_empty() {
        body["system"] = json!(system);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.stop.is_empty() {
        body["stop_sequences"] = json!(request.stop);
    }
    body
}

/// The finish reason of an Anthropic `stop_reason`.
pub fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

impl Inner {
    async fn run(&self, request: Request, emit: Emit) {
        let url = &messages_url(&self.base_url);
        let target = Target {
            provider: NAME,
            url,
            key_var: KEY_VAR,
            key: self.key.as_ref(),
            model: &request.model,
            base_hint: self.base_hint,
        };
        let ladder = Ladder::new(&request, NAME, OFFERED);
        let sent = ladder.request_for(&request);
        let outgoing = outgoing(&self.base_url, self.key.is_some(), &sent);
        let build = || outgoing.builder(&self.client, self.key.as_ref());
        let response = match target.send(build, &self.options, &emit).await {
            Err(error) => return emit.send(Event::Error(error.redacted(self.key.as_ref()))),
            Ok(Err((rejected, retries))) => return emit.send(Event::Error(target.status_error(&rejected, retries))),
            Ok(Ok(response)) => response,
        };
        emit.send(Event::Mode(ladder.report()));
        let mut answer = Answer::new(emit, &sent);
        let outcome = match media_type(&response).as_str() {
            "text/event-stream" => read_stream(&mut answer, response, &self.options).await,
            _ => Err(http::wrong_content_type(&target, response, "text/event-stream", &self.options).await),
        };
        match outcome {
            Ok(()) => answer.end(),
            Err(error) => answer.fail(error.redacted(self.key.as_ref())),
        }
    }
}

/// The fields of every Messages stream event this provider reads.
#[derive(Deserialize)]
struct StreamEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default)]
    content_block: Option<TextPart>,
    #[serde(default)]
    delta: Option<DeltaPart>,
    #[serde(default)]
    usage: Option<TokenUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<TokenUsage>,
}

#[derive(Deserialize)]
struct TextPart {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct DeltaPart {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct TokenUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

async fn read_stream(
    answer: &mut Answer,
    response: reqwest::Response,
    options: &HttpOptions,
) -> Result<(), ProviderError> {
    read_events(answer, sse_units(NAME, guarded_body(NAME, response, options))).await
}

/// Reads Messages stream events into `answer` up to `message_stop` or the end of the stream.
pub(crate) async fn read_events(answer: &mut Answer, mut units: Units) -> Result<(), ProviderError> {
    while let Some(unit) = units.next().await {
        let data = unit?.data;
        let event: StreamEvent = serde_json::from_str(&data).map_err(|e| ProviderError::Malformed {
            provider: NAME.to_string(),
            what: "SSE event (expected a Messages stream event)".to_string(),
            message: e.to_string(),
            snippet: snippet(&data),
        })?;
        match event.kind.as_str() {
            "message_start" => {
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    answer.usage(usage.input_tokens, None);
                }
            }
            "content_block_start" => {
                if let Some(text) = event.content_block.and_then(|b| b.text) {
                    answer.delta(&text);
                }
            }
            "content_block_delta" => {
                if let Some(DeltaPart { kind: Some(kind), text: Some(text), .. }) = event.delta {
                    if kind == "text_delta" {
                        answer.delta(&text);
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    answer.finish_reason(finish_reason(&reason));
                }
                if let Some(usage) = event.usage {
                    answer.usage(usage.input_tokens, usage.output_tokens);
                }
            }
            "message_stop" => break,
            "error" => {
                let message = body_message(&json!({"error": event.error}).to_string());
                return Err(ProviderError::Server { provider: NAME.to_string(), message });
            }
            _ => {} // ping, content_block_stop, and event types added later
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_goes_top_level_and_max_tokens_is_always_sent() {
        let request = Request::new("claude").system("s").user("u").assistant("a").user("again").stop(["END"]);
        let value = body(&request);
        assert_eq!(value["system"], json!("s"));
        assert_eq!(value["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(value["messages"].as_array().map(Vec::len), Some(3));
        assert_eq!(value["stop_sequences"], json!(["END"]));
        assert_eq!(body(&request.max_tokens(5))["max_tokens"], json!(5));
    }

    #[test]
    fn urls_with_or_without_v1_reach_the_same_endpoint() {
        let none = |_: &str| None;
        let a = Anthropic::from_lookup(Some("http://127.0.0.1:9/v1/"), none, HttpOptions::default()).unwrap();
        let b = Anthropic::from_lookup(Some("http://127.0.0.1:9"), none, HttpOptions::default()).unwrap();
        assert_eq!(a.url(), b.url());
        let error = Anthropic::from_lookup(None, none, HttpOptions::default()).unwrap_err();
        assert!(error.to_string().contains("set ANTHROPIC_API_KEY"), "{error}");
    }

    #[test]
    fn stop_reasons_map_to_finish_reasons() {
        assert_eq!(finish_reason("end_turn"), FinishReason::Stop);
        assert_eq!(finish_reason("max_tokens"), FinishReason::Length);
        assert_eq!(finish_reason("pause_turn"), FinishReason::Other("pause_turn".into()));
    }
}
