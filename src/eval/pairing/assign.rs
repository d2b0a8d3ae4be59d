//! Which answer item each expected item pairs with, among the items that share one key: the pairs
//! that agree on the most fields in all (and, among those, compare the fewest fields, so the items
//! left unpaired are the ones with the most to compare), whatever order either side came in.
//!
//! Both sides are first put in one order of their own: by the item's canonical text (strings as the
//! comparison sees them, object members sorted), then by its JSON text, so items that sort alike are
//! the same item and which of them pairs changes nothing. Then:
//! - a group whose smaller side squared times its larger side is at most [`EXACT_WORK`] (64 × 64, or
//!   1 × 262,144) is solved exactly: an optimal assignment (Kuhn–Munkres, `pathfinding`);
//! - a larger group is paired greedily on sorted scores: each item is scored against the
//!   [`WINDOW`] nearest items of the other side in that order (near in the order: alike from their
//!   first fields on), those pairs are taken best first (ties in the order), and the items left are
//!   paired in the order. Near linear (n log n to sort) and order-independent, but not always optimal.

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;
use serde_json::Value;

use super::super::values::Comparison;

/// The most work (smaller side² × larger side) a group is solved exactly for.
pub const EXACT_WORK: usize = 1 << 18;
/// How many neighbours on each side of its place in the other side's order a large group's item is scored against.
pub const WINDOW: usize = 4;

/// One key's items: their indices into the expected and answer lists.
pub struct Group<'a> {
    pub expected: &'a [usize],
    pub answer: &'a [usize],
}

/// How two items are weighed: `agreeing(e, a)` is how far answer item `a` agrees with expected item
/// `e`'s compared fields, in thousandths of a field (a field's score × 1000, summed), `compared(e)`
/// how many fields `e` compares.
pub struct Weighing<'a> {
    pub expected: &'a [&'a Value],
    pub answer: &'a [Value],
    pub comparison: Comparison,
    pub agreeing: &'a dyn Fn(usize, usize) -> i64,
    pub compared: &'a dyn Fn(usize) -> usize,
}

/// The pairs `(expected index, answer index)` of one group: as many as the smaller side has.
pub fn pair_group(group: &Group<'_>, weighing: &Weighing<'_>) -> Vec<(usize, usize)> {
    match (group.expected, group.answer) {
        ([], _) | (_, []) => return Vec::new(),
        ([e], [a]) => return vec![(*e, *a)],
        _ => {}
    }
    let expected = in_order(group.expected, |e| weighing.expected[e], weighing.comparison);
    let answer = in_order(group.answer, |a| &weighing.answer[a], weighing.comparison);
    // Agreement first; among equal agreement, fewer fields compared (a per-pair cost below one
    // thousandth of an agreeing field's worth, whatever the assignment).
    let unit = 1 + expected.iter().map(|s| (weighing.compared)(s.index)).sum::<usize>() as i64;
    let weight = |e: usize, a: usize| {
        let (e, a) = (expected[e].index, answer[a].index);
        (weighing.agreeing)(e, a) * unit - (weighing.compared)(e) as i64
    };
    let (small, large) = (expected.len().min(answer.len()), expected.len().max(answer.len()));
    let pairs = if small.saturating_mul(small).saturating_mul(large) <= EXACT_WORK {
        exact(expected.len(), answer.len(), &weight)
    } else {
        windowed(&expected, &answer, &weight)
    };
    pairs.into_iter().map(|(e, a)| (expected[e].index, answer[a].index)).collect()
}

/// An item and what orders it.
struct Sorted {
    index: usize,
    canonical: String,
    text: String,
}

/// `indices` in the group's own order: canonical text, then JSON text.
fn in_order<'v>(indices: &[usize], item: impl Fn(usize) -> &'v Value, comparison: Comparison) -> Vec<Sorted> {
    let mut sorted: Vec<Sorted> = indices
        .iter()
        .map(|&index| {
            let value = item(index);
            Sorted { index, canonical: comparison.key_text(&[value]), text: value.to_string() }
        })
        .collect();
    sorted.sort_by(|a, b| (&a.canonical, &a.text).cmp(&(&b.canonical, &b.text)));
    sorted
}

/// The assignment of the most weight (positions in the sorted sides), by Kuhn–Munkres on the side
/// with fewer items as rows.
fn exact(expected: usize, answer: usize, weight: &dyn Fn(usize, usize) -> i64) -> Vec<(usize, usize)> {
    let flipped = expected > answer;
    let (rows, columns) = if flipped { (answer, expected) } else { (expected, answer) };
    let cell = |row: usize, column: usize| if flipped { weight(column, row) } else { weight(row, column) };
    let values: Vec<i64> = (0..rows).flat_map(|row| (0..columns).map(move |column| cell(row, column))).collect();
    let Ok(matrix) = Matrix::from_vec(rows, columns, values) else { return Vec::new() };
    let (_, chosen) = kuhn_munkres(&matrix);
    chosen.into_iter().enumerate().map(|(row, column)| if flipped { (column, row) } else { (row, column) }).collect()
}

/// A large group: each item scored against its [`WINDOW`] nearest in the other side's order, those
/// pairs taken best first, the rest paired in order (positions in the sorted sides).
fn windowed(expected: &[Sorted], answer: &[Sorted], weight: &dyn Fn(usize, usize) -> i64) -> Vec<(usize, usize)> {
    let place = |side: &[Sorted], item: &Sorted| {
        side.partition_point(|s| (&s.canonical, &s.text) < (&item.canonical, &item.text))
    };
    let near = |at: usize, len: usize| at.saturating_sub(WINDOW)..(at + WINDOW).min(len);
    let mut edges: Vec<(usize, usize)> = Vec::with_capacity(2 * WINDOW * (expected.len() + answer.len()));
    for (e, item) in expected.iter().enumerate() {
        edges.extend(near(place(answer, item), answer.len()).map(|a| (e, a)));
    }
    for (a, item) in answer.iter().enumerate() {
        edges.extend(near(place(expected, item), expected.len()).map(|e| (e, a)));
    }
    edges.sort_unstable();
    edges.dedup();
    let mut weighed: Vec<(i64, usize, usize)> = edges.into_iter().map(|(e, a)| (weight(e, a), e, a)).collect();
    weighed.sort_unstable_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let (mut expected_taken, mut answer_taken) = (vec![false; expected.len()], vec![false; answer.len()]);
    let mut pairs = Vec::with_capacity(expected.len().min(answer.len()));
    for (_, e, a) in weighed {
        if !expected_taken[e] && !answer_taken[a] {
            expected_taken[e] = true;
            answer_taken[a] = true;
            pairs.push((e, a));
        }
    }
    let left = |taken: &[bool]| taken.iter().enumerate().filter(|(_, t)| !**t).map(|(i, _)| i).collect::<Vec<_>>();
    pairs.extend(left(&expected_taken).into_iter().zip(left(&answer_taken)));
    pairs
}
