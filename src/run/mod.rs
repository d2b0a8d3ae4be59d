//! Runs: a prompt rendered, streamed through a provider, parsed live, validated, retried with
//! PtcRunner-style error feedback, and written down as a run record appended to the history.
//!
//! ```text
//! RunPlan (prompt + case + --var + settings) ──engine::run──▶ turn 1: Request ─Provider::stream─▶ Events
//!        │                                                      │ feed OutputParser live ─▶ RunEvent::{Delta, Line, ..}
//!        │                                                      ▼
//!        │                                   parse report ─ ok? ─ no, turns left ─▶ feedback ─▶ turn 2 ...
//!        ▼
//! RunRecord (`run --json`) ──job::keep──▶ <data dir>/history.jsonl
//! ```
//!
//! - [`plan`]: what one run sends ([`RunPlan`]) and the settings it is built from ([`RunSettings`]).
//! - [`engine`]: the turn loop ([`run`]), and [`run_batch`] for several cases at once (bounded).
//! - [`feedback`]: the retry message (PtcRunner's for signatures, its equivalent for JSON Schema) and
//!   the cap that keeps a retry inside the context window.
//! - [`record`]: the run record and its turns.
//! - [`history`]: the data directory and the history file.
//! - [`job`]: the run job ([`RunJob`]): a setup's cases run, each record kept in the history (the
//!   never-started rule) and its transcripts written; the local model fetched when missing.
//! - [`limits`]: what the client holds on its own side (deadline, answer cap, max_tokens counted by us).
//! - [`repeats`]: a jsonl answer's guard: repeated lines reported and not counted, `max_items`.
//! - [`seed`]: the sampling seed: a fresh one for a sampling run given none, seed + k for repeat k.
//! - [`target`]: what a run is aimed at ([`Target`]: provider, model, server, structured mode, max
//!   tokens, replay), typed once from the command line's flags or the workbench's choice.
//! - [`setup`]: one run setup for every front end: a prompt and the front end's options to settings,
//!   the reading, each case's plan and its provider ([`RunSetup`]).
//! - [`decodable`]: whether the local model's constrained decoder accepts a prompt's schema, asked
//!   before any model is loaded (and by the workbench's schema lint).
//! - [`cache`]: the response cache, a provider wrapper: a request answered before is played from its
//!   recorded transcript ([`CacheMode`]: off, use, refresh).
//! - [`factory`]: a provider from the run settings (`openai`, `ollama`, `anthropic`, `replay`).
//! - [`models`]: the GGUFs tunebench can find (the cache, Ollama's store, prompt files) and whether
//!   this build runs each, for `model list` and the workbench's model picker.
//! - [`prompt_tokens`]: a request's tokens before it is sent (the local model's own tokenizer, else
//!   o200k) against the context window and max tokens.
//! - `bench` (feature `testing`): replay throughput through the engine, for `tunebench bench`.
//!
//! The engine is plain async code over a [`Provider`](crate::provider::Provider): it owns no runtime,
//! reports progress through a callback of [`RunEvent`]s, and is cancelled by dropping its future
//! (which drops the provider's stream and closes the connection).

#[cfg(feature = "testing")]
pub mod bench;
pub mod cache;
pub mod decodable;
pub mod engine;
pub mod factory;
pub mod feedback;
pub mod history;
pub mod job;
pub mod limits;
pub mod models;
pub mod plan;
pub mod prompt_tokens;
pub mod record;
pub mod repeats;
pub mod seed;
pub mod setup;
pub mod target;
mod turn;

pub use cache::CacheMode;
pub use engine::{run, run_batch, run_batch_each, run_batch_until, run_until, Job};
pub use factory::{
    env_var, fetch_default_model, fetch_local_model, local_model, needs_default_model, progress_in_words,
    transcript_path, warm_local_model, LocalModel, Lookup, ProviderChoice, ReplaySequence,
};
pub use job::{History, Ran, RunJob};
pub use limits::{Limits, Stop};
pub use plan::{Expected, LiveSweep, Reading, RunPlan, RunSettings};
pub use record::{RunRecord, Thinking, Turn};
pub use setup::{RunSetup, SetupOptions};
pub use target::{ReplayFrom, Target};

use crate::output::{LineVerdict, Report};
use crate::provider::{FinishReason, ModeReport, ProviderError, Request, Usage};
use crate::truncate::sweep::{CutItems, Sweep};

/// What a run reports while it goes, in order: a UI follows the run from these alone.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEvent {
    /// A turn's request is about to be sent (turn 1 is the rendered prompt; later turns carry feedback).
    TurnStarted { turn: u32, max_turns: u32, request: Request },
    /// The server accepted the request; how the structured-output mode was settled.
    Mode(ModeReport),
    /// The server asked to wait (429/503); the request is sent again after `after_ms`.
    Waiting { attempt: u32, after_ms: u64, reason: String },
    /// A piece of the answer, as it arrived.
    Delta(String),
    /// A piece of the model's thought before the answer (one token's text, `<think>` tags included):
    /// shown apart, never part of the answer.
    Thinking(String),
    /// How likely each token of the last `Delta` was (tokens of held-back pieces included), when the
    /// provider says (the local model; a server asked for `logprobs`).
    Probs(Vec<crate::provider::TokenProb>),
    /// A JSONL line's verdict, the moment the line completed.
    Line(LineVerdict),
    /// With [`RunPlan::live_sweep`]: the items each strategy recovers at cut `cut` (the answer up to
    /// the delta just sent), sent only when they differ from the cut before (cut 0: none).
    Cut { cut: usize, items: CutItems },
    /// With [`RunPlan::live_sweep`]: the turn's answer swept at every delta, corrupt resolved (the
    /// same figures as `truncate::sweep::sweep_points` over the answer and its chunk ends).
    Swept(Box<Sweep>),
    /// Tokens of the turn.
    Usage(Usage),
    /// Why the answer ended (`length`: cut off by max tokens; `interrupted`: no reason given).
    Finish(FinishReason),
    /// The stream failed; the text received before stays in the turn.
    StreamError(ProviderError),
    /// The turn's answer was parsed and validated.
    TurnEnded(Box<TurnSummary>),
    /// The answer failed and turns remain: this feedback goes to the model as the next user message.
    Feedback { turn: u32, message: String },
    /// The run is over; the record is what [`run`] returns.
    RunEnded { ok: bool, turns: u32 },
}

/// A finished turn in brief: what a status bar or summary line shows.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnSummary {
    pub turn: u32,
    pub ok: bool,
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    pub ttft_ms: Option<u64>,
    pub duration_ms: u64,
    pub tokens_per_s: Option<f64>,
    pub chunks: usize,
    pub parse: Report,
}

/// A run that cannot start: a bad setting, prompt or variable. Each message names the bad value.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting's value is not one the run understands.
    #[error("{0}")]
    Setting(String),
    /// The prompt file cannot be rendered or its schema resolved.
    #[error(transparent)]
    Prompt(#[from] crate::prompt::file::PromptError),
    /// The provider cannot be set up (missing key, bad URL, unreadable transcript).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The local model's constrained decoder cannot compile the prompt's schema: `issue` names the part
    /// (a JSON Pointer) and why. Found before any model is loaded.
    #[error(
        "{prompt}: schema {issue}; change the schema, or run with --structured none (the model is then not held to it)"
    )]
    Undecodable { prompt: String, issue: crate::schema::LintIssue },
}
