//! One prompt's cases as an eval plan reaches them ([`PromptCases`]): its inline cases, its dataset
//! indexed, and where each row's case is; every case checked before anything runs ([`check_cases`]).

use std::path::PathBuf;

use super::plan::Column;
use super::score::Expectations;
use super::EvalError;
use crate::dataset::DatasetIndex;
use crate::prompt::expect::resolve::Resolver;
use crate::prompt::file::{Case, PromptFile};
use crate::run::RunSetup;

/// One prompt's cases as the plan reaches them, shared by its columns: the prompt as read (its inline
/// cases; expectations are resolved against it, so a twin is scored on the same expected items) and
/// its dataset indexed, each row read again when its cell runs.
#[derive(Clone, Debug)]
pub struct PromptCases {
    /// Its place in [`EvalPlan::sources`].
    pub source: usize,
    pub prompt: PromptFile,
    /// The prompt's folder: it resolves `schema_file` and `expected_file`.
    pub base_dir: PathBuf,
    pub dataset: Option<DatasetIndex>,
    /// Per row of the plan: where this prompt's case of it is (`None`: it has no such case).
    pub(super) at: Vec<Option<CaseAt>>,
    /// Whether a case's checks or fields are graded by a program or a model (`judge`, `similar`, …).
    pub graded: bool,
}

/// Where a prompt's case of a row is.
#[derive(Clone, Copy, Debug)]
pub(super) enum CaseAt {
    /// The prompt on its own variables (it has no cases).
    Own,
    /// `prompt.cases[i]`.
    Inline(usize),
    /// The dataset's row `i`.
    Dataset(usize),
}

impl PromptCases {
    /// Row `row`'s case (`None`: the prompt's own variables), a dataset row read from its file.
    pub fn case(&self, row: usize) -> Result<Option<Case>, EvalError> {
        let missing = || EvalError::Input(format!("prompt `{}` has no case of row {row}", self.prompt.id));
        match self.at.get(row).copied().flatten().ok_or_else(missing)? {
            CaseAt::Own => Ok(None),
            CaseAt::Inline(i) => self.prompt.cases.get(i).cloned().map(Some).ok_or_else(missing),
            CaseAt::Dataset(i) => match &self.dataset {
                Some(dataset) => dataset.case(i).map(Some).map_err(|e| EvalError::Input(e.to_string())),
                None => Err(missing()),
            },
        }
    }

    /// The expectations of `case` ([`Self::case`]) by `resolver` (this prompt's, its schema compiled
    /// once: [`Self::resolver`]).
    pub fn expectations(&self, resolver: &Resolver<'_>, case: Option<&Case>) -> Result<Expectations, EvalError> {
        Expectations::given(resolver, &self.prompt, &self.base_dir, case).map_err(|e| EvalError::Input(e.to_string()))
    }

    /// The resolver of this prompt's expectations (its schema compiled).
    pub fn resolver(&self) -> Result<Resolver<'_>, EvalError> {
        Resolver::new(&self.prompt, &self.base_dir).map_err(|e| EvalError::Input(e.to_string()))
    }

    /// Every case this prompt runs, in the plan's row order for inline ones and the file's for a
    /// dataset (read once more, row by row, nothing kept), handed to `each`.
    pub fn each_case(&self, mut each: impl FnMut(Option<&Case>) -> Result<(), EvalError>) -> Result<(), EvalError> {
        let mut wanted = vec![false; self.dataset.as_ref().map_or(0, DatasetIndex::len)];
        for at in self.at.iter().flatten() {
            match *at {
                CaseAt::Own => each(None)?,
                CaseAt::Inline(i) => each(self.prompt.cases.get(i))?,
                CaseAt::Dataset(i) => {
                    if let Some(slot) = wanted.get_mut(i) {
                        *slot = true;
                    }
                }
            }
        }
        match &self.dataset {
            Some(dataset) if wanted.contains(&true) => dataset.each(|i, case| match wanted.get(i) {
                Some(true) => each(Some(&case)),
                _ => Ok::<(), EvalError>(()),
            }),
            _ => Ok(()),
        }
    }
}

/// Checks every case `cases` runs before anything runs: its expectations (read, validated against the
/// schema) and its request on each of the prompt's columns `made` (rendered); nothing is kept. Returns
/// whether a case's checks or fields are graded.
pub(super) fn check_cases(cases: &PromptCases, made: &[(Column, RunSetup)]) -> Result<bool, EvalError> {
    if made.is_empty() || cases.at.iter().all(Option::is_none) {
        return Ok(false);
    }
    let resolver = cases.resolver()?;
    let mut graded = false;
    cases.each_case(|case| {
        let expectations = cases.expectations(&resolver, case)?;
        graded |= super::graded::any(&expectations);
        for (column, setup) in made {
            let plan = match case {
                Some(case) => setup.plan_of_case(case),
                None => setup.plan(None),
            };
            plan.map_err(|e| EvalError::Input(format!("column {}: {e}", column.label)))?;
        }
        Ok(())
    })?;
    Ok(graded)
}
