//! One field of a paired item compared: under its `[eval.fields]` comparator when it has one, else as
//! `exact` and `tolerance` say (`values::Comparison`, 0 or 1). A field that meets its comparator
//! scores 1; one that falls short scores its similarity (`similarity`: the strings' ratio, `set`: the
//! share of elements both have), the partial credit field accuracy adds up, and says why in its
//! difference row (`similarity 0.82 < 0.90`). Also the string similarity fuzzy pairing weighs keys by.
//!
//! The graded comparators (`similar`, `judge`, `command`) are not computed here: their verdicts are
//! graded beside the runs (`eval::grade::fields`) and looked up by the pair they judged; pairing
//! items weighs them as nothing (so the pairs the graders were asked about are the pairs scored),
//! and a pair with no verdict (the grader failed) is an error of the cell, never a pass.
//!
//! Similarity is normalized Levenshtein (`strsim`): 1 − edits / the longer length, over the texts
//! folded as `normalized` folds them. Chosen over Jaro-Winkler, which rewards a shared beginning and
//! scores short unrelated words high, and over bigram Dice, which ignores where words are: an edit
//! ratio reads plainly ("one character in ten differs" is 0.9) and is promptfoo's `levenshtein` too.

use std::collections::BTreeMap;

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::values::Comparison;
use crate::prompt::expect::{Comparator, EvalSettings};

/// How a field compared.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldScore {
    /// 1 when it agrees; below, the partial credit (0 for a comparator that is all or nothing).
    pub score: f64,
    pub agrees: bool,
    /// Why it fell short, when a comparator says more than expected/got (`similarity 0.82 < 0.90`).
    pub note: Option<String>,
    /// Why a graded comparator gave no verdict (its grader failed, or it was not graded): the cell
    /// is an error.
    pub error: Option<String>,
}

impl FieldScore {
    fn all_or_nothing(agrees: bool) -> FieldScore {
        FieldScore { score: if agrees { 1.0 } else { 0.0 }, agrees, note: None, error: None }
    }
}

/// A graded comparator's verdict on one pair (as its grader answered: promptfoo's shape).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldVerdict {
    pub pass: bool,
    /// 0..=1.
    pub score: f64,
    pub reason: Option<String>,
}

/// The graded comparators' verdicts of one cell, by [`pair_key`]; `Err` is why a grader gave none.
pub type FieldGrades = std::collections::HashMap<String, Result<FieldVerdict, String>>;

/// The key a field's verdict is kept under: its pointer and the two values it compared.
pub fn pair_key(pointer: &str, expected: &Value, got: &Value) -> String {
    format!("{pointer}\n{expected}\n{got}")
}

/// A field of a paired item that a graded comparator (`similar`, `judge`, `command`) compares: what
/// its grader is asked about (`pointer` within the items, the two values, the two items).
#[derive(Clone, Debug, PartialEq)]
pub struct GradedPair {
    pub pointer: String,
    pub expected: Value,
    pub got: Value,
    pub expected_item: Value,
    pub got_item: Value,
}

/// The comparators of one prompt's `[eval]`, over its default comparison.
#[derive(Clone, Copy, Debug)]
pub struct FieldRules<'a> {
    pub comparison: Comparison,
    pub rules: &'a BTreeMap<String, Comparator>,
    /// The graded comparators' verdicts (`None`: weighing pairs, where they count nothing).
    pub graded: Option<&'a FieldGrades>,
}

impl<'a> FieldRules<'a> {
    /// The rules `settings` write.
    pub fn of(settings: &'a EvalSettings) -> FieldRules<'a> {
        FieldRules {
            comparison: Comparison { exact: settings.exact(), tolerance: settings.tolerance() },
            rules: &settings.fields,
            graded: None,
        }
    }

    /// These rules with the graded comparators' verdicts `graded`.
    pub fn with_grades(self, graded: &'a FieldGrades) -> FieldRules<'a> {
        FieldRules { graded: Some(graded), ..self }
    }

    /// The field at `pointer` (`expected` and `got` its values, null when missing) compared.
    pub fn compare(&self, pointer: &str, expected: &Value, got: &Value) -> FieldScore {
        if let Some(rule) = self.rules.get(pointer) {
            return self.apply(pointer, rule, expected, got);
        }
        let inside = format!("{pointer}/");
        let nested = self.rules.keys().any(|p| p.starts_with(&inside));
        match (expected, got) {
            (Value::Object(want), Value::Object(have)) if nested => {
                let escape = |name: &str| name.replace('~', "~0").replace('/', "~1");
                let null = Value::Null;
                let mut scores: Vec<(String, FieldScore)> = want
                    .iter()
                    .map(|(name, value)| {
                        let at = format!("{inside}{}", escape(name));
                        let score = self.compare(&at, value, have.get(name).unwrap_or(&null));
                        (at, score)
                    })
                    .collect();
                // A member only the answer has, not null, disagrees (as the default comparison says).
                scores.extend(
                    have.iter()
                        .filter(|(name, value)| !want.contains_key(*name) && !value.is_null())
                        .map(|(name, _)| (format!("{inside}{}", escape(name)), FieldScore::all_or_nothing(false))),
                );
                let agrees = scores.iter().all(|(_, s)| s.agrees);
                let score =
                    if agrees { 1.0 } else { scores.iter().map(|(_, s)| s.score).sum::<f64>() / scores.len() as f64 };
                let note = scores
                    .iter()
                    .find(|(_, s)| !s.agrees)
                    .and_then(|(at, s)| s.note.as_ref().map(|note| format!("{at}: {note}")));
                let error = scores.iter().find_map(|(at, s)| s.error.as_ref().map(|why| format!("{at}: {why}")));
                FieldScore { score, agrees, note, error }
            }
            _ => FieldScore::all_or_nothing(self.comparison.agree(expected, got)),
        }
    }

    fn apply(&self, pointer: &str, rule: &Comparator, expected: &Value, got: &Value) -> FieldScore {
        match rule {
            Comparator::Similar { .. } | Comparator::Judge { .. } | Comparator::Command { .. } => {
                let Some(graded) = self.graded else { return FieldScore::all_or_nothing(false) };
                let why = match graded.get(&pair_key(pointer, expected, got)) {
                    Some(Ok(detail)) => {
                        let note = (!detail.pass).then(|| match &detail.reason {
                            // The embedder's grader says it as `similar 0.71 < 0.80`.
                            Some(reason) if matches!(rule, Comparator::Similar { .. }) => reason.clone(),
                            Some(reason) => format!("{} {:.2}: {reason}", rule.name(), detail.score),
                            None => format!("{} {:.2}", rule.name(), detail.score),
                        });
                        let score = if detail.pass { 1.0 } else { detail.score };
                        return FieldScore { score, agrees: detail.pass, note, error: None };
                    }
                    Some(Err(why)) => why.clone(),
                    None => "not graded".to_string(),
                };
                let note = Some(format!("{} gave no verdict: {why}", rule.name()));
                FieldScore { score: 0.0, agrees: false, note, error: Some(format!("`{}`: {why}", rule.name())) }
            }
            Comparator::Exact => {
                FieldScore::all_or_nothing(Comparison { exact: true, tolerance: 0.0 }.agree(expected, got))
            }
            Comparator::Normalized => FieldScore::all_or_nothing(folded(expected) == folded(got)),
            Comparator::Similarity { threshold } => {
                let ratio = match (text_of(expected), text_of(got)) {
                    (Some(a), Some(b)) => similarity(&a, &b),
                    _ => f64::from(u8::from(self.comparison.agree(expected, got))),
                };
                let agrees = ratio >= *threshold;
                let note = (!agrees).then(|| format!("similarity {ratio:.2} < {threshold:.2}"));
                FieldScore { score: if agrees { 1.0 } else { ratio }, agrees, note, error: None }
            }
            Comparator::Number { tolerance } => {
                let tolerance = tolerance.unwrap_or(self.comparison.tolerance);
                let agrees = match (number_of(expected), number_of(got)) {
                    (Some(a), Some(b)) => a == b || (a - b).abs() <= tolerance,
                    _ => self.comparison.agree(expected, got),
                };
                FieldScore::all_or_nothing(agrees)
            }
            Comparator::Set { threshold } => {
                let (Value::Array(want), Value::Array(have)) = (expected, got) else {
                    return FieldScore::all_or_nothing(self.comparison.agree(expected, got));
                };
                let canonical = |v: &Value| self.comparison.key_text(&[v]);
                let want: std::collections::BTreeSet<String> = want.iter().map(canonical).collect();
                let have: std::collections::BTreeSet<String> = have.iter().map(canonical).collect();
                let union = want.union(&have).count();
                let shared = want.intersection(&have).count();
                let share = if union == 0 { 1.0 } else { shared as f64 / union as f64 };
                let threshold = threshold.unwrap_or(1.0);
                let agrees = share >= threshold;
                let note = (!agrees).then(|| {
                    format!("as sets {share:.2} < {threshold:.2} ({shared} of {union} elements on both sides)")
                });
                FieldScore { score: if agrees { 1.0 } else { share }, agrees, note, error: None }
            }
        }
    }
}

/// A string as `normalized` compares it: Unicode NFKC, lower case, punctuation and symbols dropped,
/// runs of white space as one space, trimmed.
pub fn fold(text: &str) -> String {
    let kept: String =
        text.nfkc().flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric() || c.is_whitespace()).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How alike two strings are, 0 to 1: normalized Levenshtein over their folded forms.
pub fn similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_levenshtein(&fold(a), &fold(b))
}

/// A value with every string folded (for `normalized`), numbers by value.
fn folded(value: &Value) -> String {
    match value {
        Value::String(s) => Comparison { exact: true, tolerance: 0.0 }.key_text(&[&Value::String(fold(s))]),
        Value::Array(items) => format!("[{}]", items.iter().map(folded).collect::<Vec<_>>().join(",")),
        Value::Object(members) => {
            let mut members: Vec<String> =
                members.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| format!("{k:?}:{}", folded(v))).collect();
            members.sort();
            format!("{{{}}}", members.join(","))
        }
        other => Comparison::default().key_text(&[other]),
    }
}

/// A scalar as text for `similarity` (a string as it is, a number or boolean as JSON writes it).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A number, or a string that holds one (`" 12.50 "`).
fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
