//! tunebench: a workbench for prompts whose answers are structured data.
//!
//! Map of the crate (the core never imports the TUI):
//! - [`prompt`]: prompt files, template rendering, PtcRunner signatures, TrustGraph import/export.
//! - [`output`]: one incremental parser per response type (`text`, `json`, `jsonl`) under four profiles.
//! - [`schema`]: JSON Schema compiled once, validation with failing paths, union branches, lint.
//! - [`truncate`]: transcripts, cut positions (char, token, chunk) and one-pass truncation sweeps.
//! - [`provider`]: streaming providers (OpenAI-compatible, Ollama, Anthropic, replay), one event stream.
//! - [`engine`]: the embedded model's inference engine (GGUF, kernels, forward pass, tokenizer, sampler,
//!   constrained decoding), in its own words; `provider::local` adapts it.
//! - [`run`]: the run engine (live parsing, retry with feedback), run records and the history.
//! - [`compare`]: json vs jsonl side by side: twins, paired runs, figures, agreement, truncation curves.
//! - [`dataset`]: datasets of cases (`cases_file`, `--cases`): JSONL, CSV and YAML rows read as cases.
//! - [`eval`]: expected answers, checks and scores per case; eval records, baselines, the response cache.
//! - [`optimize`]: `tunebench optimize`: candidates (proposals, demonstrations, ablations) of a prompt
//!   run on train cases, a Pareto front, the held-out ranking with a paired test, the record.
//! - [`batch`]: the case matrix as a provider's batch file (OpenAI, Anthropic, vLLM), results imported
//!   back into run records.
//! - `bench_data` (tests, feature `testing`): the synthetic answers and schema the speed figures are
//!   measured on.
//! - [`files`]: every file read: regular files only, a cap per kind; a prompt's files inside its folder.
//! - [`names`]: a name from a file, answer or server made a file name that stays inside its folder.
//! - `cli` (feature `cli`, on by default): the headless subcommands; JSON on stdout, logs on stderr.
//! - `tui` (feature `tui`, on by default): the workbench; nothing above imports it.

#![deny(unsafe_code)]

pub mod batch;
#[cfg(any(test, feature = "testing"))]
pub mod bench_data;
#[cfg(feature = "cli")]
pub mod cli;
pub mod compare;
pub mod dataset;
// The one wing where `unsafe` is allowed: the engine's SIMD kernels, thread pool and disjoint buffers,
// each block with its SAFETY comment.
#[allow(unsafe_code)]
pub mod engine;
pub mod eval;
pub mod files;
pub mod names;
pub mod optimize;
pub mod output;
pub mod prompt;
pub mod promptfoo;
pub mod provider;
pub mod run;
pub mod safe_text;
pub mod schema;
pub mod truncate;
#[cfg(feature = "tui")]
pub mod tui;
