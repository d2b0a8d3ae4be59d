//! Submit, status and fetch against the providers' batch endpoints, as their own tools reach them:
//! the base URL from `--base-url`, else `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` / `VLLM_BASE_URL`,
//! else the provider's; the key from its key variable, never printed.
//!
//! - OpenAI (and vLLM): upload the input file (`POST /files`, purpose `batch`), create the batch
//!   (`POST /batches`, endpoint `/v1/chat/completions`, window `24h`), poll `GET /batches/{id}`,
//!   download `GET /files/{output_file_id}/content` and the error file beside it.
//! - Anthropic: `POST /v1/messages/batches` with the input lines as `requests`, poll
//!   `GET /v1/messages/batches/{id}`, download its `results_url`.

use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::{json, Value};

use super::format::CHAT_COMPLETIONS;
use super::Engine;
use crate::provider::error::body_message;
use crate::provider::http::{client, same_origin, HttpOptions};
use crate::provider::{anthropic, ApiKey};
use crate::provider::{endpoint, kind};
use crate::safe_text::escape_controls;

/// The longest pause between two looks at a batch that is still running.
pub const MAX_POLL: Duration = Duration::from_secs(60);

/// The most bytes of results a fetch takes by default (`--max-results-bytes` raises it): 1 GiB.
pub const RESULTS_BYTES: u64 = 1 << 30;

/// The most bytes read of any other answer (a batch's status, an upload's answer, an error's body).
const ANSWER_BYTES: u64 = 64 << 20;

/// What a fetch wrote: bytes and result lines (lines with text).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: u64,
    pub lines: u64,
}

/// A provider's batch endpoints, resolved.
pub struct Remote {
    engine: Engine,
    base_url: String,
    key: Option<ApiKey>,
    /// The variable the key was read from in place of the provider's own (a prompt's `key_env`).
    key_env: Option<String>,
    client: reqwest::Client,
}

/// Where a batch stands, in the same words for every provider.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub id: String,
    pub engine: Engine,
    /// The provider's own status word (`validating`, `in_progress`, `completed`, `ended`, ...).
    pub status: String,
    /// No request is still being processed: results can be fetched.
    pub ended: bool,
    pub total: u64,
    /// Requests processed so far (succeeded or failed).
    pub done: u64,
    /// Requests that failed, were canceled or expired.
    pub failed: u64,
    /// Why the whole batch failed (OpenAI's validation errors), when it did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Where the results are (OpenAI: the output and error file ids; Anthropic: the results URL).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<String>,
}

impl Remote {
    /// The endpoints of `engine`, from `base_url` or the environment; the key from `key_env` (a
    /// prompt's `[provider] key_env`) when given, else the provider's own variable.
    pub fn from_env(engine: Engine, base_url: Option<&str>, key_env: Option<&str>) -> anyhow::Result<Self> {
        Self::from_lookup(engine, base_url, key_env, |name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading variables through `lookup`.
    pub fn from_lookup(
        engine: Engine,
        base_url: Option<&str>,
        key_env: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        let vars = match engine {
            Engine::Openai => &kind::OPENAI,
            Engine::Anthropic => &kind::ANTHROPIC,
            Engine::Vllm => &kind::VLLM,
        };
        let keyed = |name: &str| match key_env {
            Some(own) if name == vars.key_var => lookup(own),
            _ => lookup(name),
        };
        let found = endpoint::resolve(vars, base_url, keyed).map_err(|error| match key_env {
            // The key was looked for in the variable the prompt names: the advice names that one.
            Some(own) => anyhow::anyhow!(
                "{}",
                error
                    .to_string()
                    .replace(&format!("set {}", vars.key_var), &format!("set {own} (the prompt's key_env)"))
            ),
            None => anyhow::Error::from(error),
        })?;
        let mut base_url = found.url.trim().trim_end_matches('/').to_string();
        if engine == Engine::Anthropic {
            base_url = base_url.strip_suffix("/v1").unwrap_or(&base_url).to_string();
        }
        let client = client(engine.provider(), &base_url, &HttpOptions::default())?;
        Ok(Self { engine, base_url, key: found.key, key_env: key_env.map(str::to_string), client })
    }

    /// Whose endpoints these are.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The base URL with `segments` added, each percent-encoded as one path segment (an id from a
    /// server or the command line cannot reach another path or add a query).
    fn at(&self, segments: &[&str]) -> String {
        let mut url = match reqwest::Url::parse(&self.base_url) {
            Ok(url) => url,
            Err(_) => return format!("{}/{}", self.base_url, segments.join("/")),
        };
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url.to_string()
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let builder = self.client.request(method, url).timeout(Duration::from_secs(300));
        match (self.engine, &self.key) {
            (Engine::Anthropic, key) => {
                let builder = builder.header("anthropic-version", anthropic::API_VERSION);
                match key {
                    Some(key) => builder.header("x-api-key", key.expose()),
                    None => builder,
                }
            }
            (_, Some(key)) => builder.bearer_auth(key.expose()),
            (_, None) => builder,
        }
    }

    fn post_json(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, url).header("content-type", "application/json").body(body.to_string())
    }

    /// Sends a request and reads its body; a non-2xx status is an error naming the URL, the status
    /// and the provider's message (the key cut out).
    async fn send(&self, builder: reqwest::RequestBuilder, url: &str) -> anyhow::Result<String> {
        let mut response = self.response(builder, url).await?;
        let mut body = Vec::new();
        self.stream(&mut response, url, &mut body, ANSWER_BYTES, || {
            format!("{}: the answer of {url} is larger than {ANSWER_BYTES} bytes", self.engine.provider())
        })
        .await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// Sends a request; a non-2xx status is an error naming the URL, the status and the provider's
    /// message (the key cut out); else the response, its body not read yet.
    async fn response(&self, builder: reqwest::RequestBuilder, url: &str) -> anyhow::Result<reqwest::Response> {
        let provider = self.engine.provider();
        let mut response = builder
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{provider}: cannot reach {url}: {}", crate::provider::error::chain(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let mut body = Vec::new();
        // An error's body: its start is enough to say why.
        let _ = self.stream(&mut response, url, &mut body, ANSWER_BYTES, String::new).await;
        let body = String::from_utf8_lossy(&body);
        let redact = |text: &str| self.key.as_ref().map_or_else(|| text.to_string(), |key| key.redact(text));
        let hint = match status.as_u16() {
            401 | 403 => format!(" (check {})", self.key_var()),
            404 => " (is the base URL right, and does this server offer batches?)".to_string(),
            _ => String::new(),
        };
        bail!("{provider}: HTTP {} from {url}: {}{hint}", status.as_u16(), redact(&body_message(&body)))
    }

    /// Writes `response`'s body to `out` as it comes, refused (`too_large` says why) as soon as it
    /// passes `limit` bytes (or says it will); returns the bytes written.
    async fn stream(
        &self,
        response: &mut reqwest::Response,
        url: &str,
        out: &mut dyn std::io::Write,
        limit: u64,
        too_large: impl Fn() -> String,
    ) -> anyhow::Result<u64> {
        if response.content_length().is_some_and(|length| length > limit) {
            bail!("{}", too_large());
        }
        let mut written: u64 = 0;
        while let Some(chunk) = response
            .chunk()
            .await
            .with_context(|| format!("{}: reading the answer of {url}", self.engine.provider()))?
        {
            written += chunk.len() as u64;
            if written > limit {
                bail!("{}", too_large());
            }
            out.write_all(&chunk).context("writing the answer down")?;
        }
        Ok(written)
    }

    fn key_var(&self) -> &str {
        if let Some(own) = &self.key_env {
            return own;
        }
        match self.engine {
            Engine::Openai => kind::OPENAI.key_var,
            Engine::Anthropic => kind::ANTHROPIC.key_var,
            Engine::Vllm => kind::VLLM.key_var,
        }
    }

    async fn json(&self, builder: reqwest::RequestBuilder, url: &str) -> anyhow::Result<Value> {
        let body = self.send(builder, url).await?;
        serde_json::from_str(&body).map_err(|e| {
            anyhow::anyhow!(
                "{}: the answer of {url} is not JSON ({e}): {}",
                self.engine.provider(),
                escape_controls(&body.chars().take(200).collect::<String>())
            )
        })
    }

    /// Submits the batch input file `input` (its text; `name` is its file name) and returns the
    /// new batch's status.
    pub async fn submit(&self, input: &str, name: &str) -> anyhow::Result<Status> {
        match self.engine {
            Engine::Anthropic => {
                let requests = input
                    .lines()
                    .enumerate()
                    .filter(|(_, line)| !line.trim().is_empty())
                    .map(|(index, line)| {
                        serde_json::from_str::<Value>(line)
                            .with_context(|| format!("{name} line {}: not JSON", index + 1))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let url = format!("{}/v1/messages/batches", self.base_url);
                let body = json!({ "requests": requests });
                let builder = self.post_json(&url, &body);
                Ok(self.status_of(&self.json(builder, &url).await?))
            }
            Engine::Openai | Engine::Vllm => {
                let url = format!("{}/files", self.base_url);
                let part = reqwest::multipart::Part::text(input.to_string())
                    .file_name(name.to_string())
                    .mime_str("application/jsonl")?;
                let form = reqwest::multipart::Form::new().text("purpose", "batch").part("file", part);
                let file = self.json(self.request(reqwest::Method::POST, &url).multipart(form), &url).await?;
                let Some(file_id) = file["id"].as_str() else {
                    bail!("{}: the upload answer from {url} has no file id: {file}", self.engine.provider());
                };
                let url = format!("{}/batches", self.base_url);
                let body = json!({"input_file_id": file_id, "endpoint": CHAT_COMPLETIONS, "completion_window": "24h"});
                let builder = self.post_json(&url, &body);
                Ok(self.status_of(&self.json(builder, &url).await?))
            }
        }
    }

    /// The status of batch `id`.
    pub async fn status(&self, id: &str) -> anyhow::Result<Status> {
        let url = match self.engine {
            Engine::Anthropic => self.at(&["v1", "messages", "batches", id]),
            Engine::Openai | Engine::Vllm => self.at(&["batches", id]),
        };
        let value = self.json(self.request(reqwest::Method::GET, &url), &url).await?;
        Ok(self.status_of(&value))
    }

    /// Polls batch `id` until it has ended, waiting `first` after the first look, then twice as long
    /// each time up to [`MAX_POLL`]; each status goes to `seen`. Dropping the future stops waiting.
    pub async fn wait(&self, id: &str, first: Duration, mut seen: impl FnMut(&Status)) -> anyhow::Result<Status> {
        let mut pause = first;
        loop {
            let status = self.status(id).await?;
            seen(&status);
            if status.ended {
                return Ok(status);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_POLL);
        }
    }

    /// The result lines of an ended batch (OpenAI: the output file, then the error file), at most
    /// `limit` bytes of them ([`Self::results_to`]).
    pub async fn results(&self, status: &Status, limit: u64) -> anyhow::Result<String> {
        let mut bytes = Vec::new();
        self.results_to(status, &mut bytes, limit).await?;
        Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Writes the result lines of an ended batch to `out` as they are downloaded (OpenAI: the output
    /// file, then the error file), each file ending its last line; more than `limit` bytes in all is
    /// an error naming the limit and `--max-results-bytes`, as soon as the download passes it.
    pub async fn results_to(
        &self,
        status: &Status,
        out: &mut dyn std::io::Write,
        limit: u64,
    ) -> anyhow::Result<Fetched> {
        if !status.ended {
            bail!(
                "batch {} is {} ({} of {} requests done): fetch it again once it has ended",
                status.id,
                status.status,
                status.done,
                status.total
            );
        }
        let too_large = || {
            format!(
                "{}: the results of batch {} are larger than {limit} bytes, the most a fetch takes; nothing was \
                 kept (give --max-results-bytes BYTES to take more)",
                self.engine.provider(),
                status.id
            )
        };
        let mut lines = Lines::default();
        let mut fetched = Fetched::default();
        for place in &status.results {
            let url = match self.engine {
                // The key goes with the request: only to the base URL's origin, whatever the server names.
                Engine::Anthropic if !same_origin(&self.base_url, place) => bail!(
                    "anthropic: the results URL {} is not on the base URL's origin ({}): tunebench sends the API \
                     key only there; download the results yourself and run `tunebench batch import FILE`",
                    escape_controls(place),
                    self.base_url
                ),
                Engine::Anthropic => place.clone(),
                Engine::Openai | Engine::Vllm => self.at(&["files", place, "content"]),
            };
            let mut response = self.response(self.request(reqwest::Method::GET, &url), &url).await?;
            let left = limit.saturating_sub(fetched.bytes);
            let mut counted = Counted { out: &mut *out, lines: &mut lines };
            fetched.bytes += self.stream(&mut response, &url, &mut counted, left, &too_large).await?;
            if !lines.ended {
                out.write_all(b"\n").context("writing the results down")?;
                lines.saw(b"\n");
                fetched.bytes += 1;
            }
        }
        fetched.lines = lines.count;
        Ok(fetched)
    }

    /// A provider's batch object in common words.
    fn status_of(&self, batch: &Value) -> Status {
        let count = |key: &str| batch["request_counts"][key].as_u64().unwrap_or(0);
        let word = |key: &str| batch[key].as_str().unwrap_or_default().to_string();
        let id = word("id");
        match self.engine {
            Engine::Anthropic => {
                let failed = count("errored") + count("canceled") + count("expired");
                let done = count("succeeded") + failed;
                let status = word("processing_status");
                Status {
                    id,
                    engine: self.engine,
                    ended: status == "ended",
                    status,
                    total: done + count("processing"),
                    done,
                    failed,
                    errors: Vec::new(),
                    results: batch["results_url"].as_str().map(str::to_string).into_iter().collect(),
                }
            }
            Engine::Openai | Engine::Vllm => {
                let status = word("status");
                let errors = batch["errors"]["data"]
                    .as_array()
                    .map(|all| {
                        all.iter()
                            .map(|e| {
                                let line = e["line"].as_u64().map(|l| format!("line {l}: ")).unwrap_or_default();
                                format!("{line}{}", e["message"].as_str().unwrap_or_default())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Status {
                    id,
                    engine: self.engine,
                    ended: matches!(status.as_str(), "completed" | "failed" | "expired" | "cancelled"),
                    status,
                    total: count("total"),
                    done: count("completed") + count("failed"),
                    failed: count("failed"),
                    errors,
                    results: ["output_file_id", "error_file_id"]
                        .iter()
                        .filter_map(|key| batch[*key].as_str().map(str::to_string))
                        .collect(),
                }
            }
        }
    }
}

/// Counts the lines with text written through it.
struct Lines {
    count: u64,
    /// The line under way has text.
    text: bool,
    /// The last byte written ended a line (or nothing was written yet).
    ended: bool,
}

impl Default for Lines {
    fn default() -> Self {
        Self { count: 0, text: false, ended: true }
    }
}

impl Lines {
    fn saw(&mut self, bytes: &[u8]) {
        for byte in bytes {
            match byte {
                b'\n' => {
                    self.count += u64::from(self.text);
                    self.text = false;
                }
                byte if !byte.is_ascii_whitespace() => self.text = true,
                _ => {}
            }
        }
        if let Some(last) = bytes.last() {
            self.ended = *last == b'\n';
        }
    }
}

/// `out`, its lines counted.
struct Counted<'a> {
    out: &'a mut dyn std::io::Write,
    lines: &'a mut Lines,
}

impl std::io::Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.lines.saw(buf.get(..n).unwrap_or_default());
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
