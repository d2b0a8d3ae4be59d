//! Reading `[cases.expected]`, `[[checks]]` / `[[cases.checks]]` and `[eval]` from the prompt file's
//! TOML, with their places; every mistake is an error at the span of the bad field, naming it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Number, Value};
use toml::Spanned;

use super::check::{CheckKind, CheckSpec, Need};
use super::compare::{parse_field_rules, parse_item_rule, RawFieldRule};
use super::fields::{pointer, pointer_error, Fields};
use super::AssertType;
use super::{At, EvalSettings, Expected, Places};

/// A mistake and the span of the field it is in (`0..0`: the table's).
pub(crate) type ParseError = (Range<usize>, String);

/// A check table as written: every field with its span.
pub(crate) type RawCheck = Spanned<BTreeMap<String, Spanned<FieldValue>>>;

/// A check field's value as written. JSON holds no `inf` or `nan` (read into JSON they would be
/// null), so a TOML float that is not finite is kept apart, and the check says what is wrong.
#[derive(Clone, Debug)]
pub(crate) enum FieldValue {
    Json(Value),
    /// `inf`, `-inf` or `nan` (as TOML writes it), the whole value (`nested` false) or inside it.
    NotFinite {
        text: &'static str,
        nested: bool,
    },
}

impl<'de> Deserialize<'de> for FieldValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FieldValue, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        if let toml::Value::Float(number) = value {
            if let Some(text) = not_finite(number) {
                return Ok(FieldValue::NotFinite { text, nested: false });
            }
        }
        if let Some(text) = first_not_finite(&value) {
            return Ok(FieldValue::NotFinite { text, nested: true });
        }
        serde_json::to_value(&value).map(FieldValue::Json).map_err(serde::de::Error::custom)
    }
}

/// How TOML writes `number` when it is not finite.
fn not_finite(number: f64) -> Option<&'static str> {
    match number {
        n if n.is_nan() => Some("nan"),
        n if n == f64::INFINITY => Some("inf"),
        n if n == f64::NEG_INFINITY => Some("-inf"),
        _ => None,
    }
}

/// The first float that is not finite anywhere in `value`.
fn first_not_finite(value: &toml::Value) -> Option<&'static str> {
    match value {
        toml::Value::Float(number) => not_finite(*number),
        toml::Value::Array(values) => values.iter().find_map(first_not_finite),
        toml::Value::Table(table) => table.values().find_map(first_not_finite),
        _ => None,
    }
}

/// `[cases.expected]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpected {
    #[serde(rename = "match")]
    match_on: Option<Spanned<Fields>>,
    expected_file: Option<Spanned<PathBuf>>,
    value: Option<Spanned<Value>>,
    items: Option<Vec<Spanned<Value>>>,
    left_out: Option<Vec<String>>,
}

/// `[eval]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEval {
    #[serde(rename = "match")]
    match_on: Option<Spanned<Fields>>,
    pass_f1: Option<Spanned<f64>>,
    pass_fields: Option<Spanned<f64>>,
    compare_fields: Option<Spanned<Vec<String>>>,
    ignore_fields: Option<Spanned<Vec<String>>>,
    tolerance: Option<Spanned<f64>>,
    exact: Option<bool>,
    match_similarity: Option<Spanned<f64>>,
    fields: Option<BTreeMap<Spanned<String>, Spanned<RawFieldRule>>>,
    items: Option<Spanned<RawFieldRule>>,
    embedder: Option<Spanned<String>>,
    verdicts: Option<super::Verdicts>,
    parsed_output: Option<bool>,
}

/// A check from its fields (name, value, span) and the place of its table.
pub(crate) fn parse_check(fields: Vec<(String, FieldValue, Range<usize>)>, at: At) -> Result<CheckSpec, ParseError> {
    let mut not_finite = None;
    let mut fields: BTreeMap<String, (Value, Range<usize>)> = fields
        .into_iter()
        .map(|(name, value, span)| match value {
            FieldValue::Json(value) => (name, (value, span)),
            FieldValue::NotFinite { text, nested } => {
                not_finite.get_or_insert((name.clone(), text, nested, span.clone()));
                (name, (Value::String(text.to_string()), span))
            }
        })
        .collect();
    let kinds = || CheckKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    let kind = match fields.remove("kind") {
        None => return Err((0..0, format!("a check needs a `kind`: one of {}", kinds()))),
        Some((Value::String(name), span)) => CheckKind::from_name(&name)
            .ok_or_else(|| (span, format!("unknown check kind {name:?}; the kinds are: {}", kinds())))?,
        Some((other, span)) => return Err((span, format!("`kind` is a string (one of {}), not {other}", kinds()))),
    };
    let (allowed, need) = kind.fields();
    let what = kind.name();
    if let Some((name, (_, span))) =
        fields.iter().find(|(name, _)| *name != "name" && !allowed.contains(&name.as_str()))
    {
        let takes = if allowed.is_empty() { "no fields but `name`".to_string() } else { allowed.join(", ") };
        return Err((span.clone(), format!("a `{what}` check has no field `{name}`; it takes: {takes}")));
    }
    if let Some((name, text, nested, span)) = not_finite {
        let needed = match name.as_str() {
            "min" | "max" if kind != CheckKind::Range => "a whole number, 0 or more,",
            _ => "a finite number",
        };
        let is = if nested { "holds" } else { "is" };
        return Err((span, format!("`{name}` of a `{what}` check {is} {text}: {needed} is needed")));
    }
    match need {
        Need::All(needed) => {
            if let Some(missing) = needed.iter().find(|n| !fields.contains_key(**n)) {
                return Err((0..0, format!("a `{what}` check needs `{missing}`")));
            }
        }
        Need::Any(any) => {
            if !any.iter().any(|n| fields.contains_key(*n)) {
                return Err((0..0, format!("a `{what}` check needs `{}`", any.join("` or `"))));
            }
        }
    }
    let mut check = CheckSpec::new(kind);
    check.at = at;
    for (name, (value, span)) in fields {
        let wrong = |expected: &str| (span.clone(), format!("`{name}` of a `{what}` check is {expected}, not {value}"));
        match name.as_str() {
            "name" => check.name = Some(value.as_str().ok_or_else(|| wrong("a string"))?.to_string()),
            "path" => {
                let path = value.as_str().ok_or_else(|| wrong("a JSON Pointer string"))?;
                if let Some(error) = pointer_error(path) {
                    return Err((span, format!("`path` of a `{what}` check: {error}")));
                }
                check.path = Some(path.to_string());
            }
            "each" => check.each = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?),
            "exact" => check.exact = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?),
            "pattern" => {
                let pattern = value.as_str().ok_or_else(|| wrong("a string"))?;
                if let Err(e) = regex::Regex::new(pattern) {
                    let detail = e.to_string().lines().last().unwrap_or_default().trim().to_string();
                    return Err((span, format!("`pattern` {pattern:?} is not a regular expression: {detail}")));
                }
                check.pattern = Some(pattern.to_string());
            }
            "min" | "max" => {
                let number = bound(kind, &value).ok_or_else(|| {
                    wrong(if kind == CheckKind::Range { "a number" } else { "a whole number, 0 or more" })
                })?;
                if name == "min" {
                    check.min = Some(number);
                } else {
                    check.max = Some(number);
                }
            }
            "value" => check.value = Some(value),
            "type" => {
                let name = value.as_str().ok_or_else(|| wrong("a promptfoo assertion type"))?;
                check.assert = Some(AssertType::parse(name).map_err(|message| (span.clone(), message))?);
            }
            "threshold" | "weight" => {
                let number = value
                    .as_f64()
                    .filter(|n| n.is_finite() && *n >= 0.0)
                    .ok_or_else(|| wrong("a number, 0 or more"))?;
                if name == "threshold" {
                    check.threshold = Some(number);
                } else {
                    check.weight = Some(number);
                }
            }
            "command" => {
                let argv: Option<Vec<String>> =
                    value.as_array().and_then(|parts| parts.iter().map(|p| p.as_str().map(str::to_string)).collect());
                match argv {
                    Some(argv) if argv.first().is_some_and(|program| !program.trim().is_empty()) => {
                        check.command = Some(argv)
                    }
                    _ => {
                        return Err(wrong(
                            "a list of strings, the program first (`[\"python3\", \"check.py\"]`; never a shell line)",
                        ))
                    }
                }
            }
            "timeout" => {
                let seconds = value
                    .as_f64()
                    .filter(|n| n.is_finite() && *n > 0.0 && *n <= 3600.0)
                    .ok_or_else(|| wrong("a number of seconds above 0, at most 3600"))?;
                check.timeout = Some(seconds);
            }
            "rubric" => match value.as_str() {
                Some(rubric) if !rubric.trim().is_empty() => check.rubric = Some(rubric.to_string()),
                _ => return Err(wrong("the rubric's text")),
            },
            "judge" => match value.as_str() {
                Some(model) if !model.trim().is_empty() => check.judge = Some(model.trim().to_string()),
                _ => return Err(wrong("a model (`local`, `openai:gpt-4o-mini`)")),
            },
            "embedder" => match value.as_str() {
                Some(model) if !model.trim().is_empty() => check.embedder = Some(model.trim().to_string()),
                _ => return Err(wrong("an embedding model (`openai:text-embedding-3-small`)")),
            },
            "transform" => {
                let codes: Option<Vec<String>> = match &value {
                    Value::String(code) => Some(vec![code.clone()]),
                    Value::Array(codes) => codes.iter().map(|c| c.as_str().map(str::to_string)).collect(),
                    _ => None,
                };
                match codes {
                    Some(codes) if !codes.is_empty() && codes.iter().all(|c| !c.trim().is_empty()) => {
                        check.transform = Some(codes)
                    }
                    _ => return Err(wrong("JavaScript (`JSON.parse(output)`), or a list of it run in turn")),
                }
            }
            "base_url" => match value.as_str() {
                Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                    check.base_url = Some(url.trim().to_string())
                }
                _ => return Err(wrong("a server's URL (`http://127.0.0.1:8080/v1`)")),
            },
            "key_env" => match value.as_str() {
                Some(name) if crate::names::is_env_name(name) => check.key_env = Some(name.to_string()),
                _ => return Err(wrong("the name of an environment variable")),
            },
            "values" => match value {
                Value::Array(values) if !values.is_empty() => check.values = Some(values),
                _ => return Err(wrong("a list of one or more values")),
            },
            _ => {}
        }
    }
    if let Some(assert) = &check.assert {
        super::assert::check_fields(assert, check.value.as_ref(), check.threshold)
            .map_err(|message| (0..0, message))?;
    }
    if let (Some(min), Some(max)) =
        (check.min.as_ref().and_then(Number::as_f64), check.max.as_ref().and_then(Number::as_f64))
    {
        if min > max {
            return Err((0..0, format!("a `{what}` check has `min` {min} above `max` {max}")));
        }
    }
    Ok(check)
}

/// A bound of `kind`: any finite number for `range`, a whole number 0 or more for the others.
fn bound(kind: CheckKind, value: &Value) -> Option<Number> {
    let Value::Number(number) = value else { return None };
    match kind {
        CheckKind::Range => number.as_f64().filter(|n| n.is_finite()).map(|_| number.clone()),
        _ => number.as_u64().map(Number::from),
    }
}

/// `[cases.expected]`: exactly one of items, value and expected_file; `locate` turns a span into a place.
pub(crate) fn parse_expected(
    raw: Spanned<RawExpected>,
    locate: &dyn Fn(Range<usize>) -> At,
) -> Result<Expected, ParseError> {
    let table = raw.span();
    let raw = raw.into_inner();
    let set: Vec<&str> = [
        raw.items.as_ref().map(|_| "items"),
        raw.value.as_ref().map(|_| "value"),
        raw.expected_file.as_ref().map(|_| "expected_file"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match set.as_slice() {
        [] => return Err((table, "`[cases.expected]` needs one of `items`, `value` or `expected_file`".into())),
        [_] => {}
        [first, second, ..] => {
            return Err((table, format!("`[cases.expected]` has both `{first}` and `{second}`; it takes one of them")))
        }
    }
    if let Some(file) = &raw.expected_file {
        if let Some(message) = crate::prompt::file::named::refused_as_written("expected_file", file.get_ref()) {
            return Err((file.span(), message));
        }
    }
    let match_on = match raw.match_on {
        Some(spanned) => Some(check_fields("match", spanned)?),
        None => None,
    };
    // TOML has no null: a field's `{ null = true }` is JSON's null.
    let mut item_at = Vec::new();
    let items = match raw.items {
        Some(items) => {
            let mut read = Vec::with_capacity(items.len());
            for item in items {
                let span = item.span();
                item_at.push(locate(span.clone()));
                read.push(super::null::read(item.into_inner()).map_err(|message| (span, message))?);
            }
            Some(read)
        }
        None => None,
    };
    let value = match raw.value {
        Some(value) => {
            let span = value.span();
            item_at.push(locate(span.clone()));
            Some(super::null::read(value.into_inner()).map_err(|message| (span, message))?)
        }
        None => None,
    };
    Ok(Expected {
        match_on,
        expected_file: raw.expected_file.map(Spanned::into_inner),
        value,
        items,
        left_out: raw.left_out.unwrap_or_default(),
        at: locate(table),
        item_at: Places(item_at),
    })
}

/// `[eval]`: thresholds within 0..=1, a tolerance of 0 or more, one of compare_fields and ignore_fields,
/// each `[eval.fields]` comparator known and its threshold within 0..=1.
pub(crate) fn parse_eval(
    raw: Spanned<RawEval>,
    locate: &dyn Fn(Range<usize>) -> At,
) -> Result<EvalSettings, ParseError> {
    let table = raw.span();
    let raw = raw.into_inner();
    let share = |name: &str, spanned: Option<Spanned<f64>>| -> Result<Option<f64>, ParseError> {
        match spanned {
            Some(s) if !(0.0..=1.0).contains(s.get_ref()) => {
                Err((s.span(), format!("`{name}` is a share from 0.0 to 1.0, not {}", s.get_ref())))
            }
            other => Ok(other.map(Spanned::into_inner)),
        }
    };
    let pass_f1 = share("pass_f1", raw.pass_f1)?;
    let pass_fields = share("pass_fields", raw.pass_fields)?;
    let match_similarity = match raw.match_similarity {
        Some(s) if !(*s.get_ref() > 0.0 && *s.get_ref() <= 1.0) => {
            return Err((s.span(), format!("`match_similarity` is a share above 0.0, up to 1.0, not {}", s.get_ref())))
        }
        other => other.map(Spanned::into_inner),
    };
    let (fields, field_spans) = raw.fields.map(parse_field_rules).transpose()?.unwrap_or_default();
    let items_at = raw.items.as_ref().map(|table| locate(table.span())).unwrap_or_default();
    let items = raw.items.map(parse_item_rule).transpose()?;
    let embedder_at = raw.embedder.as_ref().map(|e| locate(e.span())).unwrap_or_default();
    let embedder = match raw.embedder {
        Some(e) if e.get_ref().trim().is_empty() => {
            return Err((e.span(), "`embedder` is PROVIDER:MODEL (`openai:text-embedding-3-small`), not empty".into()))
        }
        other => other.map(|e| e.into_inner().trim().to_string()),
    };
    let tolerance = match raw.tolerance {
        Some(t) if !t.get_ref().is_finite() || *t.get_ref() < 0.0 => {
            return Err((t.span(), format!("`tolerance` is a number 0 or more, not {}", t.get_ref())))
        }
        other => other.map(Spanned::into_inner),
    };
    if let (Some(_), Some(ignore)) = (&raw.compare_fields, &raw.ignore_fields) {
        return Err((
            ignore.span(),
            "`[eval]` has both `compare_fields` and `ignore_fields`; it takes one of them".into(),
        ));
    }
    if let (Some(ignore), Some(ruled)) = (
        &raw.ignore_fields,
        fields
            .keys()
            .find(|f| raw.ignore_fields.as_ref().is_some_and(|i| i.get_ref().iter().any(|name| pointer(name) == **f))),
    ) {
        return Err((
            ignore.span(),
            format!("`ignore_fields` names {ruled:?}, which `[eval.fields]` gives a comparator; drop one of them"),
        ));
    }
    let list = |name: &str, spanned: Spanned<Vec<String>>| check_fields(name, spanned.map_fields()).map(|f| f.0);
    Ok(EvalSettings {
        match_on: raw.match_on.map(|m| check_fields("match", m)).transpose()?,
        pass_f1,
        pass_fields,
        compare_fields: raw.compare_fields.map(|c| list("compare_fields", c)).transpose()?,
        ignore_fields: raw.ignore_fields.map(|i| list("ignore_fields", i)).transpose()?.unwrap_or_default(),
        tolerance,
        exact: raw.exact,
        match_similarity,
        fields,
        field_at: field_spans.into_iter().map(|(field, span)| (field, locate(span))).collect(),
        items,
        items_at,
        embedder,
        embedder_at,
        verdicts: raw.verdicts,
        parsed_output: raw.parsed_output,
        at: locate(table),
    })
}

/// A list of fields, each a name or a valid JSON Pointer.
fn check_fields(name: &str, spanned: Spanned<Fields>) -> Result<Fields, ParseError> {
    let span = spanned.span();
    let fields = spanned.into_inner();
    for field in &fields.0 {
        if field.starts_with('/') {
            if let Some(error) = pointer_error(field) {
                return Err((span, format!("`{name}`: {error}")));
            }
        } else if field.is_empty() {
            return Err((span, format!("`{name}` names an empty field")));
        }
    }
    Ok(fields)
}

/// A spanned list of strings as a spanned [`Fields`].
trait MapFields {
    fn map_fields(self) -> Spanned<Fields>;
}

impl MapFields for Spanned<Vec<String>> {
    fn map_fields(self) -> Spanned<Fields> {
        let span = self.span();
        Spanned::new(span, Fields(self.into_inner()))
    }
}
