//! `tunebench run`: run a prompt against a provider — the answer streamed to stdout as it arrives
//! (control characters escaped), a summary on stderr, `--json` for the run record — and append the
//! record to the history. Exit 0 when the answer passes, 1 when it fails, 2 on a usage or input error.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::input::read_text;
use super::run_options::RunOptions;
use crate::output::Profile;
use crate::prompt::file::PromptFile;
use crate::prompt::template::Variables;
use crate::provider::replay::Pace;
use crate::run::{CacheMode, History, Ran, ReplayFrom, RunEvent, RunJob, RunSetup, SetupOptions};
use crate::safe_text::escape_controls;

/// Options of `tunebench run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The prompt file (TOML).
    pub prompt: PathBuf,
    #[command(flatten)]
    pub options: RunOptions,
    /// A dataset of cases (.jsonl, .csv, .yaml), one case a row, in place of the prompt's own
    /// `cases_file`: every row is run as a batch (or the one --case names).
    #[arg(long = "cases", value_name = "FILE", visible_alias = "cases-file", conflicts_with = "all_cases")]
    pub cases_file: Option<PathBuf>,
    /// The sampling seed (with --temperature above 0; without it a fresh seed, kept in the run record).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Local model: do not fetch the default model when it is missing (fail instead).
    #[arg(long)]
    pub no_fetch: bool,
    /// Cases run at once in a batch [default: 1 for a server on this machine (llama.cpp-style servers
    /// answer one request at a time), 4 for remote APIs, 8 for replay].
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Whose rules turn the answer into JSON [default: the prompt's, else lenient].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// Print the answer once it is complete instead of as it arrives.
    #[arg(long)]
    pub no_stream: bool,
    /// Write each turn's transcript: FILE, then FILE's name with .turn2, ... (and .CASE in a batch).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// For --provider replay: the transcript to play (written by --record).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// For --provider replay: recorded, instant, or a speed such as 10x.
    #[arg(long, default_value = "recorded")]
    pub replay_speed: String,
    /// Print the run record as JSON (a batch: {"prompt", "ok", "runs": [...]}).
    #[arg(long)]
    pub json: bool,
    /// Do not append the run to the history file.
    #[arg(long)]
    pub no_history: bool,
    /// Answer a request sent before from the response cache (<cache dir>/responses, or
    /// TUNEBENCH_CACHE_DIR/responses), and keep each complete answer for the next run.
    #[arg(long)]
    pub cache: bool,
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let pace = Pace::parse(&args.replay_speed).with_context(|| {
        format!("--replay-speed {:?}: use recorded, instant, or a speed such as 10x", args.replay_speed)
    })?;
    let options = &args.options;
    let variables = options.variables()?;
    let mut prompt = PromptFile::load(&args.prompt)?;
    let base_dir = crate::run::setup::base_dir(&args.prompt);
    crate::dataset::read_into(&mut prompt, &args.prompt, &base_dir, args.cases_file.as_deref(), &variables)?;
    let setup = RunSetup::new(
        prompt,
        &args.prompt,
        replaying(
            SetupOptions {
                profile: args.profile,
                seed: args.seed,
                cache: if args.cache { CacheMode::Use } else { CacheMode::Off },
                cache_dir: None,
                ..options.setup_options()?
            },
            args.transcript.clone().map(|path| ReplayFrom::File(path, pace)),
        ),
    )?;
    // `--cases FILE` alone runs every row of it.
    let whole_dataset = args.cases_file.is_some() && options.case.is_none();
    let cases = match &setup.prompt.dataset {
        Some(dataset) if whole_dataset => {
            setup.prompt.cases.iter().skip(dataset.first).map(|c| Some(c.name.clone())).collect()
        }
        _ => options.cases(&setup.prompt)?,
    };
    let batch = args.options.all_cases || whole_dataset;
    let job = RunJob {
        setup,
        cases,
        batch,
        concurrency: args.concurrency,
        history: if args.no_history { History::Off } else { History::DataDir },
        transcripts: args.record.clone(),
    };
    #[cfg(feature = "local")]
    if !args.no_fetch && job.needs_local_model() {
        crate::run::fetch_default_model(&mut super::model::show_progress, true).map_err(anyhow::Error::msg)?;
    }
    let names: Vec<String> = job.cases.iter().map(|c| c.clone().unwrap_or_default()).collect();
    let mut printer = Printer::new(!args.json, !args.no_stream && (names.len() == 1 || job.concurrency() == 1), names);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let ran = runtime.block_on(job.run(|index, event| printer.on(index, event), super::interrupt::interrupted()))?;
    finish(args, &job.setup.prompt, &ran, batch, &printer).map(super::interrupt::exit_code)
}

/// Says what the job wrote, prints the record or summary, and picks the exit code.
fn finish(args: &RunArgs, prompt: &PromptFile, ran: &Ran, batch: bool, printer: &Printer) -> anyhow::Result<ExitCode> {
    let records = ran.records.as_slice();
    ran.recorded.iter().for_each(|path| super::note!("recorded {}", path.display()));
    ran.warnings.iter().for_each(|warning| super::note!("tunebench: warning: {warning}"));
    let ok = records.iter().all(|r| r.ok);
    if args.json {
        match records {
            [record] if !batch => super::print_json(record)?,
            _ => super::print_json(&json!({"prompt": prompt.id, "ok": ok, "runs": records}))?,
        }
    } else {
        for record in records {
            if !printer.streamed {
                if records.len() > 1 {
                    super::note!("=== case {}", record.case.as_deref().unwrap_or("(default)"));
                }
                let answer = record.turns.last().map_or("", |t| t.output.as_str());
                print_answer(answer);
            }
            super::note!("{}", record.summary_line());
            for warning in &record.warnings {
                super::note!("  warning: {warning}");
            }
            if let Some(error) = &record.error {
                super::note!("  error: {error}");
            }
        }
        if records.len() > 1 {
            super::note!("{} of {} cases ok", records.iter().filter(|r| r.ok).count(), records.len());
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_answer(answer: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(escape_controls(answer).as_bytes());
    if !answer.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Variables from `--var NAME=VALUE` and `--var-file NAME=PATH` flags.
pub(crate) fn variables_from(vars_flags: &[String], var_files: &[String]) -> anyhow::Result<Variables> {
    let mut vars = Variables::new();
    for text in vars_flags {
        let (name, value) = split_var("--var", text, "NAME=VALUE")?;
        vars.insert(name, var_value(value));
    }
    for text in var_files {
        let (name, path) = split_var("--var-file", text, "NAME=PATH")?;
        let content = read_text(Path::new(path)).with_context(|| format!("--var-file {text:?}"))?;
        vars.insert(name, Value::String(content));
    }
    Ok(vars)
}

fn split_var<'a>(flag: &str, text: &'a str, shape: &str) -> anyhow::Result<(String, &'a str)> {
    let Some((name, value)) = text.split_once('=') else {
        bail!("{flag} {text:?}: expected {shape}, e.g. {flag} text=hello");
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        bail!("{flag} {text:?}: {name:?} is not a variable name (letters, digits, _ and -)");
    }
    Ok((name.to_string(), value))
}

/// Text, unless it is a JSON array or object.
fn var_value(text: &str) -> Value {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        if let Ok(value) = serde_json::from_str(text) {
            return value;
        }
    }
    Value::String(text.to_string())
}

/// Shows a run's progress on the terminal: the answer on stdout as it arrives, progress on stderr.
struct Printer {
    human: bool,
    /// The answer goes to stdout as it arrives (one run, or a batch run one case at a time).
    streamed: bool,
    names: Vec<String>,
    /// Whether the stdout line is open (the answer so far did not end with a newline).
    open_line: BTreeMap<usize, bool>,
    /// Runs whose thought is being shown on stderr (its line open until the answer starts).
    thinking: std::collections::BTreeSet<usize>,
}

impl Printer {
    fn new(human: bool, stream: bool, names: Vec<String>) -> Self {
        Self { human, streamed: human && stream, names, open_line: BTreeMap::new(), thinking: Default::default() }
    }

    fn on(&mut self, index: usize, event: RunEvent) {
        if !self.human {
            return;
        }
        match event {
            RunEvent::TurnStarted { turn, max_turns, .. } => {
                self.close_line(index);
                let name = self.names.get(index).filter(|n| !n.is_empty());
                match (turn, name) {
                    (1, Some(name)) if self.names.len() > 1 => super::note!("=== case {name}"),
                    (1, _) => {}
                    (turn, _) => super::note!("--- turn {turn} of {max_turns}: the answer is sent again with feedback"),
                }
            }
            RunEvent::Thinking(text) if self.streamed => self.show_thought(index, &text),
            RunEvent::Delta(text) if self.streamed => {
                self.end_thought(index);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(escape_controls(&text).as_bytes());
                let _ = out.flush();
                self.open_line.insert(index, !text.ends_with('\n'));
            }
            RunEvent::Waiting { attempt, after_ms, reason } => {
                super::note!("waiting {after_ms} ms before attempt {} ({reason})", attempt + 1)
            }
            RunEvent::StreamError(error) => {
                self.close_line(index);
                super::note!("stream failed: {error}");
            }
            RunEvent::Feedback { turn, message } => {
                self.close_line(index);
                let errors = message.lines().filter(|l| l.starts_with("- ")).count();
                let detail = if errors > 0 { format!(" ({errors} errors)") } else { String::new() };
                super::note!("turn {turn}: the answer failed validation{detail}; retrying with feedback");
            }
            RunEvent::RunEnded { .. } => self.close_line(index),
            _ => {}
        }
    }

    /// A piece of the model's thought on stderr, before the answer: after `thinking: `, escaped, dim
    /// on a terminal; its `<think>` tags left out.
    fn show_thought(&mut self, index: usize, text: &str) {
        use std::io::IsTerminal;
        let piece = text.replace("<think>", "").replace("</think>", "");
        let mut err = std::io::stderr().lock();
        let dim = err.is_terminal();
        if self.thinking.insert(index) {
            let _ = err.write_all(b"thinking: ");
        }
        let escaped = escape_controls(&piece);
        let _ = if dim { write!(err, "\x1b[2m{escaped}\x1b[22m") } else { err.write_all(escaped.as_bytes()) };
        let _ = err.flush();
    }

    /// Ends the line of a thought shown (the answer follows, or the turn ended).
    fn end_thought(&mut self, index: usize) {
        if self.thinking.remove(&index) {
            let _ = std::io::stderr().write_all(b"\n");
        }
    }

    fn close_line(&mut self, index: usize) {
        self.end_thought(index);
        if self.open_line.insert(index, false) == Some(true) && self.streamed {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
    }
}

/// `options` with `--transcript` (what the replay provider plays) in its target.
pub(super) fn replaying(mut options: SetupOptions, replay: Option<ReplayFrom>) -> SetupOptions {
    options.target.replay = replay;
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_text_unless_json_arrays_or_objects() {
        assert_eq!(var_value("hello"), json!("hello"));
        assert_eq!(var_value("123"), json!("123"));
        assert_eq!(var_value("[\"a\", \"b\"]"), json!(["a", "b"]));
        assert_eq!(var_value("{\"name\": \"x\"}"), json!({"name": "x"}));
        assert_eq!(var_value("[Chorus] la la"), json!("[Chorus] la la"));
        assert_eq!(split_var("--var", "text=a=b", "NAME=VALUE").unwrap(), ("text".to_string(), "a=b"));
        let error = split_var("--var", "novalue", "NAME=VALUE").unwrap_err().to_string();
        assert!(error.contains("\"novalue\"") && error.contains("expected NAME=VALUE"), "{error}");
        let error = split_var("--var", "bad name=x", "NAME=VALUE").unwrap_err().to_string();
        assert!(error.contains("\"bad name\" is not a variable name"), "{error}");
    }
}
