//! The files a prompt names (`schema_file`, a case's `expected_file`): resolved against the prompt's
//! folder, which they stay inside once links are followed (an absolute path, a `..` that climbs out or
//! a link out is bad input naming the field), and read within their kind's cap. Every reader and
//! writer of such a file goes through [`resolve`].

use std::path::{Path, PathBuf};

use super::PromptError;
use crate::files::{self, Limit};
use crate::prompt::expect::Place;

/// Where the file `name` (the value of `field`, written at `at` when known) really is, inside
/// `base_dir` (the prompt file's folder).
pub fn resolve(base_dir: &Path, field: &'static str, name: &Path, at: Option<&Place>) -> Result<PathBuf, PromptError> {
    files::inside(base_dir, name).map_err(|reason| {
        let at = at.map(|place| format!("{place}: ")).unwrap_or_default();
        let folder = if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir };
        let message = format!(
            "{at}`{field}` {:?}: {reason}; the files a prompt names stay inside its folder ({})",
            name.display().to_string(),
            folder.display()
        );
        PromptError::Outside { field, name: name.to_path_buf(), message }
    })
}

/// The text of the file `name` names ([`resolve`]d), read within `limit`: its real path and text.
pub fn read(
    base_dir: &Path,
    field: &'static str,
    name: &Path,
    at: Option<&Place>,
    limit: Limit,
) -> Result<(PathBuf, String), PromptError> {
    let path = resolve(base_dir, field, name, at)?;
    let text = files::read_text(&path, limit)
        .map_err(|e| PromptError::Read { path: e.path, message: format!("{field}: {}", e.problem) })?;
    Ok((path, text))
}

/// Why `name`, as written in `field`, cannot name a file inside the prompt's folder (checked when the
/// prompt is read, so the error has its line; links are followed when the file is read).
pub fn refused_as_written(field: &str, name: &Path) -> Option<String> {
    files::leaves_folder(name).map(|why| {
        format!("`{field}` {:?} is {why}; the files a prompt names stay inside its folder", name.display().to_string())
    })
}
