//! A cell's verdict: the answer read from the run record, scored against the expected answer,
//! checked, and judged (`error` / `truncated` / `pass` / `fail`) with its reason in one line; and the
//! verdict order every comparison uses (`PartialOrd for Verdict`, [`Verdict::worst`]).

use std::cmp::Ordering;

use serde_json::Value;

use super::checks::{self, Answer};
use super::pairing::{score_items, score_items_graded};
use super::score::{CaseScore, CheckResult, ItemScores, Recovered, Verdict};
use super::values::cut;
use super::Expectations;
use crate::output::json::items_of;
use crate::output::{Report, ResponseType};
use crate::prompt::expect::resolve::ExpectedAnswer;
use crate::prompt::expect::CheckKind;
use crate::provider::FinishReason;
use crate::run::RunRecord;
use crate::truncate::strategy::{recover, Strategy};

/// The strategies a truncated answer is read with, as EVAL.md names them.
const RECOVERY: [Strategy; 2] = [Strategy::JsonRepair, Strategy::Jsonl];
/// A share counts as met when it is this close below the threshold (2/3 against 0.6667).
const SLACK: f64 = 1e-9;
/// Failed checks a reason names before "and N more".
const NAMED: usize = 2;

/// `record` scored against `expectations`.
/// `grades` holds the graded checks' results by index (missing: not graded) and the graded fields'.
pub(crate) fn score(expectations: &Expectations, record: &RunRecord, grades: &super::grade::Grades) -> CaseScore {
    let mut score = scored(expectations, record, grades);
    score.field_judges = grades.field_judges.clone();
    score
}

fn scored(expectations: &Expectations, record: &RunRecord, grades: &super::grade::Grades) -> CaseScore {
    let last = record.turns.last();
    let output = last.map(|t| t.output.as_str()).unwrap_or_default();
    if output.trim().is_empty() {
        if let Some(why) = no_answer(record) {
            return CaseScore::error(format!("no answer: {}", cut(&why, 200)));
        }
    }
    let (items, whole) = answer_of(record);
    let scored_items = scored_items(expectations, record, &items, &whole);
    let (scores, differences, ungraded) = match &expectations.expected {
        Some(expected) => {
            let (scores, differences, ungraded) = score_items_graded(
                &expected.items(),
                &scored_items,
                &expectations.key,
                &expectations.settings,
                &grades.fields,
            );
            let one_value = matches!(expected, ExpectedAnswer::Value(_));
            (Some(ItemScores { one_value, ..scores }), differences, ungraded)
        }
        None => (None, Vec::new(), Vec::new()),
    };
    let answer = Answer { items: &items, whole: &whole, record };
    let mut checks: Vec<CheckResult> = expectations
        .checks
        .iter()
        .enumerate()
        .map(|(index, check)| {
            let at = check.spec.at.or(|| match (&expectations.case, index.checked_sub(expectations.prompt_checks)) {
                (Some(case), Some(own)) => format!("case {case:?} [[cases.checks]] {}", own + 1),
                _ => format!("[[checks]] {}", index + 1),
            });
            match &check.grader {
                Some(_) => checks::graded(check, grades.checks.get(index).and_then(Option::as_ref), at),
                None => {
                    let transformed = grades.transformed.get(index).and_then(Option::as_ref);
                    checks::run(check, &answer, expectations.comparison(), transformed, at)
                }
            }
        })
        .collect();
    let truncated = record.truncated || last.and_then(|t| t.finish_reason.as_ref()) == Some(&FinishReason::Length);
    // promptfoo's verdicts: the checks alone decide; the schema's result and the cut are said beside.
    let promptfoo = expectations.settings.promptfoo_verdicts();
    if promptfoo {
        // promptfoo reports an assertion of weight 0 as passed, whatever it found.
        for check in checks.iter_mut().filter(|c| c.weight == Some(0.0) && !c.passed && !c.not_evaluated) {
            check.passed = true;
            check.message = check.message.take().map(|m| format!("weight 0, so it passes: {m}"));
        }
    }
    let mut beside = Vec::new();
    if promptfoo && truncated {
        beside.push("truncated at the token limit".to_string());
    }
    if promptfoo && !record.ok && !truncated {
        beside.push(invalid(record));
    }
    if truncated && !promptfoo {
        let recovered = if record.response_type == ResponseType::Text {
            Vec::new()
        } else {
            RECOVERY.iter().map(|&strategy| recovered(expectations, record, output, strategy)).collect()
        };
        let reason = truncated_reason(record, &recovered);
        return CaseScore {
            verdict: Verdict::Truncated,
            items: scores,
            differences,
            checks,
            recovered,
            reason,
            field_judges: Vec::new(),
        };
    }
    let mut problems = Vec::new();
    if !record.ok && !promptfoo {
        problems.push(invalid(record));
    }
    if let Some(scores) = &scores {
        let (pass_f1, pass_fields) = (expectations.settings.pass_f1(), expectations.settings.pass_fields());
        if scores.f1 + SLACK < pass_f1 {
            problems.push(format!("F1 {:.2}{} < pass_f1 {pass_f1}", scores.f1, fuzzy_note(scores)));
        }
        if scores.field_accuracy + SLACK < pass_fields {
            problems.push(format!("fields {:.2} < pass_fields {pass_fields}", scores.field_accuracy));
        }
    }
    let not_evaluated: Vec<&CheckResult> = checks.iter().filter(|c| c.not_evaluated).collect();
    if !not_evaluated.is_empty() || !ungraded.is_empty() {
        let fields = ungraded.iter().take(NAMED).map(|why| format!("field {}", cut(why, 200)));
        let listed: Vec<String> = not_evaluated
            .iter()
            .map(|c| match (&c.graded, &c.message) {
                (None, Some(why)) if !why.contains("is not evaluated") => {
                    format!("{} ({}): {}", c.check, c.at, cut(why, 200))
                }
                _ => format!("{} ({})", c.check, c.at),
            })
            .chain(fields)
            .collect();
        let reason = format!("not evaluated: {}", listed.join(", "));
        return CaseScore {
            verdict: Verdict::Error,
            items: scores,
            differences,
            checks,
            recovered: Vec::new(),
            field_judges: Vec::new(),
            reason,
        };
    }
    let asserts: Vec<(&CheckResult, f64)> = expectations
        .checks
        .iter()
        .zip(&checks)
        .filter(|(check, _)| check.spec.kind == CheckKind::Assert)
        .map(|(_, result)| (result, result.weight.unwrap_or(1.0)))
        .collect();
    if let Some(problem) = assert_problem(&asserts, expectations.pass_score) {
        problems.push(problem);
    }
    let failed: Vec<&CheckResult> = expectations
        .checks
        .iter()
        .zip(&checks)
        .filter(|(check, result)| !result.passed && check.spec.kind != CheckKind::Assert)
        .map(|(_, result)| result)
        .collect();
    if !failed.is_empty() {
        let mut named: Vec<String> = failed.iter().take(NAMED).map(|c| format!("{} ({})", c.check, c.at)).collect();
        if failed.len() > NAMED {
            named.push(format!("and {} more", failed.len() - NAMED));
        }
        let noun = if failed.len() == 1 { "check" } else { "checks" };
        problems.push(format!("{} {noun} failed: {}", failed.len(), named.join(", ")));
    }
    let (verdict, mut reason) = if problems.is_empty() {
        (Verdict::Pass, passed_reason(scores.as_ref(), checks.len()))
    } else {
        (Verdict::Fail, problems.join("; "))
    };
    if !beside.is_empty() {
        reason = format!("{reason} ({})", beside.join("; "));
    }
    CaseScore { verdict, items: scores, differences, checks, recovered: Vec::new(), reason, field_judges: Vec::new() }
}

/// Why there is no answer, when the run got none: the provider was not reached, failed or timed out.
fn no_answer(record: &RunRecord) -> Option<String> {
    let last = record.turns.last();
    if let Some(error) = &record.error {
        return Some(error.clone());
    }
    if let Some(error) = last.and_then(|t| t.error.as_ref()) {
        return Some(error.to_string());
    }
    if record.cancelled {
        return Some(record.warnings.first().cloned().unwrap_or_else(|| "the run was stopped".to_string()));
    }
    last.is_none().then(|| "the run has no turn".to_string())
}

/// What is scored against the expected answer: the answer's items, or its one value against an
/// expected value (a jsonl answer's items still).
fn scored_items(expectations: &Expectations, record: &RunRecord, items: &[Value], whole: &Value) -> Vec<Value> {
    match &expectations.expected {
        Some(ExpectedAnswer::Value(_)) => match record.response_type {
            ResponseType::Jsonl => items.to_vec(),
            _ if whole.is_null() => Vec::new(),
            _ => vec![whole.clone()],
        },
        _ => items.to_vec(),
    }
}

/// The fields graded comparators compare in `record`'s answer against `expectations`: the pairs the
/// scorer will make (`eval::graded` grades them before the cell is scored).
pub(crate) fn graded_pairs(expectations: &Expectations, record: &RunRecord) -> Vec<super::comparators::GradedPair> {
    let Some(expected) = &expectations.expected else { return Vec::new() };
    let (items, whole) = answer_of(record);
    let scored = scored_items(expectations, record, &items, &whole);
    super::pairing::graded_pairs(&expected.items(), &scored, &expectations.key, &expectations.settings)
}

/// The answer's items and the whole answer, from the record's result.
fn answer_of(record: &RunRecord) -> (Vec<Value>, Value) {
    match record.response_type {
        ResponseType::Jsonl => {
            let items = record.result.as_array().cloned().unwrap_or_default();
            let whole = Value::Array(items.clone());
            (items, whole)
        }
        ResponseType::Json => {
            let whole = record.result.clone();
            let items = if whole.is_null() { Vec::new() } else { items_of(whole.clone()) };
            (items, whole)
        }
        ResponseType::Text => {
            let whole = match &record.result {
                Value::Null => Value::String(String::new()),
                other => other.clone(),
            };
            (vec![whole.clone()], whole)
        }
    }
}

/// What `strategy` keeps of the cut answer, scored against the expected answer.
fn recovered(expectations: &Expectations, record: &RunRecord, output: &str, strategy: Strategy) -> Recovered {
    let items = recover(output, strategy, record.profile, expectations.item_check().as_ref());
    let scores = expectations
        .expected
        .as_ref()
        .map(|expected| score_items(&expected.items(), &items, &expectations.key, &expectations.settings).0);
    Recovered { strategy: strategy.name().to_string(), items: items.len(), scores }
}

/// `hit the token limit (max 1024); json-repair keeps 5 items (F1 0.80), jsonl 4 (F1 0.67)`.
fn truncated_reason(record: &RunRecord, recovered: &[Recovered]) -> String {
    let limit = record.turns.last().and_then(|t| t.request()).and_then(|r| r.max_tokens);
    let mut reason = match limit {
        Some(n) => format!("hit the token limit of {n}"),
        None => "hit the token limit".to_string(),
    };
    for (index, r) in recovered.iter().enumerate() {
        let f1 = r.scores.as_ref().map(|s| format!(" (F1 {:.2})", s.f1)).unwrap_or_default();
        let noun = if index == 0 {
            if r.items == 1 {
                " item"
            } else {
                " items"
            }
        } else {
            ""
        };
        let lead = if index == 0 { "; " } else { ", " };
        let verb = if index == 0 { " keeps" } else { "" };
        reason.push_str(&format!("{lead}{}{verb} {}{noun}{f1}", r.strategy, r.items));
    }
    reason
}

/// Why the answer is not valid, from the last turn's parse report.
fn invalid(record: &RunRecord) -> String {
    if let Some(error) = &record.error {
        return format!("the stream failed: {}", cut(error, 120));
    }
    match record.turns.last().map(|t| &t.parse) {
        Some(Report::Json(report)) => match (&report.error, report.errors.first()) {
            (_, Some(issue)) => {
                format!("the answer does not match the schema ({} {})", issue.path, cut(&issue.message, 80))
            }
            (Some(error), None) => format!("no valid JSON: {}", cut(&error.message, 100)),
            (None, None) => "the answer is not valid".to_string(),
        },
        Some(Report::Jsonl(report)) => {
            let summary = &report.summary;
            let mut said = Vec::new();
            if summary.invalid_json > 0 {
                said.push(format!("{} lines not JSON", summary.invalid_json));
            }
            if summary.schema_error > 0 {
                said.push(format!("{} lines not matching the schema", summary.schema_error));
            }
            if said.is_empty() {
                "the answer is not valid".to_string()
            } else {
                format!("the answer is not valid: {}", said.join(", "))
            }
        }
        _ => "the answer is not valid".to_string(),
    }
}

/// What fails a case's `assert` checks (promptfoo's rule, configuration/expected-outputs "Weighted
/// assertions"): the score is the weighted mean of their results (weight 0: always passes); with a
/// `pass_score` the case needs the score to reach it, else every assert check of weight above 0 must
/// pass.
fn assert_problem(asserts: &[(&CheckResult, f64)], pass_score: Option<f64>) -> Option<String> {
    if asserts.is_empty() {
        return None;
    }
    // Each assertion's score: a graded one's (a `javascript` check's 0.4, a judge's), else 1 for a
    // pass and 0 for a fail; the case's score is their weighted mean.
    let total: f64 = asserts.iter().map(|(_, w)| w).sum();
    let earned: f64 = asserts
        .iter()
        .map(|(r, w)| {
            let score = match &r.graded {
                Some(detail) => detail.score,
                None => f64::from(u8::from(r.passed)),
            };
            w * score
        })
        .sum();
    let score = if total > 0.0 { earned / total } else { 1.0 };
    match pass_score {
        Some(needed) if score + SLACK < needed => Some(format!("assert score {score:.2} < pass_score {needed}")),
        Some(_) => None,
        None => {
            let failed: Vec<String> = asserts
                .iter()
                .filter(|(r, w)| !r.passed && *w > 0.0)
                .map(|(r, _)| format!("{} ({})", r.check, r.at))
                .collect();
            match failed.len() {
                0 => None,
                1 => Some(format!("1 assert failed: {}", failed.join(", "))),
                n => Some(format!("{n} asserts failed (score {score:.2}): {}", failed.join(", "))),
            }
        }
    }
}

/// ` (1 fuzzy pair)` after an F1 that counts pairs made by key similarity; else nothing.
fn fuzzy_note(scores: &ItemScores) -> String {
    match scores.fuzzy {
        0 => String::new(),
        1 => " (1 fuzzy pair)".to_string(),
        n => format!(" ({n} fuzzy pairs)"),
    }
}

/// `F1 1.00, fields 1.00; 3 checks passed`.
fn passed_reason(scores: Option<&ItemScores>, checks: usize) -> String {
    let mut parts = Vec::new();
    match scores {
        Some(scores) if scores.one_value => parts.push(format!("fields {:.2}", scores.field_accuracy)),
        Some(scores) => {
            parts.push(format!("F1 {:.2}{}, fields {:.2}", scores.f1, fuzzy_note(scores), scores.field_accuracy))
        }
        None => {}
    }
    match checks {
        0 => {}
        1 => parts.push("1 check passed".to_string()),
        n => parts.push(format!("{n} checks passed")),
    }
    if parts.is_empty() {
        "a valid answer (nothing expected)".to_string()
    } else {
        parts.join("; ")
    }
}

/// The verdict order, the one every comparison uses (a baseline's delta, `eval diff`, the eval screen,
/// the CLI): ARCHITECTURE.md, "Rules written once", says why.
///
/// ```text
///            pass
///          /      \
///       fail    truncated
///          \      /
///            error
/// ```
///
/// `pass` is above every other verdict (the answer is right), `error` below every other (no answer at
/// all). `fail` and `truncated` are beside each other, neither above: a truncated answer was stopped
/// by the token limit before it could be judged on what it says, so it is a different problem from a
/// wrong answer, not a better or a worse one (`partial_cmp` is `None`).
impl PartialOrd for Verdict {
    fn partial_cmp(&self, other: &Verdict) -> Option<Ordering> {
        let level = |verdict: &Verdict| match verdict {
            Verdict::Error => 0,
            Verdict::Fail | Verdict::Truncated => 1,
            Verdict::Pass => 2,
        };
        match level(self).cmp(&level(other)) {
            Ordering::Equal if self != other => None,
            order => Some(order),
        }
    }
}

impl Verdict {
    /// The worst of `verdicts` (a cell's repeats), `None` when there is none: `error` if any, else
    /// `fail`, else `truncated`, else `pass`. Of `fail` and `truncated`, which are beside each other,
    /// `fail` is shown: a wrong answer is looked at before a cut one.
    pub fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Option<Verdict> {
        let shown = |verdict: Verdict| match verdict {
            Verdict::Error => 0,
            Verdict::Fail => 1,
            Verdict::Truncated => 2,
            Verdict::Pass => 3,
        };
        verdicts.into_iter().min_by_key(|&verdict| shown(verdict))
    }
}
