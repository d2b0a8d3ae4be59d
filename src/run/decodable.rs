//! Whether a run's answers can be held to its prompt's schema: on the local model under `json-object`,
//! `json-schema` or `constrained`, the constrained decoder must compile the schema (objects closed as
//! the engine closes them). Asked once per prompt before any model is loaded (`run`, `eval`, batches
//! and the workbench's runs through `RunSetup`, comparisons through `compare::pair::plans`) and by the
//! workbench's schema lint: one answer for every front end.

use std::path::Path;

use serde_json::Value;

use super::{RunError, RunSettings};
use crate::output::ResponseType;
use crate::prompt::file::PromptFile;
use crate::provider::kind::ProviderKind;
use crate::schema::LintIssue;

/// The part of `schema` the decoder refuses, and why, for an answer of `response_type` run under
/// `settings`; `None` when it compiles or no decoder holds the answer (another provider, a text
/// answer, structured mode `none`).
pub fn refusal(settings: &RunSettings, response_type: ResponseType, schema: Option<&Value>) -> Option<LintIssue> {
    if settings.provider != ProviderKind::Local || response_type == ResponseType::Text {
        return None;
    }
    #[cfg(feature = "local")]
    {
        use crate::engine::decodable;
        let grammar =
            crate::provider::local::grammar(settings.structured, schema, response_type == ResponseType::Jsonl)?;
        decodable::check(&grammar).err()
    }
    #[cfg(not(feature = "local"))]
    {
        let _ = schema;
        None
    }
}

/// [`refusal`] for the prompt file at `path` (its `schema_file` read from `base_dir`), as an error
/// naming the file, the part of the schema and why.
pub fn check_prompt(prompt: &PromptFile, path: &Path, base_dir: &Path, settings: &RunSettings) -> Result<(), RunError> {
    if settings.provider != ProviderKind::Local {
        return Ok(());
    }
    let schema = prompt.resolve_schema(base_dir)?.map(|resolved| resolved.schema);
    match refusal(settings, prompt.response_type, schema.as_ref()) {
        Some(issue) => Err(RunError::Undecodable { prompt: path.display().to_string(), issue }),
        None => Ok(()),
    }
}
