//! A dataset indexed for an eval: every row read and checked once, as [`super::read_into`] checks it,
//! then only its name, line and byte offset kept; a row is read again, alone, when its case is wanted
//! ([`DatasetIndex::case`]), so a 20,000-row eval does not hold 20,000 cases. A JSONL or CSV file is
//! read at the row's offset (a CSV's columns from its header line); a YAML file is read whole, so its
//! cases are held.

use std::path::{Path, PathBuf};

use super::row::{self, RowAt};
use super::{path_for, read_checked, scan, DatasetError};
use crate::prompt::file::{Case, PromptFile};
use crate::prompt::template::Variables;

/// A dataset's rows, checked: each one's name and where it is.
#[derive(Clone, Debug)]
pub struct DatasetIndex {
    pub path: PathBuf,
    rows: Vec<IndexedRow>,
    /// The cases of a file read whole (YAML), in order; empty for JSONL and CSV (read at each offset).
    held: Vec<Case>,
}

/// One row: its case's name, the line it starts on and its byte offset.
#[derive(Clone, Debug)]
struct IndexedRow {
    name: String,
    line: usize,
    offset: u64,
}

/// `prompt`'s dataset ([`path_for`]: `given`, else its `cases_file`) indexed, every row checked as
/// [`super::read_into`] checks it (`overrides`: the `--var` values); `None` when it names none.
pub fn index(
    prompt: &PromptFile,
    prompt_path: &Path,
    base_dir: &Path,
    given: Option<&Path>,
    overrides: &Variables,
) -> Result<Option<DatasetIndex>, DatasetError> {
    let Some(path) = path_for(prompt, base_dir, given)? else { return Ok(None) };
    let mut rows = Vec::new();
    let mut held = Vec::new();
    read_checked(prompt, prompt_path, &path, overrides, &mut |case, at, offset| {
        rows.push(IndexedRow { name: case.name.clone(), line: at.line, offset: offset.unwrap_or(0) });
        if offset.is_none() {
            held.push(case);
        }
        Ok(())
    })?;
    rows.shrink_to_fit();
    Ok(Some(DatasetIndex { path, rows, held }))
}

impl DatasetIndex {
    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it has no row (never, once read: a dataset holds at least one).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows' case names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|r| r.name.as_str())
    }

    /// How many cases are held in memory (a YAML file's; 0 for JSONL and CSV, read row by row).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Row `index`'s case, read again from its place in the file; an error names the file and line,
    /// and says so when the row is not the one checked (the file changed since).
    pub fn case(&self, index: usize) -> Result<Case, DatasetError> {
        let Some(row) = self.rows.get(index) else {
            return Err(DatasetError::file(&self.path, format!("no row {} (it has {})", index + 1, self.rows.len())));
        };
        if let Some(case) = self.held.get(index) {
            return Ok(case.clone());
        }
        let mut found = None;
        scan(&self.path, row.offset, row.line, &mut |fields, how, at, _| {
            found = Some(row::case_of(fields, how, at)?);
            Ok(false)
        })
        .map_err(|e| self.unread(row, e))?;
        match found {
            Some(case) if case.name == row.name => Ok(case),
            _ => Err(self.changed(row)),
        }
    }

    /// Row `row` could not be read again (`e`): said at the row's own line.
    fn unread(&self, row: &IndexedRow, e: DatasetError) -> DatasetError {
        let at = format!("{}:{}", self.path.display(), row.line);
        let message = match e.at == at {
            true => e.message,
            false => format!("{}: {}", e.at, e.message),
        };
        DatasetError { at, message: format!("the row of case {:?} could not be read again: {message}", row.name) }
    }

    /// Each row's case in order (the file read once more from its start), handed to `each` with its
    /// index; stops at the first error (`each`'s own, or the file's).
    pub fn each<E: From<DatasetError>>(&self, mut each: impl FnMut(usize, Case) -> Result<(), E>) -> Result<(), E> {
        if !self.held.is_empty() {
            return self.held.iter().enumerate().try_for_each(|(index, case)| each(index, case.clone()));
        }
        let mut index = 0;
        let mut stopped = None;
        let read = scan(&self.path, 0, 1, &mut |fields, how, at, _| {
            let case = row::case_of(fields, how, at)?;
            match self.rows.get(index) {
                Some(row) if row.name == case.name => {}
                Some(row) => return Err(self.changed(row)),
                None => return Err(self.changed_at(at)),
            }
            if let Err(error) = each(index, case) {
                stopped = Some(error);
                return Ok(false);
            }
            index += 1;
            Ok(true)
        });
        if let Some(error) = stopped {
            return Err(error);
        }
        read?;
        match self.rows.get(index) {
            Some(row) => Err(self.changed(row).into()),
            None => Ok(()),
        }
    }

    fn changed(&self, row: &IndexedRow) -> DatasetError {
        DatasetError {
            at: format!("{}:{}", self.path.display(), row.line),
            message: format!(
                "the row of case {:?} could not be read again: it is not there any more (the file changed during the eval)",
                row.name
            ),
        }
    }

    fn changed_at(&self, at: RowAt) -> DatasetError {
        at.error("a row that was not there when the eval began: the file changed during the eval")
    }
}
