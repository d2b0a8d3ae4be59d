//! `tunebench export trustgraph PROMPT...`: the prompts as one TrustGraph configuration on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::prompt::file::PromptFile;
use crate::prompt::trustgraph;

/// The systems tunebench writes prompt configurations for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A TrustGraph prompt configuration (`{"prompt": {"system", "template-index", "template.<id>"}}`).
    Trustgraph,
}

/// Export prompt files as another system's configuration (printed on stdout).
#[derive(Clone, Debug, clap::Args)]
pub struct ExportArgs {
    /// Whose configuration to write.
    #[arg(value_enum)]
    pub format: ExportFormat,
    /// The prompt files, in the order of the configuration's index.
    #[arg(required = true)]
    pub prompts: Vec<PathBuf>,
}

/// Loads every prompt (schema files and signatures become inline schemas), prints the JSON; what
/// the configuration cannot hold is noted on stderr.
pub fn run(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportFormat::Trustgraph = args.format;
    let mut prompts = Vec::with_capacity(args.prompts.len());
    for path in &args.prompts {
        let mut prompt = PromptFile::load(path)?;
        if prompt.schema_file.is_some() {
            prompt.inline_schema(path.parent().unwrap_or(Path::new(".")))?;
        }
        prompts.push(prompt);
    }
    let exported = trustgraph::export(&prompts).map_err(|e| match &e {
        trustgraph::TrustGraphError::Disagree { first, second, .. } => {
            let file = |id: &str| {
                prompts
                    .iter()
                    .zip(&args.prompts)
                    .find(|(p, _)| p.id == id)
                    .map_or_else(|| id.to_string(), |(_, f)| f.display().to_string())
            };
            anyhow::anyhow!("{e} ({} and {})", file(first), file(second))
        }
        _ => anyhow::Error::new(e),
    });
    let exported = exported.context("cannot export these prompts together")?;
    for note in &exported.notes {
        super::note!("note: {note}");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(crate::safe_text::escape_json_text(&exported.json).as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
