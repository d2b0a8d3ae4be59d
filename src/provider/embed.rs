//! Embeddings from a server, for `similar` checks and comparators: the request and the response of
//! the two wire shapes tunebench speaks, an OpenAI-compatible `POST {base}/embeddings`
//! (`{"model", "input": [...]}` → `data[i].embedding`, OpenAI, vLLM, llama.cpp servers) and Ollama's
//! `POST {host}/api/embed` (`{"model", "input": [...]}` → `embeddings[i]`). A server that sends one
//! vector per token (llama-cpp-python with a model that has no pooling) has them averaged. The base URL and the key
//! come from the provider's variables as an answer's do (`endpoint::resolve`), the request goes
//! through the one client (`http`: redirects only within the origin, timeouts, retries of 429/503),
//! the body is read up to [`MAX_BODY_BYTES`]. The response cache is the eval's business: it keys on
//! [`Embedder::outgoing`] and keeps the body [`Embedder::send`] returns.

use serde_json::{json, Value};

use super::endpoint;
use super::error::snippet;
use super::generate::Emit;
use super::http::{self, read_text, HttpOptions, Target};
use super::kind::ProviderKind;
use super::{ApiKey, Outgoing, ProviderError};

/// The largest embeddings response read (two inputs of 3,072 floats are about 100 kB).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// An embedding model: a provider that serves embeddings and the model's name, as a file writes it
/// (`openai:text-embedding-3-small`, `vllm:bge-m3`, `ollama:nomic-embed-text`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EmbedderModel {
    pub provider: ProviderKind,
    pub model: String,
    /// Where it is called (a promptfoo provider's `config.apiBaseUrl` and key); empty: the provider's
    /// own variables.
    pub server: endpoint::Server,
}

impl EmbedderModel {
    /// `PROVIDER:MODEL` (promptfoo's `openai:embedding:MODEL` and `ollama:embeddings:MODEL` too).
    /// `Err` says why it names no embedding model this build can call.
    pub fn parse(text: &str) -> Result<EmbedderModel, String> {
        let usage =
            "write PROVIDER:MODEL with PROVIDER one of openai, vllm, ollama (e.g. openai:text-embedding-3-small)";
        let (name, model) =
            text.trim().split_once(':').ok_or_else(|| format!("embedder {text:?} names no model: {usage}"))?;
        let model = model.trim();
        let model =
            ["embedding:", "embeddings:"].iter().find_map(|prefix| model.strip_prefix(prefix)).unwrap_or(model).trim();
        let provider = match ProviderKind::parse(name) {
            Some(kind @ (ProviderKind::Openai | ProviderKind::Vllm | ProviderKind::Ollama)) => kind,
            Some(other) => {
                return Err(format!("embedder {text:?}: {other} serves no embeddings tunebench can call; {usage}"))
            }
            None => return Err(format!("embedder {text:?}: {name:?} is not a provider; {usage}")),
        };
        if model.is_empty() {
            return Err(format!("embedder {text:?} names no model: {usage}"));
        }
        Ok(EmbedderModel { provider, model: model.to_string(), server: endpoint::Server::default() })
    }

    /// As written: `openai:text-embedding-3-small`.
    pub fn shown(&self) -> String {
        format!("{}:{}{}", self.provider.name(), self.model, self.server.shown())
    }

    /// This model called at `server`.
    pub fn at(self, server: endpoint::Server) -> EmbedderModel {
        EmbedderModel { server, ..self }
    }
}

/// A client for one embedding model on its server.
#[derive(Clone, Debug)]
pub struct Embedder {
    pub model: EmbedderModel,
    /// The base URL (OpenAI-compatible, with `/v1`) or Ollama's host, without a trailing `/`.
    base_url: String,
    base_hint: &'static str,
    key_var: &'static str,
    key: Option<ApiKey>,
    client: reqwest::Client,
    options: HttpOptions,
}

impl Embedder {
    /// `model`'s server, found as its provider's answers are (the provider's base URL variable, else
    /// its default; the key from its key variable read through `lookup`). `Err`: a missing key, a
    /// bad URL.
    pub fn new(
        model: &EmbedderModel,
        lookup: impl Fn(&str) -> Option<String>,
        options: HttpOptions,
    ) -> Result<Embedder, ProviderError> {
        let vars = model.provider.endpoint().ok_or_else(|| ProviderError::Config {
            provider: model.provider.name().to_string(),
            message: "serves no embeddings".to_string(),
        })?;
        let server = &model.server;
        let found =
            endpoint::resolve(vars, server.base_url.as_deref(), |name| server.read(vars.key_var, name, &lookup))?;
        let base_url = match model.provider {
            ProviderKind::Ollama => super::ollama::normalize_host(&found.url),
            _ => found.url.trim().trim_end_matches('/').to_string(),
        };
        let client = http::client(vars.provider, &base_url, &options)?;
        Ok(Embedder {
            model: model.clone(),
            base_url,
            base_hint: found.hint,
            key_var: vars.key_var,
            key: found.key,
            client,
            options,
        })
    }

    /// Where the request goes: `{base}/embeddings`, or Ollama's `{host}/api/embed`.
    pub fn url(&self) -> String {
        match self.model.provider {
            ProviderKind::Ollama => format!("{}/api/embed", self.base_url),
            _ => format!("{}/embeddings", self.base_url),
        }
    }

    /// The request for `inputs` (both wire shapes send `{"model", "input": [...]}`), the key header
    /// named by its variable.
    pub fn outgoing(&self, inputs: &[String]) -> Outgoing {
        let body = json!({"model": self.model.model, "input": inputs});
        Outgoing::post(self.url(), body).key_header("authorization", "Bearer ", self.key.as_ref().map(|_| self.key_var))
    }

    /// Sends the request for `inputs`: the response's body (JSON text, checked to hold one vector
    /// per input), or why there is none (unreachable, an HTTP error with its message, a body of
    /// another shape or past [`MAX_BODY_BYTES`]).
    pub async fn send(&self, inputs: &[String]) -> Result<String, ProviderError> {
        let url = self.url();
        let provider = self.model.provider.name();
        let target = Target {
            provider,
            url: &url,
            key_var: self.key_var,
            key: self.key.as_ref(),
            model: &self.model.model,
            base_hint: self.base_hint,
        };
        let outgoing = self.outgoing(inputs);
        let build = || outgoing.builder(&self.client, self.key.as_ref());
        let response = match target.send(build, &self.options, &Emit::discarding()).await {
            Err(error) => return Err(error.redacted(self.key.as_ref())),
            Ok(Err((rejected, retries))) => return Err(target.status_error(&rejected, retries)),
            Ok(Ok(response)) => response,
        };
        let media = http::media_type(&response);
        if !media.is_empty() && media != "application/json" {
            return Err(http::wrong_content_type(&target, response, "application/json", &self.options).await);
        }
        let body = read_text(response, &self.options, MAX_BODY_BYTES + 1).await;
        if body.len() > MAX_BODY_BYTES {
            return Err(ProviderError::TooLarge { provider: provider.to_string(), limit_bytes: MAX_BODY_BYTES as u64 });
        }
        self.vectors(&body, inputs.len())?;
        Ok(body)
    }

    /// The vectors in a response `body` to `count` inputs, in the inputs' order.
    pub fn vectors(&self, body: &str, count: usize) -> Result<Vec<Vec<f64>>, ProviderError> {
        vectors_of(self.model.provider, body, count)
    }
}

/// The vectors in a response `body` of `provider`'s wire shape to `count` inputs: OpenAI's
/// `data[i].embedding` (placed by each entry's `index` when it has one), Ollama's `embeddings[i]`.
pub fn vectors_of(provider: ProviderKind, body: &str, count: usize) -> Result<Vec<Vec<f64>>, ProviderError> {
    let malformed = |message: String| ProviderError::Malformed {
        provider: provider.name().to_string(),
        what: "embeddings response".to_string(),
        message,
        snippet: snippet(body),
    };
    let value: Value = serde_json::from_str(body).map_err(|e| malformed(format!("not JSON ({e})")))?;
    let vectors: Vec<Vec<f64>> = match provider {
        ProviderKind::Ollama => {
            let list = value
                .get("embeddings")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("no `embeddings` list".into()))?;
            list.iter()
                .enumerate()
                .map(|(i, v)| vector(v).ok_or_else(|| malformed(format!("`embeddings[{i}]` is not a list of numbers"))))
                .collect::<Result<_, _>>()?
        }
        _ => {
            let data = value.get("data").and_then(Value::as_array).ok_or_else(|| malformed("no `data` list".into()))?;
            let mut placed: Vec<Option<Vec<f64>>> = vec![None; data.len()];
            for (i, entry) in data.iter().enumerate() {
                let at = match entry.get("index") {
                    None => i,
                    Some(index) => index
                        .as_u64()
                        .map(|n| n as usize)
                        .filter(|n| *n < data.len())
                        .ok_or_else(|| malformed(format!("`data[{i}].index` is {index}, not an input's index")))?,
                };
                let embedding = entry
                    .get("embedding")
                    .and_then(vector)
                    .ok_or_else(|| malformed(format!("`data[{i}].embedding` is not a list of numbers")))?;
                match placed.get_mut(at) {
                    Some(slot @ None) => *slot = Some(embedding),
                    _ => return Err(malformed(format!("two entries of `data` have index {at}"))),
                }
            }
            placed.into_iter().flatten().collect()
        }
    };
    if vectors.len() != count {
        return Err(malformed(format!("{} vectors for {count} inputs", vectors.len())));
    }
    if let Some(i) = vectors.iter().position(|v| v.is_empty() || v.len() != vectors[0].len()) {
        return Err(malformed(format!("vector {i} is empty or of another length than the first")));
    }
    Ok(vectors)
}

/// A JSON list of finite numbers; or one list per token, of one length (what llama-cpp-python sends
/// for a model without pooling), averaged into one (mean pooling, as llama.cpp pools).
fn vector(value: &Value) -> Option<Vec<f64>> {
    let list = value.as_array()?;
    if list.first().is_some_and(Value::is_array) {
        let rows: Vec<Vec<f64>> = list.iter().map(flat).collect::<Option<_>>()?;
        let width = rows.first()?.len();
        if width == 0 || rows.iter().any(|row| row.len() != width) {
            return None;
        }
        let mut mean = vec![0.0; width];
        for row in &rows {
            for (sum, x) in mean.iter_mut().zip(row) {
                *sum += x;
            }
        }
        return Some(mean.into_iter().map(|sum| sum / rows.len() as f64).collect());
    }
    flat(value)
}

/// A JSON list of finite numbers.
fn flat(value: &Value) -> Option<Vec<f64>> {
    value.as_array()?.iter().map(|n| n.as_f64().filter(|n| n.is_finite())).collect()
}

/// How alike two vectors point, -1 to 1 (cosine similarity); `None` when either is all zeros or
/// their lengths differ.
pub fn cosine(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    // Each vector scaled by its largest magnitude first (the cosine does not change): huge values
    // (1e308) would overflow the sums to infinity, and infinity over infinity is NaN.
    let largest = |v: &[f64]| v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (sa, sb) = (largest(a), largest(b));
    if sa == 0.0 || sb == 0.0 {
        return None;
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| (x / sa) * (y / sb)).sum();
    let norm = |v: &[f64], s: f64| v.iter().map(|x| (x / s) * (x / s)).sum::<f64>().sqrt();
    let similarity = dot / (norm(a, sa) * norm(b, sb));
    similarity.is_finite().then(|| similarity.clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn embedder_names_are_read_as_promptfoo_and_tunebench_write_them() {
        let model = |text: &str| EmbedderModel::parse(text).map(|m| m.shown());
        assert_eq!(model("openai:text-embedding-3-small").unwrap(), "openai:text-embedding-3-small");
        assert_eq!(model("openai:embedding:text-embedding-3-large").unwrap(), "openai:text-embedding-3-large");
        assert_eq!(model("ollama:embeddings:nomic-embed-text").unwrap(), "ollama:nomic-embed-text");
        assert_eq!(model(" vllm:bge-m3 ").unwrap(), "vllm:bge-m3");
        for (bad, says) in [
            ("openai", "names no model"),
            ("openai:", "names no model"),
            ("anthropic:claude", "anthropic serves no embeddings"),
            ("local:x", "local serves no embeddings"),
            ("huggingface:sentence-similarity:x", "\"huggingface\" is not a provider"),
        ] {
            let error = model(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn both_wire_shapes_give_their_vectors_in_the_inputs_order() {
        let openai = r#"{"object":"list","data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}"#;
        assert_eq!(vectors_of(ProviderKind::Openai, openai, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        // One vector per token (llama-cpp-python, a model without pooling): their mean.
        let tokens = r#"{"data":[{"index":0,"embedding":[[1,0],[3,2]]},{"index":1,"embedding":[[0,1]]}]}"#;
        assert_eq!(vectors_of(ProviderKind::Openai, tokens, 2).unwrap(), vec![vec![2.0, 1.0], vec![0.0, 1.0]]);
        let ragged = r#"{"data":[{"embedding":[[1,0],[3]]},{"embedding":[[0,1]]}]}"#;
        assert!(vectors_of(ProviderKind::Openai, ragged, 2).is_err());
        let ollama = r#"{"model":"m","embeddings":[[0.5,0.5],[1,2]]}"#;
        assert_eq!(vectors_of(ProviderKind::Ollama, ollama, 2).unwrap()[1], vec![1.0, 2.0]);
        for (provider, body, says) in [
            (ProviderKind::Openai, "{}", "no `data` list"),
            (ProviderKind::Openai, r#"{"data":[{"embedding":[1]}]}"#, "1 vectors for 2 inputs"),
            (ProviderKind::Openai, r#"{"data":[{"embedding":"x"},{"embedding":[1]}]}"#, "`data[0].embedding`"),
            (ProviderKind::Openai, r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#, "index 0"),
            (ProviderKind::Openai, r#"{"data":[{"embedding":[1]},{"embedding":[1,2]}]}"#, "another length"),
            (ProviderKind::Ollama, r#"{"embedding":[1]}"#, "no `embeddings` list"),
            (ProviderKind::Ollama, "not json", "not JSON"),
        ] {
            let error = vectors_of(provider, body, 2).unwrap_err().to_string();
            assert!(error.contains(says), "{body}: {error}");
        }
    }

    #[test]
    fn cosine_similarity_of_vectors() {
        assert_eq!(cosine(&[1.0, 0.0], &[2.0, 0.0]), Some(1.0));
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), Some(0.0));
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), Some(-1.0));
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]).unwrap() - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), None);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), None);
        // Huge values neither overflow into NaN nor pass for alike: orthogonal stays 0, equal stays 1.
        assert_eq!(cosine(&[1e308, 0.0], &[0.0, 1e308]), Some(0.0));
        assert!((cosine(&[1e308, 1e308], &[1e308, 1e308]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[f64::NAN, 1.0], &[1.0, 1.0]), None);
        assert_eq!(cosine(&[f64::INFINITY, 1.0], &[1.0, 1.0]), None);
    }
}
