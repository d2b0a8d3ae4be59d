//! What can go wrong with a prompt file, each error naming the file (and line:column) or the prompt.

use std::path::PathBuf;

use crate::prompt::signature::SignatureError;
use crate::prompt::template::TemplateError;

/// A prompt file that cannot be read, parsed, resolved, rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The file cannot be read (missing, unreadable, not a regular file, past its cap, not UTF-8).
    #[error("{}: {message}", .path.display())]
    Read { path: PathBuf, message: String },
    /// A file the prompt names (`schema_file`, `expected_file`) is not inside the prompt's folder: an
    /// absolute path, a `..` that climbs out, or a link out. The message names the field, the value,
    /// why, the folder and, when known, the file:line where it is written.
    #[error("{message}")]
    Outside { field: &'static str, name: PathBuf, message: String },
    /// The TOML does not parse or has a wrong or unknown key (the message names it).
    #[error("{}:{line}:{column}: {message}", .path.display())]
    Toml { path: PathBuf, line: usize, column: usize, message: String },
    /// The TOML parses but says something impossible (two schemas, two cases of one name, …).
    #[error("{}:{line}:{column}: {message}", .path.display())]
    Invalid { path: PathBuf, line: usize, column: usize, message: String },
    /// A prompt built in memory has more than one of schema, schema_file and signature.
    #[error("prompt `{id}`: more than one of schema, schema_file and signature is set")]
    Conflict { id: String },
    /// The schema file is not JSON.
    #[error("{}:{line}:{column}: schema file is not JSON: {message}", .path.display())]
    SchemaFile { path: PathBuf, line: usize, column: usize, message: String },
    /// The signature does not parse.
    // `error`, not `source`: the message already holds it (a chained source would print it twice).
    #[error("prompt `{id}`: signature: {error}")]
    Signature { id: String, error: Box<SignatureError> },
    /// `--case` names no case of the prompt.
    #[error("prompt `{id}` has no case named {name:?}; {}", known_cases(.known))]
    UnknownCase { id: String, name: String, known: Vec<String> },
    /// Rendering failed (an undefined variable, a template syntax error, …).
    #[error("prompt `{id}`: {error}")]
    Template { id: String, error: TemplateError },
    /// The prompt cannot be written as TOML (TOML has no null, for one).
    #[error("prompt `{id}` cannot be written as TOML: {message}")]
    NotToml { id: String, message: String },
    /// A prompt held in memory (no file places known) has an expectation that cannot hold: an
    /// expected item the schema rejects, a check pointing at a field the schema has no room for, …
    /// (read from a file, the same mistakes are [`PromptError::Invalid`] at their file:line).
    #[error("prompt `{id}`: {message}")]
    Expectation { id: String, message: String },
    /// The file on disk is no longer what was read (edited in another program, `git checkout`, …):
    /// nothing was written over it.
    #[error("{}: changed on disk since it was read; not saved over it", .path.display())]
    ChangedOutside { path: PathBuf },
    /// The file cannot be written.
    #[error("{}: cannot write: {message}", .path.display())]
    Write { path: PathBuf, message: String },
}

fn known_cases(known: &[String]) -> String {
    if known.is_empty() {
        "it has no cases".to_string()
    } else {
        format!("its cases are: {}", known.join(", "))
    }
}
