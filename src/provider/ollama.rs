//! `ollama`: Ollama's native `/api/chat` NDJSON stream — `format` carries the JSON Schema (or `"json"`),
//! `options.num_predict` the max tokens, `done_reason` the finish reason, eval counts the usage.

use std::sync::Arc;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::endpoint;
use super::error::snippet;
use super::generate::{generate, Emit};
use super::http::{self, guarded_body, media_type, HttpOptions, Target};
use super::lines::ndjson_units;
use super::modes::{first_attempt, Ladder};
use super::outgoing::Outgoing;
use super::sse::Units;
use super::turn::Answer;
use super::{ApiKey, Event, EventStream, FinishReason, ModeReport, Provider, ProviderError, Request, StructuredMode};

/// The host used when neither a base URL nor `OLLAMA_HOST` is given.
pub const DEFAULT_HOST: &str = "http://127.0.0.1:11434";
const NAME: &str = "ollama";
const OFFERED: &[StructuredMode] = &[StructuredMode::JsonSchema, StructuredMode::JsonObject, StructuredMode::None];
const KEY_VAR: &str = super::kind::OLLAMA.key_var;

/// An Ollama server.
#[derive(Clone, Debug)]
pub struct Ollama {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    host: String,
    base_hint: &'static str,
    key: Option<ApiKey>,
    client: reqwest::Client,
    options: HttpOptions,
}

/// `OLLAMA_HOST` as Ollama reads it: `host`, `host:port` or a URL; scheme `http` and port 11434 by default.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let (scheme, rest) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", host),
    };
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let has_port = authority.rsplit_once(':').is_some_and(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        && !authority.ends_with(']');
    let default_port = if scheme == "https" { 443 } else { 11434 };
    let authority = match authority {
        "" | "0.0.0.0" => format!("127.0.0.1:{default_port}"),
        a if has_port => a.to_string(),
        a => format!("{a}:{default_port}"),
    };
    let path = if path.is_empty() { String::new() } else { format!("/{path}") };
    format!("{scheme}://{authority}{path}")
}

impl Ollama {
    /// A provider for the server at `host` (see [`normalize_host`]); `key` for hosted Ollama.
    pub fn new(host: &str, key: Option<ApiKey>, options: HttpOptions) -> Result<Self, ProviderError> {
        Self::build(host, "the base URL given", key, options)
    }

    /// `host` if given, else `OLLAMA_HOST`, else the local default; the key from `OLLAMA_API_KEY`.
    /// The variables are read through `lookup` (the process environment: `run::factory::env_var`).
    pub fn from_lookup(
        host: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let found = endpoint::resolve(&super::kind::OLLAMA, host, lookup)?;
        Self::build(&found.url, found.hint, found.key, options)
    }

    fn build(
        host: &str,
        base_hint: &'static str,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let host = normalize_host(host);
        let client = http::client(NAME, &host, &options)?;
        Ok(Self { inner: Arc::new(Inner { host, base_hint, key, client, options }) })
    }

    /// The chat URL requests go to.
    pub fn url(&self) -> String {
        chat_url(&self.inner.host)
    }
}

/// What an [`Ollama::from_lookup`] provider sends for `request`, and how its structured mode was
/// settled, without building the provider.
pub fn first_request(
    host: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
    request: &Request,
) -> Result<(Outgoing, ModeReport), ProviderError> {
    let found = endpoint::resolve(&super::kind::OLLAMA, host, lookup)?;
    let host = normalize_host(&found.url);
    http::parse_base(NAME, &host)?;
    let (sent, mode) = first_attempt(NAME, OFFERED, request);
    Ok((outgoing(&host, found.key.is_some(), &sent), mode))
}

fn chat_url(host: &str) -> String {
    format!("{host}/api/chat")
}

/// The request sent for `sent` (at its settled mode) to the server at `host`, with the key when there
/// is one: what [`Provider::stream`] sends.
fn outgoing(host: &str, has_key: bool, sent: &Request) -> Outgoing {
    Outgoing::post(chat_url(host), body(sent)).key_header("authorization", "Bearer ", has_key.then_some(KEY_VAR))
}

impl Provider for Ollama {
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
    let messages: Vec<Value> =
        request.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
    let mut body = json!({"model": request.model, "messages": messages, "stream": true});
    let mut options = serde_json::Map::new();
    if let Some(max_tokens) = request.max_tokens {
        options.insert("num_predict".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        options.insert("temperature".into(), json!(temperature));
    }
    if let Some(seed) = request.seed {
        options.insert("seed".into(), json!(seed));
    }
    if !request.stop.is_empty() {
        options.insert("stop".into(), json!(request.stop));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    match (request.structured, &request.schema) {
        (StructuredMode::JsonSchema, Some(schema)) => body["format"] = schema.clone(),
        (StructuredMode::JsonObject, _) => body["format"] = json!("json"),
        _ => {}
    }
    body
}

impl Inner {
    async fn run(&self, request: Request, emit: Emit) {
        let url = &chat_url(&self.host);
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
        let outgoing = outgoing(&self.host, self.key.is_some(), &sent);
        let build = || outgoing.builder(&self.client, self.key.as_ref());
        let response = match target.send(build, &self.options, &emit).await {
            Err(error) => return emit.send(Event::Error(error.redacted(self.key.as_ref()))),
            Ok(Err((rejected, retries))) => {
                let mut error = target.status_error(&rejected, retries);
                if let ProviderError::Http { status: 404, hint, .. } = &mut error {
                    if rejected.body.contains("not found") {
                        *hint = Some(format!("Pull the model first: ollama pull {}", request.model));
                    }
                }
                return emit.send(Event::Error(error));
            }
            Ok(Ok(response)) => response,
        };
        emit.send(Event::Mode(ladder.report()));
        let mut answer = Answer::new(emit, &sent);
        let outcome = match media_type(&response).as_str() {
            "application/x-ndjson" | "application/json" | "" => read_stream(&mut answer, response, &self.options).await,
            _ => Err(http::wrong_content_type(&target, response, "application/x-ndjson", &self.options).await),
        };
        match outcome {
            Ok(()) => answer.end(),
            Err(error) => answer.fail(error.redacted(self.key.as_ref())),
        }
    }
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    message: Option<LineMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LineMessage {
    #[serde(default)]
    content: String,
}

async fn read_stream(
    answer: &mut Answer,
    response: reqwest::Response,
    options: &HttpOptions,
) -> Result<(), ProviderError> {
    read_events(answer, ndjson_units(NAME, guarded_body(NAME, response, options))).await
}

/// Reads chat response lines into `answer` up to `done: true` or the end of the stream.
pub(crate) async fn read_events(answer: &mut Answer, mut units: Units) -> Result<(), ProviderError> {
    while let Some(unit) = units.next().await {
        let data = unit?.data;
        let line: Line = serde_json::from_str(&data).map_err(|e| ProviderError::Malformed {
            provider: NAME.to_string(),
            what: "NDJSON line (expected a chat response object)".to_string(),
            message: e.to_string(),
            snippet: snippet(&data),
        })?;
        if let Some(error) = line.error {
            let message = error.as_str().map_or_else(|| error.to_string(), str::to_string);
            return Err(ProviderError::Server { provider: NAME.to_string(), message: snippet(&message) });
        }
        if let Some(message) = line.message {
            answer.delta(&message.content);
        }
        if line.done {
            answer.usage(line.prompt_eval_count, line.eval_count);
            // Ollama before done_reason existed ended every finished answer with done: true.
            answer.finish_reason(FinishReason::parse(line.done_reason.as_deref().unwrap_or("stop")));
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_as_ollama_reads_them() {
        assert_eq!(normalize_host("127.0.0.1"), "http://127.0.0.1:11434");
        assert_eq!(normalize_host("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(normalize_host("example.com:8080"), "http://example.com:8080");
        assert_eq!(normalize_host("https://example.com/ollama/"), "https://example.com:443/ollama");
        assert_eq!(normalize_host("http://[::1]:9000"), "http://[::1]:9000");
        assert_eq!(normalize_host("[::1]"), "http://[::1]:11434");
    }

    #[test]
    fn the_schema_goes_in_format_and_max_tokens_in_num_predict() {
        let schema = json!({"type":"object"});
        let request = Request::new("llama3.2").user("u").max_tokens(7).stop(["x"]);
        let strict = body(&request.clone().structured(StructuredMode::JsonSchema, Some(schema.clone())));
        assert_eq!(strict["format"], schema);
        assert_eq!(strict["options"], json!({"num_predict": 7, "stop": ["x"]}));
        assert_eq!(body(&request.clone().structured(StructuredMode::JsonObject, None))["format"], json!("json"));
        assert!(body(&request).get("format").is_none());
    }
}
