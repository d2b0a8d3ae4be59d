//! Two evals compared: the baseline delta (each row × column improved, regressed or the same: by pass
//! rate, then verdict order, then F1; per column the figures before and after), and `eval diff A B`
//! (case by case, check by check, field by field, with the prompts' edits).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::record::{CellRecord, EvalRecord};
use super::score::{CheckResult, Difference, Verdict};
use super::totals::CellGroup;
use super::values::Comparison;

/// How a row × column changed against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Improved,
    Regressed,
    Same,
    /// Not in the baseline.
    New,
    /// In the baseline only.
    Gone,
}

/// A row × column's figures on one side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub verdict: Verdict,
    pub passes: u32,
    pub runs: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
}

impl From<&CellGroup> for Side {
    fn from(group: &CellGroup) -> Self {
        Self { verdict: group.verdict, passes: group.passes, runs: group.runs, f1: group.f1 }
    }
}

/// One row × column against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellDelta {
    /// The case (`None`: a prompt's own variables).
    pub case: Option<String>,
    /// The column's label in the newer eval (the baseline's for a column that is gone).
    pub column: String,
    pub change: Change,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Side>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Side>,
}

/// One column against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnDelta {
    pub column: String,
    pub pass_rate_before: Option<f64>,
    pub pass_rate_after: Option<f64>,
    pub mean_f1_before: Option<f64>,
    pub mean_f1_after: Option<f64>,
    pub improved: usize,
    pub regressed: usize,
    pub same: usize,
}

/// An eval against its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// The baseline's id.
    pub baseline: String,
    pub cells: Vec<CellDelta>,
    pub columns: Vec<ColumnDelta>,
    pub improved: usize,
    pub regressed: usize,
}

/// Which column of `baseline` each column of `current` is: the same prompt, type, provider and model;
/// failing that, when each eval has one column, that one (a prompt whose id changed).
fn column_pairs(baseline: &EvalRecord, current: &EvalRecord) -> Vec<(Option<usize>, Option<usize>)> {
    let mut pairs = Vec::new();
    let single = baseline.columns.len() == 1 && current.columns.len() == 1;
    let mut matched = vec![false; baseline.columns.len()];
    for (index, column) in current.columns.iter().enumerate() {
        let found = baseline.columns.iter().position(|b| b.key() == column.key()).or(single.then_some(0));
        if let Some(b) = found {
            matched[b] = true;
        }
        pairs.push((found, Some(index)));
    }
    for (index, seen) in matched.iter().enumerate() {
        if !seen {
            pairs.push((Some(index), None));
        }
    }
    pairs
}

/// How `after` compares with `before`: pass rate, then worst verdict, then F1 (a change of F1 below
/// 1e-9 is none).
pub fn change_of(before: &CellGroup, after: &CellGroup) -> Change {
    let (b, a) = (before.rank(), after.rank());
    let order = (a.0 - b.0)
        .abs()
        .gt(&1e-9)
        .then(|| a.0.total_cmp(&b.0))
        .or_else(|| (a.1 != b.1).then(|| a.1.cmp(&b.1)))
        .or_else(|| ((a.2 - b.2).abs() > 1e-9).then(|| a.2.total_cmp(&b.2)));
    match order {
        Some(std::cmp::Ordering::Greater) => Change::Improved,
        Some(std::cmp::Ordering::Less) => Change::Regressed,
        _ => Change::Same,
    }
}

/// `current` against `baseline`, row × column by row × column (rows matched by case).
pub fn delta(baseline: &EvalRecord, current: &EvalRecord) -> Delta {
    let mut cells = Vec::new();
    let mut columns = Vec::new();
    for (before_column, after_column) in column_pairs(baseline, current) {
        let label = match (before_column, after_column) {
            (_, Some(a)) => current.column_label(a).to_string(),
            (Some(b), None) => baseline.column_label(b).to_string(),
            (None, None) => continue,
        };
        let groups_of = |record: &EvalRecord, column: Option<usize>| -> Vec<(Option<String>, CellGroup)> {
            record
                .groups
                .iter()
                .filter(|g| Some(g.column) == column)
                .map(|g| (record.rows.get(g.row).cloned().flatten(), g.clone()))
                .collect()
        };
        let before = groups_of(baseline, before_column);
        let after = groups_of(current, after_column);
        // Each case's group on each side (the first, should a record repeat a row).
        let by_case = |groups: &[(Option<String>, CellGroup)]| {
            let mut map: HashMap<Option<String>, CellGroup> = HashMap::with_capacity(groups.len());
            for (case, group) in groups {
                map.entry(case.clone()).or_insert_with(|| group.clone());
            }
            map
        };
        let (before_by_case, after_by_case) = (by_case(&before), by_case(&after));
        let mut counts = (0, 0, 0);
        let mut cases: Vec<Option<String>> = after.iter().map(|(c, _)| c.clone()).collect();
        cases.extend(before.iter().map(|(c, _)| c.clone()).filter(|c| !after_by_case.contains_key(c)));
        for case in cases {
            let b = before_by_case.get(&case);
            let a = after_by_case.get(&case);
            let change = match (b, a) {
                (Some(b), Some(a)) => change_of(b, a),
                (None, _) => Change::New,
                (_, None) => Change::Gone,
            };
            match change {
                Change::Improved => counts.0 += 1,
                Change::Regressed => counts.1 += 1,
                Change::Same => counts.2 += 1,
                _ => {}
            }
            cells.push(CellDelta {
                case,
                column: label.clone(),
                change,
                before: b.map(Side::from),
                after: a.map(Side::from),
            });
        }
        let figures = |record: &EvalRecord, column: Option<usize>| {
            column.and_then(|c| record.totals.iter().find(|t| t.column == c)).map(|t| (t.pass_rate, t.mean_f1))
        };
        let (b, a) = (figures(baseline, before_column), figures(current, after_column));
        columns.push(ColumnDelta {
            column: label,
            pass_rate_before: b.map(|f| f.0),
            pass_rate_after: a.map(|f| f.0),
            mean_f1_before: b.and_then(|f| f.1),
            mean_f1_after: a.and_then(|f| f.1),
            improved: counts.0,
            regressed: counts.1,
            same: counts.2,
        });
    }
    let improved = cells.iter().filter(|c| c.change == Change::Improved).count();
    let regressed = cells.iter().filter(|c| c.change == Change::Regressed).count();
    Delta { baseline: baseline.id.clone(), cells, columns, improved, regressed }
}

/// A check whose result differs between the two evals (or that only one ran).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckChange {
    pub check: String,
    pub at: String,
    pub before: Option<bool>,
    pub after: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One row × column in `eval diff A B`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseDiff {
    #[serde(flatten)]
    pub delta: CellDelta,
    /// The reasons given on each side (first repeat).
    pub reason_before: Option<String>,
    pub reason_after: Option<String>,
    pub checks: Vec<CheckChange>,
    /// Differences from the expected answer that B no longer has (fixed) and that B has anew.
    pub fixed: Vec<Difference>,
    pub introduced: Vec<Difference>,
}

/// A prompt file's edit between the two evals, as a unified diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptEdit {
    pub prompt: String,
    pub diff: String,
}

/// `eval diff A B`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalDiff {
    pub a: String,
    pub b: String,
    pub prompts: Vec<PromptEdit>,
    pub columns: Vec<ColumnDelta>,
    pub cases: Vec<CaseDiff>,
    pub improved: usize,
    pub regressed: usize,
}

/// A record's cells found by column and case: each column's first cell of each case (its first
/// repeat), and each column label's first column.
struct Cells<'a> {
    record: &'a EvalRecord,
    labels: HashMap<&'a str, usize>,
    first: HashMap<(usize, Option<&'a str>), &'a CellRecord>,
}

impl<'a> Cells<'a> {
    fn new(record: &'a EvalRecord) -> Self {
        let mut labels = HashMap::with_capacity(record.columns.len());
        for (index, column) in record.columns.iter().enumerate() {
            labels.entry(column.label.as_str()).or_insert(index);
        }
        let mut first = HashMap::with_capacity(record.cells.len());
        for cell in &record.cells {
            first.entry((cell.column, cell.case.as_deref())).or_insert(cell);
        }
        Self { record, labels, first }
    }

    fn column(&self, label: &str) -> Option<usize> {
        self.labels.get(label).copied()
    }

    fn first_cell(&self, label: &str, case: &Option<String>) -> Option<&'a CellRecord> {
        let column = self.column(label)?;
        self.first.get(&(column, case.as_deref())).copied()
    }
}

/// A compared with B: every row × column that changed, with its checks and field differences.
pub fn diff(a: &EvalRecord, b: &EvalRecord) -> EvalDiff {
    let delta = delta(a, b);
    let (a_cells, b_cells) = (Cells::new(a), Cells::new(b));
    // Each B column's baseline column, through the column pairing.
    let paired: HashMap<usize, Option<usize>> =
        column_pairs(a, b).into_iter().filter_map(|(before, after)| Some((after?, before))).collect();
    let mut cases = Vec::new();
    for cell in &delta.cells {
        // The baseline side's column may carry another label: find it through the column pairing.
        let b_index = b_cells.column(&cell.column);
        let a_index =
            b_index.and_then(|index| paired.get(&index).copied().flatten()).or_else(|| a_cells.column(&cell.column));
        let before = a_index.and_then(|i| a_cells.first_cell(a_cells.record.column_label(i), &cell.case));
        let after = b_cells.first_cell(&cell.column, &cell.case);
        let no_checks: &[CheckResult] = &[];
        let no_differences: &[Difference] = &[];
        let checks_before = before.map_or(no_checks, |c| c.score.checks.as_slice());
        let checks_after = after.map_or(no_checks, |c| c.score.checks.as_slice());
        let diffs_before = before.map_or(no_differences, |c| c.score.differences.as_slice());
        let diffs_after = after.map_or(no_differences, |c| c.score.differences.as_slice());
        let checks = check_changes(checks_before, checks_after);
        let fixed = not_in(diffs_before, diffs_after);
        let introduced = not_in(diffs_after, diffs_before);
        if cell.change == Change::Same && checks.is_empty() && fixed.is_empty() && introduced.is_empty() {
            continue;
        }
        cases.push(CaseDiff {
            delta: cell.clone(),
            reason_before: before.map(|c| c.score.reason.clone()),
            reason_after: after.map(|c| c.score.reason.clone()),
            checks,
            fixed,
            introduced,
        });
    }
    EvalDiff {
        a: a.id.clone(),
        b: b.id.clone(),
        prompts: prompt_edits(a, b),
        columns: delta.columns,
        cases,
        improved: delta.improved,
        regressed: delta.regressed,
    }
}

/// The differences of `these` that `others` does not have (in order).
fn not_in(these: &[Difference], others: &[Difference]) -> Vec<Difference> {
    // Bucketed by a text that equal differences share; equality itself decides within a bucket.
    let mut buckets: HashMap<String, Vec<&Difference>> = HashMap::with_capacity(others.len());
    for difference in others {
        buckets.entry(bucket_of(difference)).or_default().push(difference);
    }
    these
        .iter()
        .filter(|d| !buckets.get(&bucket_of(d)).is_some_and(|bucket| bucket.iter().any(|other| *other == *d)))
        .cloned()
        .collect()
}

/// What a difference is, as a text equal differences share (numbers by value, members sorted).
fn bucket_of(difference: &Difference) -> String {
    let exact = Comparison { exact: true, tolerance: 0.0 };
    match difference {
        Difference::Missing { key, expected } => format!("missing\u{1f}{key}\u{1f}{}", exact.key_text(&[expected])),
        Difference::Extra { key, got } => format!("extra\u{1f}{key}\u{1f}{}", exact.key_text(&[got])),
        Difference::Field { key, field, expected, got } => {
            format!("field\u{1f}{key}\u{1f}{field}\u{1f}{}", exact.key_text(&[expected, got]))
        }
    }
}

/// Each check's first result, by what it is and where.
fn checks_by_name(checks: &[CheckResult]) -> HashMap<(&str, &str), &CheckResult> {
    let mut map = HashMap::with_capacity(checks.len());
    for check in checks {
        map.entry((check.check.as_str(), check.at.as_str())).or_insert(check);
    }
    map
}

/// Checks (by what they are and where) whose result differs, or that one side did not run.
fn check_changes(before: &[CheckResult], after: &[CheckResult]) -> Vec<CheckChange> {
    let (before_index, after_index) = (checks_by_name(before), checks_by_name(after));
    let mut changes = Vec::new();
    for check in after {
        let old = before_index.get(&(check.check.as_str(), check.at.as_str()));
        if old.map(|o| o.passed) != Some(check.passed) {
            changes.push(CheckChange {
                check: check.check.clone(),
                at: check.at.clone(),
                before: old.map(|o| o.passed),
                after: Some(check.passed),
                message: check.message.clone(),
            });
        }
    }
    for check in before {
        if !after_index.contains_key(&(check.check.as_str(), check.at.as_str())) {
            changes.push(CheckChange {
                check: check.check.clone(),
                at: check.at.clone(),
                before: Some(check.passed),
                after: None,
                message: check.message.clone(),
            });
        }
    }
    changes
}

/// The prompt files' edits between the evals: prompts matched by id, then by file.
fn prompt_edits(a: &EvalRecord, b: &EvalRecord) -> Vec<PromptEdit> {
    let mut edits = Vec::new();
    let single = a.prompts.len() == 1 && b.prompts.len() == 1;
    for after in &b.prompts {
        let before = a
            .prompts
            .iter()
            .find(|p| p.id == after.id)
            .or_else(|| a.prompts.iter().find(|p| p.path == after.path))
            .or_else(|| if single { a.prompts.first() } else { None });
        let Some(before) = before else { continue };
        if before.text == after.text {
            continue;
        }
        let diff = similar::TextDiff::from_lines(&before.text, &after.text)
            .unified_diff()
            .context_radius(2)
            .header(&format!("A {}", before.path.display()), &format!("B {}", after.path.display()))
            .to_string();
        edits.push(PromptEdit { prompt: after.id.clone(), diff });
    }
    edits
}
