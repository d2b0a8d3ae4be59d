//! The local model's speed figures for `tunebench bench`: load time, tokens/s generating 256 tokens
//! unconstrained, with the schema mask (json-schema) and with forced tokens (constrained), the same on
//! candle's quantized matmuls (the in-run baseline), and peak memory.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::{load_options, Backend, Engine, Generated, LoadOptions, LocalError};
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
    /// Generated tokens per second of this thread's CPU time (prompt included): the figure that holds
    /// when other processes share the cores; 0 where there is no /proc.
    pub tokens_per_cpu_s: f64,
}

/// Every figure of the `local` section.
#[derive(Clone, Debug, Serialize)]
pub struct LocalFigures {
    pub model: String,
    /// Threads of our forward pass (`TUNEBENCH_THREADS`, else the machine's).
    pub threads: usize,
    /// Load of our forward pass (4-bit weights as stored), and of candle's (Q4_1 → Q8_0 at load).
    pub load_ms: f64,
    pub load_candle_ms: f64,
    /// Building the token trie and grammar engine (once per model, on the first constrained request).
    pub constraint_setup_ms: f64,
    pub unconstrained: Speed,
    /// json-schema: every token masked by the grammar, none forced.
    pub masked: Speed,
    /// constrained: masked, and the schema's fixed parts forced in batched forward passes.
    pub constrained: Speed,
    /// Baseline: candle's quantized matmuls, unconstrained.
    pub candle_unconstrained: Speed,
    /// constrained ÷ unconstrained tokens/s (the goal: at least 0.9).
    pub constrained_vs_unconstrained: f64,
    pub masked_vs_unconstrained: f64,
    /// Ours ÷ candle's tokens/s, unconstrained.
    pub native_vs_candle: f64,
    /// Megabytes of weight matrices one generated token reads: ours, and candle's (Q8_0).
    pub weights_mb: f64,
    pub candle_weights_mb: f64,
    /// Weights read per second while generating (MB per token × tokens/s): ours and candle's.
    pub weights_gb_per_s: f64,
    pub candle_weights_gb_per_s: f64,
    /// The memory bandwidth baseline, measured in the same run: one thread summing a buffer the size
    /// of our weights (generation cannot read its weights faster than this).
    pub memory_read_gb_per_s: f64,
    /// Peak resident memory of this process (VmHWM), MB.
    pub peak_rss_mb: f64,
    /// The sample prompt's workload (a real answer), at 1 and 2 threads; absent when not asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadFigures>,
}

/// The requests of a real answer: the workbench's sample prompt, 1,024 tokens, greedy, unconstrained,
/// and the same prompt constrained to its schema line by line (its plan adds the schema's instructions).
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub unconstrained: Request,
    pub constrained: Request,
    /// The constrained request of another case (the variables differ: the next case of an eval).
    pub next_case: Request,
    /// The constrained request of a third case (an eval's later cases: the prefix warm, the grammar kept).
    pub later_case: Request,
}

/// Time to the first token of the constrained sample run, as a user meets it (the default threads).
#[derive(Clone, Debug, Serialize)]
pub struct FirstToken {
    /// Loading with the weights rebuilt from the GGUF (no stored weights), and read back from them.
    pub load_rebuilt_ms: f64,
    pub load_stored_ms: f64,
    /// `tunebench run`'s first run: the model loaded (stored weights), the grammar built, the prompt
    /// run, the first token.
    pub cli_first_run_ms: f64,
    /// The workbench's first run: the model was loaded and the prompt run through it in the background
    /// when the workbench started ([`Engine::warm`]); from ctrl-r to the first token.
    pub workbench_first_run_ms: f64,
    /// The same prompt again (its prefix cached), and the next case (only what differs run).
    pub next_run_ms: f64,
    pub next_case_ms: f64,
    pub next_case_reused_tokens: usize,
    /// The next case in the workbench: choosing it runs its prompt in the background ([`Engine::warm`]),
    /// then ctrl-r.
    pub next_case_chosen_ms: f64,
    /// A later case of an eval or a run of several cases, as `tunebench` runs it after the next case:
    /// the prefix it shares with the case before cached, its grammar compiled for the cases before.
    pub later_case_ms: f64,
    pub later_case_prompt_tokens: usize,
    pub later_case_reused_tokens: usize,
}

/// One run of a workload request at one thread count.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadRun {
    /// `unconstrained` or `constrained`.
    pub mode: String,
    pub threads: usize,
    pub prompt_tokens: usize,
    pub tokens: usize,
    pub forced_tokens: usize,
    pub finish: String,
    /// From the request to the first token (the prompt run from scratch, the model loaded).
    pub ttft_ms: f64,
    /// Prompt tokens ÷ the time to the first token.
    pub prompt_tokens_per_s: f64,
    /// Generated tokens per second, from the first token to the last.
    pub tokens_per_s: f64,
    /// Megabytes one generated token reads on average: the weights and the key/value cache up to its
    /// position.
    pub mb_per_token: f64,
    /// Those bytes × tokens/s.
    pub read_gb_per_s: f64,
}

/// The workload's figures.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadFigures {
    pub name: String,
    pub runs: Vec<WorkloadRun>,
    pub first_token: FirstToken,
    /// One thread summing a buffer the size of the weights (the same as the section's).
    pub memory_read_gb_per_s: f64,
    /// Peak resident memory after the workload, MB.
    pub peak_rss_mb: f64,
}

fn story() -> Request {
    Request::new("")
        .user("Write a long, detailed story about a lighthouse keeper who finds a message in a bottle.")
        .max_tokens(TOKENS)
}

fn extraction(mode: StructuredMode) -> Request {
    let schema = crate::bench_data::union_schema();
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

/// One generation from an empty cache, timed: what it made, seconds to its first token, and seconds
/// from the first token to the last.
pub(super) fn timed(engine: &mut Engine, request: &Request) -> Result<(Generated, f64, f64), LocalError> {
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
    Ok((generated, first.duration_since(started).as_secs_f64(), last.duration_since(first).as_secs_f64()))
}

/// Tokens after the first per second of `span`.
pub(super) fn per_s(tokens: usize, span: f64) -> f64 {
    if span > 0.0 {
        tokens.saturating_sub(1) as f64 / span
    } else {
        0.0
    }
}

fn speed(engine: &mut Engine, request: &Request) -> Result<Speed, LocalError> {
    let cpu = thread_cpu_s();
    let (generated, ttft, span) = timed(engine, request)?;
    let tokens = generated.tokens.len();
    let cpu = thread_cpu_s().zip(cpu).map_or(0.0, |(end, start)| end - start);
    Ok(Speed {
        tokens_per_cpu_s: if cpu > 0.0 { tokens as f64 / cpu } else { 0.0 },
        tokens,
        forced_tokens: generated.forced_tokens,
        prompt_tokens: generated.prompt_tokens,
        prefill_ms: ttft * 1e3,
        tokens_per_s: per_s(tokens, span),
    })
}

/// Peak resident memory (VmHWM of /proc/self/status), MB; 0 where there is no /proc.
pub fn peak_rss_mb() -> f64 {
    let status =
        crate::files::read_text(Path::new("/proc/self/status"), crate::files::SYSTEM_STATUS).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs `request` from an empty cache at `threads` threads.
fn workload_run(engine: &mut Engine, mode: &str, request: &Request, threads: usize) -> Result<WorkloadRun, LocalError> {
    engine.set_threads(threads)?;
    let (generated, ttft, span) = timed(engine, request)?;
    let tokens = generated.tokens.len();
    let tokens_per_s = per_s(tokens, span);
    let c = engine.config();
    // Keys and values as f16, every layer; a token at position p reads p + 1 positions.
    let per_position = (c.layers * 2 * c.kv_heads * c.head_dim * 2) as f64;
    let average_positions = generated.prompt_tokens as f64 + tokens as f64 / 2.0;
    let bytes = engine.weight_bytes() as f64 + per_position * average_positions;
    Ok(WorkloadRun {
        mode: mode.into(),
        threads: engine.threads(),
        prompt_tokens: generated.prompt_tokens,
        tokens,
        forced_tokens: generated.forced_tokens,
        finish: generated.finish.map(|f| format!("{f:?}").to_lowercase()).unwrap_or_default(),
        ttft_ms: ttft * 1e3,
        prompt_tokens_per_s: if ttft > 0.0 { generated.prompt_tokens as f64 / ttft } else { 0.0 },
        tokens_per_s,
        mb_per_token: bytes / 1e6,
        read_gb_per_s: bytes * tokens_per_s / 1e9,
    })
}

/// Milliseconds from `started` to the first token of `request` on `engine` (the cache as it is), and
/// the prompt tokens that came from the cache.
fn ttft_ms(engine: &mut Engine, request: &Request, started: Instant) -> Result<(f64, usize), LocalError> {
    ttft(engine, request, started).map(|(ms, generated)| (ms, generated.reused_tokens))
}

/// [`ttft_ms`] with what was generated.
fn ttft(engine: &mut Engine, request: &Request, started: Instant) -> Result<(f64, Generated), LocalError> {
    let mut first: Option<Instant> = None;
    let mut one = request.clone();
    one.max_tokens = Some(1);
    let generated = engine.generate(&one, &mut |event| {
        if let Event::Token { .. } = event {
            first.get_or_insert_with(Instant::now);
        }
        true
    })?;
    let first = first.unwrap_or_else(Instant::now);
    Ok((first.duration_since(started).as_secs_f64() * 1e3, generated))
}

/// The first-token figures of the constrained sample run, on fresh engines loaded from `path`.
fn first_token(path: &Path, workload: &Workload) -> Result<FirstToken, LocalError> {
    let rebuilt = LoadOptions { stored_weights: None, ..load_options() };
    let started = Instant::now();
    drop(Engine::load(path, &rebuilt)?);
    let load_rebuilt_ms = started.elapsed().as_secs_f64() * 1e3;
    // Makes sure the stored weights exist (a first start writes them).
    drop(Engine::load(path, &load_options())?);
    let started = Instant::now();
    let mut engine = Engine::load(path, &load_options())?;
    let load_stored_ms = started.elapsed().as_secs_f64() * 1e3;
    engine.prepare_constraints()?;
    let (cli_first_run_ms, _) = ttft_ms(&mut engine, &workload.constrained, started)?;
    drop(engine);
    let mut engine = Engine::load(path, &load_options())?;
    engine.warm(&workload.constrained)?;
    let (workbench_first_run_ms, _) = ttft_ms(&mut engine, &workload.constrained, Instant::now())?;
    let (next_run_ms, _) = ttft_ms(&mut engine, &workload.constrained, Instant::now())?;
    let (next_case_ms, next_case_reused_tokens) = ttft_ms(&mut engine, &workload.next_case, Instant::now())?;
    engine.warm(&workload.constrained)?;
    engine.warm(&workload.next_case)?;
    let (next_case_chosen_ms, _) = ttft_ms(&mut engine, &workload.next_case, Instant::now())?;
    // An eval's steady state: the case before answered (its prompt and grammar kept), then this one.
    let (later_case_ms, later) = ttft(&mut engine, &workload.later_case, Instant::now())?;
    Ok(FirstToken {
        load_rebuilt_ms,
        load_stored_ms,
        cli_first_run_ms,
        workbench_first_run_ms,
        next_run_ms,
        next_case_ms,
        next_case_reused_tokens,
        next_case_chosen_ms,
        later_case_ms,
        later_case_prompt_tokens: later.prompt_tokens,
        later_case_reused_tokens: later.reused_tokens,
    })
}

/// The workload at 1 and 2 threads (one after the other for each request, so both meet the same machine).
fn measure_workload(path: &Path, engine: &mut Engine, workload: &Workload) -> Result<WorkloadFigures, LocalError> {
    let threads = engine.threads();
    engine.prepare_constraints()?;
    let mut runs = Vec::new();
    for (mode, request) in [("unconstrained", &workload.unconstrained), ("constrained", &workload.constrained)] {
        for n in [1, 2] {
            runs.push(workload_run(engine, mode, request, n)?);
        }
    }
    engine.set_threads(threads)?;
    let first_token = first_token(path, workload)?;
    Ok(WorkloadFigures {
        name: workload.name.clone(),
        runs,
        first_token,
        memory_read_gb_per_s: memory_read_gb_per_s(engine.weight_bytes(), 1),
        peak_rss_mb: peak_rss_mb(),
    })
}

/// Measures the model at `path` (and `workload`, when given).
pub fn measure(path: &Path, workload: Option<&Workload>) -> Result<LocalFigures, LocalError> {
    let started = Instant::now();
    let mut engine = Engine::load(path, &load_options())?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    engine.prepare_constraints()?;
    let constraint_setup_ms = started.elapsed().as_secs_f64() * 1e3;
    // Warm-up (thread pool, caches), then the measured runs.
    let _ = speed(&mut engine, &Request::new("").user("Hi").max_tokens(8))?;
    let unconstrained = speed(&mut engine, &story())?;
    let masked = speed(&mut engine, &extraction(StructuredMode::JsonSchema))?;
    let constrained = speed(&mut engine, &extraction(StructuredMode::Constrained))?;
    let workload = workload.map(|w| measure_workload(path, &mut engine, w)).transpose()?;
    let peak_rss_mb = peak_rss_mb();
    let weights = engine.weight_bytes();
    let threads = engine.threads();
    drop(engine);
    let started = Instant::now();
    let mut candle = Engine::load(path, &LoadOptions { backend: Backend::Candle, ..load_options() })?;
    let load_candle_ms = started.elapsed().as_secs_f64() * 1e3;
    let candle_unconstrained = speed(&mut candle, &story())?;
    let candle_weights = candle.weight_bytes();
    drop(candle);
    let memory_read_gb_per_s = memory_read_gb_per_s(weights, 1);
    let weights_gb_per_s = weights as f64 * unconstrained.tokens_per_s / 1e9;
    let candle_weights_gb_per_s = candle_weights as f64 * candle_unconstrained.tokens_per_s / 1e9;
    let ratio = |a: &Speed, b: &Speed| if b.tokens_per_s > 0.0 { a.tokens_per_s / b.tokens_per_s } else { 0.0 };
    Ok(LocalFigures {
        model: path.display().to_string(),
        threads,
        load_ms,
        load_candle_ms,
        constraint_setup_ms,
        constrained_vs_unconstrained: ratio(&constrained, &unconstrained),
        masked_vs_unconstrained: ratio(&masked, &unconstrained),
        native_vs_candle: ratio(&unconstrained, &candle_unconstrained),
        unconstrained,
        masked,
        constrained,
        weights_mb: weights as f64 / 1e6,
        candle_weights_mb: candle_weights as f64 / 1e6,
        weights_gb_per_s,
        candle_weights_gb_per_s,
        memory_read_gb_per_s,
        candle_unconstrained,
        peak_rss_mb,
        workload,
    })
}

/// GB/s of `threads` threads at once each summing its share of `bytes` of memory (best of five), the
/// ceiling of generating a token on that many threads.
pub(super) fn memory_read_gb_per_s(bytes: usize, threads: usize) -> f64 {
    let threads = threads.max(1);
    let shares: Vec<Vec<u64>> = (0..threads).map(|_| (0..(bytes / 8 / threads).max(8) as u64).collect()).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        std::thread::scope(|scope| {
            for words in &shares {
                scope.spawn(move || {
                    let mut lanes = [0u64; 8];
                    for chunk in std::hint::black_box(words).chunks_exact(8) {
                        for (lane, word) in lanes.iter_mut().zip(chunk) {
                            *lane = lane.wrapping_add(*word);
                        }
                    }
                    std::hint::black_box(lanes);
                });
            }
        });
        best = best.min(started.elapsed().as_secs_f64());
    }
    (shares.iter().map(Vec::len).sum::<usize>() * 8) as f64 / best / 1e9
}

/// CPU seconds this thread has used (user + system, from /proc/thread-self/stat).
fn thread_cpu_s() -> Option<f64> {
    let stat = crate::files::read_text(Path::new("/proc/thread-self/stat"), crate::files::SYSTEM_STATUS).ok()?;
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}
