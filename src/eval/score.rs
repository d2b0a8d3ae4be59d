//! One cell scored: a run record against its case's expectations (expected items or value, checks,
//! the prompt's pass thresholds). The verdict, item scores, field differences and check results are
//! computed here and nowhere else; the CLI and the workbench only show them.
//!
//! How: the answer is the record's result (a jsonl answer's items; a json answer's value, its items
//! being an array's elements or PtcRunner's `{"items": [...]}`; a text answer's text), paired and
//! scored against the expected items (`pairing`), checked (`checks`), and given a verdict
//! (`verdict`): `error` when there is no answer at all, `truncated` when it hit the token limit (with
//! what json-repair and jsonl recover and how that scores), `pass` when every check passes, F1 ≥
//! `pass_f1`, field accuracy ≥ `pass_fields` and the answer is valid, else `fail`.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::checks::Prepared;
use super::values::Comparison;
use super::verdict;
use crate::prompt::expect::resolve::{ExpectedAnswer, PairKey, Resolved, Resolver};
use crate::prompt::expect::EvalSettings;
use crate::prompt::file::{PromptError, PromptFile};
use crate::schema::Check;

/// A cell's verdict. Their order is partial and written down once, in `verdict.rs` (`PartialOrd`):
/// pass above fail and truncated, both above error; fail and truncated beside each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No answer at all: the provider could not be reached, an HTTP error, a timeout. Never a `fail`.
    Error,
    /// Checks or thresholds not met.
    Fail,
    /// The answer hit the token limit (its own verdict; `recovered` says what a cut keeps).
    Truncated,
    /// Every check passes, F1 >= pass_f1 and field accuracy >= pass_fields.
    Pass,
}

/// Item scores against expected items (or an expected value, one item).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemScores {
    /// Items in the answer, expected items, and the pairs matched on the key.
    pub answer_items: usize,
    pub expected_items: usize,
    pub paired: usize,
    /// Of `paired`, the pairs made by key similarity (`[eval] match_similarity`); each counts its
    /// similarity, not 1, in precision and recall.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fuzzy: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Over paired items: the mean score of compared fields (1 each that agrees; a comparator's
    /// partial credit below its threshold), 1.0 when nothing is compared.
    pub field_accuracy: f64,
    /// What pairs answer items with expected ones, as the report says it (e.g. "/type + /entity").
    pub key: String,
    /// The expected answer is one value (a single object), scored as one item: its F1 says only
    /// whether it paired, so no F1 is shown for it ([`CaseScore::f1`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_value: bool,
}

/// One disagreement between the answer and the expectation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// An expected item no answer item paired with.
    Missing { key: String, expected: Value },
    /// An answer item no expected item paired with.
    Extra { key: String, got: Value },
    /// A paired item whose field differs (`field` is a JSON Pointer inside the item).
    Field {
        key: String,
        field: String,
        expected: Value,
        got: Value,
        /// The partial credit the field still scored (a comparator's similarity below its threshold).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        score: Option<f64>,
        /// What the comparator says beyond expected and got (`similarity 0.82 < 0.90`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// An expected item paired with an answer item whose key is only alike (`[eval] match_similarity`):
    /// `key` the expected item's, `got_key` the answer's, `similarity` how alike (0 to 1).
    Fuzzy { key: String, got_key: String, similarity: f64 },
    /// A paired item `[eval.items]`' judge did not pass: `key` the expected item's, `got_key` the
    /// answer's, `score` its credit (0 to 1), `note` the judge's score and reason (`judge 0.40: …`).
    Item { key: String, got_key: String, score: f64, note: String },
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check as written, e.g. `regex /entity`, and where: `prompt.toml:41`.
    pub check: String,
    /// What the check is, wherever it is written (`CheckSpec::identity`): `eval diff` pairs results
    /// by it, so a check moved in its file is the same check (empty in older records).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    pub at: String,
    pub passed: bool,
    /// When it failed: the path, what was expected and what came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// An `assert` check's weight in its case's score (promptfoo's `weight`; none: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// It could not be judged (a promptfoo assertion that needs code or a model): the cell is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_evaluated: bool,
    /// A graded check's (`command`, `judge`, promptfoo's `python`/`llm-rubric`) score and, for a
    /// judge, its request, answer and usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graded: Option<Box<crate::eval::grade::GradeDetail>>,
}

/// What a cut answer would have kept, and how that part scores (a `truncated` cell).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    /// `json-repair` or `jsonl`.
    pub strategy: String,
    pub items: usize,
    pub scores: Option<ItemScores>,
}

/// A cell scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseScore {
    pub verdict: Verdict,
    /// Against expected items / value; `None` when the case has no expected answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemScores>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<Difference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// For a truncated answer: what json-repair and jsonl recover, and how it scores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovered: Vec<Recovered>,
    /// The judges of its graded fields (`compare = "judge"`): each pair's request, answer and usage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_judges: Vec<crate::eval::grade::FieldJudge>,
    /// Why the verdict is what it is, in one line (e.g. "F1 0.57 < pass_f1 1.0; 1 check failed").
    pub reason: String,
}

impl CaseScore {
    /// F1 when there are expected items (`None`: no expected answer, or one value: an F1 of one
    /// item paired says nothing, and a 0/8 eval must not read "mean F1 1.00").
    pub fn f1(&self) -> Option<f64> {
        self.items.as_ref().filter(|s| !s.one_value).map(|s| s.f1)
    }
}

/// What one case of a prompt expects: the expected items or value (read from the file or
/// `expected_file`), the checks (the prompt's and the case's), and the pass thresholds. Built once per
/// case by [`Expectations::for_case`] (or [`Expectations::for_cases`], the schema compiled once);
/// scoring a cell is then [`score_record`].
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    /// The case (`None`: the prompt on its own variables).
    pub case: Option<String>,
    /// The expected answer, validated against the schema; `None`: only checks.
    pub expected: Option<ExpectedAnswer>,
    /// How answer items pair with expected items (`ItemScores::key` says it).
    pub key: PairKey,
    /// The prompt's `[eval]` settings (thresholds, fields, tolerance, exact).
    pub settings: EvalSettings,
    /// The prompt's checks, then the case's, ready to run.
    pub checks: Vec<Prepared>,
    /// How many of `checks` are the prompt's (`[[checks]]`); the rest are the case's.
    pub prompt_checks: usize,
    /// The weighted score of the `assert` checks that passes the case (its `pass_score`); `None`:
    /// each must pass.
    pub pass_score: Option<f64>,
    /// The fields whose comparator is graded (`similar`, `judge`, `command`), by pointer, ready to run.
    pub field_graders: std::collections::BTreeMap<String, super::grade::FieldGrader>,
    /// The prompt's `[eval] embedder`: `similar` checks and fields that name none use it (unless the
    /// eval's `--embedder` is given).
    pub embedder: Option<crate::provider::embed::EmbedderModel>,
    /// What one item is checked against: a truncated answer's recovered items are those that pass.
    item_check: ItemCheck,
}

/// The item check, shown in `Debug` by whether there is one.
#[derive(Clone, Default)]
struct ItemCheck(Option<Arc<dyn Check>>);

impl std::fmt::Debug for ItemCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(item check)" } else { "None" })
    }
}

impl Expectations {
    /// The expectations of `case` (`None`: the prompt run on its own variables, which has only the
    /// prompt-level checks). `base_dir` resolves `expected_file`. Errors name the file and line.
    pub fn for_case(prompt: &PromptFile, base_dir: &Path, case: Option<&str>) -> Result<Expectations, PromptError> {
        Expectations::from_resolved(Resolver::new(prompt, base_dir)?.case(case)?, &prompt.id, base_dir)
    }

    /// The expectations of each of `cases`, the prompt's schema compiled once.
    pub fn for_cases(
        prompt: &PromptFile,
        base_dir: &Path,
        cases: &[Option<&str>],
    ) -> Result<Vec<Expectations>, PromptError> {
        let resolver = Resolver::new(prompt, base_dir)?;
        cases.iter().map(|case| Expectations::from_resolved(resolver.case(*case)?, &prompt.id, base_dir)).collect()
    }

    /// The expectations of `case` (a case the prompt need not hold: a dataset row read when its cell
    /// runs; `None`: the prompt on its own variables), by `resolver` (the prompt's schema compiled once).
    pub fn given(
        resolver: &Resolver<'_>,
        prompt: &PromptFile,
        base_dir: &Path,
        case: Option<&crate::prompt::file::Case>,
    ) -> Result<Expectations, PromptError> {
        Expectations::from_resolved(resolver.given(case)?, &prompt.id, base_dir)
    }

    fn from_resolved(resolved: Resolved, id: &str, base_dir: &Path) -> Result<Expectations, PromptError> {
        let checks = resolved
            .checks
            .into_iter()
            .map(|spec| {
                let place = spec.at.0.clone();
                Prepared::in_folder(spec, base_dir).map_err(|message| match place {
                    Some(place) => {
                        PromptError::Invalid { path: place.path, line: place.line, column: place.column, message }
                    }
                    None => PromptError::Expectation { id: id.to_string(), message },
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let invalid = |at: crate::prompt::expect::At, message: String| match at.0 {
            Some(place) => PromptError::Invalid { path: place.path, line: place.line, column: place.column, message },
            None => PromptError::Expectation { id: id.to_string(), message },
        };
        let field_graders = super::grade::fields::prepare(&resolved.settings, base_dir)
            .map_err(|(at, message)| invalid(at, message))?;
        let settings = &resolved.settings;
        let embedder = settings
            .embedder
            .as_deref()
            .map(crate::provider::embed::EmbedderModel::parse)
            .transpose()
            .map_err(|why| invalid(settings.embedder_at.clone(), format!("`[eval] embedder`: {why}")))?;
        Ok(Expectations {
            case: resolved.case,
            expected: resolved.expected,
            key: resolved.key,
            settings: resolved.settings,
            checks,
            prompt_checks: resolved.prompt_checks,
            pass_score: resolved.pass_score,
            field_graders,
            embedder,
            item_check: ItemCheck(resolved.item_check),
        })
    }

    /// Whether there is anything to score against (expected items or value, or a check).
    pub fn is_empty(&self) -> bool {
        self.expected.is_none() && self.checks.is_empty()
    }

    /// What one item is checked against (from the prompt's schema).
    pub fn item_check(&self) -> Option<Arc<dyn Check>> {
        self.item_check.0.clone()
    }

    /// How strings and numbers are compared.
    pub fn comparison(&self) -> Comparison {
        Comparison { exact: self.settings.exact(), tolerance: self.settings.tolerance() }
    }
}

impl CaseScore {
    /// An `error` cell's score: no answer to judge, and why.
    pub fn error(reason: String) -> CaseScore {
        CaseScore {
            verdict: Verdict::Error,
            items: None,
            differences: Vec::new(),
            checks: Vec::new(),
            recovered: Vec::new(),
            field_judges: Vec::new(),
            reason,
        }
    }
}

/// A run record scored against its case's expectations (see the module's docs and EVAL.md,
/// "Scoring a cell").
pub fn score_record(expectations: &Expectations, record: &crate::run::RunRecord) -> CaseScore {
    verdict::score(expectations, record, &super::grade::Grades::default())
}

/// [`score_record`] with the graded checks' results (`command`, `judge`: [`super::grade::grade_cell`]).
pub fn score_graded(
    expectations: &Expectations,
    record: &crate::run::RunRecord,
    grades: &super::grade::Grades,
) -> CaseScore {
    verdict::score(expectations, record, grades)
}

#[cfg(test)]
mod tests;
