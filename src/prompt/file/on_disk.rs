//! A prompt file as it was read or last written ([`OnDisk`]): its text, which a save edits in place
//! (keys that did not change stay byte for byte), refused when the file changed outside since.

use std::path::Path;

use super::{edit, write_over, DatasetCases, PromptError, PromptFile};
use crate::files::Problem;

/// A prompt file's text, through the bounded reader; errors name the file (and, for bytes that are not
/// UTF-8, the line and column).
pub(super) fn read_text(path: &Path) -> Result<String, PromptError> {
    crate::files::read_text(path, crate::files::PROMPT_FILE).map_err(|e| match e.problem {
        Problem::NotUtf8 { line, column, byte } => {
            PromptError::Invalid { path: e.path, line, column, message: format!("not UTF-8 (byte 0x{byte:02x})") }
        }
        problem => PromptError::Read { path: e.path, message: problem.to_string() },
    })
}

/// A prompt file as it was read (or last written): its text, which a save edits in place, and the
/// prompt that text says.
#[derive(Clone, Debug, PartialEq)]
pub struct OnDisk {
    pub text: String,
    pub prompt: PromptFile,
}

impl OnDisk {
    /// The file's text with `new` written over it: keys whose value did not change stay byte for
    /// byte, with their comments, quoting and order; a changed value is rewritten down to the parts
    /// that differ (one case of many, one item of a list, a string in its own quoting style).
    /// `schema_text` is the inline schema as the author typed it, written as is when it changed.
    pub fn edited(&self, new: &PromptFile, schema_text: Option<&str>) -> Result<String, PromptError> {
        edit::edit(&self.text, &self.prompt, new, schema_text)
    }

    /// Saves `new` over the file at `path` in place ([`OnDisk::edited`]), atomically and through a
    /// symlink; refuses with [`PromptError::ChangedOutside`] when the file no longer holds the text
    /// read, and writes nothing that would not read back as `new`. Returns what the file holds now
    /// (with the rows of `new`'s dataset after its cases, as `new` holds them: the file writes none).
    pub fn save(&self, path: &Path, new: &PromptFile, schema_text: Option<&str>) -> Result<OnDisk, PromptError> {
        let text = self.edited(new, schema_text)?;
        let mut prompt = edit::reads_back(&text, path, new)?;
        if let Some(dataset) = &new.dataset {
            let first = prompt.cases.len();
            prompt.cases.extend(new.cases.iter().skip(dataset.first).cloned());
            prompt.dataset = Some(DatasetCases { first, ..dataset.clone() });
        }
        if text != self.text || read_text(path).ok().as_deref() != Some(self.text.as_str()) {
            write_over(path, &self.text, &text)?;
        }
        Ok(OnDisk { prompt, text })
    }

    /// The inline schema's JSON text as the file writes it (a string holding JSON), so an editor can
    /// show the author's own layout; `None` when the schema is a TOML table or not inline.
    pub fn written_schema(&self) -> Option<String> {
        edit::written_schema(&self.text)
    }

    /// The file's text when it differs from what was read (`None`: unchanged, or unreadable now).
    pub fn changed_on_disk(&self, path: &Path) -> Option<String> {
        read_text(path).ok().filter(|now| *now != self.text)
    }
}
