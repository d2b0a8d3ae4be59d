//! The sample a fresh machine opens: a trip read from one sentence (JSON, four fields, five cases with
//! their expected answers, four of which the embedded model gets right) and the embedded model's own
//! answer to its first case as a transcript, embedded and written to the data directory on first start
//! (never over the user's copy).

use std::path::{Path, PathBuf};

use crate::prompt::file::write_atomic;

/// The sample prompt's file name.
pub const PROMPT_NAME: &str = "extract-trip.toml";
const PROMPT: &str = include_str!("../../sample-prompts/extract-trip.toml");
/// The embedded model's answer to the sample's first case (recorded with `tunebench run --case flight
/// --provider local --record`), which the replay provider plays while the model is fetched.
const ANSWER: &str = include_str!("../../sample-prompts/answers/extract-trip.jsonl");

/// The sample prompt in `data_dir/samples/`, written there (with its answer) if missing.
pub fn ensure(data_dir: &Path) -> Result<PathBuf, String> {
    let dir = data_dir.join("samples");
    let answers = dir.join("answers");
    crate::run::history::create_dir(&answers)?;
    let prompt = dir.join(PROMPT_NAME);
    for (path, text) in [(&prompt, PROMPT), (&answers.join("extract-trip.jsonl"), ANSWER)] {
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
