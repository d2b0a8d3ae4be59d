//! How one field of an item is compared, as `[eval.fields."/pointer"]` writes it: the comparator
//! (`exact`, `normalized`, `similarity`, `number`, `set`, and the graded ones `similar`, `judge`,
//! `command`) and its threshold, tolerance, embedder, rubric or program, read with the span of every
//! bad value. Applying a comparator is `eval::comparators`; the graded ones are prepared and run by
//! `eval::grade::fields` (an embedder, a judge or a program that cannot be found is an error there,
//! naming this field's line).

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::fields::{pointer, pointer_error};

/// How a field compares. Each variant carries what it needs; a new kind of comparison (a judge, a
/// command) is a new variant here and its arm in `eval::comparators`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "compare", rename_all = "snake_case", deny_unknown_fields)]
pub enum Comparator {
    /// Equal as written: strings byte for byte, numbers by value, arrays and objects member by member.
    Exact,
    /// Equal once strings are folded: Unicode NFKC, lower case, punctuation dropped, runs of white
    /// space as one space. Numbers as `[eval] tolerance` says.
    Normalized,
    /// Strings as close as `threshold` (0..=1) by normalized Levenshtein similarity of their folded
    /// forms (as `normalized` folds them); below it, the field counts its similarity.
    Similarity { threshold: f64 },
    /// Numbers within `tolerance` (default: `[eval] tolerance`); a string holding a number counts as it.
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tolerance: Option<f64>,
    },
    /// Arrays as sets: the share of elements both have (Jaccard) at least `threshold` (default 1.0:
    /// the same elements in any order); below it, the field counts that share.
    Set {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
    },
    /// Texts alike in meaning: the cosine similarity of their embeddings (from `embedder`,
    /// `openai:text-embedding-3-small`, `ollama:nomic-embed-text`; none: `eval --embedder`, else
    /// `[eval] embedder`) at least `threshold`; below it, the field counts that similarity.
    Similar {
        threshold: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        embedder: Option<String>,
    },
    /// A model (`judge`, else the eval's `--judge`) grades the answer's value against the expected
    /// one by `rubric`; it passes when the judge says so (and its score reaches `threshold`), else
    /// the field counts the judge's score.
    Judge {
        rubric: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
    },
    /// A program (an argument list, run in the prompt's folder) grades the pair, as a `command`
    /// check does: `{"pass", "score", "reason"}` on its stdout; a fail counts its score.
    Command {
        command: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<f64>,
    },
}

impl Comparator {
    /// Every comparator's name, as the file writes it.
    pub const NAMES: &'static [&'static str] =
        &["exact", "normalized", "similarity", "number", "set", "similar", "judge", "command"];

    /// The name the file writes.
    pub fn name(&self) -> &'static str {
        match self {
            Comparator::Exact => "exact",
            Comparator::Normalized => "normalized",
            Comparator::Similarity { .. } => "similarity",
            Comparator::Number { .. } => "number",
            Comparator::Set { .. } => "set",
            Comparator::Similar { .. } => "similar",
            Comparator::Judge { .. } => "judge",
            Comparator::Command { .. } => "command",
        }
    }

    /// Whether a model or a program grades it (after the answer, beside the runs) rather than the
    /// scorer itself.
    pub fn is_graded(&self) -> bool {
        matches!(self, Comparator::Similar { .. } | Comparator::Judge { .. } | Comparator::Command { .. })
    }
}

/// One `[eval.fields."/pointer"]` table as written: each value with its span.
pub(crate) type RawFieldRule = BTreeMap<String, Spanned<toml::Value>>;

/// The comparators of `[eval.fields]`, keyed by JSON Pointer (a plain name `n` is `/n`), and the span
/// of each one's table. Errors carry the span of the bad key or value and name the field.
pub(crate) fn parse_field_rules(
    raw: BTreeMap<Spanned<String>, Spanned<RawFieldRule>>,
) -> Result<FieldRulesRead, (Range<usize>, String)> {
    let mut rules = BTreeMap::new();
    let mut spans = BTreeMap::new();
    for (field, table) in raw {
        let span = field.span();
        let field = field.into_inner();
        if field.is_empty() {
            return Err((span, "`[eval.fields]` names an empty field; write a JSON Pointer such as \"/name\"".into()));
        }
        if let Some(error) = pointer_error(&pointer(&field)) {
            return Err((span, format!("`[eval.fields]`: {error}")));
        }
        let table_span = table.span();
        let comparator = parse_rule(&field, table.into_inner()).map_err(|(at, message)| {
            (at.unwrap_or_else(|| table_span.clone()), format!("`[eval.fields.{field:?}]`: {message}"))
        })?;
        if rules.insert(pointer(&field), comparator).is_some() {
            return Err((span, format!("`[eval.fields]` names {field:?} twice (as a name and as a pointer)")));
        }
        spans.insert(pointer(&field), table_span);
    }
    Ok((rules, spans))
}

/// `[eval.items]` read: how a whole paired item is graded. Only `judge` grades an item (the other
/// comparators compare values a field holds: `[eval.fields]` gives them). Errors carry the span of
/// the bad key or value (the table's when it lacks one).
pub(crate) fn parse_item_rule(table: Spanned<RawFieldRule>) -> Result<Comparator, (Range<usize>, String)> {
    let span = table.span();
    let table = table.into_inner();
    let wrong = |at: Option<Range<usize>>, message: String| {
        (at.unwrap_or_else(|| span.clone()), format!("`[eval.items]`: {message}"))
    };
    let Some(compare) = table.get("compare") else {
        return Err(wrong(None, "`compare` is missing: an item is compared by \"judge\"".to_string()));
    };
    if compare.get_ref().as_str() != Some("judge") {
        let message = format!(
            "an item is compared by \"judge\" (a rubric a model grades the whole item by), not {}; a field's comparator goes in `[eval.fields.\"/pointer\"]`",
            compare.get_ref()
        );
        return Err(wrong(Some(compare.span()), message));
    }
    parse_rule("", table).map_err(|(at, message)| wrong(at, message))
}

/// `[eval.fields]` read: the comparators and the span of each one's table, by pointer.
pub(crate) type FieldRulesRead = (BTreeMap<String, Comparator>, BTreeMap<String, Range<usize>>);

/// One field's comparator; an error's span is `None` when the table as a whole is wrong.
fn parse_rule(field: &str, mut table: RawFieldRule) -> Result<Comparator, (Option<Range<usize>>, String)> {
    let names = Comparator::NAMES.join(", ");
    let compare = table.remove("compare").ok_or_else(|| (None, format!("`compare` is missing: one of {names}")))?;
    let name = match compare.get_ref() {
        toml::Value::String(name) => name.clone(),
        other => return Err((Some(compare.span()), format!("`compare` is a string (one of {names}), not {other}"))),
    };
    let takes: &[&str] = match name.as_str() {
        "exact" | "normalized" => &[],
        "similarity" | "set" => &["threshold"],
        "number" => &["tolerance"],
        "similar" => &["threshold", "embedder"],
        "judge" => &["rubric", "judge", "threshold"],
        "command" => &["command", "timeout"],
        _ => {
            return Err((
                Some(compare.span()),
                format!("unknown comparator {name:?} for field {field:?}; the comparators are: {names}"),
            ))
        }
    };
    if let Some((other, value)) = table.iter().find(|(key, _)| !takes.contains(&key.as_str())) {
        let allowed =
            if takes.is_empty() { "nothing but `compare`".to_string() } else { format!("`{}`", takes.join("`, `")) };
        return Err((Some(value.span()), format!("the `{name}` comparator has no `{other}`; it takes {allowed}")));
    }
    let share = |key: &str| -> Result<Option<f64>, (Option<Range<usize>>, String)> {
        let Some(value) = table.get(key) else { return Ok(None) };
        match number(value.get_ref()) {
            Some(n) if (0.0..=1.0).contains(&n) => Ok(Some(n)),
            _ => Err((Some(value.span()), format!("`{key}` is a share from 0.0 to 1.0, not {}", value.get_ref()))),
        }
    };
    Ok(match name.as_str() {
        "exact" => Comparator::Exact,
        "normalized" => Comparator::Normalized,
        "similarity" => Comparator::Similarity {
            threshold: share("threshold")?.ok_or_else(|| {
                (None, "the `similarity` comparator needs a `threshold` from 0.0 to 1.0 (e.g. 0.8)".to_string())
            })?,
        },
        "set" => Comparator::Set { threshold: share("threshold")? },
        "similar" => Comparator::Similar {
            threshold: share("threshold")?.ok_or_else(|| {
                (None, "the `similar` comparator needs a `threshold` from 0.0 to 1.0 (e.g. 0.8)".to_string())
            })?,
            embedder: text(&table, "embedder", "an embedding model (`openai:text-embedding-3-small`)")?,
        },
        "judge" => Comparator::Judge {
            rubric: text(&table, "rubric", "the rubric's text")?
                .ok_or_else(|| (None, "the `judge` comparator needs a `rubric`".to_string()))?,
            judge: text(&table, "judge", "a model (`local`, `openai:gpt-4o-mini`)")?,
            threshold: share("threshold")?,
        },
        "command" => {
            let command = table.get("command").map(|value| {
                let argv: Option<Vec<String>> = value
                    .get_ref()
                    .as_array()
                    .and_then(|parts| parts.iter().map(|p| p.as_str().map(str::to_string)).collect());
                argv.filter(|argv| argv.first().is_some_and(|program| !program.trim().is_empty())).ok_or_else(|| {
                    let shown = value.get_ref();
                    (Some(value.span()), format!("`command` is a list of strings, the program first (`[\"python3\", \"check.py\"]`; never a shell line), not {shown}"))
                })
            });
            let command =
                command.transpose()?.ok_or_else(|| (None, "the `command` comparator needs a `command`".to_string()))?;
            let timeout = match table.get("timeout") {
                None => None,
                Some(value) => match number(value.get_ref()) {
                    Some(n) if n.is_finite() && n > 0.0 && n <= 3600.0 => Some(n),
                    _ => {
                        let bad = value.get_ref();
                        return Err((
                            Some(value.span()),
                            format!("`timeout` is a number of seconds above 0, at most 3600, not {bad}"),
                        ));
                    }
                },
            };
            Comparator::Command { command, timeout }
        }
        _ => {
            let tolerance = match table.get("tolerance") {
                None => None,
                Some(value) => match number(value.get_ref()) {
                    Some(n) if n.is_finite() && n >= 0.0 => Some(n),
                    _ => {
                        let bad = value.get_ref();
                        return Err((Some(value.span()), format!("`tolerance` is a number 0 or more, not {bad}")));
                    }
                },
            };
            Comparator::Number { tolerance }
        }
    })
}

/// The non-blank string at `key`, if there is one; `Err` when it is something else.
fn text(table: &RawFieldRule, key: &str, what: &str) -> Result<Option<String>, (Option<Range<usize>>, String)> {
    match table.get(key) {
        None => Ok(None),
        Some(value) => match value.get_ref() {
            toml::Value::String(text) if !text.trim().is_empty() => Ok(Some(text.trim().to_string())),
            other => Err((Some(value.span()), format!("`{key}` is {what}, not {other}"))),
        },
    }
}

/// A TOML number as a float.
fn number(value: &toml::Value) -> Option<f64> {
    match value {
        toml::Value::Float(f) => Some(*f),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}
