//! `tunebench import promptfoo promptfooconfig.yaml --out DIR`: the files `eval::suite::import_promptfoo`
//! makes written into DIR (a prompt file per column, `tests.jsonl`, `suite.toml`), every name passed
//! through `names`, nothing written when one exists already (unless `--force`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};

use super::import::ImportArgs;
use crate::eval::suite::{import_promptfoo, DATASET, SUITE};
use crate::safe_text::escape_controls;

pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let config = crate::promptfoo::read(&args.config)?;
    for warning in &config.warnings {
        super::note!("tunebench: warning: {warning}");
    }
    let imported = import_promptfoo(&config)?;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for prompt in &imported.prompts {
        let text = prompt.to_toml_string()?;
        files.push((crate::names::inside(&args.out, &prompt.id, ".toml"), text));
    }
    files.push((args.out.join(DATASET), imported.dataset.clone()));
    files.push((args.out.join(SUITE), imported.suite.clone()));
    if !args.force {
        if let Some((existing, _)) = files.iter().find(|(path, _)| std::fs::symlink_metadata(path).is_ok()) {
            bail!("{} exists already; nothing written (use --force to overwrite)", existing.display());
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    for (path, text) in &files {
        crate::prompt::file::write_atomic(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let paths: Vec<String> = files.iter().map(|(path, _)| path.display().to_string()).collect();
    let suite = args.out.join(SUITE);
    if args.json {
        super::print_json(&serde_json::json!({
            "format": "promptfoo",
            "written": paths,
            "columns": imported.prompts.len(),
            "tests": imported.dataset.lines().count(),
            "suite": suite.display().to_string(),
        }))?;
    } else {
        for path in &paths {
            super::sayln!("wrote {}", escape_controls(path));
        }
        super::sayln!("run the same matrix with: tunebench eval {}", escape_controls(&suite.display().to_string()));
    }
    Ok(ExitCode::SUCCESS)
}
