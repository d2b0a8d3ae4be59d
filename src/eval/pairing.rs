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
//! Fields compared: `compare_fields` when set (those present in the expected item), else every
//! top-level field of the expected item but the key's and `ignore_fields` (an expected value that is
//! not an object, such as a text answer's text, is compared whole). An answer that lacks a
//! field the expected item has disagrees on it; a field only the answer has is not compared.

mod assign;

use std::collections::HashMap;

use serde_json::Value;

use super::score::{Difference, ItemScores};
use super::values::{at, quote, Comparison};
use crate::prompt::expect::resolve::PairKey;
use crate::prompt::expect::{pointer, EvalSettings};

/// Longest key a difference row quotes.
const KEY_WIDTH: usize = 80;

/// `answer` scored against `expected`, paired on `key`.
pub fn score_items(
    expected: &[&Value],
    answer: &[Value],
    key: &PairKey,
    settings: &EvalSettings,
) -> (ItemScores, Vec<Difference>) {
    let comparison = Comparison { exact: settings.exact(), tolerance: settings.tolerance() };
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
    let agreeing_fields = |e: usize, a: usize| {
        fields[e].iter().filter(|f| comparison.agree(at(expected[e], f), at(&answer[a], f))).count()
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
    let paired = paired_with.iter().flatten().count();
    let mut differences = Vec::new();
    let (mut compared, mut agreeing) = (0usize, 0usize);
    for (e, item) in expected.iter().enumerate() {
        let Some(a) = paired_with[e] else {
            differences.push(Difference::Missing { key: display_key(item, key), expected: (*item).clone() });
            continue;
        };
        let got = &answer[a];
        for field in fields[e].iter().cloned() {
            let (want, have) = (at(item, &field), at(got, &field));
            compared += 1;
            if comparison.agree(want, have) {
                agreeing += 1;
            } else {
                differences.push(Difference::Field {
                    key: display_key(item, key),
                    field,
                    expected: want.clone(),
                    got: have.clone(),
                });
            }
        }
    }
    for (a, item) in answer.iter().enumerate() {
        if !taken[a] {
            differences.push(Difference::Extra { key: display_key(item, key), got: item.clone() });
        }
    }
    let share = |part: usize, whole: usize, empty: f64| if whole == 0 { empty } else { part as f64 / whole as f64 };
    let precision = share(paired, answer.len(), 1.0);
    let recall = share(paired, expected.len(), 1.0);
    let f1 = if precision + recall == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    let scores = ItemScores {
        answer_items: answer.len(),
        expected_items: expected.len(),
        paired,
        precision,
        recall,
        f1,
        field_accuracy: share(agreeing, compared, 1.0),
        key: key.describe(),
    };
    (scores, differences)
}

/// The fields of `expected` that count (JSON Pointers).
fn compared_fields(expected: &Value, key: &PairKey, settings: &EvalSettings) -> Vec<String> {
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
