//! Running a case's checks on an answer and its run record (see `prompt::expect` for what each kind
//! means). Every failure says the check, where it is written, the path, what was expected and what came.

use regex::Regex;
use serde_json::{Number, Value};

use super::score::CheckResult;
use super::values::{at, cut, quote, Comparison};
use crate::prompt::expect::{CheckKind, CheckSpec};
use crate::provider::FinishReason;
use crate::run::RunRecord;

/// Longest value a message quotes.
const QUOTE: usize = 60;
/// Failing items a message lists before "and N more".
const LISTED: usize = 3;

/// A check ready to run: its pattern compiled.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub spec: CheckSpec,
    regex: Option<Regex>,
    asserted: asserted::Compiled,
    /// How the check is graded after the answer (`command`, `judge`, promptfoo's `python`); `None`:
    /// judged here.
    pub grader: Option<super::grade::Grader>,
    /// Its `transform` chain, run on the answer before it is judged.
    pub transform: Option<super::grade::transform::Transform>,
}

impl Prepared {
    /// `spec` with its pattern compiled (the message says why it does not compile), its files found in
    /// the current folder.
    pub fn new(spec: CheckSpec) -> Result<Prepared, String> {
        Prepared::in_folder(spec, std::path::Path::new("."))
    }

    /// `spec` prepared, the programs and files it names found from `dir` (the prompt's folder).
    pub fn in_folder(spec: CheckSpec, dir: &std::path::Path) -> Result<Prepared, String> {
        let regex = match &spec.pattern {
            Some(pattern) => Some(Regex::new(pattern).map_err(|e| {
                format!("check `{}`: `pattern` {pattern:?} is not a regular expression: {e}", spec.label())
            })?),
            None => None,
        };
        let asserted = asserted::compile(&spec)?;
        let grader =
            super::grade::Grader::of(&spec, dir).map_err(|message| format!("check `{}`: {message}", spec.label()))?;
        let transform = match spec.transform.as_deref() {
            Some(codes) => Some(
                super::grade::transform::Transform::of(codes, dir)
                    .map_err(|message| format!("check `{}`: {message}", spec.label()))?,
            ),
            None => None,
        };
        Ok(Prepared { spec, regex, asserted, grader, transform })
    }
}

/// What the checks look at: the answer's items, the whole answer, and the run.
pub struct Answer<'a> {
    /// Every line of a jsonl answer, every element of a json array (the value of a json object, the text).
    pub items: &'a [Value],
    /// The array of items (jsonl), the value (json), the text (text).
    pub whole: &'a Value,
    pub record: &'a RunRecord,
}

/// Runs `check` on `answer` (an `assert` check on `transformed`, the answer through its `transform`
/// chain, when it has one); `at` is where the check is written.
pub fn run(
    check: &Prepared,
    answer: &Answer<'_>,
    comparison: Comparison,
    transformed: Option<&Result<Value, String>>,
    at: String,
) -> CheckResult {
    let spec = &check.spec;
    let not_evaluated = |why: String| CheckResult {
        check: spec.label(),
        key: spec.identity(),
        at: at.clone(),
        passed: false,
        message: Some(why),
        weight: spec.weight,
        not_evaluated: true,
        graded: None,
    };
    let output = match (transformed, &check.transform) {
        (Some(Ok(value)), _) => super::grade::transform::text_of(value),
        (Some(Err(why)), _) => return not_evaluated(why.clone()),
        (None, Some(_)) => return not_evaluated("not graded: a `transform` runs in an eval".to_string()),
        (None, None) => answer.record.turns.last().map(|t| t.output.clone()).unwrap_or_default(),
    };
    let comparison = Comparison { exact: spec.exact(), ..comparison };
    let outcome = match spec.kind {
        CheckKind::Items => {
            let n = answer.items.len();
            if within(n as f64, spec) {
                Ok(())
            } else {
                Err(format!("expected{} items, got {n}", range_words(spec)))
            }
        }
        CheckKind::Unique => unique(answer.items, spec.pointer(), comparison),
        CheckKind::NoRepeatedLines => no_repeated_lines(answer.record),
        CheckKind::FinishNotLength => finish_not_length(answer.record),
        CheckKind::MaxTokensOut => max_tokens_out(answer.record, spec),
        CheckKind::MaxTtftMs => max_ttft_ms(answer.record, spec),
        CheckKind::Assert => match asserted::run(spec, &check.asserted, &output, answer.record) {
            asserted::Outcome::Pass => Ok(()),
            asserted::Outcome::Fail(why) => Err(why),
            asserted::Outcome::NotEvaluated(why) => return not_evaluated(why),
        },
        _ if spec.each() => each_item(check, answer.items, comparison),
        _ => value_check(check, at_path(answer.whole, spec.pointer()), comparison)
            .map_err(|why| format!("{}: {why}", shown_path(spec.pointer()))),
    };
    CheckResult {
        check: spec.label(),
        key: spec.identity(),
        at,
        passed: outcome.is_ok(),
        message: outcome.err(),
        weight: spec.weight,
        not_evaluated: false,
        graded: None,
    }
}

/// A graded check's result (`grade`: what its grader said, or why it said nothing: then the check
/// is not evaluated and the cell an error); `at` is where the check is written.
pub fn graded(check: &Prepared, grade: Option<&Result<super::grade::GradeDetail, String>>, at: String) -> CheckResult {
    let spec = &check.spec;
    let (passed, message, not_evaluated, graded) = match grade {
        None => (false, Some("not graded: graded checks run in an eval".to_string()), true, None),
        Some(Err(why)) => (false, Some(why.clone()), true, None),
        Some(Ok(detail)) => {
            // promptfoo's `not-python`, `not-javascript`, `not-llm-rubric`: the grader's verdict
            // inverted (`not-similar` inverts inside its grader).
            let negated = spec.assert.as_ref().is_some_and(|a| {
                a.negated && matches!(&a.what, crate::prompt::expect::AssertWhat::NotEvaluated(n) if n != "similar")
            }) && !detail.raised;
            let detail = &if negated {
                super::grade::GradeDetail { pass: !detail.pass, score: 1.0 - detail.score, ..detail.clone() }
            } else {
                detail.clone()
            };
            let message = match (&detail.reason, &detail.ran) {
                (Some(reason), _) => format!("score {:.2}: {}", detail.score, cut(reason, 300)),
                (None, Some(ran)) => format!("score {:.2}: {ran}", detail.score),
                (None, None) => format!("score {:.2}", detail.score),
            };
            (detail.pass, Some(message), false, Some(Box::new(detail.clone())))
        }
    };
    CheckResult {
        check: spec.label(),
        key: spec.identity(),
        at,
        passed,
        message,
        weight: spec.weight,
        not_evaluated,
        graded,
    }
}

/// The value at `pointer`, `None` when missing.
fn at_path<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    value.pointer(pointer)
}

fn shown_path(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the answer"
    } else {
        pointer
    }
}

/// The check on every item; the first failing ones are listed.
fn each_item(check: &Prepared, items: &[Value], comparison: Comparison) -> Result<(), String> {
    let pointer = check.spec.pointer();
    let failures: Vec<String> = items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| {
            value_check(check, at_path(item, pointer), comparison).err().map(|why| {
                let path = if pointer.is_empty() { String::new() } else { format!(" {pointer}") };
                format!("item {}{path}: {why}", index + 1)
            })
        })
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    let mut message =
        if items.len() > 1 { format!("{} of {} items fail: ", failures.len(), items.len()) } else { String::new() };
    message.push_str(&failures.iter().take(LISTED).cloned().collect::<Vec<_>>().join("; "));
    if failures.len() > LISTED {
        message.push_str(&format!("; and {} more", failures.len() - LISTED));
    }
    Err(message)
}

/// A check of one value (`None`: missing); `Err` says what was expected and what came.
fn value_check(check: &Prepared, value: Option<&Value>, comparison: Comparison) -> Result<(), String> {
    let spec = &check.spec;
    let got = value.unwrap_or(&Value::Null);
    let came = || quote(got, QUOTE);
    match spec.kind {
        CheckKind::Exists if got.is_null() => Err("expected a value, got nothing".into()),
        CheckKind::Absent if !got.is_null() => Err(format!("expected nothing, got {}", came())),
        CheckKind::Equals => {
            let want = spec.value.as_ref().unwrap_or(&Value::Null);
            if comparison.agree(want, got) {
                Ok(())
            } else {
                Err(format!("expected {}, got {}", quote(want, QUOTE), came()))
            }
        }
        CheckKind::OneOf => {
            let values = spec.values.as_deref().unwrap_or_default();
            if values.iter().any(|want| comparison.agree(want, got)) {
                Ok(())
            } else {
                let listed: Vec<String> = values.iter().map(|v| quote(v, QUOTE)).collect();
                Err(format!("expected one of {}, got {}", listed.join(", "), came()))
            }
        }
        CheckKind::Contains => {
            let want = spec.value.as_ref().unwrap_or(&Value::Null);
            let holds = match (got, want) {
                (Value::String(text), Value::String(part)) => comparison.text(text).contains(&comparison.text(part)),
                (Value::Array(items), want) => items.iter().any(|item| comparison.agree(want, item)),
                _ => false,
            };
            if holds {
                Ok(())
            } else {
                Err(format!("expected something containing {}, got {}", quote(want, QUOTE), came()))
            }
        }
        CheckKind::Regex => match (got, &check.regex) {
            (Value::String(text), Some(regex)) if regex.is_match(text) => Ok(()),
            (_, regex) => Err(format!(
                "expected a string matching /{}/, got {}",
                regex.as_ref().map(Regex::as_str).unwrap_or_default(),
                came()
            )),
        },
        CheckKind::Range => match got.as_f64() {
            Some(n) if within(n, spec) => Ok(()),
            _ => Err(format!("expected a number{}, got {}", range_words(spec), came())),
        },
        CheckKind::Length => {
            let length = match got {
                Value::String(text) => text.chars().count(),
                Value::Array(items) => items.len(),
                _ => return Err(format!("expected a string or an array, got {}", came())),
            };
            if within(length as f64, spec) {
                Ok(())
            } else {
                Err(format!("expected a length{}, got {length}: {}", range_words(spec), came()))
            }
        }
        _ => Ok(()),
    }
}

/// Whether `n` is within the check's `min..=max`.
fn within(n: f64, spec: &CheckSpec) -> bool {
    let low = spec.min.as_ref().and_then(Number::as_f64);
    let high = spec.max.as_ref().and_then(Number::as_f64);
    !(low.is_some_and(|low| n < low) || high.is_some_and(|high| n > high))
}

/// ` from 1 to 5`, ` at least 1`, ` at most 5`.
fn range_words(spec: &CheckSpec) -> String {
    match (&spec.min, &spec.max) {
        (Some(min), Some(max)) => format!(" from {min} to {max}"),
        (Some(min), None) => format!(" at least {min}"),
        (None, Some(max)) => format!(" at most {max}"),
        (None, None) => String::new(),
    }
}

/// No two items share the value at `pointer`.
fn unique(items: &[Value], pointer: &str, comparison: Comparison) -> Result<(), String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let key = comparison.key_text(&[at(item, pointer)]);
        if let Some(first) = seen.insert(key, index) {
            return Err(format!(
                "items {} and {} share {}{}",
                first + 1,
                index + 1,
                if pointer.is_empty() { String::new() } else { format!("{pointer} ") },
                quote(at(item, pointer), QUOTE)
            ));
        }
    }
    Ok(())
}

/// No non-blank line of the last answer comes twice (a model looping).
fn no_repeated_lines(record: &RunRecord) -> Result<(), String> {
    let text = record.turns.last().map(|t| t.output.as_str()).unwrap_or_default();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(first) = seen.insert(line, index) {
            return Err(format!("line {} repeats line {}: {:?}", index + 1, first + 1, cut(line, QUOTE)));
        }
    }
    Ok(())
}

/// The last answer did not stop at the token limit.
fn finish_not_length(record: &RunRecord) -> Result<(), String> {
    let reason = record.turns.last().and_then(|t| t.finish_reason.as_ref());
    if record.truncated || reason == Some(&FinishReason::Length) {
        let limit = record.turns.last().and_then(|t| t.request()).and_then(|r| r.max_tokens);
        Err(match limit {
            Some(n) => format!("finish reason length: the answer hit the limit of {n} tokens"),
            None => "finish reason length: the answer hit the token limit".to_string(),
        })
    } else {
        Ok(())
    }
}

/// Output tokens over every turn at most `max`.
fn max_tokens_out(record: &RunRecord, spec: &CheckSpec) -> Result<(), String> {
    let max = spec.max.as_ref().and_then(Number::as_u64).unwrap_or(u64::MAX);
    let reported: Vec<u64> = record.turns.iter().filter_map(|t| t.usage.map(|u| u.output_tokens)).collect();
    if reported.is_empty() {
        return Err(format!("expected at most {max} tokens out, but the provider reported no usage"));
    }
    let out: u64 = reported.iter().sum();
    if out > max {
        return Err(format!("expected at most {max} tokens out, got {out}"));
    }
    Ok(())
}

/// The first turn's time to first token at most `max` ms.
fn max_ttft_ms(record: &RunRecord, spec: &CheckSpec) -> Result<(), String> {
    let max = spec.max.as_ref().and_then(Number::as_u64).unwrap_or(u64::MAX);
    match record.turns.first().and_then(|t| t.ttft_ms) {
        None => Err(format!("expected a first token within {max} ms, but none came")),
        Some(ms) if ms > max => Err(format!("expected a first token within {max} ms, got {ms} ms")),
        Some(_) => Ok(()),
    }
}

mod asserted;
#[cfg(test)]
mod tests;
