//! `assert` checks: promptfoo's assertion types judged on the answer's text with promptfoo's semantics
//! (promptfoo.dev/docs/configuration/expected-outputs/deterministic): `equals` compares text exactly,
//! or as JSON when the value is an object or a list; `contains`/`icontains` (numbers as text),
//! `contains-all/any` and their `i` forms, `starts-with`, `regex` (Rust regex syntax: no look-around
//! or back-references), `is-json` (the whole text) and `contains-json` (a JSON object somewhere in it),
//! each with an optional schema, `levenshtein` (at most `threshold` edits, 5 when none is given, as
//! promptfoo's default), `latency` (the run's milliseconds; not measured for a cached answer), `cost`
//! (no provider here reports one: not evaluated) and `finish-reason`. `not-` inverts a result; a
//! type that is not evaluated stays so.

use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use super::{cut, QUOTE};
use crate::eval::values::json_objects;
use crate::prompt::expect::assert as assert_value;
use crate::prompt::expect::{AssertOp, AssertWhat, CheckSpec};
use crate::provider::FinishReason;
use crate::run::RunRecord;

/// promptfoo's default most edits for `levenshtein` when no `threshold` is given.
pub const LEVENSHTEIN_DEFAULT: f64 = 5.0;

/// What an `assert` check needs compiled: its regex, its schema.
#[derive(Clone, Default)]
pub(super) struct Compiled {
    regex: Option<Regex>,
    schema: Option<Arc<jsonschema::Validator>>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").field("regex", &self.regex).field("schema", &self.schema.is_some()).finish()
    }
}

/// How an `assert` check came out.
pub(super) enum Outcome {
    Pass,
    Fail(String),
    /// It could not be judged (a type that needs code or a model, a cost no provider reported).
    NotEvaluated(String),
}

/// The check's regex and schema compiled (the message says why one does not compile).
pub(super) fn compile(spec: &CheckSpec) -> Result<Compiled, String> {
    let Some(kind) = &spec.assert else { return Ok(Compiled::default()) };
    assert_value::check_fields(kind, spec.value.as_ref(), spec.threshold)
        .map_err(|message| format!("check `{}`: {message}", spec.label()))?;
    let mut compiled = Compiled::default();
    match (kind.op(), &spec.value) {
        (Some(AssertOp::Regex), Some(Value::String(pattern))) => {
            compiled.regex = Some(Regex::new(pattern).map_err(|e| format!("check `{}`: {e}", spec.label()))?);
        }
        (Some(AssertOp::IsJson | AssertOp::ContainsJson), Some(schema)) if !schema.is_null() => {
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| format!("check `{}`: not a JSON Schema: {e}", spec.label()))?;
            compiled.schema = Some(Arc::new(validator));
        }
        _ => {}
    }
    Ok(compiled)
}

/// The check judged on `output` (`record`'s answer, or what its transforms made of it).
pub(super) fn run(spec: &CheckSpec, compiled: &Compiled, output: &str, record: &RunRecord) -> Outcome {
    let Some(kind) = &spec.assert else { return Outcome::Fail("an `assert` check needs a `type`".into()) };
    let op = match &kind.what {
        AssertWhat::Evaluated(op) => *op,
        AssertWhat::NotEvaluated(name) => {
            return Outcome::NotEvaluated(format!("`{kind}` is not evaluated: `{name}` needs code or another model"))
        }
    };
    let value = spec.value.as_ref().unwrap_or(&Value::Null);
    let result = match op {
        AssertOp::Latency => {
            if record.turns.iter().any(|t| t.cached) {
                return Outcome::NotEvaluated(format!(
                    "`{kind}` is not evaluated: a cached answer has no latency (run without the cache)"
                ));
            }
            let most = spec.threshold.unwrap_or(f64::INFINITY);
            let took = record.duration_ms as f64;
            (took <= most, format!("latency {took} ms, threshold {most} ms"))
        }
        AssertOp::Cost => {
            return Outcome::NotEvaluated(format!("`{kind}` is not evaluated: the provider reported no cost"));
        }
        other => judge(other, compiled, spec, value, output, record),
    };
    let (held, detail) = result;
    if held != kind.negated {
        Outcome::Pass
    } else if kind.negated {
        Outcome::Fail(format!("expected `{kind}` not to hold, but it does: {detail}"))
    } else {
        Outcome::Fail(format!("expected `{kind}` to hold: {detail}"))
    }
}

/// The edit distance (in characters, as promptfoo's) of `a` and `b` when it is at most `most`, else
/// `None`: only the diagonals within `most` of the main one are computed, in two rows that wide.
pub fn levenshtein_within(a: &str, b: &str, most: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > most {
        return None;
    }
    // The band never needs to be wider than the longer text.
    let k = most.min(n.max(m));
    let far = usize::MAX / 2;
    let width = 2 * k + 2;
    // Row i holds cell (i, j) at index j + k - i, for j within k of i.
    let mut prev = vec![far; width];
    let mut cur = vec![far; width];
    for (j, slot) in prev.iter_mut().skip(k).take(k.min(m) + 1).enumerate() {
        *slot = j;
    }
    for i in 1..=n {
        cur.iter_mut().for_each(|c| *c = far);
        let (lo, hi) = (i.saturating_sub(k), (i + k).min(m));
        let mut least = far;
        for j in lo..=hi {
            let d = j + k - i;
            let value = if j == 0 {
                i
            } else {
                let substitute = prev[d] + usize::from(a[i - 1] != b[j - 1]);
                let delete = prev.get(d + 1).map_or(far, |v| v + 1);
                let insert = if d >= 1 { cur[d - 1] + 1 } else { far };
                substitute.min(delete).min(insert)
            };
            cur[d] = value;
            least = least.min(value);
        }
        if least > k {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let distance = prev[m + k - n];
    (distance <= most).then_some(distance)
}

/// Whether `op` holds on `output`, and what was compared (for a message).
fn judge(
    op: AssertOp,
    compiled: &Compiled,
    spec: &CheckSpec,
    value: &Value,
    output: &str,
    record: &RunRecord,
) -> (bool, String) {
    let text = || assert_value::text_of(value).unwrap_or_default();
    let list = || assert_value::list_of(value).unwrap_or_default();
    let came = format!("the answer {:?}", cut(output, QUOTE));
    match op {
        AssertOp::Equals => match value {
            Value::Object(_) | Value::Array(_) => {
                let parsed = serde_json::from_str::<Value>(output).ok();
                (parsed.as_ref() == Some(value), format!("JSON {}, {came}", cut(&value.to_string(), QUOTE)))
            }
            _ => (output == text(), format!("{:?}, {came}", cut(&text(), QUOTE))),
        },
        AssertOp::Contains => (output.contains(&text()), format!("contains {:?}, {came}", text())),
        AssertOp::Icontains => (
            output.to_lowercase().contains(&text().to_lowercase()),
            format!("contains {:?} (any case), {came}", text()),
        ),
        AssertOp::ContainsAll | AssertOp::IcontainsAll | AssertOp::ContainsAny | AssertOp::IcontainsAny => {
            let fold = matches!(op, AssertOp::IcontainsAll | AssertOp::IcontainsAny);
            let haystack = if fold { output.to_lowercase() } else { output.to_string() };
            let values = list();
            let found: Vec<bool> =
                values.iter().map(|v| haystack.contains(&if fold { v.to_lowercase() } else { v.clone() })).collect();
            let all = matches!(op, AssertOp::ContainsAll | AssertOp::IcontainsAll);
            let held = if all { found.iter().all(|f| *f) } else { found.iter().any(|f| *f) };
            let missing: Vec<&String> = values.iter().zip(&found).filter(|(_, f)| !**f).map(|(v, _)| v).collect();
            (held, format!("{} of {values:?}; missing {missing:?}; {came}", if all { "all" } else { "any" }))
        }
        AssertOp::StartsWith => (output.starts_with(&text()), format!("starts with {:?}, {came}", text())),
        AssertOp::Regex => match &compiled.regex {
            Some(regex) => (regex.is_match(output), format!("matches /{}/, {came}", regex.as_str())),
            None => (false, "no pattern".into()),
        },
        AssertOp::IsJson => match serde_json::from_str::<Value>(output) {
            Err(e) => (false, format!("{came} is not JSON ({e})")),
            Ok(json) => match &compiled.schema {
                Some(schema) => match schema.validate(&json) {
                    Ok(()) => (true, format!("{came} is JSON valid against the schema")),
                    Err(e) => (false, format!("{came} is JSON, but not valid against the schema: {e}")),
                },
                None => (true, format!("{came} is JSON")),
            },
        },
        AssertOp::ContainsJson => {
            let objects = json_objects(output);
            match &compiled.schema {
                _ if objects.is_empty() => (false, format!("{came} holds no JSON object")),
                Some(schema) => (
                    objects.iter().any(|o| schema.is_valid(o)),
                    format!("{came} holds {} JSON object(s); one valid against the schema?", objects.len()),
                ),
                None => (true, format!("{came} holds a JSON object")),
            }
        }
        AssertOp::Levenshtein => {
            let most = spec.threshold.unwrap_or(LEVENSHTEIN_DEFAULT);
            let want = text();
            // Only the distances up to the threshold matter: a band of diagonals that wide is computed,
            // so a long answer costs its length times the threshold, not its length squared.
            let band = if most.is_finite() { most.floor() as usize } else { usize::MAX };
            match levenshtein_within(output, &want, band) {
                Some(distance) => (true, format!("{distance} edits from {:?}, at most {most}", cut(&want, QUOTE))),
                None => (false, format!("more than {most} edits from {:?}", cut(&want, QUOTE))),
            }
        }
        AssertOp::FinishReason => {
            let reason = record.turns.last().and_then(|t| t.finish_reason.as_ref()).map(finish_name);
            let want = text().to_lowercase();
            match reason {
                Some(reason) => (reason == want, format!("finish reason {want:?}, got {reason:?}")),
                None => (false, format!("finish reason {want:?}, but the provider reported none")),
            }
        }
        AssertOp::Latency | AssertOp::Cost => (false, String::new()),
    }
}

/// A finish reason by promptfoo's normalized name (`stop`, `length`, `content_filter`, `tool_calls`).
fn finish_name(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::Interrupted => "interrupted".into(),
        FinishReason::Other(name) => name.to_lowercase(),
    }
}

#[cfg(test)]
mod tests;
