//! The prompt as edited: the editors' texts turned back into a prompt file (for runs and saving),
//! and the recovery snapshot. Pure functions over the state (the schema's lint: `lint`).

use std::path::{Path, PathBuf};

use crate::files;
use crate::prompt::file::{named, OnDisk, PromptFile};
use crate::tui::msg::{Effect, SchemaFileSave};

pub use crate::tui::msg::Edits;
use crate::tui::recovery::{RecoveredVariables, Recovery};
use crate::tui::state::{SchemaKind, State};

/// Records that a variable or a case changed (or all was put back): dirty when the texts, the
/// variables or the cases differ from the saved ones.
pub fn edited(state: &mut State) {
    state.edits += 1;
    recheck(state);
}

/// Records that an editor's text changed: dirty when the texts differ from the saved ones, or the
/// variables and cases did when last compared (a key in an editor cannot change them, and a dataset's
/// thousands of rows are not compared for a key).
pub fn text_edited(state: &mut State) {
    state.edits += 1;
    state.dirty = texts_differ(state) || state.variables_changed;
}

/// Compares everything with the saved prompt again (after a change of the variables or cases, or of
/// the saved prompt itself) and sets `dirty`.
pub fn recheck(state: &mut State) {
    state.variables_changed = crate::tui::variables::changed(state);
    state.dirty = texts_differ(state) || state.variables_changed;
}

/// Whether the texts differ from the saved prompt's (compared in place: a key in a large schema joins
/// no copy of it).
fn texts_differ(state: &State) -> bool {
    let editors = [&state.system, &state.template, &state.schema];
    editors.iter().zip(&state.saved_texts).any(|(editor, saved)| !editor.is(saved))
}

/// Reads the rows of the prompt's dataset (`cases_file`) in after its inline cases, so the workbench
/// lists and edits them (a save writes each changed row back into its line); a dataset that cannot be
/// read is a note, and its rows are not listed.
pub fn with_dataset(prompt: &mut PromptFile, path: &Path) -> Option<String> {
    prompt.cases_file.as_ref()?;
    let base_dir = crate::run::setup::base_dir(path);
    crate::dataset::read_into(prompt, path, &base_dir, None, &crate::prompt::template::Variables::new())
        .err()
        .map(|e| format!("the dataset's cases are not listed: {e}"))
}

/// The prompt as the editors hold it, for a run of the chosen case: a schema file's edited text is
/// inlined, and of the cases the chosen one alone is there (a run, its preview and a compare render
/// that one; a dataset's thousands of rows are not copied for them).
pub fn prompt_for_run(state: &State) -> Result<PromptFile, String> {
    Ok(Edits::of_chosen(state).apply(state.saved.without_cases())?.0)
}

/// Asks for the edits to be saved (the prompt and texts the save writes wait in `pending_save`).
pub fn save(state: &mut State) -> Vec<Effect> {
    match save_effect(state) {
        Ok((effect, prompt)) => {
            state.pending_save = Some(Box::new((prompt, state.texts())));
            vec![effect]
        }
        Err(e) => {
            state.note = Some(format!("not saved: {e}"));
            Vec::new()
        }
    }
}

/// The save of the prompt as the editors hold it: written in place over the file as last read or
/// written, with the schema file beside it when the schema lives in its own file. Also returns the
/// prompt written (it becomes the saved one when the save succeeds).
pub fn save_effect(state: &State) -> Result<(Effect, PromptFile), String> {
    let (mut prompt, file) = edited_prompt(state)?;
    let [.., schema] = state.texts();
    let mut schema_text = None;
    let schema_file = match file {
        Some((path, text)) => {
            prompt.schema = None;
            prompt.schema_file = state.saved.schema_file.clone();
            Some(SchemaFileSave { path, base: state.saved_texts[2].clone(), text })
        }
        None => {
            if matches!(state.schema_kind, SchemaKind::Inline | SchemaKind::None) {
                schema_text = Some(schema);
            }
            None
        }
    };
    let effect = Effect::Save {
        path: state.path.clone(),
        base: Box::new(OnDisk { text: state.saved_text.clone(), prompt: state.saved.clone() }),
        prompt: Box::new(prompt.clone()),
        schema_text,
        schema_file,
    };
    Ok((effect, prompt))
}

fn edited_prompt(state: &State) -> Result<(PromptFile, Option<(PathBuf, String)>), String> {
    Edits::of(state).apply(state.saved.clone())
}

impl Edits {
    pub fn of(state: &State) -> Edits {
        Edits {
            texts: state.texts(),
            variables: state.variables.clone(),
            cases: state.cases.clone(),
            schema_kind: state.schema_kind.clone(),
        }
    }

    /// The edits a count of the request needs: the texts, the variables and the chosen case alone (a
    /// dataset of thousands of rows is not copied for a keystroke's count).
    pub fn of_chosen(state: &State) -> Edits {
        let chosen = state.choice.case.as_deref();
        Edits {
            texts: state.texts(),
            variables: state.variables.clone(),
            cases: state.cases.iter().filter(|c| Some(c.name.as_str()) == chosen).cloned().collect(),
            schema_kind: state.schema_kind.clone(),
        }
    }

    /// `saved` as edited, and the schema file to write beside it (if the schema lives in its own
    /// file). The schema editor's text replaces `saved`'s schema (a signature prompt has none).
    pub fn apply(self, mut prompt: PromptFile) -> Result<(PromptFile, Option<(PathBuf, String)>), String> {
        let [system, template, schema] = self.texts;
        prompt.system = (!system.is_empty()).then_some(system);
        prompt.template = template;
        prompt.variables = self.variables;
        // A dataset's rows stay its rows (a save writes them back there), the rest are the file's.
        crate::dataset::place_rows(&mut prompt, self.cases);
        let mut file = None;
        match &self.schema_kind {
            SchemaKind::Signature => prompt.signature = Some(schema.trim().to_string()),
            kind => {
                prompt.signature = None;
                prompt.schema_file = None;
                prompt.schema = if schema.trim().is_empty() {
                    None
                } else {
                    Some(serde_json::from_str(&schema).map_err(|e| {
                        let message = e.to_string();
                        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
                        format!(
                            "the schema is not JSON ({}:{}: {message}); fix it in the schema pane",
                            e.line(),
                            e.column()
                        )
                    })?)
                };
                if let SchemaKind::File(path) = kind {
                    file = Some((path.clone(), schema));
                }
            }
        }
        Ok((prompt, file))
    }
}

/// The unsaved edits as a recovery snapshot.
pub fn recovery(state: &State, now_epoch_ms: u64) -> Recovery {
    let [system, template, schema] = state.texts();
    let variables = state.variables_changed.then(|| {
        let (own, rows) = crate::tui::recovery::split_rows(&state.saved, &state.cases);
        RecoveredVariables { variables: state.variables.clone(), cases: Vec::new(), case_list: Some(own), rows }
    });
    Recovery { path: state.path.clone(), system, template, schema, written_at_ms: now_epoch_ms, variables }
}

/// Puts recovered texts into the editors (they count as unsaved edits).
pub fn restore(state: &mut State, recovery: &Recovery) {
    state.system = crate::tui::state::editor(&recovery.system);
    state.template = crate::tui::state::editor(&recovery.template);
    state.schema = crate::tui::state::editor(&recovery.schema);
    if let Some(recovered) = &recovery.variables {
        state.variables = recovered.variables.clone();
        match (&recovered.case_list, &recovered.rows) {
            (Some(own), Some(rows)) => state.cases = crate::tui::recovery::join_rows(&state.saved, own, rows),
            (Some(cases), None) => state.cases = cases.clone(),
            // A file from before cases could be added: each saved case's variables, in order.
            (None, _) if recovered.cases.len() == state.cases.len() => {
                for (case, variables) in state.cases.iter_mut().zip(&recovered.cases) {
                    case.variables = variables.clone();
                }
            }
            (None, _) => {}
        }
    }
    crate::tui::workbench::lint::relint(state);
    edited(state);
}

/// The text the schema editor starts with, and what it is: an inline schema as the file writes it
/// (JSON text in a string), so a save writes back what the author sees.
pub fn schema_text(file: &OnDisk, path: &Path) -> anyhow::Result<(String, SchemaKind)> {
    let prompt = &file.prompt;
    if let Some(signature) = &prompt.signature {
        return Ok((signature.clone(), SchemaKind::Signature));
    }
    if let Some(file) = &prompt.schema_file {
        let base_dir = path.parent().unwrap_or(Path::new("."));
        let (_, text) = named::read(base_dir, "schema_file", file, None, files::SCHEMA_FILE)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        return Ok((text, SchemaKind::File(file.clone())));
    }
    if let Some(schema) = &prompt.schema {
        let text = match file.written_schema() {
            Some(written) => written.trim_end().to_string(),
            None => serde_json::to_string_pretty(schema)?,
        };
        return Ok((text, SchemaKind::Inline));
    }
    Ok((String::new(), SchemaKind::None))
}
