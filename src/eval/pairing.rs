//! Answer items paired with expected items on the key (order does not matter), then scored:
//! precision = paired / answer items, recall = paired / expected items, F1 from both; field
//! accuracy over paired items; a difference row for every missing item, extra item and field that
//! disagrees.
//!
//! An answer with no items has precision 1 (it said nothing wrong); no expected items, recall 1
//! (nothing was missed); so an empty answer to an empty expectation scores F1 1, and either side
//! empty against a non-empty other scores F1 0. Items with the same key pair so that the pairs agree
//! on the most fields in all, whatever order either side came in (`assign`: exact up to a group
//! size, then a documented greedy that is still order-independent).
//!
//! With `[eval.items] compare = "judge"`, a judge grades each pair whole (graded beside the runs,
//! looked up here as a graded field is): its score is the pair's credit in precision and recall (1
//! when it passes), and an item it does not pass has a difference row with its score and reason.
//!
//! With `[eval] match_similarity`, the items left unpaired then pair by key similarity (`fuzzy`):
//! such a pair counts its similarity, not 1, in precision and recall (partial credit), and its
//! difference row says how close the keys were.
//!
//! Fields compared: `compare_fields` when set (those present in the expected item), else every
//! top-level field of the expected item but the key's and `ignore_fields` (an expected value that is
//! not an object, such as a text answer's text, is compared whole); and every field `[eval.fields]`
//! gives a comparator. An answer that lacks a field the expected item has disagrees on it; a field
//! only the answer has is not compared. Each field scores 0 to 1 (`comparators`): field accuracy is
//! their mean.

mod assign;
mod fuzzy;

use std::collections::HashMap;

use serde_json::Value;

use super::comparators::{pair_key, FieldGrades, FieldRules, GradedPair};
use super::grade::fields::WHOLE_ITEM;
use super::score::{Difference, ItemScores};
use super::values::{at, quote, Comparison};
use crate::prompt::expect::resolve::PairKey;
use crate::prompt::expect::{pointer, Comparator, EvalSettings};

/// Longest key a difference row quotes.
const KEY_WIDTH: usize = 80;

/// `answer` scored against `expected`, paired on `key` (a graded comparator's field, with no verdict
/// here, shows as not graded).
pub fn score_items(
    expected: &[&Value],
    answer: &[Value],
    key: &PairKey,
    settings: &EvalSettings,
) -> (ItemScores, Vec<Difference>) {
    let (scores, differences, _) = score_items_graded(expected, answer, key, settings, &FieldGrades::default());
    (scores, differences)
}

/// The fields graded comparators compare in the pairs [`score_items_graded`] makes (the same pairs:
/// graded fields weigh nothing in pairing, so their verdicts cannot move it).
pub fn graded_pairs(expected: &[&Value], answer: &[Value], key: &PairKey, settings: &EvalSettings) -> Vec<GradedPair> {
    let graded: Vec<&String> = settings.fields.iter().filter(|(_, rule)| rule.is_graded()).map(|(p, _)| p).collect();
    if graded.is_empty() && settings.items.is_none() {
        return Vec::new();
    }
    let paired = pair(expected, answer, key, settings);
    let mut pairs = Vec::new();
    for (e, item) in expected.iter().enumerate() {
        let Some(got_item) = paired.with[e].and_then(|a| answer.get(a)) else { continue };
        if settings.items.is_some() {
            // `[eval.items]`: the whole answered item against the whole expected item.
            pairs.push(GradedPair {
                pointer: WHOLE_ITEM.to_string(),
                expected: (*item).clone(),
                got: got_item.clone(),
                expected_item: (*item).clone(),
                got_item: got_item.clone(),
            });
        }
        for field in &paired.fields[e] {
            for pointer in graded.iter().filter(|p| **p == field || p.starts_with(&format!("{field}/"))) {
                let Some(want) = item.pointer(pointer).filter(|v| !v.is_null()) else { continue };
                pairs.push(GradedPair {
                    pointer: (*pointer).clone(),
                    expected: want.clone(),
                    got: got_item.pointer(pointer).cloned().unwrap_or(Value::Null),
                    expected_item: (*item).clone(),
                    got_item: got_item.clone(),
                });
            }
        }
    }
    pairs
}

/// How the items paired: each expected item's answer item, how alike a fuzzy pair's keys are, and
/// each expected item's compared fields.
struct Paired {
    with: Vec<Option<usize>>,
    fuzzy: Vec<Option<f64>>,
    fields: Vec<Vec<String>>,
}

/// [`score_items`] with the graded comparators' verdicts `grades`; the third part lists the graded
/// fields that have no verdict (their grader failed): the cell is an error.
pub fn score_items_graded(
    expected: &[&Value],
    answer: &[Value],
    key: &PairKey,
    settings: &EvalSettings,
    grades: &FieldGrades,
) -> (ItemScores, Vec<Difference>, Vec<String>) {
    let rules = FieldRules::of(settings).with_grades(grades);
    let Paired { with: paired_with, fuzzy: fuzzy_similarity, fields } = pair(expected, answer, key, settings);
    let mut taken = vec![false; answer.len()];
    for a in paired_with.iter().flatten() {
        taken[*a] = true;
    }
    let mut ungraded = Vec::new();
    let paired = paired_with.iter().flatten().count();
    let mut differences = Vec::new();
    // `[eval.items]`' verdict on each pair: a judged item's credit is its score (1 when it passes).
    let judged: Vec<f64> = (0..expected.len())
        .map(|e| match (paired_with[e], &settings.items) {
            (Some(a), Some(rule)) => {
                let (credit, difference, error) = item_verdict(rule, expected[e], &answer[a], grades);
                if let Some(why) = error {
                    ungraded.push(format!("{} (the whole item): {why}", display_key(expected[e], key)));
                }
                if let Some((score, note)) = difference {
                    let (key, got_key) = (display_key(expected[e], key), display_key(&answer[a], key));
                    differences.push(Difference::Item { key, got_key, score, note });
                }
                credit
            }
            _ => 1.0,
        })
        .collect();
    // An exact pair counts 1 in precision and recall, a pair by similarity its similarity (times
    // its item judge's credit).
    let credit: f64 = (0..expected.len())
        .filter(|e| paired_with[*e].is_some())
        .map(|e| fuzzy_similarity[e].unwrap_or(1.0) * judged[e])
        // Not `sum()`: a float sum of nothing is -0.0, and an F1 of it prints "-0.00".
        .fold(0.0, |sum, credit| sum + credit);
    let (mut compared, mut agreeing) = (0usize, 0.0f64);
    for (e, item) in expected.iter().enumerate() {
        let Some(a) = paired_with[e] else {
            differences.push(Difference::Missing { key: display_key(item, key), expected: (*item).clone() });
            continue;
        };
        let got = &answer[a];
        if let Some(similarity) = fuzzy_similarity[e] {
            differences.push(Difference::Fuzzy {
                key: display_key(item, key),
                got_key: display_key(got, key),
                similarity,
            });
        }
        for field in fields[e].iter().cloned() {
            let (want, have) = (at(item, &field), at(got, &field));
            compared += 1;
            let scored = rules.compare(&field, want, have);
            agreeing += scored.score;
            if let Some(why) = &scored.error {
                ungraded.push(format!("{} {field}: {why}", display_key(item, key)));
            }
            if !scored.agrees {
                differences.push(Difference::Field {
                    key: display_key(item, key),
                    field,
                    expected: want.clone(),
                    got: have.clone(),
                    score: (scored.score > 0.0).then_some(scored.score),
                    note: scored.note,
                });
            }
        }
    }
    for (a, item) in answer.iter().enumerate() {
        if !taken[a] {
            differences.push(Difference::Extra { key: display_key(item, key), got: item.clone() });
        }
    }
    let share = |part: f64, whole: usize, empty: f64| if whole == 0 { empty } else { part / whole as f64 };
    let precision = share(credit, answer.len(), 1.0);
    let recall = share(credit, expected.len(), 1.0);
    let f1 = if precision + recall == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    let scores = ItemScores {
        answer_items: answer.len(),
        expected_items: expected.len(),
        paired,
        fuzzy: fuzzy_similarity.iter().flatten().count(),
        precision,
        recall,
        f1,
        field_accuracy: share(agreeing, compared, 1.0),
        key: key.describe(),
        one_value: false,
    };
    (scores, differences, ungraded)
}

/// An item judge's verdict on the pair (`expected`, `got`): the item's credit, the difference row's
/// score and note when it fell short, and why there is no verdict (the cell is an error).
fn item_verdict(
    rule: &Comparator,
    expected: &Value,
    got: &Value,
    grades: &FieldGrades,
) -> (f64, Option<(f64, String)>, Option<String>) {
    match grades.get(&pair_key(WHOLE_ITEM, expected, got)) {
        Some(Ok(verdict)) if verdict.pass => (1.0, None, None),
        Some(Ok(verdict)) => {
            let note = match &verdict.reason {
                Some(reason) => format!("{} {:.2}: {reason}", rule.name(), verdict.score),
                None => format!("{} {:.2}", rule.name(), verdict.score),
            };
            (verdict.score, Some((verdict.score, note)), None)
        }
        Some(Err(why)) => {
            let note = format!("{} gave no verdict: {why}", rule.name());
            (0.0, Some((0.0, note)), Some(format!("`{}`: {why}", rule.name())))
        }
        None => (0.0, None, Some(format!("`{}`: not graded", rule.name()))),
    }
}

/// Items paired as the module's docs say; graded comparators weigh nothing.
fn pair(expected: &[&Value], answer: &[Value], key: &PairKey, settings: &EvalSettings) -> Paired {
    let comparison = Comparison { exact: settings.exact(), tolerance: settings.tolerance() };
    let rules = FieldRules::of(settings);
    let key_of = |item: &Value| {
        let parts = key.parts(item);
        let values: Vec<&Value> = parts.iter().map(|p| at(item, p)).collect();
        comparison.key_text(&values)
    };
    // Each key's items on both sides, paired within the key (see `assign`).
    let mut by_key: HashMap<String, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (index, item) in expected.iter().enumerate() {
        by_key.entry(key_of(item)).or_default().0.push(index);
    }
    for (index, item) in answer.iter().enumerate() {
        by_key.entry(key_of(item)).or_default().1.push(index);
    }
    let fields: Vec<Vec<String>> = expected.iter().map(|item| compared_fields(item, key, settings)).collect();
    // How far an answer item agrees with an expected one, in thousandths of a field.
    let agreeing_fields = |e: usize, a: usize| {
        let scores = fields[e].iter().map(|f| rules.compare(f, at(expected[e], f), at(&answer[a], f)).score);
        scores.map(|score| (score * 1000.0).round() as i64).sum::<i64>()
    };
    let compared_count = |e: usize| fields[e].len();
    let weighing =
        assign::Weighing { expected, answer, comparison, agreeing: &agreeing_fields, compared: &compared_count };
    let mut paired_with: Vec<Option<usize>> = vec![None; expected.len()];
    let mut taken = vec![false; answer.len()];
    for (group_expected, group_answer) in by_key.values() {
        let group = assign::Group { expected: group_expected, answer: group_answer };
        for (e, a) in assign::pair_group(&group, &weighing) {
            paired_with[e] = Some(a);
            taken[a] = true;
        }
    }
    // Then, when the file asks, the items left pair by how alike their keys are.
    let mut fuzzy_similarity: Vec<Option<f64>> = vec![None; expected.len()];
    if let Some(threshold) = settings.match_similarity {
        let left_expected: Vec<usize> = (0..expected.len()).filter(|e| paired_with[*e].is_none()).collect();
        let left_answer: Vec<usize> = (0..answer.len()).filter(|a| !taken[*a]).collect();
        let alike = |e: usize, a: usize| fuzzy::key_similarity(expected[e], &answer[a], key, comparison);
        let order = |is_expected: bool, i: usize| {
            let item = if is_expected { expected[i] } else { &answer[i] };
            (key_of(item), item.to_string())
        };
        for (e, a, similarity) in fuzzy::pair_by_similarity(&left_expected, &left_answer, &alike, threshold, &order) {
            paired_with[e] = Some(a);
            taken[a] = true;
            fuzzy_similarity[e] = Some(similarity);
        }
    }
    Paired { with: paired_with, fuzzy: fuzzy_similarity, fields }
}

/// The fields of `expected` that count (JSON Pointers): as the module's docs say, then each field
/// with a comparator that the expected item holds and no field listed holds (not a key's).
fn compared_fields(expected: &Value, key: &PairKey, settings: &EvalSettings) -> Vec<String> {
    let mut fields = listed_fields(expected, key, settings);
    let key_parts = key.parts(expected);
    for ruled in settings.fields.keys() {
        let within = |outer: &String| ruled == outer || ruled.starts_with(&format!("{outer}/"));
        if expected.pointer(ruled).is_some_and(|v| !v.is_null())
            && !fields.iter().any(within)
            && !key_parts.iter().any(within)
        {
            fields.push(ruled.clone());
        }
    }
    fields
}

/// The fields `compare_fields`, `ignore_fields` and the key leave to compare.
fn listed_fields(expected: &Value, key: &PairKey, settings: &EvalSettings) -> Vec<String> {
    let ignored: Vec<String> = settings.ignore_fields.iter().map(|f| pointer(f)).collect();
    if let Some(fields) = &settings.compare_fields {
        return fields
            .iter()
            .map(|f| pointer(f))
            .filter(|p| !ignored.contains(p) && expected.pointer(p).is_some_and(|v| !v.is_null()))
            .collect();
    }
    let Value::Object(members) = expected else {
        // One expected value that is not an object (a text, a number): the value is the one field.
        return if *key == PairKey::Answer { vec![String::new()] } else { Vec::new() };
    };
    let key_parts = key.parts(expected);
    members
        .keys()
        .map(|name| pointer(name))
        .filter(|p| !key_parts.contains(p) && !ignored.contains(p) && !key_parts.iter().any(|k| k.is_empty()))
        .collect()
}

/// An item's key as a report shows it: the key's values joined by ` / ` (strings unquoted); `the
/// answer` when the answer is one value.
fn display_key(item: &Value, key: &PairKey) -> String {
    if *key == PairKey::Answer {
        return "the answer".to_string();
    }
    // A union's key names every branch's field; the ones this item does not have are left out.
    let parts: Vec<String> = key
        .parts(item)
        .iter()
        .map(|p| at(item, p))
        .filter(|v| !v.is_null())
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => quote(other, KEY_WIDTH),
        })
        .collect();
    if parts.is_empty() {
        return "nothing".to_string();
    }
    super::values::cut(&parts.join(" / "), KEY_WIDTH)
}

#[cfg(test)]
mod tests;
