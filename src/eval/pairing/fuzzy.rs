//! Items their keys left unpaired, paired by how alike their keys are (`[eval] match_similarity`):
//! the assignment of the most key similarity in all among the pairs at least as alike as the
//! threshold (Kuhn–Munkres, `pathfinding`), never a greedy first come, first paired; whatever order
//! either side came in.
//!
//! A key's similarity is its least alike part's (each part: strings by `comparators::similarity`,
//! other values 1 when they agree, else 0), so a two-part key pairs only when both parts are close.
//! When more than [`EXACT_WORK`](super::assign::EXACT_WORK) work is left (smaller side² × larger side,
//! e.g. 64 × 64), nothing is paired by similarity: the items stay missing and extra.

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;
use serde_json::Value;

use super::super::comparators::similarity;
use super::super::values::{at, Comparison};
use super::assign::EXACT_WORK;
use crate::prompt::expect::resolve::PairKey;

/// Similarities are weighed in millionths (Kuhn–Munkres wants whole numbers).
const SCALE: f64 = 1_000_000.0;

/// How alike the keys of two items are, 0 to 1 (see the module's docs).
pub fn key_similarity(expected: &Value, got: &Value, key: &PairKey, comparison: Comparison) -> f64 {
    let (want, have) = (key.parts(expected), key.parts(got));
    if want.is_empty() || want != have {
        return 0.0;
    }
    want.iter()
        .map(|part| match (at(expected, part), at(got, part)) {
            (Value::String(a), Value::String(b)) => similarity(a, b),
            (a, b) => f64::from(u8::from(comparison.agree(a, b))),
        })
        .fold(1.0, f64::min)
}

/// The pairs `(expected index, answer index, key similarity)` among the unpaired `expected` and
/// `answer` items (indices into `all_expected` and `all_answer`), each at least `threshold` alike.
pub fn pair_by_similarity(
    expected: &[usize],
    answer: &[usize],
    alike: &dyn Fn(usize, usize) -> f64,
    threshold: f64,
    order: &dyn Fn(bool, usize) -> (String, String),
) -> Vec<(usize, usize, f64)> {
    let (small, large) = (expected.len().min(answer.len()), expected.len().max(answer.len()));
    if small == 0 || small.saturating_mul(small).saturating_mul(large) > EXACT_WORK {
        return Vec::new();
    }
    // Both sides in an order of their own, so equal weights resolve the same whatever came first.
    let sorted = |indices: &[usize], is_expected: bool| {
        let mut sorted: Vec<(usize, (String, String))> = indices.iter().map(|&i| (i, order(is_expected, i))).collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        sorted.into_iter().map(|(i, _)| i).collect::<Vec<_>>()
    };
    let (expected, answer) = (sorted(expected, true), sorted(answer, false));
    let similarities: Vec<Vec<f64>> = expected.iter().map(|&e| answer.iter().map(|&a| alike(e, a)).collect()).collect();
    let weight = |e: usize, a: usize| {
        let s = similarities[e][a];
        if s >= threshold {
            (s * SCALE).round() as i64
        } else {
            0
        }
    };
    let flipped = expected.len() > answer.len();
    let (rows, columns) = if flipped { (answer.len(), expected.len()) } else { (expected.len(), answer.len()) };
    let values: Vec<i64> = (0..rows)
        .flat_map(|row| (0..columns).map(move |column| if flipped { (column, row) } else { (row, column) }))
        .map(|(e, a)| weight(e, a))
        .collect();
    let Ok(matrix) = Matrix::from_vec(rows, columns, values) else { return Vec::new() };
    let (_, chosen) = kuhn_munkres(&matrix);
    chosen
        .into_iter()
        .enumerate()
        .map(|(row, column)| if flipped { (column, row) } else { (row, column) })
        .filter(|&(e, a)| similarities[e][a] >= threshold)
        .map(|(e, a)| (expected[e], answer[a], similarities[e][a]))
        .collect()
}

#[cfg(test)]
mod tests;
