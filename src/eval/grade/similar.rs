//! Similarity of meaning (`similar` checks, promptfoo's `similar` assertion, the `similar` field
//! comparator): the cosine similarity of two texts' embeddings, from the embedder the check names
//! (`provider::embed`), passing at `threshold` (promptfoo's default 0.75 for a check). Each request is
//! answered from the eval's response cache when it was made before (same server, model and inputs:
//! no request); a failing embedder is an error of the cell, never a pass.

use std::path::PathBuf;

use serde_json::Value;

use super::{Graded, Question};
use crate::prompt::expect::{AssertWhat, CheckKind, CheckSpec};
use crate::provider::embed::{cosine, Embedder, EmbedderModel};
use crate::provider::http::HttpOptions;
use crate::run::cache::{CacheKey, CacheMode, ResponseCache};
use crate::truncate::transcript::{Chunk, End, Header, Transcript, FORMAT_VERSION};

/// The threshold of a `similar` check that gives none (promptfoo's).
pub const DEFAULT_THRESHOLD: f64 = 0.75;

/// A `similar` check as prepared.
#[derive(Clone, Debug)]
pub struct SimilarCheck {
    /// The check's own embedder; `None`: the eval's (`eval --embedder`, else `[eval] embedder`).
    pub embedder: Option<EmbedderModel>,
    pub threshold: f64,
    /// The texts to be like (`value`: one, or a list of which any will do); `None`: the expected
    /// answer (at `path`).
    pub values: Option<Vec<String>>,
    /// A JSON Pointer into the answer (and the expected answer): the value compared.
    pub path: Option<String>,
    /// promptfoo's `not-similar`: passes when the texts are not alike.
    pub negated: bool,
}

impl SimilarCheck {
    /// A `similar` check's (`embedder`, `threshold`, `value`, `path`) or a promptfoo `similar`
    /// assertion's (its embedder given by its `provider` or the test's `options.provider`; none: the
    /// eval's).
    pub fn of(spec: &CheckSpec) -> Result<SimilarCheck, String> {
        let embedder = spec
            .embedder
            .as_deref()
            .map(EmbedderModel::parse)
            .transpose()
            .map_err(|why| format!("`embedder`: {why}"))?
            .map(|model| model.at(spec.server()));
        let threshold = spec.threshold.unwrap_or(DEFAULT_THRESHOLD);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(format!("`threshold` {threshold} of a `similar` check is outside 0..1"));
        }
        let values = match &spec.value {
            None => None,
            Some(Value::String(text)) => Some(vec![text.clone()]),
            Some(Value::Array(list)) if !list.is_empty() && list.iter().all(Value::is_string) => {
                Some(list.iter().filter_map(Value::as_str).map(str::to_string).collect())
            }
            Some(other) => {
                return Err(format!("`value` of a `similar` check is a text or a list of texts, not {other}"))
            }
        };
        if values.is_none() && spec.kind == CheckKind::Assert {
            return Err("a `similar` assertion needs its `value`".to_string());
        }
        let negated = spec.assert.as_ref().is_some_and(|a| a.negated && matches!(a.what, AssertWhat::NotEvaluated(_)));
        Ok(SimilarCheck { embedder, threshold, values, path: spec.path.clone().filter(|p| !p.is_empty()), negated })
    }

    /// `question`'s answer (or its value at `path`) compared with the values or the expected answer.
    pub async fn grade(&self, question: &Question, embedding: &Embedding) -> Result<Graded, String> {
        let answer = match &self.path {
            None => question.output.clone(),
            Some(pointer) => match question.answer.pointer(pointer) {
                Some(value) => text_of(value),
                None => return Err(format!("the answer has nothing at {pointer} to compare")),
            },
        };
        let wanted = match &self.values {
            Some(values) => values.clone(),
            None => {
                let expected = match &self.path {
                    None => Some(&question.expected),
                    Some(pointer) => question.expected.pointer(pointer),
                };
                match expected.filter(|v| !v.is_null()) {
                    Some(value) => vec![text_of(value)],
                    None => return Err("no expected value to compare with: give the check a `value`".to_string()),
                }
            }
        };
        let best = embedding.best_similarity(&answer, &wanted).await?;
        let alike = best >= self.threshold;
        let pass = alike != self.negated;
        let sign = if alike { ">=" } else { "<" };
        let reason = format!("similar {best:.2} {sign} {:.2}", self.threshold);
        let score = if self.negated { 1.0 - best.max(0.0) } else { best.max(0.0) };
        Ok(Graded { pass, score: score.min(1.0), reason: Some(reason), raised: false })
    }
}

/// A value as the text embedded: a string as it is, anything else as JSON.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// One embedder of an eval, behind the eval's response cache.
#[derive(Debug)]
pub struct Embedding {
    embedder: Embedder,
    cache: Option<ResponseCache>,
    mode: CacheMode,
}

impl Embedding {
    /// `model`'s server (a missing key or a bad URL is an error here, before any model runs), its
    /// requests kept in the response cache `cache_dir` (the default one when `None`) unless `mode`
    /// is off.
    pub fn new(model: &EmbedderModel, mode: CacheMode, cache_dir: Option<PathBuf>) -> Result<Embedding, String> {
        let lookup = |name: &str| std::env::var(name).ok();
        let embedder = Embedder::new(model, lookup, HttpOptions::default())
            .map_err(|e| format!("embedder {}: {e}", model.shown()))?;
        let cache = match (mode, cache_dir) {
            (CacheMode::Off, _) => None,
            (_, Some(dir)) => Some(ResponseCache::at(dir)),
            (_, None) => ResponseCache::default_dir(),
        };
        Ok(Embedding { embedder, cache, mode })
    }

    /// The highest cosine similarity of `text` with any of `others`, from one request (or the cache).
    pub async fn best_similarity(&self, text: &str, others: &[String]) -> Result<f64, String> {
        let mut inputs = vec![text.to_string()];
        inputs.extend(others.iter().cloned());
        let vectors = self.vectors(&inputs).await?;
        let shown = self.embedder.model.shown();
        let (first, rest) = vectors.split_first().ok_or_else(|| format!("embedder {shown} sent no vectors"))?;
        rest.iter()
            .map(|other| cosine(first, other))
            .collect::<Option<Vec<f64>>>()
            .and_then(|all| all.into_iter().reduce(f64::max))
            .ok_or_else(|| {
                format!("embedder {shown} sent a vector of zeros or of numbers that are not finite: no similarity")
            })
    }

    /// The vectors of `inputs`: from the cache when this request was answered before, else from the
    /// server (and kept).
    async fn vectors(&self, inputs: &[String]) -> Result<Vec<Vec<f64>>, String> {
        let model = &self.embedder.model;
        let outgoing = self.embedder.outgoing(inputs);
        let key = CacheKey::http(model.provider.name(), &model.model, &outgoing);
        if let (Some(cache), CacheMode::Use) = (&self.cache, self.mode) {
            if let Some(vectors) = cache.get(&key).and_then(|t| self.embedder.vectors(&t.answer(), inputs.len()).ok()) {
                return Ok(vectors);
            }
        }
        let body = self.embedder.send(inputs).await.map_err(|e| format!("embedder {} failed: {e}", model.shown()))?;
        let vectors = self.embedder.vectors(&body, inputs.len()).map_err(|e| e.to_string())?;
        if let Some(cache) = &self.cache {
            let header = Header {
                transcript: FORMAT_VERSION,
                provider: model.provider.name().to_string(),
                model: model.model.clone(),
                request: outgoing.body.clone(),
            };
            let chunk = Chunk { t_ms: 0, delta: body, ..Chunk::default() };
            let end = End { t_ms: 0, finish_reason: Some("stop".to_string()), usage: None, error: None };
            cache.put(&key, &Transcript { header, chunks: vec![chunk], end: Some(end) });
        }
        Ok(vectors)
    }
}
