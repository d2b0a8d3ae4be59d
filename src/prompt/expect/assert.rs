//! promptfoo's assertion types, as a check of kind `assert` names them (`type = "not-icontains"`):
//! the ones tunebench evaluates with promptfoo's semantics (promptfoo.dev/docs/configuration/
//! expected-outputs/deterministic), and the ones it knows but cannot evaluate (they need code or
//! another model: `javascript`, `python`, `llm-rubric`, `similar`, …), which are reported as not
//! evaluated, never passed or dropped. Every type takes the `not-` form, which inverts its result.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The assertion types tunebench evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssertOp {
    Equals,
    Contains,
    Icontains,
    ContainsAll,
    ContainsAny,
    IcontainsAll,
    IcontainsAny,
    StartsWith,
    Regex,
    IsJson,
    ContainsJson,
    Levenshtein,
    Latency,
    Cost,
    FinishReason,
}

impl AssertOp {
    pub const ALL: [AssertOp; 15] = [
        AssertOp::Equals,
        AssertOp::Contains,
        AssertOp::Icontains,
        AssertOp::ContainsAll,
        AssertOp::ContainsAny,
        AssertOp::IcontainsAll,
        AssertOp::IcontainsAny,
        AssertOp::StartsWith,
        AssertOp::Regex,
        AssertOp::IsJson,
        AssertOp::ContainsJson,
        AssertOp::Levenshtein,
        AssertOp::Latency,
        AssertOp::Cost,
        AssertOp::FinishReason,
    ];

    /// The name as promptfoo writes it.
    pub fn name(self) -> &'static str {
        match self {
            AssertOp::Equals => "equals",
            AssertOp::Contains => "contains",
            AssertOp::Icontains => "icontains",
            AssertOp::ContainsAll => "contains-all",
            AssertOp::ContainsAny => "contains-any",
            AssertOp::IcontainsAll => "icontains-all",
            AssertOp::IcontainsAny => "icontains-any",
            AssertOp::StartsWith => "starts-with",
            AssertOp::Regex => "regex",
            AssertOp::IsJson => "is-json",
            AssertOp::ContainsJson => "contains-json",
            AssertOp::Levenshtein => "levenshtein",
            AssertOp::Latency => "latency",
            AssertOp::Cost => "cost",
            AssertOp::FinishReason => "finish-reason",
        }
    }

    /// Whether the type needs a `value` (the others take none, or an optional one).
    pub fn needs_value(self) -> bool {
        !matches!(self, AssertOp::IsJson | AssertOp::ContainsJson | AssertOp::Latency | AssertOp::Cost)
    }

    /// Whether the type needs a `threshold` (latency in ms, cost in dollars).
    pub fn needs_threshold(self) -> bool {
        matches!(self, AssertOp::Latency | AssertOp::Cost)
    }
}

/// promptfoo's assertion types that need code, another model or data tunebench does not have: known,
/// listed as not evaluated.
pub const NOT_EVALUATED: [&str; 44] = [
    "javascript",
    "python",
    "ruby",
    "webhook",
    "llm-rubric",
    "g-eval",
    "similar",
    "classifier",
    "moderation",
    "factuality",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "model-graded-closedqa",
    "model-graded-factuality",
    "pi",
    "select-best",
    "max-score",
    "is-refusal",
    "contains-html",
    "is-html",
    "is-sql",
    "contains-sql",
    "is-xml",
    "contains-xml",
    "rouge-n",
    "bleu",
    "gleu",
    "meteor",
    "perplexity",
    "perplexity-score",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "tool-call-f1",
    "trace-span-count",
    "trace-span-duration",
    "trace-error-spans",
    "word-count",
    "guardrails",
    "assert-set",
    "skill-used",
];

/// An assertion type as written: what it is, and whether it is the `not-` form.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AssertType {
    pub negated: bool,
    pub what: AssertWhat,
}

/// What an assertion type is: one tunebench evaluates, or one it knows and cannot.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AssertWhat {
    Evaluated(AssertOp),
    /// A known promptfoo type that needs code or a model (its name).
    NotEvaluated(String),
}

impl AssertType {
    /// The type `name` writes (`not-icontains`); `Err` says it is none of promptfoo's types.
    pub fn parse(name: &str) -> Result<AssertType, String> {
        let (negated, base) = match name.strip_prefix("not-") {
            Some(base) => (true, base),
            None => (false, name),
        };
        if let Some(op) = AssertOp::ALL.into_iter().find(|op| op.name() == base) {
            return Ok(AssertType { negated, what: AssertWhat::Evaluated(op) });
        }
        let trajectory = base.starts_with("trajectory:");
        if NOT_EVALUATED.contains(&base) || trajectory {
            return Ok(AssertType { negated, what: AssertWhat::NotEvaluated(base.to_string()) });
        }
        let evaluated: Vec<&str> = AssertOp::ALL.iter().map(|op| op.name()).collect();
        Err(format!(
            "unknown assertion type {name:?}; tunebench evaluates {} (and their not- forms)",
            evaluated.join(", ")
        ))
    }

    /// The evaluated type, when it is one.
    pub fn op(&self) -> Option<AssertOp> {
        match self.what {
            AssertWhat::Evaluated(op) => Some(op),
            AssertWhat::NotEvaluated(_) => None,
        }
    }
}

impl fmt::Display for AssertType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negated {
            f.write_str("not-")?;
        }
        match &self.what {
            AssertWhat::Evaluated(op) => f.write_str(op.name()),
            AssertWhat::NotEvaluated(name) => f.write_str(name),
        }
    }
}

impl Serialize for AssertType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AssertType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AssertType, D::Error> {
        let name = String::deserialize(deserializer)?;
        AssertType::parse(&name).map_err(serde::de::Error::custom)
    }
}

/// Why an assertion of `kind` with `value` and `threshold` cannot be judged as written: a value it
/// needs and lacks, a value of the wrong shape, a regex that does not compile, a schema that is not
/// one.
pub fn check_fields(kind: &AssertType, value: Option<&Value>, threshold: Option<f64>) -> Result<(), String> {
    let Some(op) = kind.op() else { return Ok(()) };
    let name = kind.to_string();
    if op.needs_value() && value.is_none() {
        return Err(format!("a `{name}` assertion needs a `value`"));
    }
    if op.needs_threshold() && threshold.is_none() {
        return Err(format!("a `{name}` assertion needs a `threshold`"));
    }
    let value = value.unwrap_or(&Value::Null);
    match op {
        AssertOp::ContainsAll | AssertOp::ContainsAny | AssertOp::IcontainsAll | AssertOp::IcontainsAny
            if list_of(value).is_none() =>
        {
            return Err(format!("the `value` of a `{name}` assertion is a list of texts (or one text of comma-separated values), not {value}"));
        }
        AssertOp::Contains
        | AssertOp::Icontains
        | AssertOp::StartsWith
        | AssertOp::Levenshtein
        | AssertOp::FinishReason
            if text_of(value).is_none() =>
        {
            return Err(format!("the `value` of a `{name}` assertion is text or a number, not {value}"));
        }
        AssertOp::Regex => {
            let pattern = value
                .as_str()
                .ok_or_else(|| format!("the `value` of a `{name}` assertion is a pattern, not {value}"))?;
            if let Err(e) = regex::Regex::new(pattern) {
                let detail = e.to_string().lines().last().unwrap_or_default().trim().to_string();
                return Err(format!(
                    "the `value` {pattern:?} of a `{name}` assertion is not a regular expression: {detail}"
                ));
            }
        }
        AssertOp::IsJson | AssertOp::ContainsJson if !value.is_null() => {
            if let Err(e) = jsonschema::validator_for(value) {
                return Err(format!("the `value` of a `{name}` assertion is not a JSON Schema: {e}"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A value as text: a string, or a number written as text (promptfoo converts numbers).
pub fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A list of texts: a list of strings or numbers, or one text of comma-separated values.
pub fn list_of(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items.iter().map(text_of).collect(),
        Value::String(text) => Some(split_list(text)),
        _ => None,
    }
}

/// A comma-separated list as promptfoo reads one, where a value in double quotes may hold commas
/// (`"1,000",in stock`); each value trimmed, empty ones dropped.
pub fn split_list(text: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => values.push(std::mem::take(&mut current).trim().to_string()),
            c => current.push(c),
        }
    }
    values.push(current.trim().to_string());
    values.into_iter().filter(|v| !v.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_with_and_without_not() {
        for op in AssertOp::ALL {
            let plain = AssertType::parse(op.name()).expect("known");
            assert_eq!((plain.negated, plain.op()), (false, Some(op)));
            let not = AssertType::parse(&format!("not-{}", op.name())).expect("known");
            assert_eq!((not.negated, not.op()), (true, Some(op)));
            assert_eq!(not.to_string(), format!("not-{}", op.name()));
        }
    }

    #[test]
    fn code_and_model_types_are_known_but_not_evaluated() {
        let rubric = AssertType::parse("llm-rubric").expect("known");
        assert_eq!(rubric.what, AssertWhat::NotEvaluated("llm-rubric".into()));
        assert!(AssertType::parse("not-javascript").expect("known").negated);
        let error = AssertType::parse("contains-everything").expect_err("unknown");
        assert!(error.contains("\"contains-everything\"") && error.contains("icontains-any"), "{error}");
    }
}
