//! A suite file: the columns of an eval named once, so `tunebench eval DIR/suite.toml` runs the same
//! matrix again (what `import promptfoo` writes beside the prompt files it makes).
//!
//! ```toml
//! [[columns]]
//! label = "polite · big"          # what the matrix calls the column
//! prompt = "p2-openai-gpt-4o-2.toml" # a prompt file in the suite's folder
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::EvalError;
use crate::prompt::file::named;

/// A suite: its columns in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub columns: Vec<SuiteColumn>,
    /// Runs per cell (a promptfoo config's `evaluateOptions.repeat`); `eval --repeat` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

/// One column: a prompt file (in the suite's folder) and its label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteColumn {
    pub label: String,
    pub prompt: PathBuf,
}

/// Whether `text` (a `.toml` file) is a suite rather than a prompt file: its first table is
/// `[[columns]]` and no `template` comes before it.
pub fn is_suite(text: &str) -> bool {
    // Its keys (`repeat = 2`) may come before the first table; a prompt file's `template` may not be there.
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    lines.find(|l| l.starts_with('[') || l.starts_with("template")).is_some_and(|first| first == "[[columns]]")
}

/// The runs per cell the suite `text` asks for (`repeat = 2`), if it says.
pub fn repeat_of(text: &str) -> Option<u32> {
    toml::from_str::<Suite>(text).ok().and_then(|suite| suite.repeat).filter(|r| *r >= 1)
}

/// Reads the suite at `path` (its text `text`): each column's prompt file resolved inside its folder.
pub fn read(path: &Path, text: &str) -> Result<Vec<(String, PathBuf)>, EvalError> {
    let suite: Suite = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text.as_bytes()[..span.start.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1);
        let at = line.map_or_else(|| path.display().to_string(), |l| format!("{}:{l}", path.display()));
        EvalError::Input(format!("{at}: not a suite: {}", e.message()))
    })?;
    if suite.columns.is_empty() {
        return Err(EvalError::Input(format!("{}: the suite names no column", path.display())));
    }
    let base_dir = crate::run::setup::base_dir(path);
    suite
        .columns
        .into_iter()
        .map(|column| {
            let prompt = named::resolve(&base_dir, "prompt", &column.prompt, None)
                .map_err(|e| EvalError::Input(format!("{}: {e}", path.display())))?;
            Ok((column.label, prompt))
        })
        .collect()
}

/// The suite's text: a comment saying where it came from, then its columns.
pub fn to_toml(suite: &Suite, comment: &str) -> Result<String, EvalError> {
    let body = toml::to_string(suite).map_err(|e| EvalError::Input(e.to_string()))?;
    Ok(format!("# {comment}\n{body}"))
}

/// What `import promptfoo` writes: a prompt file per column (named by its id), the tests as a
/// dataset every prompt names, and the suite naming the columns.
#[derive(Clone, Debug)]
pub struct Imported {
    pub prompts: Vec<crate::prompt::file::PromptFile>,
    /// The datasets, each a file name and its text: `tests.jsonl` (a row per test: name, vars,
    /// checks, pass_score) that every prompt names, or, when tests run on some providers alone
    /// (`providers:`), one per column (`tests-ID.jsonl`).
    pub datasets: Vec<(String, String)>,
    /// `suite.toml`.
    pub suite: String,
    /// The files the checks name (a `python` assertion's `file://check.py`): each path relative to the
    /// suite's folder, and the file in the config's folder it is copied from.
    pub files: Vec<(PathBuf, PathBuf)>,
    /// The keys written in the config, as `.env` lines for the suite's folder (`NAME=value`), each
    /// prompt or check naming its `NAME` in `key_env`; empty when the config wrote no key.
    pub env: Vec<(String, String)>,
}

/// The dataset's file name, beside the prompt files.
pub const DATASET: &str = "tests.jsonl";
/// The suite's file name.
pub const SUITE: &str = "suite.toml";

/// The files of `config`: the same prompts `eval CONFIG` runs, their cases moved into one dataset.
pub fn import_promptfoo(config: &crate::promptfoo::Config) -> Result<Imported, EvalError> {
    let columns = crate::promptfoo::columns(config.clone());
    let config_dir = crate::run::setup::base_dir(&config.path);
    let mut env = Vec::new();
    let mut files = Vec::new();
    let mut texts = Vec::with_capacity(columns.len());
    for column in &columns {
        let mut cases = column.prompt.cases.clone();
        for check in cases.iter_mut().flat_map(|c| c.checks.iter_mut()) {
            if let Some(key) = check.key.take() {
                check.key_env = Some(keep_key(&mut env, key));
            }
            for file in named_files(check) {
                let copied = (file.clone(), config_dir.join(&file));
                if !files.contains(&copied) {
                    files.push(copied);
                }
            }
        }
        texts.push(dataset_text(&cases)?);
    }
    let shared = texts.windows(2).all(|pair| pair[0] == pair[1]);
    let mut prompts = Vec::with_capacity(columns.len());
    let mut suite =
        Suite { columns: Vec::with_capacity(columns.len()), repeat: (config.repeat > 1).then_some(config.repeat) };
    let mut datasets = Vec::new();
    for (column, text) in columns.into_iter().zip(texts) {
        let mut prompt = column.prompt;
        if let Some(key) = prompt.provider.key.take() {
            prompt.provider.key_env = Some(keep_key(&mut env, key));
        }
        prompt.cases.clear();
        let dataset =
            if shared { DATASET.to_string() } else { format!("tests-{}.jsonl", crate::names::file_name(&prompt.id)) };
        if !datasets.iter().any(|(name, _)| *name == dataset) {
            datasets.push((dataset.clone(), text));
        }
        prompt.cases_file = Some(PathBuf::from(dataset));
        suite.columns.push(SuiteColumn {
            label: column.label,
            prompt: PathBuf::from(format!("{}.toml", crate::names::file_name(&prompt.id))),
        });
        prompts.push(prompt);
    }
    let comment = format!(
        "tunebench suite imported from {}: `tunebench eval {SUITE}` runs its matrix",
        config.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().replace(char::is_control, "?"))
    );
    Ok(Imported { prompts, datasets, suite: to_toml(&suite, &comment)?, files, env })
}

/// The dataset of `cases`: a JSON line per case (`name`, `vars`, `checks`, `pass_score`).
fn dataset_text(cases: &[crate::prompt::file::Case]) -> Result<String, EvalError> {
    let mut dataset = String::new();
    {
        for case in cases {
            let mut row = serde_json::Map::new();
            row.insert("name".into(), case.name.clone().into());
            row.insert("vars".into(), serde_json::Value::Object(case.variables.clone()));
            if !case.checks.is_empty() {
                let checks = serde_json::to_value(&case.checks).map_err(|e| EvalError::Input(e.to_string()))?;
                row.insert("checks".into(), checks);
            }
            if let Some(score) = case.pass_score {
                row.insert("pass_score".into(), score.into());
            }
            dataset.push_str(&serde_json::Value::Object(row).to_string());
            dataset.push('\n');
        }
    }
    Ok(dataset)
}

/// The variable a key written in the config is kept in (`PROMPTFOO_KEY_1`, …; the same key, the same
/// variable), its line added to `env`.
fn keep_key(env: &mut Vec<(String, String)>, key: crate::provider::ApiKey) -> String {
    let value = key.expose().to_string();
    if let Some((name, _)) = env.iter().find(|(_, v)| *v == value) {
        return name.clone();
    }
    let name = format!("PROMPTFOO_KEY_{}", env.len() + 1);
    env.push((name.clone(), value));
    name
}

/// The files a check names: a `python` or `javascript` assertion's code (`file://check.py:fn` gives
/// `check.py`) and its transforms' (`file://transform.js`).
fn named_files(check: &crate::prompt::expect::CheckSpec) -> Vec<PathBuf> {
    let without_function = |file: &str| PathBuf::from(crate::eval::grade::split_function(file).0);
    let code = check.assert.as_ref().is_some_and(|kind| {
        matches!(&kind.what, crate::prompt::expect::AssertWhat::NotEvaluated(n) if n == "python" || n == "javascript")
    });
    let value = check.value.as_ref().and_then(|v| v.as_str()).filter(|_| code);
    let transforms = check.transform.iter().flatten().map(String::as_str);
    value.into_iter().chain(transforms).filter_map(|text| text.strip_prefix("file://")).map(without_function).collect()
}
