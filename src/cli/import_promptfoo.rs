//! `tunebench import promptfoo promptfooconfig.yaml --out DIR`: the files `eval::suite::import_promptfoo`
//! makes written into DIR (a prompt file per column, `tests.jsonl`, `suite.toml`, the code files its
//! `python`/`javascript` assertions name, copied, and `.env` with the keys the config wrote, readable by
//! its owner alone), every name passed through `names`, nothing written when one exists already
//! (unless `--force`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};

use super::import::ImportArgs;
use crate::eval::suite::{import_promptfoo, SUITE};
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
    for (name, text) in &imported.datasets {
        files.push((crate::names::inside(&args.out, name.trim_end_matches(".jsonl"), ".jsonl"), text.clone()));
    }
    files.push((args.out.join(SUITE), imported.suite.clone()));
    // The checks' code files, copied to the same place beside the suite (each stays inside both folders).
    let config_dir = crate::run::setup::base_dir(&args.config);
    for (relative, _) in &imported.files {
        let from = crate::prompt::file::named::resolve(&config_dir, "assertion file", relative, None)?;
        let text = crate::files::read_text(&from, crate::files::PROMPT_FILE)?;
        files.push((args.out.join(relative), text));
    }
    let env_text: String = imported.env.iter().map(|(name, value)| format!("{name}={}\n", quoted(value))).collect();
    if !env_text.is_empty() {
        files.push((args.out.join(".env"), env_text));
    }
    if !args.force {
        if let Some((existing, _)) = files.iter().find(|(path, _)| std::fs::symlink_metadata(path).is_ok()) {
            bail!("{} exists already; nothing written (use --force to overwrite)", existing.display());
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    for (path, text) in &files {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
        }
        crate::prompt::file::write_atomic(path, text).with_context(|| format!("writing {}", path.display()))?;
        #[cfg(unix)]
        if path.file_name().is_some_and(|n| n == ".env") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("cannot make {} private", path.display()))?;
        }
    }
    if !imported.env.is_empty() {
        super::note!(
            "tunebench: the config writes {} key(s) into its text; they are kept in {} (`tunebench eval` reads it beside the suite), named by `key_env` in the files",
            imported.env.len(),
            escape_controls(&args.out.join(".env").display().to_string())
        );
    }
    let paths: Vec<String> = files.iter().map(|(path, _)| path.display().to_string()).collect();
    let suite = args.out.join(SUITE);
    if args.json {
        super::print_json(&serde_json::json!({
            "format": "promptfoo",
            "written": paths,
            "columns": imported.prompts.len(),
            "tests": imported.datasets.first().map_or(0, |(_, text)| text.lines().count()),
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

/// A dotenv value in single quotes when it holds anything but plain characters (a quote in it: in
/// double quotes, escaped), as `cli::env_file` reads it back.
fn quoted(value: &str) -> String {
    if value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/+=@".contains(c)) {
        value.to_string()
    } else if !value.contains('\'') && !value.contains('\n') {
        format!("'{value}'")
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
    }
}
