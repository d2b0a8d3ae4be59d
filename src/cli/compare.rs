//! `tunebench compare`: two prompts (or a prompt and its derived twin) run side by side on the same
//! provider and settings — or two recorded transcripts — with each side's figures, their agreement
//! and their truncation curves; a human table, or `--json` (CLI.md's `compare --json`). Exit 0 when
//! both final answers pass, 1 when either fails, 2 on a usage or input error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::compare_human;
use super::input::prompt_setup;
use super::run_options::RunOptions;
use super::truncate::sweep_json;
use crate::compare::diff::{prompt_diff, render};
use crate::compare::flow::{self, Answers, Flow};
use crate::compare::pair::At;
use crate::compare::{cases, twin_of, Comparison, SideSpec};
use crate::output::{Profile, ResponseType};
use crate::prompt::file::PromptFile;
use crate::provider::replay::Pace;
use crate::run::job::{record_transcripts, Transcripts};
use crate::run::{ProviderChoice, RunEvent, SetupOptions};
use crate::truncate::cut::Unit;

/// Options of `tunebench compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The prompt of side A; with --types, the prompt whose twin makes the other side.
    pub prompt_a: PathBuf,
    /// The prompt of side B (any two prompt files can be compared).
    #[arg(conflicts_with = "types")]
    pub prompt_b: Option<PathBuf>,
    /// The response types of sides A and B, e.g. json,jsonl: PROMPT is one of them and its derived
    /// twin the other [default with one prompt: json,jsonl].
    #[arg(long, value_delimiter = ',', value_enum, num_args = 1)]
    pub types: Vec<ResponseType>,
    /// Print the differences between the two prompts (the twin's derivation) and stop.
    #[arg(long)]
    pub diff: bool,
    /// Write the derived twin to this file (TOML, saved atomically).
    #[arg(long, value_name = "FILE")]
    pub save_twin: Option<PathBuf>,
    /// Compare two recorded transcripts (A's, then B's; written by `compare --record` or `run --record`)
    /// instead of running.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub transcripts: Vec<PathBuf>,
    /// Write each side's transcripts (A's, then B's), to compare again later with --transcripts (in a
    /// batch each case adds its name: A.CASE.jsonl; later turns add .turn2, ...).
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "transcripts")]
    pub record: Vec<PathBuf>,
    /// The field items are matched on [default: the first string field of the first item].
    #[arg(long)]
    pub key: Option<String>,
    // Both sides run alike; the defaults come from side A's prompt.
    #[command(flatten)]
    pub options: RunOptions,
    /// Runs at once [default: 1 for a server on this machine (the sides run one after the other),
    /// 4 for remote APIs].
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Whose rules turn the answers into JSON, for both sides [default: each prompt's, else lenient].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Do not append the runs to the history file.
    #[arg(long)]
    pub no_history: bool,
}

pub fn run(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let specs = sides(args)?;
    if args.diff {
        let diffs = prompt_diff(&specs[0].prompt, &specs[1].prompt);
        if args.json {
            super::print_json(&json!({"a": specs[0].prompt.id, "b": specs[1].prompt.id, "fields": diffs}))?;
        } else {
            super::say!("--- A {}\n+++ B {}\n{}", specs[0].prompt.id, specs[1].prompt.id, render(&diffs, 2));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let overrides = args.options.variables()?;
    let prompt = &specs[0].prompt;
    let cases = args.options.cases(prompt)?;
    for case in cases.iter().flatten() {
        for spec in &specs {
            spec.prompt.case(case).with_context(|| format!("side {}", spec.label))?;
        }
    }
    let options = &args.options;
    // The variables are read once, above: the target and the turns are all the settings need.
    let setup_options = SetupOptions {
        max_turns: options.flags.max_turns,
        context_tokens: Some(options.flags.context_tokens),
        ..SetupOptions::from_flags(options.provider_settings())?
    };
    let replaying = !args.transcripts.is_empty();
    if replaying
        && (args.options.flags.provider.is_some()
            || args.options.flags.base_url.is_some()
            || args.options.model.is_some())
    {
        bail!("--transcripts replays recorded answers: --provider, --model and --base-url do not apply");
    }
    let settings = flow::settings(prompt, &setup_options, replaying)?;
    let (concurrency, why) = flow::concurrency(&settings, args.concurrency);
    let batch = args.options.all_cases;
    let answers = match args.transcripts.as_slice() {
        [a, b] => Answers::Recorded([a.clone(), b.clone()]),
        _ => Answers::Live(ProviderChoice::new(&settings, None, Pace::Instant)),
    };
    if !args.json {
        let how = if concurrency > 1 { "at once".to_string() } else { "one after the other".to_string() };
        super::note!("running {} case(s) × 2 sides, {how} ({why})", cases.len());
    }
    let names: Vec<String> = cases.iter().map(|c| c.clone().unwrap_or_default()).collect();
    let human = !args.json;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let flow = Flow {
        sides: [&specs[0], &specs[1]],
        settings: &settings,
        cases: &cases,
        variables: &overrides,
        answers,
        concurrency,
        batch,
        record_history: !args.no_history,
        key: args.key.as_deref(),
    };
    let compared = runtime.block_on(flow::compare(flow, |at, event| {
        if human {
            progress(&names, &specs, at, &event);
        }
    }))?;
    for warning in &compared.warnings {
        super::note!("tunebench: warning: {warning}");
    }
    let comparisons = compared.comparisons;
    if let [a, b] = args.record.as_slice() {
        for comparison in &comparisons {
            for (side, base) in comparison.sides.iter().zip([a, b]) {
                match record_transcripts(&side.run, &Transcripts::File { base, batch }) {
                    Ok(paths) => paths.iter().for_each(|path| super::note!("recorded {}", path.display())),
                    Err(error) => super::note!("tunebench: warning: the transcript was not recorded: {error}"),
                }
            }
        }
    }
    let ok = comparisons.iter().all(Comparison::ok);
    if args.json {
        let report = match comparisons.as_slice() {
            [one] if !batch => comparison_json(one),
            all => {
                let per_case: Vec<Value> = all.iter().map(comparison_json).collect();
                json!({"sides": specs.iter().map(|s| json!({"label": s.label, "prompt": s.prompt.id})).collect::<Vec<_>>(),
                       "cases": per_case, "totals": cases::totals(all), "ok": ok})
            }
        };
        super::print_json(&report)?;
    } else if batch {
        super::say!("{}", compare_human::batch(&comparisons, &cases::totals(&comparisons)));
    } else if let Some(one) = comparisons.first() {
        super::say!("{}", compare_human::comparison(one));
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// CLI.md's `compare --json` for one case: both sides (run record, sweep, figures), the agreement
/// and the truncation chart.
pub fn comparison_json(comparison: &Comparison) -> Value {
    let sides: Vec<Value> = comparison
        .sides
        .iter()
        .map(|side| {
            json!({"label": side.label, "prompt": side.prompt, "response_type": side.response_type,
                   "figures": side.figures, "run": side.run, "sweep": sweep_json(&side.sweep, Unit::Token, side.tokens)})
        })
        .collect();
    let mut report = json!({"sides": sides, "agreement": comparison.agreement, "truncation": comparison.chart,
                            "ok": comparison.ok()});
    if let (Some(case), Value::Object(map)) = (&comparison.case, &mut report) {
        map.insert("case".into(), json!(case));
    }
    report
}

/// Both sides: two prompt files, or one prompt and its twin in the order `--types` gives.
fn sides(args: &CompareArgs) -> anyhow::Result<[SideSpec; 2]> {
    let first = PromptFile::load(&args.prompt_a)?;
    let base_a = base_dir(&args.prompt_a);
    let Some(path_b) = &args.prompt_b else {
        let types =
            if args.types.is_empty() { vec![ResponseType::Json, ResponseType::Jsonl] } else { args.types.clone() };
        let [type_a, type_b] = types.as_slice() else {
            bail!("--types {}: give two response types, e.g. --types json,jsonl", type_names(&types));
        };
        if type_a == type_b {
            bail!("--types {}: the two sides need different types (json,jsonl or jsonl,json)", type_names(&types));
        }
        if first.response_type != *type_a && first.response_type != *type_b {
            bail!(
                "--types {}: prompt {} is a {} prompt, so it cannot be either side",
                type_names(&types),
                args.prompt_a.display(),
                type_names(&[first.response_type])
            );
        }
        let other = if first.response_type == *type_a { *type_b } else { *type_a };
        let twin = twin_of(&first, &base_a, other)
            .with_context(|| format!("deriving the twin of {}", args.prompt_a.display()))?;
        if !args.json && !args.diff {
            super::note!(
                "side {}: {} (derived twin of {})",
                type_names(&[other]),
                twin.prompt.id,
                args.prompt_a.display()
            );
            for note in &twin.notes {
                super::note!("  {note}");
            }
        }
        if let Some(path) = &args.save_twin {
            twin.prompt.save(path)?;
            super::note!("saved the twin to {}", path.display());
        }
        let own = spec(&type_names(&[first.response_type]), first, &args.prompt_a, args.profile)?;
        let derived = spec(&type_names(&[other]), twin.prompt, &args.prompt_a, args.profile)?;
        return Ok(if own.prompt.response_type == *type_a { [own, derived] } else { [derived, own] });
    };
    if args.save_twin.is_some() {
        bail!("--save-twin needs one prompt and --types (two prompt files were given)");
    }
    let second = PromptFile::load(path_b)?;
    let (label_a, label_b) =
        if first.id == second.id { ("A".to_string(), "B".to_string()) } else { (first.id.clone(), second.id.clone()) };
    Ok([spec(&label_a, first, &args.prompt_a, args.profile)?, spec(&label_b, second, path_b, args.profile)?])
}

/// The side `prompt` makes; `path` is the file it was read from (or derived from).
fn spec(label: &str, prompt: PromptFile, path: &Path, profile: Option<Profile>) -> anyhow::Result<SideSpec> {
    let setup = prompt_setup(&prompt, path, profile)?;
    Ok(SideSpec {
        label: label.to_string(),
        path: path.to_path_buf(),
        base_dir: base_dir(path),
        reading: crate::run::Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check },
        item_check: setup.item_check,
        prompt,
    })
}

fn base_dir(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}

fn type_names(types: &[ResponseType]) -> String {
    types
        .iter()
        .map(|t| match t {
            ResponseType::Text => "text",
            ResponseType::Json => "json",
            ResponseType::Jsonl => "jsonl",
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Progress on stderr: when each side starts and ends.
fn progress(names: &[String], specs: &[SideSpec; 2], at: At, event: &RunEvent) {
    let case = names.get(at.case).filter(|n| !n.is_empty()).map(|n| format!(" [{n}]")).unwrap_or_default();
    let label = specs.get(at.side).map_or("?", |s| s.label.as_str());
    match event {
        RunEvent::TurnStarted { turn, max_turns, .. } => super::note!("{label}{case}: turn {turn} of {max_turns}"),
        RunEvent::StreamError(error) => super::note!("{label}{case}: stream failed: {error}"),
        RunEvent::RunEnded { ok, turns } => {
            super::note!("{label}{case}: {} after {turns} turn(s)", if *ok { "ok" } else { "FAILED" })
        }
        _ => {}
    }
}
