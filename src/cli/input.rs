//! What `parse` and `truncate` share: the parse options, reading the answer, and building the check.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::output::{Profile, ResponseType};
use crate::prompt::file::PromptFile;
pub use crate::prompt::reading::{load_schema, prompt_setup, read_text, setup_for_prompt, Setup};
use crate::prompt::reading::{prompt_checks, signature_check, Checks};
use crate::truncate::cut::Answer;

/// How to read and check an answer.
#[derive(Debug, Clone, clap::Args)]
pub struct ParseOptions {
    /// How to read the answer [default: the prompt's response type, else jsonl].
    #[arg(long = "type", value_enum)]
    pub response_type: Option<ResponseType>,
    /// A JSON Schema file (for jsonl it describes each line, for json the whole answer).
    #[arg(long, conflicts_with_all = ["signature", "prompt"])]
    pub schema: Option<PathBuf>,
    /// A PtcRunner signature to check against, e.g. "{sentiment :string, score :float}".
    #[arg(long, conflicts_with = "prompt")]
    pub signature: Option<String>,
    /// A prompt file: its response type, profile and schema.
    #[arg(long)]
    pub prompt: Option<PathBuf>,
    /// Whose rules turn text into JSON [default: the prompt's profile, else lenient].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// The answer: raw text or a transcript file; - for standard input.
    #[arg(default_value = "-")]
    pub file: PathBuf,
}

impl ParseOptions {
    /// Resolves response type, profile and check from the flags and the prompt file.
    pub fn setup(&self) -> anyhow::Result<Setup> {
        let prompt = match &self.prompt {
            Some(path) => Some(PromptFile::load(path)?),
            None => None,
        };
        let response_type =
            self.response_type.or(prompt.as_ref().map(|p| p.response_type)).unwrap_or(ResponseType::Jsonl);
        let profile = self.profile.or(prompt.as_ref().and_then(|p| p.profile)).unwrap_or_default();
        let checks = if let Some(path) = &self.schema {
            Checks::Schema(Box::new(load_schema(path)?))
        } else if let Some(src) = &self.signature {
            Checks::Signature(signature_check(src, "--signature")?)
        } else if let (Some(prompt), Some(path)) = (&prompt, &self.prompt) {
            prompt_checks(prompt, path, path.parent().unwrap_or(Path::new(".")))?
        } else {
            Checks::None
        };
        let (check, item_check) = checks.split(response_type, profile);
        Ok(Setup { response_type, profile, check, item_check })
    }

    /// Reads the answer named by `file` (or standard input).
    pub fn read_answer(&self) -> anyhow::Result<Answer> {
        let text = read_text(&self.file)?;
        Answer::from_input(text).with_context(|| format!("reading {}", self.file.display()))
    }
}
