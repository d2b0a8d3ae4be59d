//! The eval's inputs read: each prompt file once, a promptfoo config as its columns (prompt ×
//! provider), a suite as the prompt files it names, each prompt's dataset indexed, and the texts the
//! record keeps (a config's keys redacted). The plan (`plan.rs`) makes the columns and cells of them.

use std::path::{Path, PathBuf};

use super::plan::{EvalOptions, PromptText};
use super::EvalError;
use crate::dataset::DatasetIndex;
use crate::prompt::file::PromptFile;

/// What the inputs hold: the texts the record keeps, the prompts to make columns of, what was read
/// past, and the runs per cell (a config's `evaluateOptions.repeat`, a suite's `repeat`, unless
/// `--repeat` says).
pub(super) struct Inputs {
    pub prompts: Vec<PromptText>,
    pub sources: Vec<Source>,
    pub warnings: Vec<String>,
    pub repeat: u32,
}

/// Reads `options.prompts`.
pub(super) fn read(options: &EvalOptions) -> Result<Inputs, EvalError> {
    let mut repeat = options.repeat.max(1);
    let mut prompts = Vec::new();
    let mut sources = Vec::new();
    let mut warnings = Vec::new();
    for path in &options.prompts {
        let text =
            crate::files::read_text(path, crate::files::PROMPT_FILE).map_err(|e| EvalError::Input(e.to_string()))?;
        let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let base_dir = crate::run::setup::base_dir(path);
        if crate::promptfoo::is_config(path) {
            let config = crate::promptfoo::read(path).map_err(|e| EvalError::Input(e.to_string()))?;
            warnings.extend(config.warnings.iter().cloned());
            // `evaluateOptions.repeat`, unless `--repeat` says otherwise.
            if options.repeat <= 1 {
                repeat = repeat.max(config.repeat);
            }
            let id = config.description.clone().unwrap_or_else(|| stem(path));
            // The config is taken: its tests are held once, as the columns' cases.
            for column in crate::promptfoo::columns(config) {
                let mut prompt = column.prompt;
                if options.schema_verdict {
                    prompt.eval.verdicts = Some(crate::prompt::expect::Verdicts::Tunebench);
                }
                let dataset = index_cases(&prompt, path, &base_dir, options)?;
                sources.push(Source { path: path.clone(), prompt, label: Some(column.label), dataset });
            }
            prompts.push(PromptText { path: absolute, id, text: crate::promptfoo::redacted(&text) });
            continue;
        }
        if super::suite::is_suite(&text) {
            if let Some(times) = super::suite::repeat_of(&text).filter(|_| options.repeat <= 1) {
                repeat = repeat.max(times);
            }
            for (label, file) in super::suite::read(path, &text)? {
                let text = crate::files::read_text(&file, crate::files::PROMPT_FILE)
                    .map_err(|e| EvalError::Input(e.to_string()))?;
                let (mut source, shown) = prompt_of(&text, &file, options)?;
                source.label = Some(label);
                prompts.push(shown);
                sources.push(source);
            }
            continue;
        }
        let (source, shown) = prompt_of(&text, path, options)?;
        prompts.push(shown);
        sources.push(source);
    }
    Ok(Inputs { prompts, sources, warnings, repeat })
}

/// A prompt to make columns of: a prompt file, or one column of a promptfoo config (its label given).
pub(super) struct Source {
    pub path: PathBuf,
    pub prompt: PromptFile,
    pub label: Option<String>,
    pub dataset: Option<DatasetIndex>,
}

impl Source {
    /// The names of its cases: the inline ones, then its dataset's rows.
    pub fn names(&self) -> Vec<&str> {
        let inline = self.prompt.cases.iter().map(|c| c.name.as_str());
        inline.chain(self.dataset.iter().flat_map(DatasetIndex::names)).collect()
    }
}

/// The prompt file `path` holds (`text`) as a source, its dataset indexed, and its text as the record keeps it.
fn prompt_of(text: &str, path: &Path, options: &EvalOptions) -> Result<(Source, PromptText), EvalError> {
    let prompt = PromptFile::from_toml_str(text, path).map_err(|e| EvalError::Input(e.to_string()))?;
    let dataset = index_cases(&prompt, path, &crate::run::setup::base_dir(path), options)?;
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = PromptText { path: absolute, id: prompt.id.clone(), text: text.to_string() };
    Ok((Source { path: path.to_path_buf(), prompt, label: None, dataset }, shown))
}

/// Indexes `prompt`'s dataset (its `cases_file`, or `--cases`), every row checked.
fn index_cases(
    prompt: &PromptFile,
    path: &Path,
    base_dir: &Path,
    options: &EvalOptions,
) -> Result<Option<DatasetIndex>, EvalError> {
    crate::dataset::index(prompt, path, base_dir, options.cases_file.as_deref(), &options.setup.variables)
        .map_err(|e| EvalError::Input(e.to_string()))
}

/// A file's name without its extension.
fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned())
}
