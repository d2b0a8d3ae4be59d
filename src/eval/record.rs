//! The eval record: what an eval ran (the prompt files' text, the columns, the rows) and every cell
//! with its score and its run in brief, plus the totals per column. Written one file per eval in
//! the data directory ([`super::store`]) and read back typed, so it can be a baseline later.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::{Column, PromptText};
use super::score::{CaseScore, Verdict};
use super::totals::{CellGroup, ColumnTotals};
use crate::provider::FinishReason;
use crate::run::RunRecord;

/// The record format's version (a later build reads older ones; a newer one is named as such).
pub const FORMAT: u32 = 1;

/// One eval, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRecord {
    /// The record format (see [`FORMAT`]).
    pub eval: u32,
    /// `YYYYMMDD-HHMMSS-mmmxx` (UTC and milliseconds; `xx` tells apart evals of the same millisecond).
    pub id: String,
    /// When the eval started and how long it took, in milliseconds.
    pub started_at_ms: u64,
    pub duration_ms: u64,
    /// The prompt files as they were run.
    pub prompts: Vec<PromptText>,
    pub columns: Vec<Column>,
    /// Each row's case (`null`: a prompt's own variables).
    pub rows: Vec<Option<String>>,
    /// Runs per cell.
    pub repeat: u32,
    /// Every cell scored, row by row.
    pub cells: Vec<CellRecord>,
    /// Per column: pass rate, mean F1, items, tokens, time, truncations.
    pub totals: Vec<ColumnTotals>,
    /// Per row × column over its repeats (k of N passes, pass^N, flaky).
    pub groups: Vec<CellGroup>,
    /// A signal stopped the eval: cells not run are `error` with the reason.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// The batch tag, when the cells are a provider batch's imported answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// Against a baseline (`--baseline`): each cell's and column's change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<super::diff::Delta>,
}

/// One cell: a case of a column, one repeat, scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub row: usize,
    pub column: usize,
    /// 1-based.
    pub repeat: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub score: CaseScore,
    pub run: RunBrief,
}

/// A cell's run in brief: how to find it in the history, and the figures the totals add up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunBrief {
    /// With the prompt and case, finds the run in the history (`tunebench history --json`).
    pub started_at_ms: u64,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub turns: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// The answer was well-formed and valid against the schema (the run's own `ok`).
    pub valid: bool,
    /// Items the answer handed on (jsonl: valid lines; json: an array's elements, else 1).
    pub items: usize,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// The cell never ran (a signal stopped the eval before it began, or its case could not be read
    /// again): its `error` verdict says why, and it is no answer of the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_run: bool,
    /// The answer came from the response cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The `custom_id` of the batch request it was imported from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The sampling seed the run was sent (`run --seed` with it reproduces the cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's one-line summary (`RunRecord::summary_line`).
    pub summary: String,
    /// The answer as the model gave it (the last turn's text; empty when none came): what the HTML
    /// report shows and sweeps (empty in records written before it was kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub answer: String,
    /// The case's input variables its request was rendered with (the case's own, `--var` over them;
    /// not the prompt's `[variables]`), each value cut to [`VARIABLE_CHARS`] characters: what the
    /// HTML report shows of each case.
    #[serde(default, skip_serializing_if = "crate::prompt::template::Variables::is_empty")]
    pub variables: crate::prompt::template::Variables,
}

/// How much of each variable's value a record keeps ([`RunBrief::variables`]).
pub const VARIABLE_CHARS: usize = 2_000;

impl RunBrief {
    /// The brief of `record`.
    pub fn of(record: &RunRecord) -> Self {
        let (tokens_in, tokens_out) = record
            .turns
            .iter()
            .filter_map(|t| t.usage)
            .fold((0, 0), |(i, o), u| (i + u.input_tokens, o + u.output_tokens));
        let last = record.turns.last();
        Self {
            started_at_ms: record.started_at_ms,
            duration_ms: record.duration_ms,
            ttft_ms: record.turns.first().and_then(|t| t.ttft_ms),
            tokens_in,
            tokens_out,
            turns: record.turns.len() as u32,
            finish_reason: last.and_then(|t| t.finish_reason.clone()),
            valid: record.ok,
            items: match &record.result {
                Value::Array(items) => items.len(),
                Value::Null => 0,
                _ => 1,
            },
            truncated: record.truncated,
            cancelled: record.cancelled,
            not_run: record.never_started(),
            // Cached when every turn was answered from the response cache.
            cached: !record.turns.is_empty() && record.turns.iter().all(|t| t.cached),
            batch: record.batch.clone(),
            seed: record.seed,
            error: record.error.clone(),
            summary: record.summary_line(),
            answer: last.map(|t| t.output.clone()).unwrap_or_default(),
            variables: kept(&record.variables),
        }
    }

    /// The brief with the case's variables under the record's `--var` values.
    pub fn with_case(mut self, case: Option<&crate::prompt::file::Case>) -> Self {
        if let Some(case) = case {
            let mut variables = kept(&case.variables);
            variables.extend(std::mem::take(&mut self.variables));
            self.variables = variables;
        }
        self
    }
}

impl EvalRecord {
    /// The label of column `index` (`?` when the record is inconsistent).
    pub fn column_label(&self, index: usize) -> &str {
        self.columns.get(index).map_or("?", |c| c.label.as_str())
    }

    /// The name of row `index`: its case, or `(default)` for a prompt's own variables.
    pub fn row_name(&self, index: usize) -> &str {
        match self.rows.get(index) {
            Some(Some(case)) => case,
            Some(None) => "(default)",
            None => "?",
        }
    }

    /// Whether every cell passed.
    pub fn all_passed(&self) -> bool {
        !self.cells.is_empty() && self.cells.iter().all(|c| c.score.verdict == Verdict::Pass)
    }

    /// Whether no cell got an answer at all (every one `error`, none for a check it could not
    /// judge) and some cell asked: the provider could not be reached (a cell that never asked, its
    /// dataset row gone, says nothing of the provider).
    pub fn unreachable(&self) -> bool {
        !self.cells.is_empty()
            && self.cells.iter().any(|c| c.run.turns > 0)
            && self
                .cells
                .iter()
                .all(|c| c.score.verdict == Verdict::Error && !c.score.checks.iter().any(|k| k.not_evaluated))
    }

    /// The checks no cell could judge (a promptfoo assertion that needs code or another model), each
    /// once per case: the case, the check (its type) and where it is written. Their cells are `error`.
    pub fn not_evaluated(&self) -> Vec<NotEvaluated> {
        let mut listed: Vec<NotEvaluated> = Vec::new();
        for cell in &self.cells {
            for check in cell.score.checks.iter().filter(|k| k.not_evaluated) {
                let found = NotEvaluated {
                    case: self.row_name(cell.row).to_string(),
                    check: check.check.clone(),
                    at: check.at.clone(),
                };
                if !listed.contains(&found) {
                    listed.push(found);
                }
            }
        }
        listed
    }

    /// The prompt files as a set: `--baseline last` finds the last eval of the same set.
    pub fn prompt_set(&self) -> Vec<String> {
        prompt_set(self.prompts.iter().map(|p| p.path.as_path()))
    }

    /// Recomputes the totals and groups from the cells (after the cells changed).
    pub fn sum_up(&mut self) {
        self.totals = super::totals::column_totals(self);
        self.groups = super::totals::groups(self);
    }
}

/// A check of a case that could not be judged ([`EvalRecord::not_evaluated`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotEvaluated {
    pub case: String,
    /// The check as written: `assert llm-rubric`.
    pub check: String,
    pub at: String,
}

/// Prompt paths as a set: sorted, without repeats (the plan keeps them absolute).
pub fn prompt_set<'a>(paths: impl Iterator<Item = &'a std::path::Path>) -> Vec<String> {
    let mut set: Vec<String> = paths.map(|p| p.display().to_string()).collect();
    set.sort();
    set.dedup();
    set
}

/// `variables` with each text cut to [`VARIABLE_CHARS`] characters (another value to its JSON text, cut).
fn kept(variables: &crate::prompt::template::Variables) -> crate::prompt::template::Variables {
    let cut = |text: &str| super::values::cut(text, VARIABLE_CHARS);
    variables
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(text) => Value::String(cut(text)),
                other => {
                    let text = other.to_string();
                    if text.chars().count() > VARIABLE_CHARS {
                        Value::String(cut(&text))
                    } else {
                        other.clone()
                    }
                }
            };
            (name.clone(), value)
        })
        .collect()
}
