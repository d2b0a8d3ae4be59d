//! `tunebench import trustgraph CONFIG.json [--out DIR]`: one prompt file per TrustGraph template;
//! `tunebench import promptfoo promptfooconfig.yaml --out DIR` ([`super::import_promptfoo`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};

use super::input::read_text;
use crate::prompt::template::{Part, Template};
use crate::prompt::trustgraph;
use crate::safe_text::escape_controls;

/// The systems whose prompt configurations tunebench reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// A TrustGraph prompt configuration (config seed file, or the config service's `prompt` entries).
    Trustgraph,
    /// A promptfoo config (promptfooconfig.yaml): a prompt file per prompt × provider, the tests as
    /// a dataset, and a suite file so `tunebench eval DIR/suite.toml` runs the same matrix.
    Promptfoo,
}

/// Import prompts from another system's configuration: writes `<id>.toml` per prompt.
#[derive(Clone, Debug, clap::Args)]
pub struct ImportArgs {
    /// Whose configuration it is.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// The configuration file (TrustGraph: JSON, - for standard input; promptfoo: its YAML file).
    pub config: PathBuf,
    /// Where to write the prompt files.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Overwrite files that exist already.
    #[arg(long)]
    pub force: bool,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Reads the configuration, writes the prompt files (all checked before any is written), reports.
pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    if args.format == ImportFormat::Promptfoo {
        return super::import_promptfoo::run(args);
    }
    let text = read_text(&args.config)?;
    let config = trustgraph::import(&text)
        .with_context(|| format!("{}: not a usable TrustGraph configuration", args.config.display()))?;
    let targets: Vec<PathBuf> =
        config.prompts.iter().map(|p| crate::names::inside(&args.out, &p.id, ".toml")).collect();
    if !args.force {
        if let Some(existing) = targets.iter().find(|t| t.exists()) {
            bail!("{} exists already; nothing written (use --force to overwrite)", existing.display());
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut written = Vec::with_capacity(targets.len());
    for (prompt, path) in config.prompts.iter().zip(&targets) {
        prompt.save(path)?;
        let variables: Vec<String> = match Template::compile(Part::Template, &prompt.template) {
            Ok(t) => t.variables().into_iter().collect(),
            Err(_) => Vec::new(),
        };
        written.push(serde_json::json!({
            "id": prompt.id,
            "path": path.display().to_string(),
            "response_type": prompt.response_type,
            "schema": prompt.schema.is_some(),
            "variables": variables,
        }));
    }
    if args.json {
        super::print_json(&serde_json::json!({
            "format": "trustgraph",
            "system": config.system,
            "terms": config.terms,
            "written": written,
            "notes": config.notes,
        }))?;
    } else {
        super::say!("{}", human(&written, &config.notes, &targets));
    }
    Ok(ExitCode::SUCCESS)
}

fn human(written: &[serde_json::Value], notes: &[String], targets: &[PathBuf]) -> String {
    let mut out = String::new();
    for w in written {
        let vars: Vec<&str> = w["variables"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        out.push_str(&format!(
            "wrote {} ({}{}){}\n",
            escape_controls(w["path"].as_str().unwrap_or_default()),
            w["response_type"].as_str().unwrap_or_default(),
            if w["schema"].as_bool().unwrap_or(false) { ", schema" } else { "" },
            if vars.is_empty() { String::new() } else { format!("; variables to give values: {}", vars.join(", ")) },
        ));
    }
    for note in notes {
        out.push_str(&format!("note: {}\n", escape_controls(note)));
    }
    if !targets.is_empty() {
        let files: Vec<String> = targets.iter().map(|t| shell_word(t)).collect();
        out.push_str(&format!("export back (same order) with: tunebench export trustgraph {}\n", files.join(" ")));
    }
    out
}

/// A path as one shell word (quoted when it needs to be).
fn shell_word(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars().all(|c| c.is_alphanumeric() || "/._-+=:,@".contains(c)) {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
