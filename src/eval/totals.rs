//! Figures over cells: per column (pass rate, mean F1, valid items, tokens, time, truncations) and per
//! row × column over its repeats (k of N passes, pass^N, flaky).

use serde::{Deserialize, Serialize};

use super::record::{CellRecord, EvalRecord};
use super::score::Verdict;

/// One column's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ColumnTotals {
    pub column: usize,
    pub cells: usize,
    pub passed: usize,
    pub failed: usize,
    pub truncated: usize,
    pub errors: usize,
    /// passed / cells (0 when there are none).
    pub pass_rate: f64,
    /// Over the cells scored against an expected answer (`None`: no cell was).
    pub mean_f1: Option<f64>,
    /// Items the answers handed on, summed.
    pub valid_items: usize,
    /// Answers that passed validation (well-formed, valid against the schema).
    pub valid_answers: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The cells' run times, summed.
    pub duration_ms: u64,
    /// Answers cut off by the token limit (whatever their verdict).
    pub truncations: usize,
    /// With repeats: cases that passed some runs and failed others.
    pub flaky: usize,
    /// With repeats: the mean over cases of pass^N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_all: Option<f64>,
    /// Answers served from the response cache.
    #[serde(default)]
    pub cached: usize,
    /// The constraint tax, with `passed` (right): answers that came but were not valid (malformed,
    /// against the schema, cut off), and valid answers that did not pass (valid but wrong). With the
    /// cells that got no answer (`errors`), these add up to `cells`.
    #[serde(default)]
    pub invalid: usize,
    #[serde(default)]
    pub valid_wrong: usize,
}

/// A row × column over its repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellGroup {
    pub row: usize,
    pub column: usize,
    pub runs: u32,
    pub passes: u32,
    /// The worst verdict of its runs ([`Verdict::worst`]).
    pub verdict: Verdict,
    /// The mean F1 of its runs (`None`: no expected items).
    pub f1: Option<f64>,
    /// The mean field accuracy of its runs when the expected answer is one value (a single object,
    /// which has no F1): the figure its verdict was decided by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<f64>,
    /// passes / runs, raised to the power runs: the chance that N fresh runs all pass at the
    /// observed rate (τ-bench's pass^k with k = N).
    pub pass_all: f64,
    /// Some runs passed and some did not.
    pub flaky: bool,
}

impl CellGroup {
    /// `k/N` with repeats, else the verdict's name.
    pub fn passes_text(&self) -> String {
        format!("{}/{}", self.passes, self.runs)
    }

    /// passes / runs (0 with no run).
    pub fn pass_rate(&self) -> f64 {
        f64::from(self.passes) / f64::from(self.runs.max(1))
    }
}

/// The groups of `record`: one per row × column that has cells, in the order of first cell.
pub fn groups(record: &EvalRecord) -> Vec<CellGroup> {
    let mut order: Vec<(usize, usize)> = Vec::new();
    let mut by: std::collections::HashMap<(usize, usize), Vec<&CellRecord>> = std::collections::HashMap::new();
    for cell in &record.cells {
        let key = (cell.row, cell.column);
        by.entry(key)
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(cell);
    }
    order.into_iter().filter_map(|key| by.get(&key).map(|cells| group_of(key, cells))).collect()
}

fn group_of((row, column): (usize, usize), cells: &[&CellRecord]) -> CellGroup {
    let runs = cells.len() as u32;
    let passes = cells.iter().filter(|c| c.score.verdict == Verdict::Pass).count() as u32;
    let f1s: Vec<f64> = cells.iter().filter_map(|c| c.score.f1()).collect();
    let one_value = |c: &&&CellRecord| c.score.items.as_ref().filter(|s| s.one_value).map(|s| s.field_accuracy);
    let fields: Vec<f64> = cells.iter().filter_map(|c| one_value(&c)).collect();
    let rate = f64::from(passes) / f64::from(runs.max(1));
    CellGroup {
        row,
        column,
        runs,
        passes,
        verdict: Verdict::worst(cells.iter().map(|c| c.score.verdict)).unwrap_or(Verdict::Error),
        f1: mean(&f1s),
        fields: mean(&fields),
        pass_all: rate.powi(runs as i32),
        flaky: passes > 0 && passes < runs,
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The totals of each column of `record`.
pub fn column_totals(record: &EvalRecord) -> Vec<ColumnTotals> {
    let groups = groups(record);
    (0..record.columns.len())
        .map(|column| {
            let cells: Vec<&CellRecord> = record.cells.iter().filter(|c| c.column == column).collect();
            let count = |verdict| cells.iter().filter(|c| c.score.verdict == verdict).count();
            let f1s: Vec<f64> = cells.iter().filter_map(|c| c.score.f1()).collect();
            let mine: Vec<&CellGroup> = groups.iter().filter(|g| g.column == column).collect();
            let pass_all = (record.repeat > 1 && !mine.is_empty())
                .then(|| mine.iter().map(|g| g.pass_all).sum::<f64>() / mine.len() as f64);
            ColumnTotals {
                column,
                cells: cells.len(),
                passed: count(Verdict::Pass),
                failed: count(Verdict::Fail),
                truncated: count(Verdict::Truncated),
                errors: count(Verdict::Error),
                pass_rate: if cells.is_empty() { 0.0 } else { count(Verdict::Pass) as f64 / cells.len() as f64 },
                mean_f1: mean(&f1s),
                valid_items: cells.iter().map(|c| c.run.items).sum(),
                valid_answers: cells.iter().filter(|c| c.run.valid).count(),
                tokens_in: cells.iter().map(|c| c.run.tokens_in).sum(),
                tokens_out: cells.iter().map(|c| c.run.tokens_out).sum(),
                duration_ms: cells.iter().map(|c| c.run.duration_ms).sum(),
                truncations: cells.iter().filter(|c| c.run.truncated).count(),
                flaky: mine.iter().filter(|g| g.flaky).count(),
                pass_all,
                cached: cells.iter().filter(|c| c.run.cached).count(),
                invalid: cells.iter().filter(|c| c.score.verdict != Verdict::Error && !c.run.valid).count(),
                valid_wrong: cells
                    .iter()
                    .filter(|c| c.run.valid && !matches!(c.score.verdict, Verdict::Pass | Verdict::Error))
                    .count(),
            }
        })
        .collect()
}
