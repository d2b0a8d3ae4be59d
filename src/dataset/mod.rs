//! Datasets of cases: a `.jsonl`, `.csv` or `.yaml` file of rows (a prompt's `cases_file`, or `--cases
//! FILE`), each row a case as `[[cases]]` writes one (variables, a name, the expected answer, checks),
//! read one row at a time and checked in full (every row rendered against the template) before
//! anything runs. Every bad row is an error naming the file, the line (the CSV column) and why.
//!
//! An approve or an edit is written back into its row alone ([`write_rows`]).
//!
//! An eval does not hold the rows: [`index`] checks each once and keeps its name, line and byte
//! offset, and a row is read again when its case is wanted ([`DatasetIndex`]).
//!
//! The rows become the prompt's own [`Case`]s, after its inline ones ([`read_into`]), so the eval
//! pipeline, `run --all-cases` and `batch export` do not know where a case came from.

mod csv_rows;
mod index;
mod jsonl;
mod row;
mod write;
mod yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::files::DATASET;
use crate::prompt::file::{named, Case, DatasetCases, PromptFile};
use crate::prompt::template::{self, Part, Template, TemplateError, Variables};

pub use index::{index, DatasetIndex};
pub use row::{Cells, RowAt};
pub use write::{place_rows, save_edits, write_expected, write_rows, RowEdit};

/// The most bytes one row may take (a longer one is bad input, not a reason to hold it all).
pub const ROW_BYTES: usize = 1 << 20;

/// A dataset that cannot be read, or a row in it that is bad: the place (`file`, `file:line`,
/// `file:line:column` or `file:line: column `name``) and why.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {message}")]
pub struct DatasetError {
    pub at: String,
    pub message: String,
}

impl DatasetError {
    fn file(path: &Path, message: impl Into<String>) -> Self {
        Self { at: path.display().to_string(), message: message.into() }
    }
}

/// What a reader hands each row to: its keys or columns as written, how its cells are written, and
/// where it is.
type Take<'a> = dyn FnMut(Map<String, Value>, Cells, RowAt<'_>) -> Result<(), DatasetError> + 'a;

/// What a row made a case is handed to: the case, where it is, and its byte offset where the format
/// reads a row alone from there.
type Placed<'a> = dyn FnMut(Case, RowAt<'_>, Option<u64>) -> Result<(), DatasetError> + 'a;

/// The dataset at `path` opened to stream (a regular file within [`DATASET`]'s cap).
fn open(path: &Path) -> Result<std::fs::File, DatasetError> {
    let (file, metadata) =
        crate::files::open(path, DATASET.kind).map_err(|e| DatasetError::file(path, e.problem.to_string()))?;
    if metadata.len() > DATASET.bytes {
        return Err(DatasetError::file(path, crate::files::Problem::TooLarge(DATASET).to_string()));
    }
    Ok(file)
}

/// How a dataset's rows are written, by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
    Yaml,
}

impl Format {
    /// The format `path`'s extension names; any other extension is an error naming the file.
    pub fn of(path: &Path) -> Result<Format, DatasetError> {
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("jsonl") => Ok(Format::Jsonl),
            Some("csv") => Ok(Format::Csv),
            Some("yaml" | "yml") => Ok(Format::Yaml),
            _ => Err(DatasetError::file(
                path,
                "a dataset of cases is a .jsonl, .csv or .yaml (.yml) file; this extension is none of them",
            )),
        }
    }
}

/// Reads the rows of the dataset at `path` one at a time, each handed to `each` as a case with the
/// line it starts on. Stops at the first bad row (or the first error `each` returns). Row names
/// are checked distinct here (a second row of one name is an error naming both lines).
pub fn read(path: &Path, mut each: impl FnMut(Case, RowAt) -> Result<(), DatasetError>) -> Result<usize, DatasetError> {
    read_placed(path, &mut |case, at, _| each(case, at))
}

/// [`read`], each row handed on with the byte offset it starts at where the format reads a row alone
/// from there (JSONL and CSV; `None` for YAML).
fn read_placed(path: &Path, each: &mut Placed<'_>) -> Result<usize, DatasetError> {
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut rows = 0;
    let mut take = |row: Map<String, Value>, how: Cells, at: RowAt, offset: Option<u64>| -> Result<(), DatasetError> {
        let case = row::case_of(row, how, at)?;
        if let Some(first) = names.insert(case.name.clone(), at.line) {
            return Err(at.error(format!("a second case named {:?} (the first is on line {first})", case.name)));
        }
        rows += 1;
        each(case, at, offset)
    };
    match Format::of(path)? {
        Format::Yaml => read_rows(path, |row, how, at| take(row, how, at, None))?,
        _ => scan(path, 0, 1, &mut |row, how, at, offset| take(row, how, at, Some(offset)).map(|()| true))?,
    }
    if rows == 0 {
        return Err(DatasetError::file(path, "no rows: a dataset holds at least one case"));
    }
    Ok(rows)
}

/// Reads the rows of a JSONL or CSV dataset from byte `offset` (where the row on line `first_line`
/// starts; 0 and 1 for the first), each handed to `take` with its own offset, until the file ends or
/// `take` returns `false`. A YAML file is read whole ([`read_rows`]), never from a row.
fn scan(path: &Path, offset: u64, first_line: usize, take: &mut jsonl::TakeAt<'_>) -> Result<(), DatasetError> {
    match Format::of(path)? {
        Format::Csv => csv_rows::scan(path, offset, first_line, take),
        Format::Jsonl => jsonl::scan(path, offset, first_line, take),
        Format::Yaml => Err(DatasetError::file(path, "a YAML dataset is read whole, not from a row")),
    }
}

/// Reads the rows of the dataset at `path` one at a time as written (keys or columns, not yet made a
/// case), for a reader with rules of its own for a row (promptfoo's tests files). Stops at the first
/// bad row or the first error `each` returns.
pub fn read_rows(
    path: &Path,
    mut each: impl FnMut(Map<String, Value>, Cells, RowAt) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    match Format::of(path)? {
        Format::Jsonl => jsonl::read(path, &mut each),
        Format::Csv => csv_rows::read(path, &mut each),
        Format::Yaml => yaml::read(path, &mut each),
    }
}

/// Where the dataset of `prompt` is: `given` (`--cases FILE`, as the user wrote it) over the prompt's
/// own `cases_file` (checked inside the prompt's folder `base_dir`, as `schema_file` is, and named as
/// the user wrote both: `base_dir` joined with `cases_file`, so its rows' places read `cases.csv:3`,
/// not an absolute path). `None` when it names none.
pub fn path_for(prompt: &PromptFile, base_dir: &Path, given: Option<&Path>) -> Result<Option<PathBuf>, DatasetError> {
    if let Some(given) = given {
        return Ok(Some(given.to_path_buf()));
    }
    let Some(name) = &prompt.cases_file else { return Ok(None) };
    named::resolve(base_dir, "cases_file", name, None)
        .map_err(|e| DatasetError { at: format!("prompt `{}`", prompt.id), message: e.to_string() })?;
    match base_dir == Path::new(".") || base_dir.as_os_str().is_empty() {
        true => Ok(Some(name.clone())),
        false => Ok(Some(base_dir.join(name))),
    }
}

/// Reads the dataset of `prompt` ([`path_for`]) into its cases, after the inline ones, each row
/// checked: a name that is also an inline case's, and a row the template cannot render with
/// (`overrides`, the `--var` values, laid over it as a run lays them) are errors at the row's line.
/// Nothing is added unless every row is good. Returns how many rows were read (0: no dataset).
pub fn read_into(
    prompt: &mut PromptFile,
    prompt_path: &Path,
    base_dir: &Path,
    given: Option<&Path>,
    overrides: &Variables,
) -> Result<usize, DatasetError> {
    let Some(path) = path_for(prompt, base_dir, given)? else { return Ok(0) };
    let mut cases = Vec::new();
    let mut lines = Vec::new();
    read_checked(prompt, prompt_path, &path, overrides, &mut |case, at, _| {
        lines.push(at.line);
        cases.push(case);
        Ok(())
    })?;
    let rows = cases.len();
    let first = prompt.inline_cases().len();
    prompt.cases.truncate(first);
    prompt.cases.extend(cases);
    prompt.dataset = Some(DatasetCases { path, first, lines });
    Ok(rows)
}

/// Reads the dataset at `path` one row at a time, each row checked as [`read_into`] checks it (a name
/// that is also an inline case's, a row the template cannot render with `overrides` over it) and then
/// handed to `each` with its line and byte offset ([`read_placed`]).
fn read_checked(
    prompt: &PromptFile,
    prompt_path: &Path,
    path: &Path,
    overrides: &Variables,
    each: &mut Placed<'_>,
) -> Result<usize, DatasetError> {
    let inline: HashMap<&str, ()> = prompt.inline_cases().iter().map(|c| (c.name.as_str(), ())).collect();
    let renders = Renders::new(prompt)?;
    read_placed(path, &mut |case, at, offset| {
        if inline.contains_key(case.name.as_str()) {
            return Err(at.error(format!(
                "a case named {:?} is also in the [[cases]] of {}; a dataset's names differ from the prompt's",
                case.name,
                prompt_path.display()
            )));
        }
        renders.check(prompt, &case, overrides).map_err(|e| at.error(e))?;
        each(case, at, offset)
    })
}

/// The prompt's texts compiled once, to render every row with before anything runs.
struct Renders {
    system: Option<Template>,
    user: Template,
}

impl Renders {
    fn new(prompt: &PromptFile) -> Result<Self, DatasetError> {
        let bad = |e: TemplateError| DatasetError { at: format!("prompt `{}`", prompt.id), message: e.to_string() };
        let system = prompt.system.as_deref().map(|s| Template::compile(Part::System, s)).transpose().map_err(bad)?;
        Ok(Self { system, user: Template::compile(Part::Template, &prompt.template).map_err(bad)? })
    }

    /// Why `case` cannot be rendered (a variable the template needs and the row does not give, …).
    fn check(&self, prompt: &PromptFile, case: &Case, overrides: &Variables) -> Result<(), String> {
        let vars = template::merge(&[&prompt.terms, &prompt.variables, &case.variables, overrides]);
        let explain = |e: TemplateError| {
            match e {
            TemplateError::Undefined { part, name, line } => format!(
                "the {part} (line {line}) needs the variable `{name}`, which this row does not give (nor the prompt's [variables])"
            ),
            other => other.to_string(),
        }
        };
        if let Some(system) = &self.system {
            system.render(&vars).map_err(explain)?;
        }
        self.user.render(&vars).map_err(explain)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
