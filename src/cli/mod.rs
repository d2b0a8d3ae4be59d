//! The headless subcommands: one file per command; machine-readable JSON on stdout, messages on stderr.
//!
//! Exit codes (CLI.md): 0 success, 1 the checked thing failed (`--strict`), 2 a usage or input error;
//! `eval` adds 3 when the provider could not be reached at all, and 130 is a ctrl-c.

pub mod batch;
#[cfg(feature = "testing")]
pub mod bench;
#[cfg(feature = "testing")]
pub mod bench_eval;
#[cfg(feature = "testing")]
pub mod bench_large;
#[cfg(feature = "testing")]
pub mod bench_llama_cpp;
#[cfg(feature = "testing")]
pub mod bench_local;
#[cfg(feature = "testing")]
pub mod bench_optimize;
pub mod compare;
mod compare_human;
pub mod env_file;
pub mod eval;
mod eval_batch;
mod eval_human;
mod eval_watch;
pub mod export;
pub mod history;
pub mod import;
mod import_promptfoo;
pub mod input;
pub mod interrupt;
#[cfg(feature = "local")]
pub mod model;
#[cfg(feature = "local")]
mod model_human;
pub mod optimize;
mod optimize_human;
pub mod parse;
pub mod run;
pub mod run_options;
pub mod signature;
pub mod truncate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// tunebench: a workbench for prompts whose answers are structured data.
#[derive(Debug, Parser)]
#[command(name = "tunebench", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A prompt file to open in the workbench (no argument: the sample prompt, run on its recorded answer).
    pub prompt: Option<std::path::PathBuf>,
    /// Do not fetch a missing local model in the background when the workbench starts.
    #[arg(long)]
    pub no_fetch: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Every headless capability of the workbench.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse a model's answer (raw text or a transcript) and validate it: items and a verdict per line.
    Parse(parse::ParseArgs),
    /// Print the JSON Schema of a PtcRunner-style signature.
    Signature(signature::SignatureArgs),
    /// Cut an answer at a position, or sweep every cut, under json, json-repair and jsonl.
    Truncate(truncate::TruncateArgs),
    /// Import prompts from another system's configuration.
    Import(import::ImportArgs),
    /// Export prompts to another system's configuration.
    Export(export::ExportArgs),
    /// Measure this machine's speed figures (parse, validate, sweep); built with the `testing` feature.
    #[cfg(feature = "testing")]
    Bench(bench::BenchArgs),
    /// Run a prompt against a model: stream the answer, validate it, retry with feedback, record the run.
    Run(Box<run::RunArgs>),
    /// Compare two prompts (or a prompt and its json/jsonl twin) side by side: paired runs, figures,
    /// agreement and truncation curves; or two recorded transcripts.
    Compare(Box<compare::CompareArgs>),
    /// Evaluate prompts: every case run (× models × twins × repeats), scored against its expected
    /// answer and checks, recorded, compared with a baseline; `eval list`, `eval diff A B`.
    Eval(Box<eval::EvalArgs>),
    /// Optimize a prompt: candidates (proposed edits, few-shot demonstrations, ablations) run on train
    /// cases, the best ranked on held-out cases with a paired test; `--apply ID`; `optimize list|show`.
    Optimize(Box<optimize::OptimizeArgs>),
    /// The runs in the history file (live and imported from batches), filtered; a line each, or JSON.
    History(history::HistoryArgs),
    /// Provider batch engines: export the case matrix as a batch file, import the results as runs,
    /// submit, status, fetch.
    Batch(batch::BatchArgs),
    /// The embedded local model: fetch it, show where it is, describe it.
    #[cfg(feature = "local")]
    Model(model::ModelArgs),
}

/// Runs one subcommand; an `Err` is a usage or input error (exit 2).
pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    // From here on a signal ends the command whatever it is doing (runs listening stop first). Where
    // the watcher cannot start, signals keep their default effect: they end the process.
    let _ = interrupt::watch_signals();
    match command {
        Command::Parse(args) => parse::run(args),
        Command::Signature(args) => signature::run(args),
        Command::Truncate(args) => truncate::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
        #[cfg(feature = "testing")]
        Command::Bench(args) => bench::run(args),
        Command::Run(args) => run::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Optimize(args) => optimize::run(args),
        Command::Batch(args) => batch::run(args),
        Command::History(args) => history::run(args),
        #[cfg(feature = "local")]
        Command::Model(args) => model::run(args),
    }
}

/// Prints `value` as pretty JSON on stdout, with no character in it that could drive the terminal.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write as _;
    // Serialized straight to standard output (a large record is never held as text), with the
    // characters that could drive a terminal escaped as JSON escapes.
    let mut out = crate::safe_text::JsonEscaping::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).map_err(std::io::Error::from)?;
    let mut out = out.into_inner()?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Writes `text` to standard output with every character that could drive a terminal escaped
/// ([`escape_controls`](crate::safe_text::escape_controls): newlines and tabs stay). Unlike `print!`,
/// a closed pipe (`tunebench parse … | head -1`) is an error the command returns (and `main` ends
/// quietly on), never a panic. With [`write_err`], the only way the commands write to a terminal.
pub fn write_out(text: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    use std::io::Write as _;
    // Line-buffered: a whole line goes out at once; the rest is flushed at exit.
    let mut out = std::io::stdout().lock();
    match text.as_str() {
        Some(text) => out.write_all(crate::safe_text::escape_controls(text).as_bytes()),
        None => out.write_all(crate::safe_text::escape_controls(&text.to_string()).as_bytes()),
    }
}

/// Writes `text` to standard error, escaped as [`write_out`] escapes it: names from prompt files,
/// answers and servers (a prompt id, a case, an error message) can never set the terminal's title or
/// clear its screen. A failed write to standard error is not worth failing a command for.
pub fn write_err(text: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let text = text.as_str().map_or_else(|| text.to_string(), str::to_string);
    let _ = std::io::stderr().lock().write_all(crate::safe_text::escape_controls(&text).as_bytes());
}

/// Whether `error` is standard output's reader going away (a closed pipe).
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// `print!` that returns a closed pipe as an error (with `?`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!($($arg)*))? };
}

/// `println!` that returns a closed pipe as an error (with `?`) instead of panicking.
macro_rules! sayln {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!("{}\n", format_args!($($arg)*)))? };
}
/// `eprintln!` through [`write_err`]: every message a command writes to standard error.
macro_rules! note {
    ($($arg:tt)*) => { $crate::cli::write_err(format_args!("{}\n", format_args!($($arg)*))) };
}
pub(crate) use {note, say, sayln};
