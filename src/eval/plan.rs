//! What an eval runs: the cells `case × column × repeat`, where a column is a prompt version (a prompt
//! file, or its json/jsonl twin) on a model, or a promptfoo config's prompt on one of its providers
//! (label `prompt · provider`, the provider's settings its own). Every column is set up through the one run setup
//! ([`RunSetup`]). The plan holds no dataset row: each prompt's dataset is indexed ([`DatasetIndex`]:
//! names, lines, offsets), every row it runs is checked before anything runs (its expectations and its
//! request on every column, then dropped), and a row is read again when its cell's job is made
//! ([`PlannedColumn::case`]), its expectations made then ([`PromptCases::expectations`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use super::model_spec::ModelSpec;
pub use super::plan_cases::PromptCases;
use super::plan_cases::{check_cases, CaseAt};
use super::plan_sources::{Inputs, Source};
use super::score::Expectations;
use super::EvalError;
use crate::compare::{twin_of, twin_type};
use crate::dataset::DatasetIndex;
use crate::output::ResponseType;
use crate::prompt::file::{Case, PromptFile};
use crate::provider::kind::ProviderKind;
use crate::provider::StructuredMode;
use crate::run::plan::RunPlan;
use crate::run::{RunSetup, SetupOptions};

/// A column as an eval record keeps it: a prompt version on a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// What the matrix calls it: the prompt (its id, or its file when two share an id), and the model
    /// when the eval compares several.
    pub label: String,
    /// The prompt's id (a twin's id is derived: `-json` added or taken off).
    pub prompt: String,
    /// The prompt file (for a twin: the file it was derived from).
    pub path: PathBuf,
    pub response_type: ResponseType,
    /// This column is the prompt's derived json/jsonl twin (`--types`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub twin: bool,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The structured-output mode asked for (`None` in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredMode>,
}

impl Column {
    /// Whether `other` is this column in another eval (a baseline, `eval diff`): the same prompt
    /// version (id and response type) on the same model ([`Self::same_model`]).
    pub fn same_as(&self, other: &Column) -> bool {
        self.prompt == other.prompt && self.same_model(other)
    }

    /// Whether `other` runs on the same model as this column: the same response type, provider, model
    /// and structured mode (a record that did not keep its mode matches any).
    pub fn same_model(&self, other: &Column) -> bool {
        let modes = match (self.structured, other.structured) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => true,
        };
        self.response_type == other.response_type
            && self.provider == other.provider
            && self.model == other.model
            && modes
    }

    /// `provider:model`, or the provider alone when it names no model.
    pub fn model_label(&self) -> String {
        if self.model.is_empty() {
            self.provider.clone()
        } else {
            format!("{}:{}", self.provider, self.model)
        }
    }

    /// The model and how its answer is held: `openai:gpt-4o-mini, json-schema` (the model alone when
    /// the record did not keep its mode).
    pub fn model_and_mode(&self) -> String {
        match self.structured {
            Some(mode) => format!("{}, {}", self.model_label(), mode.as_str()),
            None => self.model_label(),
        }
    }
}

/// A prompt file as it was read for the eval: the record keeps its text, so a later diff shows the edit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptText {
    /// Absolute where the file could be found.
    pub path: PathBuf,
    pub id: String,
    pub text: String,
}

/// A column ready to run: its setup (settings, reading, provider) and where its cases are.
#[derive(Clone)]
pub struct PlannedColumn {
    pub column: Column,
    pub setup: RunSetup,
    /// The prompt's cases, shared by the columns of one prompt (its json/jsonl twin, its models).
    pub cases: Arc<PromptCases>,
}

impl PlannedColumn {
    /// Whether this column runs row `row`.
    pub fn has(&self, row: usize) -> bool {
        self.cases.at.get(row).is_some_and(Option::is_some)
    }

    /// Row `row`'s case on this column (`None`: the prompt on its own variables), a dataset row read
    /// again from its file; an error names the row when this column has no such case, or the file.
    pub fn case(&self, row: usize) -> Result<Option<Case>, EvalError> {
        self.cases.case(row)
    }

    /// The request of `case` ([`Self::case`]) on this column.
    pub fn run_plan(&self, case: Option<&Case>) -> Result<RunPlan, crate::run::RunError> {
        match case {
            Some(case) => self.setup.plan_of_case(case),
            None => self.setup.plan(None),
        }
    }
}

/// One cell: a case of a column, one repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub row: usize,
    pub column: usize,
    /// 1-based.
    pub repeat: u32,
}

/// What the front end asks for.
#[derive(Clone, Debug, Default)]
pub struct EvalOptions {
    /// The prompt files, in order.
    pub prompts: Vec<PathBuf>,
    /// Only these cases (by name); empty: every case of each prompt (a prompt without cases: its own
    /// variables, once).
    pub cases: Vec<String>,
    /// `--cases FILE`: a dataset of cases read for every prompt, in place of its own `cases_file`
    /// (each prompt's own is read when this is `None`).
    pub cases_file: Option<PathBuf>,
    /// The models (`--model`, repeatable); empty: the front end's provider and model alone.
    pub models: Vec<ModelSpec>,
    /// Runs per cell (at least 1).
    pub repeat: u32,
    /// `--types`: each prompt in each of these response types (the prompt itself, or its twin).
    pub types: Vec<ResponseType>,
    /// `--structured a,b`: a column per structured mode over the same cases (empty: the setup's one
    /// mode), to see what forcing the schema costs or buys.
    pub structured: Vec<crate::provider::StructuredMode>,
    /// The front end's run options, laid over each prompt (the model spec over those).
    pub setup: SetupOptions,
    /// `--schema-verdict`: a promptfoo config's cells judged by tunebench's rule (an answer that does
    /// not fit its `response_format` schema fails, one cut at the token limit is `truncated`) instead
    /// of promptfoo's (the assertions alone).
    pub schema_verdict: bool,
}

/// The eval to run: the prompts as read, the columns, the rows (cases) and every cell.
#[derive(Clone)]
pub struct EvalPlan {
    pub prompts: Vec<PromptText>,
    /// Each prompt's cases (a promptfoo config's, a suite's: one per column prompt).
    pub sources: Vec<Arc<PromptCases>>,
    pub columns: Vec<PlannedColumn>,
    /// The case of each row (`None`: a prompt's own variables).
    pub rows: Vec<Option<String>>,
    pub repeat: u32,
    /// Row-major: every row's cells, column by column, repeat by repeat.
    pub cells: Vec<Cell>,
    /// What the inputs say is read past (a promptfoo config's ignored keys, each at its `file:line`).
    pub warnings: Vec<String>,
    /// The judge of `judge` checks that name none (`eval --judge`).
    pub judge: Option<crate::eval::grade::JudgeModel>,
    /// The embedder of `similar` checks and fields that name none (`eval --embedder`; over the
    /// prompt's `[eval] embedder`).
    pub embedder: Option<crate::provider::embed::EmbedderModel>,
}

impl EvalPlan {
    /// Reads each prompt file once, derives the twins `--types` asks for, sets up one column per
    /// prompt version × model and finds each case's expectations. Every error is bad input (exit 2)
    /// and names the file, the case or the value.
    /// The plan with `judge` (`--judge MODEL`: `local`, `openai:gpt-4o-mini`) judging the `judge`
    /// checks that name no model; `Err` names the value when it is not a model.
    pub fn with_judge(mut self, judge: Option<&str>) -> Result<Self, EvalError> {
        // None keeps the plan's own default (a promptfoo config's: promptfoo's default grader).
        if let Some(judge) = judge {
            let model = crate::eval::grade::JudgeModel::parse(judge)
                .map_err(|why| EvalError::Input(format!("--judge: {why}")))?;
            self.judge = Some(model);
        }
        Ok(self)
    }

    /// The plan with `embedder` (`--embedder MODEL`: `openai:text-embedding-3-small`,
    /// `ollama:nomic-embed-text`) for the `similar` checks and fields that name none, over the
    /// prompts' `[eval] embedder`; `Err` names the value when it is not an embedding model.
    pub fn with_embedder(mut self, embedder: Option<&str>) -> Result<Self, EvalError> {
        self.embedder = embedder
            .map(crate::provider::embed::EmbedderModel::parse)
            .transpose()
            .map_err(|why| EvalError::Input(format!("--embedder: {why}")))?;
        Ok(self)
    }

    pub fn new(options: &EvalOptions) -> Result<Self, EvalError> {
        if options.prompts.is_empty() {
            return Err(EvalError::Input("no prompt file: give one or more PROMPT.toml".into()));
        }
        let Inputs { prompts, sources, warnings, repeat } = super::plan_sources::read(options)?;
        let names: Vec<Vec<&str>> = sources.iter().map(Source::names).collect();
        let rows = rows_of(&names, &options.cases)?;
        drop(names);
        let row_of: std::collections::HashMap<Option<&str>, usize> =
            rows.iter().enumerate().map(|(i, row)| (row.as_deref(), i)).collect();
        let models: Vec<Option<&ModelSpec>> =
            if options.models.is_empty() { vec![None] } else { options.models.iter().map(Some).collect() };
        let shared_ids =
            sources.iter().enumerate().any(|(i, p)| sources[..i].iter().any(|q| q.prompt.id == p.prompt.id));
        // A promptfoo config's column, or one imported from it (its `[eval] verdicts` set), has
        // promptfoo's default grader.
        let promptfoo_config = sources.iter().any(|s| s.prompt.eval.verdicts.is_some());
        let mut columns = Vec::new();
        let mut planned = Vec::new();
        for (index, source) in sources.into_iter().enumerate() {
            let (prompt, path) = (source.prompt, &source.path);
            let base_dir = crate::run::setup::base_dir(path);
            let mut at = vec![None; rows.len()];
            let mut place = |name: Option<&str>, case: CaseAt| {
                if let Some(slot) = row_of.get(&name).and_then(|&row| at.get_mut(row)) {
                    *slot = Some(case);
                }
            };
            for (i, case) in prompt.cases.iter().enumerate() {
                place(Some(&case.name), CaseAt::Inline(i));
            }
            for (i, name) in source.dataset.iter().flat_map(DatasetIndex::names).enumerate() {
                place(Some(name), CaseAt::Dataset(i));
            }
            if prompt.cases.is_empty() && source.dataset.is_none() {
                place(None, CaseAt::Own);
            }
            // The columns' prompts hold no cases: a column runs `cases`' (a config's 20,000 tests held
            // once, not once more per column).
            let bare = prompt.without_cases();
            let mut cases = PromptCases { source: index, prompt, base_dir, dataset: source.dataset, at, graded: false };
            let prompt = &bare;
            let base_dir = &cases.base_dir;
            let mut made = Vec::new();
            let modes: Vec<Option<crate::provider::StructuredMode>> = match options.structured.as_slice() {
                [] => vec![None],
                modes => modes.iter().copied().map(Some).collect(),
            };
            for version in versions(prompt, path, base_dir, &options.types)? {
                for model in &models {
                    for mode in &modes {
                        let name = match &source.label {
                            Some(label) => label.clone(),
                            None if shared_ids => path.display().to_string(),
                            None => prompt.id.clone(),
                        };
                        let mut setup = options.setup.clone();
                        if let Some(mode) = mode {
                            setup.target.structured = Some(*mode);
                        }
                        let (mut column, setup) =
                            column_for(&version, path, *model, &setup, &name, options.models.len() > 1)?;
                        if let (Some(mode), true) = (mode, modes.len() > 1) {
                            column.label = format!("{} · {mode}", column.label);
                        }
                        made.push((column, setup));
                    }
                }
            }
            cases.graded = check_cases(&cases, &made)?;
            let cases = Arc::new(cases);
            columns.extend(made.into_iter().map(|(column, setup)| PlannedColumn {
                column,
                setup,
                cases: Arc::clone(&cases),
            }));
            planned.push(cases);
        }
        drop(row_of);
        let mut cells = Vec::new();
        for row in 0..rows.len() {
            for (index, column) in columns.iter().enumerate() {
                if column.has(row) {
                    cells.extend((1..=repeat).map(|repeat| Cell { row, column: index, repeat }));
                }
            }
        }
        // A promptfoo config's `llm-rubric` with no grader named is graded by promptfoo's default
        // grader, as promptfoo grades it (`--judge` names another).
        let judge = promptfoo_config
            .then(|| crate::eval::grade::JudgeModel::parse(crate::promptfoo::DEFAULT_GRADER).ok())
            .flatten();
        Ok(Self { prompts, sources: planned, columns, rows, repeat, cells, warnings, judge, embedder: None })
    }

    /// Each case's expectations on each prompt whose cases are graded ([`PromptCases::graded`]), with
    /// the first of its columns (a dataset read once more, row by row): where the judges are found.
    pub fn each_graded(
        &self,
        mut each: impl FnMut(&PlannedColumn, &Expectations) -> Result<(), String>,
    ) -> Result<(), String> {
        for cases in self.sources.iter().filter(|c| c.graded) {
            let Some(column) = self.columns.iter().find(|c| Arc::ptr_eq(&c.cases, cases)) else { continue };
            let resolver = cases.resolver().map_err(|e| e.to_string())?;
            let mut failed = None;
            let walked = cases.each_case(|case| {
                let expectations = cases.expectations(&resolver, case)?;
                each(column, &expectations).map_err(|why| {
                    failed = Some(why);
                    EvalError::Input(String::new())
                })
            });
            if let Some(why) = failed {
                return Err(why);
            }
            walked.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The columns as the record keeps them.
    pub fn columns(&self) -> Vec<Column> {
        self.columns.iter().map(|c| c.column.clone()).collect()
    }

    /// How many cells run at once, for every front end: `asked` (`--concurrency`), else the least of
    /// the columns' providers' own (a server on this machine runs one at a time); at least 1.
    pub fn concurrency(&self, asked: Option<usize>) -> usize {
        asked.unwrap_or_else(|| self.columns.iter().map(|c| c.setup.concurrency().runs).min().unwrap_or(1)).max(1)
    }

    /// The baseline `which` names for this plan (`last`: the newest eval of the same prompt files that
    /// shares a column with it, prompt × model × structured mode; else an id or a file), from the evals
    /// folder `dir` (`None`: the data directory's). The CLI's `--baseline` and the eval screen both ask here.
    pub fn baseline(&self, which: &str, dir: Option<&Path>) -> Result<super::record::EvalRecord, EvalError> {
        let set = super::record::prompt_set(self.prompts.iter().map(|p| p.path.as_path()));
        match dir {
            Some(dir) => super::store::baseline_in(dir, which, &set, &self.columns()),
            None => super::store::baseline(which, &set, &self.columns()),
        }
    }

    /// The files whose change should re-run the eval (`--watch`): each prompt file, its schema file,
    /// its dataset (`cases_file`) and the expected files its cases name.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for prompt in &self.prompts {
            files.push(prompt.path.clone());
            let base_dir = crate::run::setup::base_dir(&prompt.path);
            if let Ok(value) = toml::from_str::<toml::Value>(&prompt.text) {
                collect_files(&value, &base_dir, &mut files);
            }
        }
        let mut seen = HashSet::new();
        files.retain(|file| seen.insert(file.clone()));
        files
    }
}

/// String values under `schema_file`, `cases_file` or `expected_file` keys anywhere in a prompt file, resolved
/// against its directory.
fn collect_files(value: &toml::Value, base_dir: &Path, files: &mut Vec<PathBuf>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                match value {
                    toml::Value::String(file)
                        if matches!(key.as_str(), "schema_file" | "expected_file" | "cases_file") =>
                    {
                        files.push(base_dir.join(file));
                    }
                    other => collect_files(other, base_dir, files),
                }
            }
        }
        toml::Value::Array(values) => values.iter().for_each(|v| collect_files(v, base_dir, files)),
        _ => {}
    }
}

/// The rows: every case of the prompts (each prompt's case names in order) in order of first
/// appearance (only the named ones with `--case`); a prompt without cases adds the row of its own
/// variables.
fn rows_of(prompts: &[Vec<&str>], wanted: &[String]) -> Result<Vec<Option<String>>, EvalError> {
    let mut rows: Vec<Option<String>> = Vec::new();
    let mut seen: HashSet<Option<&str>> = HashSet::new();
    let asked: HashSet<&str> = wanted.iter().map(String::as_str).collect();
    for names in prompts {
        if names.is_empty() {
            if wanted.is_empty() && seen.insert(None) {
                rows.push(None);
            }
            continue;
        }
        for &name in names {
            if (wanted.is_empty() || asked.contains(name)) && seen.insert(Some(name)) {
                rows.push(Some(name.to_string()));
            }
        }
    }
    for name in wanted {
        if !seen.contains(&Some(name.as_str())) {
            let known: Vec<&str> = prompts.iter().flatten().copied().collect();
            let known = if known.is_empty() { "they have no cases".to_string() } else { known.join(", ") };
            return Err(EvalError::Input(format!("--case {name:?}: no prompt has a case of that name ({known})")));
        }
    }
    if rows.is_empty() {
        return Err(EvalError::Input("nothing to run: no prompt has a case to run".into()));
    }
    Ok(rows)
}

/// The prompt versions of one file: itself, or with `--types` the prompt in each type (its twin
/// where the type differs).
fn versions(
    prompt: &PromptFile,
    path: &Path,
    base_dir: &Path,
    types: &[ResponseType],
) -> Result<Vec<(PromptFile, bool)>, EvalError> {
    if types.is_empty() {
        return Ok(vec![(prompt.clone(), false)]);
    }
    let mut versions = Vec::new();
    for &to in types {
        if to == prompt.response_type {
            versions.push((prompt.clone(), false));
            continue;
        }
        if twin_type(prompt.response_type) != Some(to) {
            return Err(EvalError::Input(format!(
                "--types: {} is a {} prompt: it has no {} twin (twins turn json into jsonl and back)",
                path.display(),
                type_name(prompt.response_type),
                type_name(to)
            )));
        }
        let twin = twin_of(prompt, base_dir, to)
            .map_err(|e| EvalError::Input(format!("--types: deriving the twin of {}: {e}", path.display())))?;
        versions.push((twin.prompt, true));
    }
    Ok(versions)
}

/// The column of `version` (read from `path`) on `model`, set up with the front end's options.
fn column_for(
    version: &(PromptFile, bool),
    path: &Path,
    model: Option<&ModelSpec>,
    options: &SetupOptions,
    name: &str,
    several_models: bool,
) -> Result<(Column, RunSetup), EvalError> {
    let (prompt, twin) = version;
    let mut prompt = prompt.clone();
    let mut options = options.clone();
    if let Some(spec) = model {
        match spec.provider {
            Some(kind) => {
                let file = prompt.provider.name.as_deref().and_then(ProviderKind::parse);
                // Another provider than the one the flags or the file set up: their URL is not its own.
                if options.target.provider.is_some_and(|f| f != kind) {
                    options.target.base_url = None;
                }
                if file != Some(kind) {
                    prompt.provider.base_url = None;
                }
                options.target.provider = Some(kind);
                options.target.model = Some(spec.model.clone().unwrap_or_default());
            }
            None => options.target.model = spec.model.clone(),
        }
    }
    let setup = RunSetup::new(prompt, path, options).map_err(|e| {
        // An error that names the prompt file already is not named twice.
        let (file, message) = (path.display().to_string(), format!("{e:#}"));
        EvalError::Input(if message.starts_with(&file) { message } else { format!("{file}: {message}") })
    })?;
    let settings = &setup.settings;
    let mut column = Column {
        label: String::new(),
        prompt: setup.prompt.id.clone(),
        path: path.to_path_buf(),
        response_type: setup.prompt.response_type,
        twin: *twin,
        provider: settings.provider.name().to_string(),
        model: settings.model.clone(),
        base_url: settings.base_url.clone(),
        structured: Some(settings.structured),
    };
    let mut label = if *twin { format!("{name} ({})", type_name(column.response_type)) } else { name.to_string() };
    if several_models {
        label = format!("{label} · {}", column.model_label());
    }
    column.label = label;
    Ok((column, setup))
}

/// `text`, `json` or `jsonl`.
pub fn type_name(response_type: ResponseType) -> &'static str {
    match response_type {
        ResponseType::Text => "text",
        ResponseType::Json => "json",
        ResponseType::Jsonl => "jsonl",
    }
}
