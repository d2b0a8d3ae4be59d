//! The `tui` section of `tunebench bench`: the real loop (update, effects, panes, frame limiter) on a
//! ratatui `TestBackend` at 120×40, with a 100k-token JSONL transcript replayed instantly and every
//! line validated live, keystrokes typed into the template while it streams. Baseline: the run engine
//! alone on the same transcript, no screen. Then keys typed into a 7 MB schema (`bench_schema`),
//! and the workbench at 10,000 dataset rows (`bench_rows`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::{Input, Key};
use serde::Serialize;

use crate::provider::replay::{Pace, Replay};
use crate::truncate::transcript::{Chunk, End, Header, Transcript};
use crate::tui::msg::{Action, Msg, TermEvent};
use crate::tui::setup::{build, Options};
use crate::tui::workbench::state::RunPhase;

/// What the `tui` bench measures.
#[derive(Debug, Serialize)]
pub struct TuiFigures {
    pub tokens: usize,
    pub lines: usize,
    /// From loading the prompt to the first frame drawn.
    pub startup_to_first_frame_ms: f64,
    /// From "run" to the run's end (every line judged), with keystrokes arriving.
    pub stream_ms: f64,
    /// From "run" to the truncation sweep of the answer shown.
    pub stream_and_sweep_ms: f64,
    pub renders: usize,
    pub renders_per_s: f64,
    /// Live figure updates of the truncation chart while the answer streamed (the run's own sweep's
    /// items at each cut where they change).
    pub live_sweeps: usize,
    /// Answer bytes the truncation sweeps read (live and final), per chunk of the answer.
    pub swept_bytes_per_chunk: f64,
    /// The answer's bytes per chunk (what one pass over the answer reads per chunk).
    pub answer_bytes_per_chunk: f64,
    pub keys: usize,
    /// From a key's arrival on the channel to `update` handling it.
    pub key_handled_median_ms: f64,
    pub key_handled_max_ms: f64,
    /// From a key's arrival to the first frame drawn after it was handled.
    pub key_to_frame_median_ms: f64,
    pub key_to_frame_max_ms: f64,
    /// Times the request's tokens were counted for the status line (once per change of its text:
    /// at most once per key typed, never per frame), and the frames drawn meanwhile.
    pub prompt_counts: usize,
    pub frames: usize,
    /// Baseline: the engine alone on the same transcript (live parsing and validation, no screen).
    pub engine_only_ms: f64,
    pub tui_vs_engine: f64,
    /// Keys typed into a 7 MB schema.
    pub schema_keys: crate::tui::bench_schema::SchemaKeyFigures,
    /// The workbench at 10,000 dataset rows against 100 (`bench_rows`).
    pub rows: crate::tui::bench_rows::RowsFigures,
}

/// A JSONL answer of about `tokens` word-sized chunks (the union lines of the parse bench).
pub fn transcript(tokens: usize) -> Transcript {
    let mut chunks = Vec::with_capacity(tokens);
    let mut lines = 64;
    while chunks.len() < tokens {
        chunks.clear();
        let text = crate::bench_data::union_jsonl(lines);
        let mut start = 0;
        for (i, c) in text.char_indices() {
            if i > start && (c == ' ' || c == '"' || c == '\n') {
                chunks.push(Chunk { t_ms: 0, delta: text[start..i].to_string(), token: None, probs: Vec::new() });
                start = i;
            }
        }
        chunks.push(Chunk { t_ms: 0, delta: text[start..].to_string(), token: None, probs: Vec::new() });
        lines *= 2;
    }
    chunks.truncate(tokens);
    Transcript {
        header: Header {
            transcript: 1,
            provider: "bench".into(),
            model: "generated".into(),
            request: serde_json::Value::Null,
        },
        chunks,
        end: Some(End { t_ms: 0, finish_reason: Some("length".into()), usage: None, error: None }),
    }
}

/// Runs the bench in a scratch directory.
pub fn measure(tokens: usize) -> anyhow::Result<TuiFigures> {
    let dir = std::env::temp_dir().join(format!("tunebench-tui-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("answers"))?;
    let result = measure_in(&dir, tokens);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure_in(dir: &Path, tokens: usize) -> anyhow::Result<TuiFigures> {
    let transcript = transcript(tokens);
    let lines = transcript.answer().matches('\n').count();
    let prompt_path = dir.join("bench.toml");
    let schema = serde_json::to_string_pretty(&crate::bench_data::union_schema())?;
    std::fs::write(
        &prompt_path,
        format!("id = \"bench\"\nresponse_type = \"jsonl\"\ntemplate = \"Extract definitions and relationships.\"\nschema = '''\n{schema}\n'''\n"),
    )?;
    std::fs::write(dir.join("answers/bench.jsonl"), transcript.to_jsonl())?;

    let engine_only = engine_only(&prompt_path, &transcript)?;

    let start = Instant::now();
    let options = Options {
        data_dir: Some(dir.join("data")),
        pace: Some(Pace::Instant),
        run_now: false,
        no_fetch: true,
        warm_model: false,
    };
    let (mut app, tx) = build(&prompt_path, options)?;
    app.state.choice.provider = crate::provider::kind::ProviderKind::Replay;
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    app.run(&mut terminal, |_| true)?;
    let first_frame = app.stats.first_frame.unwrap_or_else(Instant::now);
    let startup = first_frame - start;

    let keys_before = app.stats.keys_handled.len();
    let run_at = Instant::now();
    app.handle(Msg::Action(Action::Run));
    let typed = Arc::new(AtomicBool::new(false));
    let typist = spawn_typist(tx.clone(), Arc::clone(&typed));
    let mut stream_end: Option<Instant> = None;
    let mut done: Option<Instant> = None;
    // The loop runs until the run is swept AND every key typed has been handled (keys go on arriving
    // after a fast stream ends; they must meet a running loop, not a queue).
    app.run(&mut terminal, |state| {
        if stream_end.is_none() && matches!(state.workbench.phase, RunPhase::Done { .. } | RunPhase::Failed(_)) {
            stream_end = Some(Instant::now());
        }
        // The sweep of the whole answer (live sweeps of the answer so far do not count).
        let swept = (state.workbench.truncation.sweep.is_some() && !state.workbench.truncation.live)
            || state.workbench.truncation.error.is_some();
        if swept && done.is_none() {
            done = Some(Instant::now());
        }
        let failed = matches!(state.workbench.phase, RunPhase::Failed(_));
        failed || (swept && typed.load(Ordering::SeqCst) && state.edits >= KEYS as u64)
    })?;
    if let RunPhase::Failed(e) = &app.state.workbench.phase {
        anyhow::bail!("the bench run failed: {e}");
    }
    let sent = typist.join().unwrap_or_default();
    let done = done.unwrap_or_else(Instant::now);
    let stream_end = stream_end.unwrap_or(done);
    let handled = &app.stats.keys_handled[keys_before..];
    let mut to_handle: Vec<f64> = Vec::new();
    let mut to_frame: Vec<f64> = Vec::new();
    for (sent_at, handled_at) in sent.iter().zip(handled) {
        to_handle.push(ms(*handled_at - *sent_at));
        if let Some(frame) = app.stats.render_times.iter().find(|t| *t >= handled_at) {
            to_frame.push(ms(*frame - *sent_at));
        }
    }
    let renders = app.stats.render_times.iter().filter(|t| **t >= run_at && **t <= stream_end).count();
    let stream = stream_end - run_at;
    let chunks = app.state.workbench.run.chunk_ends.len().max(1) as f64;
    Ok(TuiFigures {
        tokens,
        lines,
        startup_to_first_frame_ms: ms(startup),
        stream_ms: ms(stream),
        stream_and_sweep_ms: ms(done - run_at),
        renders,
        renders_per_s: renders as f64 / stream.as_secs_f64().max(1e-9),
        live_sweeps: app.state.workbench.truncation.live_cuts,
        swept_bytes_per_chunk: app.state.workbench.truncation.swept_bytes as f64 / chunks,
        answer_bytes_per_chunk: app.state.workbench.run.output.len() as f64 / chunks,
        keys: to_handle.len(),
        key_handled_median_ms: median(&mut to_handle.clone()),
        key_handled_max_ms: to_handle.iter().copied().fold(0.0, f64::max),
        key_to_frame_median_ms: median(&mut to_frame.clone()),
        key_to_frame_max_ms: to_frame.iter().copied().fold(0.0, f64::max),
        prompt_counts: app.state.workbench.tokens.counts,
        frames: app.stats.renders,
        engine_only_ms: ms(engine_only),
        tui_vs_engine: stream.as_secs_f64() / engine_only.as_secs_f64().max(1e-9),
        schema_keys: crate::tui::bench_schema::measure(dir, SCHEMA_BYTES)?,
        rows: crate::tui::bench_rows::measure(dir)?,
    })
}

/// The size of the schema the keys of `bench_schema` are typed into (the size that lagged).
const SCHEMA_BYTES: usize = 7_000_000;

/// Keys the typist types.
const KEYS: usize = 40;

/// Types a character into the focused editor every 10 ms, [`KEYS`] times; returns when each was sent.
fn spawn_typist(tx: Sender<Msg>, typed: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Instant>> {
    std::thread::spawn(move || {
        let mut sent = Vec::new();
        for i in 0..KEYS {
            std::thread::sleep(Duration::from_millis(10));
            let key = Input { key: Key::Char(if i % 2 == 0 { 'x' } else { 'y' }), ..Input::default() };
            sent.push(Instant::now());
            if tx.send(Msg::Term(TermEvent::Key(key))).is_err() {
                break;
            }
        }
        typed.store(true, Ordering::SeqCst);
        sent
    })
}

/// The engine alone on the same transcript: live parsing and validation, events dropped.
fn engine_only(prompt_path: &Path, transcript: &Transcript) -> anyhow::Result<Duration> {
    let target = crate::run::Target::on(crate::provider::kind::ProviderKind::Replay);
    let options = crate::run::SetupOptions { target, ..Default::default() };
    let plan = crate::run::RunSetup::load(prompt_path, options)?.plan(None)?;
    let provider = Replay::new(transcript.clone(), Pace::Instant);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let start = Instant::now();
    let mut events = 0usize;
    let record = runtime.block_on(crate::run::engine::run(&provider, &plan, |_| events += 1));
    let took = start.elapsed();
    anyhow::ensure!(events > 0 && !record.turns.is_empty(), "the baseline run produced nothing");
    Ok(took)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
