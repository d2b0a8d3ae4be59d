//! The local model's speed figures for `tunebench bench`: load time, tokens/s generating 256 tokens
//! unconstrained, with the schema mask (json-schema) and with forced tokens (constrained), the same
//! with the weights as stored (Q4_1, the in-run baseline), and peak memory.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::engine::{Engine, LoadOptions};
use super::model::Weights;
use super::LocalError;
use crate::provider::{Event, Request, StructuredMode};

/// Tokens generated per measurement.
pub const TOKENS: u32 = 256;

/// One generation's speed.
#[derive(Clone, Debug, Serialize)]
pub struct Speed {
    pub tokens: usize,
    pub forced_tokens: usize,
    pub prompt_tokens: usize,
    /// Prompt processing (prefill), milliseconds.
    pub prefill_ms: f64,
    /// Generated tokens per second, from the first token to the last.
    pub tokens_per_s: f64,
}

/// Every figure of the `local` section.
#[derive(Clone, Debug, Serialize)]
pub struct LocalFigures {
    pub model: String,
    /// Threads of candle's matmuls (`TUNEBENCH_THREADS`, default 1).
    pub threads: usize,
    /// Load with Q4_1 → Q8_0 conversion (the default), and as stored.
    pub load_ms: f64,
    pub load_as_stored_ms: f64,
    /// Building the token trie and grammar engine (once per model, on the first constrained request).
    pub constraint_setup_ms: f64,
    pub unconstrained: Speed,
    /// json-schema: every token masked by the grammar, none forced.
    pub masked: Speed,
    /// constrained: masked, and the schema's fixed parts forced in batched forward passes.
    pub constrained: Speed,
    /// Baseline: the weights as stored (Q4_1), unconstrained.
    pub as_stored_unconstrained: Speed,
    /// constrained ÷ unconstrained tokens/s (the goal: at least 0.9).
    pub constrained_vs_unconstrained: f64,
    pub masked_vs_unconstrained: f64,
    /// Q8_0 ÷ Q4_1 tokens/s, unconstrained.
    pub q8_vs_as_stored: f64,
    /// Peak resident memory of this process (VmHWM), MB.
    pub peak_rss_mb: f64,
}

fn story() -> Request {
    Request::new("")
        .user("Write a long, detailed story about a lighthouse keeper who finds a message in a bottle.")
        .max_tokens(TOKENS)
}

fn extraction(mode: StructuredMode) -> Request {
    let schema = crate::cli::bench::union_schema();
    let mut request = Request::new("")
        .system("Extract definitions and relationships as JSON Lines: one compact JSON object per line.")
        .user(
            "DNA is the molecule that carries the genetic instructions of living organisms. In eukaryotic cells, \
             DNA is located in the nucleus. RNA polymerase copies DNA into messenger RNA, and ribosomes translate \
             the mRNA into proteins. Mitochondria produce energy for the cell.",
        )
        .max_tokens(TOKENS)
        .structured(mode, Some(schema));
    request.jsonl = true;
    request
}

fn speed(engine: &mut Engine, request: &Request) -> Result<Speed, LocalError> {
    engine.forget_cache();
    let started = Instant::now();
    let mut first: Option<Instant> = None;
    let mut last = started;
    let generated = engine.generate(request, &mut |event| {
        if let Event::Token { .. } = event {
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
        }
        true
    })?;
    let first = first.unwrap_or(last);
    let span = last.duration_since(first).as_secs_f64();
    let tokens = generated.tokens.len();
    Ok(Speed {
        tokens,
        forced_tokens: generated.forced_tokens,
        prompt_tokens: generated.prompt_tokens,
        prefill_ms: first.duration_since(started).as_secs_f64() * 1e3,
        tokens_per_s: if span > 0.0 { (tokens.saturating_sub(1)) as f64 / span } else { 0.0 },
    })
}

/// Peak resident memory (VmHWM of /proc/self/status), MB; 0 where there is no /proc.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Measures the model at `path`.
pub fn measure(path: &Path) -> Result<LocalFigures, LocalError> {
    let started = Instant::now();
    let mut engine = Engine::load(path, &LoadOptions::default())?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    engine.prepare_constraints()?;
    let constraint_setup_ms = started.elapsed().as_secs_f64() * 1e3;
    // Warm-up (thread pool, caches), then the measured runs.
    let _ = speed(&mut engine, &Request::new("").user("Hi").max_tokens(8))?;
    let unconstrained = speed(&mut engine, &story())?;
    let masked = speed(&mut engine, &extraction(StructuredMode::JsonSchema))?;
    let constrained = speed(&mut engine, &extraction(StructuredMode::Constrained))?;
    let peak_rss_mb = peak_rss_mb();
    drop(engine);
    let started = Instant::now();
    let mut stored = Engine::load(path, &LoadOptions { weights: Weights::AsStored, ..LoadOptions::default() })?;
    let load_as_stored_ms = started.elapsed().as_secs_f64() * 1e3;
    let as_stored_unconstrained = speed(&mut stored, &story())?;
    let ratio = |a: &Speed, b: &Speed| if b.tokens_per_s > 0.0 { a.tokens_per_s / b.tokens_per_s } else { 0.0 };
    Ok(LocalFigures {
        model: path.display().to_string(),
        threads: super::engine::threads(),
        load_ms,
        load_as_stored_ms,
        constraint_setup_ms,
        constrained_vs_unconstrained: ratio(&constrained, &unconstrained),
        masked_vs_unconstrained: ratio(&masked, &unconstrained),
        q8_vs_as_stored: ratio(&unconstrained, &as_stored_unconstrained),
        unconstrained,
        masked,
        constrained,
        as_stored_unconstrained,
        peak_rss_mb,
    })
}
