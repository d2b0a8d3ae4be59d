//! One cell scored: a run record against its case's expectations (expected items or value, checks,
//! the prompt's pass thresholds). The verdict, item scores, field differences and check results are
//! computed here and nowhere else; the CLI and the workbench only show them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A cell's verdict, best first (a baseline delta compares them in this order: pass > truncated > fail > error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Over paired items: the share of compared fields that agree (1.0 when nothing is compared).
    pub field_accuracy: f64,
    /// What pairs answer items with expected ones, as the report says it (e.g. "/type + /entity").
    pub key: String,
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
    Field { key: String, field: String, expected: Value, got: Value },
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check as written, e.g. `regex /entity`, and where: `prompt.toml:41`.
    pub check: String,
    pub at: String,
    pub passed: bool,
    /// When it failed: the path, what was expected and what came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
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
    /// Why the verdict is what it is, in one line (e.g. "F1 0.57 < pass_f1 1.0; 1 check failed").
    pub reason: String,
}

impl CaseScore {
    /// F1 when there is an expected answer.
    pub fn f1(&self) -> Option<f64> {
        self.items.as_ref().map(|s| s.f1)
    }
}

/// What one case of a prompt expects: the expected items or value (read from the file or
/// `expected_file`), the checks (the prompt's and the case's), and the pass thresholds. Built once per
/// case by [`Expectations::for_case`]; scoring a cell is then [`score_record`].
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    // Filled in by the scoring work (issue 20): expected items / value, pairing key, checks, thresholds.
}

impl Expectations {
    /// The expectations of `case` (`None`: the prompt run on its own variables, which has only the
    /// prompt-level checks). `base_dir` resolves `expected_file`. Errors name the file and line.
    pub fn for_case(
        prompt: &crate::prompt::file::PromptFile,
        base_dir: &std::path::Path,
        case: Option<&str>,
    ) -> Result<Expectations, crate::prompt::file::PromptError> {
        let _ = (prompt, base_dir, case);
        Ok(Expectations::default())
    }

    /// Whether there is anything to score against (expected items or value, or a check).
    pub fn is_empty(&self) -> bool {
        true
    }
}

/// A run record scored against its case's expectations.
pub fn score_record(expectations: &Expectations, record: &crate::run::RunRecord) -> CaseScore {
    let _ = expectations;
    let verdict = if record.turns.iter().all(|t| t.output.is_empty()) && record.error.is_some() {
        Verdict::Error
    } else if record.truncated {
        Verdict::Truncated
    } else if record.ok {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    CaseScore {
        verdict,
        items: None,
        differences: Vec::new(),
        checks: Vec::new(),
        recovered: Vec::new(),
        reason: String::from("placeholder until the scoring lands"),
    }
}
