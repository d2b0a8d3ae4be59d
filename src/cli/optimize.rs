//! `tunebench optimize PROMPT`: the core's optimizer driven from the command line (flags typed into
//! [`OptimizeOptions`], progress on stderr, ctrl-c as its cancel), the record kept in the data
//! directory and printed as a table or `--json`; `--apply ID` writes a recorded candidate's system
//! prompt and template into the prompt file without running anything (only those values, in place,
//! atomically, refused when the prompt changed since the optimization read it); `optimize list`,
//! `optimize show ID`.
//!
//! Exit codes: 0 done; 2 bad input (the flag named); 130 stopped by ctrl-c (the record kept).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::optimize_human as human;
use super::run_options::SetupFlags;
use crate::eval::ModelSpec;
use crate::optimize::{store, Optimization, OptimizeEvent, OptimizeOptions};
use crate::run::CacheMode;

/// Options of `tunebench optimize`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct OptimizeArgs {
    #[command(subcommand)]
    pub command: Option<OptimizeCommand>,
    #[command(flatten)]
    pub run: OptimizeRunArgs,
}

/// `optimize list` and `optimize show`.
#[derive(Debug, clap::Subcommand)]
pub enum OptimizeCommand {
    /// The optimizations recorded in the data directory, newest first.
    List {
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// An optimization again: `last`, an id (or its start), or a record file.
    Show {
        id: String,
        /// Print the record as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Options of an optimization run.
#[derive(Debug, clap::Args)]
pub struct OptimizeRunArgs {
    /// The prompt file (TOML) to optimize: one prompt with at least 2 cases.
    #[arg(required = true)]
    pub prompt: Option<PathBuf>,
    /// The model the candidates run on: local, openai:gpt-4o-mini, ollama:qwen2.5, a .gguf file or a NAME.
    #[arg(long, value_name = "SPEC")]
    pub model: Option<String>,
    /// The model that proposes edits: `local` or PROVIDER:MODEL [default: the prompt's model].
    #[arg(long, value_name = "MODEL")]
    pub proposer: Option<String>,
    /// The proposer's own server (an OpenAI-compatible or Ollama base URL) [default: the prompt's when
    /// the proposer is on the prompt's provider, else the provider's]. The prompt's key is not sent there.
    #[arg(long, value_name = "URL")]
    pub proposer_base_url: Option<String>,
    /// The environment variable holding the proposer's key [default: the prompt's on the prompt's own
    /// server, else the provider's default variable].
    #[arg(long, value_name = "VAR")]
    pub proposer_key_env: Option<String>,
    /// The held-out fraction of the cases, between 0 and 1.
    #[arg(long, default_value_t = 0.5)]
    pub split: f64,
    /// The seed of the split, the samples of failed cases and demonstrations, and the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Cells scored, at most (the baseline included).
    #[arg(long, default_value_t = 200)]
    pub budget: usize,
    /// Requests to the proposer, at most (0: demonstrations and ablations only).
    #[arg(long, default_value_t = 4)]
    pub max_proposals: usize,
    /// Demonstrations per few-shot candidate, from train cases that pass (0: none).
    #[arg(long, default_value_t = 3)]
    pub demos: usize,
    /// No ablation candidates (the system prompt with one instruction removed).
    #[arg(long)]
    pub no_ablation: bool,
    /// Run every candidate on the held-out cases, not only those on the Pareto front of train scores.
    #[arg(long)]
    pub rank_all: bool,
    /// Runs at once [default: the provider's].
    #[arg(long)]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub flags: SetupFlags,
    /// Ask the provider every time (no answer from the response cache).
    #[arg(long)]
    pub no_cache: bool,
    /// Local model: do not fetch the default model when it is missing (fail instead).
    #[arg(long)]
    pub no_fetch: bool,
    /// Write candidate ID (`best`, `c2`, …) of the newest recorded optimization of this prompt (or of
    /// `--from`) into the prompt file; nothing is run.
    #[arg(long, value_name = "ID")]
    pub apply: Option<String>,
    /// With `--apply`: the optimization to take the candidate from (`last`, an id, or a record file)
    /// [default: the newest of this prompt].
    #[arg(long, value_name = "OPTIMIZATION", requires = "apply")]
    pub from: Option<String>,
    /// Print the optimization record as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &OptimizeArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(OptimizeCommand::List { json }) => list(*json),
        Some(OptimizeCommand::Show { id, json }) => {
            let record = store::find_in(&store::optimizations_dir()?, id)?;
            print(&record, *json)?;
            Ok(ExitCode::SUCCESS)
        }
        None => optimize(&args.run),
    }
}

/// The core's options from the flags (bad values named).
pub fn options(args: &OptimizeRunArgs) -> anyhow::Result<OptimizeOptions> {
    let prompt = args.prompt.clone().context("give the prompt file to optimize")?;
    if !(args.split > 0.0 && args.split < 1.0) {
        anyhow::bail!("--split {}: the held-out fraction must be between 0 and 1 (e.g. 0.5)", args.split);
    }
    if args.budget == 0 {
        anyhow::bail!("--budget 0: give the cells that may be scored, at least the prompt's cases");
    }
    if args.concurrency == Some(0) {
        anyhow::bail!("--concurrency 0: give at least 1");
    }
    let model = args.model.as_deref().map(ModelSpec::parse).transpose()?;
    let mut setup = args.flags.setup_options(None)?;
    setup.cache = if args.no_cache { CacheMode::Off } else { CacheMode::Use };
    let mut options = OptimizeOptions::new(prompt, setup);
    options.fetch_model = !args.no_fetch;
    options.model = model;
    options.proposer.clone_from(&args.proposer);
    options.proposer_base_url.clone_from(&args.proposer_base_url);
    options.proposer_key_env.clone_from(&args.proposer_key_env);
    options.held_out = args.split;
    options.seed = args.seed;
    options.budget = args.budget;
    options.max_proposals = args.max_proposals;
    options.demos = args.demos;
    options.ablation = !args.no_ablation;
    options.rank_all = args.rank_all;
    options.concurrency = args.concurrency;
    Ok(options)
}

fn optimize(args: &OptimizeRunArgs) -> anyhow::Result<ExitCode> {
    let options = options(args)?;
    if let Some(which) = &args.apply {
        return apply_recorded(&options.prompt, which, args.from.as_deref());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let human = !args.json;
    let kept = runtime.block_on(crate::optimize::run_and_keep(
        &options,
        Ok(None),
        |event: OptimizeEvent| {
            if human {
                human::progress(&event);
            }
        },
        super::interrupt::interrupted(),
    ))?;
    let record = kept.record;
    match kept.saved {
        Ok(path) => super::note!("optimization {} recorded in {}", record.id, path.display()),
        Err(error) => super::note!("tunebench: warning: the optimization was not recorded: {error}"),
    }
    print(&record, args.json)?;
    Ok(super::interrupt::exit_code(ExitCode::SUCCESS))
}

/// `--apply ID`: the candidate as it was reviewed, from the optimization kept in the data directory
/// (`--from`, else the newest of this prompt file), written into the prompt; nothing runs. A prompt
/// whose system prompt or template changed since that optimization read it is refused.
fn apply_recorded(prompt: &std::path::Path, which: &str, from: Option<&str>) -> anyhow::Result<ExitCode> {
    let dir = store::optimizations_dir()?;
    let record = match from {
        Some(from) => store::find_in(&dir, from)?,
        None => store::newest_of(&dir, prompt)?,
    };
    let on_disk = crate::prompt::file::PromptFile::read(prompt)?;
    let read = (&record.baseline.system, &record.baseline.template);
    if (&on_disk.prompt.system, &on_disk.prompt.template) != read {
        anyhow::bail!(
            "--apply {which}: {} changed since optimization {} read it (its system prompt or template differ): \
             run the optimization again",
            prompt.display(),
            record.id
        );
    }
    apply(&record, which, prompt, &on_disk)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes candidate `which` (`best`, or an id) into the prompt file through its format-preserving save.
fn apply(
    record: &Optimization,
    which: &str,
    path: &std::path::Path,
    on_disk: &crate::prompt::file::OnDisk,
) -> anyhow::Result<()> {
    let id = match which {
        "best" => record.best.clone().context("--apply best: no candidate was ranked on the held-out cases")?,
        id => id.to_string(),
    };
    let candidate = record.candidate(&id).with_context(|| {
        let ids: Vec<&str> =
            std::iter::once(&record.baseline).chain(&record.candidates).map(|c| c.id.as_str()).collect();
        format!("--apply {which}: no candidate {id:?} in this optimization ({})", ids.join(", "))
    })?;
    if let Some(reason) = &candidate.rejected {
        anyhow::bail!("--apply {which}: candidate {id} was rejected ({reason})");
    }
    if candidate.id == "baseline" {
        super::note!("--apply {which}: the baseline is the prompt as it is: nothing to write");
        return Ok(());
    }
    let mut new = on_disk.prompt.clone();
    new.system.clone_from(&candidate.system);
    new.template.clone_from(&candidate.template);
    on_disk
        .save(path, &new, None)
        .with_context(|| format!("--apply {which}: writing candidate {id} into {}", path.display()))?;
    super::note!("applied candidate {id} to {}", path.display());
    Ok(())
}

fn print(record: &Optimization, json: bool) -> anyhow::Result<()> {
    if json {
        super::print_json(record)
    } else {
        super::say!("{}", human::report(record));
        Ok(())
    }
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let dir = store::optimizations_dir()?;
    let (listed, warnings) = store::list_in(&dir)?;
    for warning in &warnings {
        super::note!("tunebench: warning: {warning}");
    }
    if json {
        super::print_json(&listed)?;
    } else {
        for item in &listed {
            super::sayln!("{}", human::listed_line(item));
        }
        super::note!("{} optimizations in {}", listed.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
