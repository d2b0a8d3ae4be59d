//! `openai`: any OpenAI-compatible server — SSE chat completions with usage asked for, structured
//! modes with the json-schema → json-object → prompt fallback, and non-streamed answers understood.

use std::sync::Arc;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::endpoint;
use super::error::{body_message, snippet};
use super::generate::{generate, Emit};
use super::http::{self, guarded_body, media_type, read_text, HttpOptions, Rejected, Target};
use super::modes::{first_attempt, Ladder};
use super::outgoing::Outgoing;
use super::sse::{sse_units, Unit, Units};
use super::turn::Answer;
use super::{
    Alternative, ApiKey, Event, EventStream, FinishReason, ModeReport, Provider, ProviderError, Request,
    StructuredMode, TokenProb,
};

/// The base URL used when none is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const NAME: &str = "openai";
/// The modes an OpenAI-compatible server is asked for, best first.
pub const OFFERED: &[StructuredMode] = &[StructuredMode::JsonSchema, StructuredMode::JsonObject, StructuredMode::None];

/// The default base URL of a vLLM server (`vllm serve` listens on port 8000).
pub const VLLM_BASE_URL: &str = "http://127.0.0.1:8000/v1";

/// An OpenAI-compatible chat-completions server.
#[derive(Clone, Debug)]
pub struct OpenAi {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `openai`, or `vllm` for a vLLM server: the name in records and messages.
    name: &'static str,
    /// The variable holding the key (named in 401/403 hints).
    key_var: &'static str,
    base_url: String,
    base_hint: &'static str,
    key: Option<ApiKey>,
    client: reqwest::Client,
    options: HttpOptions,
}

impl OpenAi {
    /// A provider for `base_url` (e.g. `http://127.0.0.1:8080/v1`), with an optional key.
    pub fn new(base_url: &str, key: Option<ApiKey>, options: HttpOptions) -> Result<Self, ProviderError> {
        Self::build(base_url, "the base URL given", key, options)
    }

    /// A provider configured as OpenAI's tools are: `base_url` if given, else `OPENAI_BASE_URL`, else
    /// OpenAI's own; the key from `OPENAI_API_KEY`. OpenAI's own URL without a key is an error.
    /// The variables are read through `lookup` (the process environment: `run::factory::env_var`).
    pub fn from_lookup(
        base_url: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        Self::resolve(&super::kind::OPENAI, base_url, lookup, options)
    }

    /// A vLLM server (`vllm serve`, OpenAI-compatible): `base_url` if given, else `VLLM_BASE_URL`,
    /// else `http://127.0.0.1:8000/v1`; the key (`vllm serve --api-key`) from `VLLM_API_KEY`, if set.
    pub fn vllm_from_lookup(
        base_url: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        Self::resolve(&super::kind::VLLM, base_url, lookup, options)
    }

    fn resolve(
        vars: &endpoint::Vars,
        base_url: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let found = endpoint::resolve(vars, base_url, lookup)?;
        let mut provider = Self::build(&found.url, found.hint, found.key, options)?;
        if let Some(inner) = Arc::get_mut(&mut provider.inner) {
            (inner.name, inner.key_var) = (vars.provider, vars.key_var);
        }
        Ok(provider)
    }

    fn build(
        base_url: &str,
        base_hint: &'static str,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let base_url = base(base_url);
        let client = http::client(NAME, &base_url, &options)?;
        let (name, key_var) = (NAME, super::kind::OPENAI.key_var);
        Ok(Self { inner: Arc::new(Inner { name, key_var, base_url, base_hint, key, client, options }) })
    }

    /// The chat-completions URL requests go to.
    pub fn url(&self) -> String {
        chat_url(&self.inner.base_url)
    }
}

/// What an [`OpenAi::from_lookup`] provider sends first for `request` (the request [`Provider::stream`]
/// makes before any fallback), and how its structured mode was settled, without building the provider.
pub fn first_request(
    base_url: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
    request: &Request,
) -> Result<(Outgoing, ModeReport), ProviderError> {
    first(&super::kind::OPENAI, base_url, lookup, request)
}

/// [`first_request`] of an [`OpenAi::vllm_from_lookup`] provider.
pub fn vllm_first_request(
    base_url: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
    request: &Request,
) -> Result<(Outgoing, ModeReport), ProviderError> {
    first(&super::kind::VLLM, base_url, lookup, request)
}

fn first(
    vars: &endpoint::Vars,
    base_url: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
    request: &Request,
) -> Result<(Outgoing, ModeReport), ProviderError> {
    let found = endpoint::resolve(vars, base_url, lookup)?;
    let base_url = base(&found.url);
    http::parse_base(NAME, &base_url)?;
    let (sent, mode) = first_attempt(vars.provider, OFFERED, request);
    Ok((outgoing(&base_url, found.key.map(|_| vars.key_var), &sent, true), mode))
}

/// A base URL as the provider keeps it.
fn base(base_url: &str) -> String {
    base_url.trim().trim_end_matches('/').to_string()
}

fn chat_url(base_url: &str) -> String {
    format!("{base_url}/chat/completions")
}

/// The request sent for `sent` (at its settled mode) to the server at `base_url`, with the key read
/// from `key_var` when there is one: what [`Provider::stream`] sends.
fn outgoing(base_url: &str, key_var: Option<&'static str>, sent: &Request, include_usage: bool) -> Outgoing {
    Outgoing::post(chat_url(base_url), body(sent, include_usage)).key_header("authorization", "Bearer ", key_var)
}

impl Provider for OpenAi {
    fn name(&self) -> &str {
        self.inner.name
    }

    fn stream(&self, request: &Request) -> EventStream {
        let inner = Arc::clone(&self.inner);
        let request = request.clone();
        generate(move |emit| async move { inner.run(request, emit).await })
    }
}

/// The JSON body of a streaming chat-completions request.
fn body(request: &Request, include_usage: bool) -> Value {
    let mut body = chat_body(request);
    body["stream"] = json!(true);
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// The JSON body of a chat-completions request as the provider sends it, without the streaming
/// fields: what a batch input line carries (`/v1/chat/completions`).
pub fn chat_body(request: &Request) -> Value {
    let messages: Vec<Value> =
        request.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
    let mut body = json!({"messages": messages});
    if !request.model.is_empty() {
        body["model"] = json!(request.model);
    }
    if let Some(max_tokens) = request.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(seed) = request.seed {
        body["seed"] = json!(seed);
    }
    if !request.stop.is_empty() {
        body["stop"] = json!(request.stop);
    }
    if request.logprobs {
        // Each token's log probability and the two most likely at its place (the token and its runner-up).
        body["logprobs"] = json!(true);
        body["top_logprobs"] = json!(2);
    }
    match (request.structured, &request.schema) {
        // vLLM: a JSONL answer held line by line to the schema by a Lark grammar (guidance backend).
        (StructuredMode::JsonSchema, Some(schema)) if request.jsonl => {
            body["structured_outputs"] = json!({"grammar": crate::engine::grammar::jsonl_lark(schema)});
        }
        (StructuredMode::JsonSchema, Some(schema)) => {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}});
        }
        (StructuredMode::JsonObject, _) => body["response_format"] = json!({"type": "json_object"}),
        _ => {}
    }
    body
}

/// Whether a rejection is about `field` (a 4xx/5xx whose message names it).
fn rejects(rejected: &Rejected, fields: &[&str]) -> bool {
    let body = rejected.body.to_ascii_lowercase();
    matches!(rejected.status, 400 | 422 | 500 | 501) && fields.iter().any(|f| body.contains(f))
}

impl Inner {
    async fn run(&self, request: Request, emit: Emit) {
        let name = self.name;
        let url = &chat_url(&self.base_url);
        let key_var = self.key.as_ref().map(|_| self.key_var);
        let target = Target {
            provider: name,
            url,
            key_var: self.key_var,
            key: self.key.as_ref(),
            model: &request.model,
            base_hint: self.base_hint,
        };
        let mut ladder = Ladder::new(&request, name, OFFERED);
        let mut include_usage = true;
        let (response, sent) = loop {
            let sent = ladder.request_for(&request);
            let outgoing = outgoing(&self.base_url, key_var, &sent, include_usage);
            let build = || outgoing.builder(&self.client, self.key.as_ref());
            match target.send(build, &self.options, &emit).await {
                Err(error) => return emit.send(Event::Error(error.redacted(self.key.as_ref()))),
                Ok(Ok(response)) => break (response, sent),
                Ok(Err((rejected, _))) if include_usage && rejects(&rejected, &["stream_options"]) => {
                    include_usage = false
                }
                Ok(Err((rejected, retries))) => {
                    let mode = ladder.current();
                    let rejected_mode = mode != StructuredMode::None
                        && rejects(
                            &rejected,
                            &["response_format", "json_schema", "json_object", "structured_outputs", "grammar"],
                        );
                    let reason = format!(
                        "the server rejected {mode} (HTTP {}: {})",
                        rejected.status,
                        body_message(&rejected.body)
                    );
                    if !(rejected_mode && ladder.step_down(reason)) {
                        return emit.send(Event::Error(target.status_error(&rejected, retries)));
                    }
                }
            }
        };
        emit.send(Event::Mode(ladder.report()));
        let mut answer = Answer::new(emit, &sent);
        let outcome = match media_type(&response).as_str() {
            "text/event-stream" | "" => read_stream(name, &mut answer, response, &self.options).await,
            "application/json" => read_whole(name, &mut answer, response, &self.options).await,
            _ => Err(http::wrong_content_type(&target, response, "text/event-stream", &self.options).await),
        };
        match outcome {
            Ok(()) => answer.end(),
            Err(error) => answer.fail(error.redacted(self.key.as_ref())),
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<TokenUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Content>,
    #[serde(default)]
    message: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    /// `{"content": [{"token", "logprob", "top_logprobs": [..]}]}` when asked for; read leniently
    /// (a server's other shape is ignored, never an error).
    #[serde(default)]
    logprobs: Option<Value>,
}

/// One token of `choices[].logprobs.content`, as OpenAI documents it.
#[derive(Deserialize)]
struct TokenLogprob {
    token: String,
    logprob: f64,
    #[serde(default)]
    top_logprobs: Vec<TopLogprob>,
}

#[derive(Deserialize)]
struct TopLogprob {
    token: String,
    logprob: f64,
}

/// The tokens' probabilities in a choice's `logprobs` (none when it has another shape).
fn token_probs(logprobs: Option<Value>) -> Vec<TokenProb> {
    let content = logprobs.and_then(|mut value| value.get_mut("content").map(Value::take));
    let tokens: Vec<TokenLogprob> = content.and_then(|c| serde_json::from_value(c).ok()).unwrap_or_default();
    let probability = |logprob: f64| logprob.is_finite().then(|| logprob.exp().clamp(0.0, 1.0) as f32);
    tokens
        .into_iter()
        .map(|t| {
            let alt = t
                .top_logprobs
                .iter()
                .filter(|top| top.token != t.token)
                .filter_map(|top| probability(top.logprob).map(|p| Alternative { token: top.token.clone(), p }))
                .max_by(|a, b| a.p.total_cmp(&b.p));
            TokenProb { p: probability(t.logprob), alt, forced: false, token: t.token }
        })
        .collect()
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct TokenUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Applies one chunk (streamed or whole) to the answer.
fn apply(name: &str, answer: &mut Answer, chunk: Chunk) -> Result<(), ProviderError> {
    if let Some(error) = chunk.error {
        return Err(ProviderError::Server {
            provider: name.to_string(),
            message: body_message(&json!({"error": error}).to_string()),
        });
    }
    if let Some(usage) = chunk.usage {
        answer.usage(usage.prompt_tokens, usage.completion_tokens);
    }
    for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
        if let Some(text) = choice.delta.or(choice.message).and_then(|c| c.content) {
            answer.delta(&text);
        }
        answer.probs(token_probs(choice.logprobs));
        if let Some(reason) = choice.finish_reason {
            answer.finish_reason(FinishReason::parse(&reason));
        }
    }
    Ok(())
}

fn parse_chunk(name: &str, text: &str, what: &str) -> Result<Chunk, ProviderError> {
    serde_json::from_str(text).map_err(|e| ProviderError::Malformed {
        provider: name.to_string(),
        what: what.to_string(),
        message: e.to_string(),
        snippet: snippet(text),
    })
}

async fn read_stream(
    name: &str,
    answer: &mut Answer,
    response: reqwest::Response,
    options: &HttpOptions,
) -> Result<(), ProviderError> {
    read_events(name, answer, sse_units(name, guarded_body(name, response, options))).await
}

/// Reads `chat.completion.chunk` events into `answer` up to `[DONE]` or the end of the stream.
pub(crate) async fn read_events(name: &str, answer: &mut Answer, mut units: Units) -> Result<(), ProviderError> {
    while let Some(unit) = units.next().await {
        let Unit { data, .. } = unit?;
        if data.trim() == "[DONE]" {
            break;
        }
        apply(name, answer, parse_chunk(name, &data, "SSE event (expected a chat.completion.chunk)")?)?;
    }
    Ok(())
}

/// A server that ignored `stream: true` and sent one chat.completion.
async fn read_whole(
    name: &str,
    answer: &mut Answer,
    response: reqwest::Response,
    options: &HttpOptions,
) -> Result<(), ProviderError> {
    let text = read_text(response, options, options.max_line_bytes).await;
    apply(name, answer, parse_chunk(name, &text, "chat.completion (the server did not stream)")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_carry_every_setting_and_the_mode() {
        let schema = json!({"type":"object"});
        let request = Request::new("m").system("s").user("u").max_tokens(9).temperature(0.0).stop(["\n\n"]);
        let plain = body(&request, true);
        assert_eq!(plain["stream_options"], json!({"include_usage": true}));
        assert_eq!((plain["max_tokens"].clone(), plain["temperature"].clone()), (json!(9), json!(0.0)));
        assert_eq!(plain["messages"][1], json!({"role":"user","content":"u"}));
        assert!(plain.get("response_format").is_none());
        let strict = body(&request.clone().structured(StructuredMode::JsonSchema, Some(schema.clone())), false);
        assert_eq!(strict["response_format"]["json_schema"]["schema"], schema);
        assert_eq!(strict["response_format"]["json_schema"]["strict"], json!(true));
        assert!(strict.get("stream_options").is_none());
        let object = body(&request.structured(StructuredMode::JsonObject, Some(schema)), true);
        assert_eq!(object["response_format"], json!({"type":"json_object"}));
        assert!(body(&Request::new("").user("u"), true).get("model").is_none());
        assert!(plain.get("logprobs").is_none());
        let asked = body(&Request { logprobs: true, ..Request::new("m").user("u") }, true);
        assert_eq!((asked["logprobs"].clone(), asked["top_logprobs"].clone()), (json!(true), json!(2)));
    }

    #[test]
    fn token_probabilities_are_read_from_logprobs_content() {
        let logprobs = json!({"content": [
            {"token": "{\"", "logprob": -0.01, "bytes": [123, 34], "top_logprobs": [
                {"token": "{\"", "logprob": -0.01, "bytes": [123, 34]}, {"token": "[", "logprob": -4.7, "bytes": [91]}]},
            {"token": "a", "logprob": 0.0, "top_logprobs": []}
        ], "refusal": null});
        let probs = token_probs(Some(logprobs));
        assert_eq!(probs.len(), 2);
        assert_eq!(probs[0].token, "{\"");
        assert!((probs[0].p.unwrap() - (-0.01f64).exp() as f32).abs() < 1e-6);
        let alt = probs[0].alt.as_ref().unwrap();
        assert_eq!(alt.token, "[");
        assert!((alt.p - (-4.7f64).exp() as f32).abs() < 1e-6);
        assert_eq!((probs[1].p, probs[1].alt.is_none(), probs[1].forced), (Some(1.0), true, false));
        // Other shapes (legacy completions, null) give nothing and no error.
        assert!(token_probs(Some(json!({"tokens": ["a"], "token_logprobs": [-1.0]}))).is_empty());
        assert!(token_probs(Some(Value::Null)).is_empty());
        assert!(token_probs(None).is_empty());
    }

    #[test]
    fn the_default_url_needs_a_key_but_a_local_one_does_not() {
        let none = |_: &str| None;
        let error = OpenAi::from_lookup(None, none, HttpOptions::default()).unwrap_err();
        assert!(error.to_string().contains("set OPENAI_API_KEY"), "{error}");
        let local = OpenAi::from_lookup(Some("http://127.0.0.1:9/v1/"), none, HttpOptions::default()).unwrap();
        assert_eq!(local.url(), "http://127.0.0.1:9/v1/chat/completions");
        let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://localhost:1/v1".to_string());
        assert_eq!(
            OpenAi::from_lookup(None, env, HttpOptions::default()).unwrap().url(),
            "http://localhost:1/v1/chat/completions"
        );
        let bad = OpenAi::new("not a url", None, HttpOptions::default()).unwrap_err();
        assert!(bad.to_string().contains("\"not a url\" is not a URL"), "{bad}");
    }

    #[test]
    fn debug_output_hides_the_key() {
        let key = ApiKey::new("sk-very-secret").unwrap();
        let provider = OpenAi::new("http://127.0.0.1:9/v1", Some(key), HttpOptions::default()).unwrap();
        assert!(!format!("{provider:?}").contains("sk-very-secret"));
    }
}
