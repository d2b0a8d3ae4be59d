//! Two evals compared: the baseline delta (each row × column improved, regressed, changed or the
//! same: by pass rate, then the verdict order of `verdict.rs`, then F1; per column the figures before
//! and after), and `eval diff A B` (case by case, check by check, field by field, with the prompts'
//! edits).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::plan::Column;
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
    /// The verdict changed to one beside it in the verdict order (fail ↔ truncated): neither better
    /// nor worse.
    Changed,
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
    /// The model and structured mode on each side (`openai:gpt-4o-mini, json-schema`; `None`: the
    /// column is not on that side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_after: Option<String>,
    pub pass_rate_before: Option<f64>,
    pub pass_rate_after: Option<f64>,
    pub mean_f1_before: Option<f64>,
    pub mean_f1_after: Option<f64>,
    pub improved: usize,
    pub regressed: usize,
    /// Verdicts that moved beside themselves (fail ↔ truncated): neither improved nor regressed.
    #[serde(default)]
    pub changed: usize,
    pub same: usize,
}

impl ColumnDelta {
    /// The column's model on each side, as the CLI and the eval screen say it: `local, constrained`,
    /// `A → B` when an older record matched it in another mode, or which side has no such column.
    pub fn models(&self) -> String {
        match (&self.model_before, &self.model_after) {
            (Some(before), Some(after)) if before == after => after.clone(),
            (Some(before), Some(after)) => format!("{before} → {after}"),
            (None, Some(after)) => format!("{after}; new: no such column in the baseline"),
            (Some(before), None) => format!("{before}; gone: no such column now"),
            (None, None) => String::new(),
        }
    }
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
    #[serde(default)]
    pub changed: usize,
}

/// Which column of `baseline` each column of `current` is (`None` on a side: no counterpart, shown
/// as new or gone): the same prompt version on the same model and structured mode
/// ([`super::plan::Column::same_as`]); failing that, when each eval has one column on the same model
/// and mode, that one (a prompt whose id changed). A column on another model is never a counterpart.
pub fn column_pairs(baseline: &EvalRecord, current: &EvalRecord) -> Vec<(Option<usize>, Option<usize>)> {
    let mut pairs = Vec::new();
    let mut matched = vec![false; baseline.columns.len()];
    for index in 0..current.columns.len() {
        let found = counterpart(&baseline.columns, &current.columns, index);
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

/// The column of `baseline` that is column `index` of `current` (see [`column_pairs`]).
pub fn counterpart(baseline: &[Column], current: &[Column], index: usize) -> Option<usize> {
    let column = current.get(index)?;
    baseline.iter().position(|b| b.same_as(column)).or_else(|| {
        let single = baseline.len() == 1 && current.len() == 1;
        baseline.first().filter(|b| single && b.same_model(column)).map(|_| 0)
    })
}

/// How `after` compares with `before`: pass rate, then the worst verdict in the verdict order (two
/// verdicts beside each other, fail and truncated, are `Changed`), then F1 (a change of F1 below 1e-9
/// is none).
pub fn change_of(before: &CellGroup, after: &CellGroup) -> Change {
    use std::cmp::Ordering;
    let (b, a) = (before.pass_rate(), after.pass_rate());
    let order = if (a - b).abs() > 1e-9 {
        Some(a.total_cmp(&b))
    } else if after.verdict != before.verdict {
        match after.verdict.partial_cmp(&before.verdict) {
            None => return Change::Changed,
            order => order,
        }
    } else {
        let (b, a) = (before.f1.unwrap_or(0.0), after.f1.unwrap_or(0.0));
        ((a - b).abs() > 1e-9).then(|| a.total_cmp(&b))
    };
    match order {
        Some(Ordering::Greater) => Change::Improved,
        Some(Ordering::Less) => Change::Regressed,
        _ => Change::Same,
    }
}

/// One pair of columns compared: their indices on each side, its cells and its figures.
struct Paired {
    before: Option<usize>,
    after: Option<usize>,
    cells: Vec<CellDelta>,
    column: ColumnDelta,
}

/// Every pair of columns ([`column_pairs`]) compared row by row (rows matched by case).
fn paired(baseline: &EvalRecord, current: &EvalRecord) -> Vec<Paired> {
    let mut out = Vec::new();
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
        let mut cases: Vec<Option<String>> = after.iter().map(|(c, _)| c.clone()).collect();
        cases.extend(before.iter().map(|(c, _)| c.clone()).filter(|c| !after_by_case.contains_key(c)));
        let mut cells = Vec::new();
        for case in cases {
            let b = before_by_case.get(&case);
            let a = after_by_case.get(&case);
            let change = match (b, a) {
                (Some(b), Some(a)) => change_of(b, a),
                (None, _) => Change::New,
                (_, None) => Change::Gone,
            };
            cells.push(CellDelta {
                case,
                column: label.clone(),
                change,
                before: b.map(Side::from),
                after: a.map(Side::from),
            });
        }
        let count = |change: Change| cells.iter().filter(|c| c.change == change).count();
        let figures = |record: &EvalRecord, column: Option<usize>| {
            column.and_then(|c| record.totals.iter().find(|t| t.column == c)).map(|t| (t.pass_rate, t.mean_f1))
        };
        let model = |record: &EvalRecord, column: Option<usize>| {
            column.and_then(|c| record.columns.get(c)).map(Column::model_and_mode)
        };
        let (b, a) = (figures(baseline, before_column), figures(current, after_column));
        let column = ColumnDelta {
            column: label,
            model_before: model(baseline, before_column),
            model_after: model(current, after_column),
            pass_rate_before: b.map(|f| f.0),
            pass_rate_after: a.map(|f| f.0),
            mean_f1_before: b.and_then(|f| f.1),
            mean_f1_after: a.and_then(|f| f.1),
            improved: count(Change::Improved),
            regressed: count(Change::Regressed),
            changed: count(Change::Changed),
            same: count(Change::Same),
        };
        out.push(Paired { before: before_column, after: after_column, cells, column });
    }
    out
}

/// `current` against `baseline`, row × column by row × column (columns paired by [`column_pairs`],
/// rows matched by case).
pub fn delta(baseline: &EvalRecord, current: &EvalRecord) -> Delta {
    let paired = paired(baseline, current);
    let cells: Vec<CellDelta> = paired.iter().flat_map(|p| p.cells.iter().cloned()).collect();
    let count = |change: Change| cells.iter().filter(|c| c.change == change).count();
    Delta {
        baseline: baseline.id.clone(),
        improved: count(Change::Improved),
        regressed: count(Change::Regressed),
        changed: count(Change::Changed),
        columns: paired.into_iter().map(|p| p.column).collect(),
        cells,
    }
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
    /// Both sides hold the same answer text: only how it was scored changed (a comparator, a
    /// threshold, the pairing).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub same_answer: bool,
}

/// A prompt file's edit between the two evals, as a unified diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptEdit {
    pub prompt: String,
    pub diff: String,
    /// Only the `[eval]` table changed (its comparators, thresholds, pairing): what is asked is the same.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub scoring_only: bool,
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
    pub changed: usize,
}

/// A compared with B: every row × column that changed, with its checks and field differences.
pub fn diff(a: &EvalRecord, b: &EvalRecord) -> EvalDiff {
    let (a_cells, b_cells) = (first_cells(a), first_cells(b));
    fn first_cell<'a>(
        cells: &HashMap<(usize, Option<&str>), &'a CellRecord>,
        column: Option<usize>,
        case: &Option<String>,
    ) -> Option<&'a CellRecord> {
        column.and_then(|column| cells.get(&(column, case.as_deref())).copied())
    }
    let paired = paired(a, b);
    let mut cases = Vec::new();
    for pair in &paired {
        for cell in &pair.cells {
            let before = first_cell(&a_cells, pair.before, &cell.case);
            let after = first_cell(&b_cells, pair.after, &cell.case);
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
            let same_answer = match (before, after) {
                (Some(b), Some(a)) => b.run.error.is_none() && a.run.error.is_none() && b.run.answer == a.run.answer,
                _ => false,
            };
            cases.push(CaseDiff {
                delta: cell.clone(),
                reason_before: before.map(|c| c.score.reason.clone()),
                reason_after: after.map(|c| c.score.reason.clone()),
                checks,
                fixed,
                introduced,
                same_answer,
            });
        }
    }
    let count = |change: Change| paired.iter().flat_map(|p| &p.cells).filter(|c| c.change == change).count();
    EvalDiff {
        a: a.id.clone(),
        b: b.id.clone(),
        prompts: prompt_edits(a, b),
        improved: count(Change::Improved),
        regressed: count(Change::Regressed),
        changed: count(Change::Changed),
        columns: paired.into_iter().map(|p| p.column).collect(),
        cases,
    }
}

/// Each column's first cell of each case (its first repeat), found by column and case.
fn first_cells(record: &EvalRecord) -> HashMap<(usize, Option<&str>), &CellRecord> {
    let mut first = HashMap::with_capacity(record.cells.len());
    for cell in &record.cells {
        first.entry((cell.column, cell.case.as_deref())).or_insert(cell);
    }
    first
}

/// The differences of `these` that `others` does not have (in order).
fn not_in(these: &[Difference], others: &[Difference]) -> Vec<Difference> {
    // Bucketed by a text that equal differences share; equality itself decides within a bucket.
    let mut buckets: HashMap<String, Vec<&Difference>> = HashMap::with_capacity(others.len());
    for difference in others {
        buckets.entry(bucket_of(difference)).or_default().push(difference);
    }
    these.iter().filter(|d| !buckets.get(&bucket_of(d)).is_some_and(|bucket| bucket.contains(d))).cloned().collect()
}

/// What a difference is, as a text equal differences share (numbers by value, members sorted).
fn bucket_of(difference: &Difference) -> String {
    let exact = Comparison { exact: true, tolerance: 0.0 };
    match difference {
        Difference::Missing { key, expected } => format!("missing\u{1f}{key}\u{1f}{}", exact.key_text(&[expected])),
        Difference::Extra { key, got } => format!("extra\u{1f}{key}\u{1f}{}", exact.key_text(&[got])),
        Difference::Field { key, field, expected, got, .. } => {
            format!("field\u{1f}{key}\u{1f}{field}\u{1f}{}", exact.key_text(&[expected, got]))
        }
        Difference::Fuzzy { key, got_key, .. } => format!("fuzzy\u{1f}{key}\u{1f}{got_key}"),
        Difference::Item { key, got_key, score, .. } => format!("item\u{1f}{key}\u{1f}{got_key}\u{1f}{score}"),
    }
}

/// What a check is, to find it on the other side: its key (its name, else its kind and content), never
/// the line it is written on; its label when either side is a record older than the key.
fn identities<'a>(before: &'a [CheckResult], after: &'a [CheckResult]) -> impl Fn(&'a CheckResult) -> &'a str {
    let by_label = before.iter().chain(after).any(|c| c.key.is_empty());
    move |check: &'a CheckResult| if by_label { check.check.as_str() } else { check.key.as_str() }
}

/// Checks whose result differs, or that one side did not run; each result paired with the first
/// unpaired result of the same check on the other side ([`identities`]).
fn check_changes(before: &[CheckResult], after: &[CheckResult]) -> Vec<CheckChange> {
    let identity = identities(before, after);
    // Each identity's results on the before side, in order, taken as they are paired.
    let mut unpaired: HashMap<&str, std::collections::VecDeque<usize>> = HashMap::with_capacity(before.len());
    for (index, check) in before.iter().enumerate() {
        unpaired.entry(identity(check)).or_default().push_back(index);
    }
    let mut paired = vec![false; before.len()];
    let mut changes = Vec::new();
    for check in after {
        let old = unpaired.get_mut(identity(check)).and_then(|queue| queue.pop_front());
        if let Some(i) = old {
            paired[i] = true;
        }
        let old = old.and_then(|i| before.get(i));
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
    for (check, _) in before.iter().zip(&paired).filter(|(_, paired)| !**paired) {
        changes.push(CheckChange {
            check: check.check.clone(),
            at: check.at.clone(),
            before: Some(check.passed),
            after: None,
            message: check.message.clone(),
        });
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
        let scoring_only = only_eval_differs(&before.text, &after.text);
        edits.push(PromptEdit { prompt: after.id.clone(), diff, scoring_only });
    }
    edits
}

/// Whether two prompt files differ in their `[eval]` table alone (both read as TOML).
fn only_eval_differs(before: &str, after: &str) -> bool {
    let read = |text: &str| text.parse::<toml::Table>().ok();
    let (Some(mut before), Some(mut after)) = (read(before), read(after)) else { return false };
    let (eval_before, eval_after) = (before.remove("eval"), after.remove("eval"));
    before == after && eval_before != eval_after
}

impl EvalDiff {
    /// Every prompt edit is to `[eval]` alone and every case that changed kept its answer: the
    /// comparators (or thresholds, or pairing) changed, not the model's answers.
    pub fn scoring_only(&self) -> bool {
        !self.prompts.is_empty()
            && self.prompts.iter().all(|p| p.scoring_only)
            && self.cases.iter().all(|c| c.same_answer)
    }
}

#[cfg(test)]
mod tests;
