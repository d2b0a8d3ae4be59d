//! The sample a fresh machine opens: TrustGraph's agent knowledge-graph extraction prompt (JSONL, a
//! discriminated union) and its example answer as a transcript, embedded and written to the data
//! directory on first start (never over the user's copy).

use std::path::{Path, PathBuf};

use crate::prompt::file::write_atomic;

/// The sample prompt's file name.
pub const PROMPT_NAME: &str = "agent-kg-extract.toml";
const PROMPT: &str = include_str!("../../sample-prompts/agent-kg-extract.toml");
/// An example answer (hand-written, not a model's) as a transcript the replay provider plays.
const ANSWER: &str = include_str!("../../sample-prompts/answers/agent-kg-extract.jsonl");

/// The sample prompt in `data_dir/samples/`, written there (with its answer) if missing.
pub fn ensure(data_dir: &Path) -> Result<PathBuf, String> {
    let dir = data_dir.join("samples");
    let answers = dir.join("answers");
    crate::run::history::create_dir(&answers)?;
    let prompt = dir.join(PROMPT_NAME);
    for (path, text) in [(&prompt, PROMPT), (&answers.join("agent-kg-extract.jsonl"), ANSWER)] {
        if !path.exists() {
            write_atomic(path, text).map_err(|e| e.to_string())?;
        }
    }
    Ok(prompt)
}

/// The recorded answer next to a prompt: `answers/<stem>.jsonl` beside it, if it is a transcript.
pub fn transcript_for(prompt: &Path) -> Option<PathBuf> {
    let stem = prompt.file_stem()?;
    let path = prompt.parent().unwrap_or(Path::new(".")).join("answers").join(Path::new(stem).with_extension("jsonl"));
    let text = crate::files::read_text(&path, crate::files::TRANSCRIPT).ok()?;
    crate::truncate::transcript::Transcript::is_transcript(&text).then_some(path)
}
