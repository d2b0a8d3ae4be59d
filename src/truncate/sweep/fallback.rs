//! The slower ways the `json-repair` track settles an open item's cuts, for the items the content
//! clock cannot settle (the item never completed, repeats a key, or its reference item is not the
//! item itself): read the item once more from its start against its reference item with a
//! [`Matcher`] (time proportional to the item), or, when keys repeat, build the repaired item at each
//! cut. Also where a number that ends an item ends.

use serde_json::Value;

use crate::output::json::build::{parse_number, Builder};
use crate::output::json::matcher::Matcher;
use crate::output::json::scan::{Grammar, Scanner, MAX_DEPTH};

/// A scanner for the element that starts at `start` with `depth` containers around it.
fn element_scanner(start: usize, depth: usize) -> Scanner {
    Scanner::new(Grammar { max_depth: MAX_DEPTH.saturating_sub(depth), ..Grammar::LENIENT }, start)
}

/// `(kept, equals target)` over the cuts of the element that starts at `start`, read once with a
/// matcher, as runs `(cuts, verdict)`; `None` if the element repeats a key (equality cannot be
/// followed then).
pub fn matched_run(
    answer: &str,
    start: usize,
    depth: usize,
    cuts: impl Iterator<Item = usize>,
    target: Option<&Value>,
) -> Option<Vec<(usize, (bool, bool))>> {
    let mut scanner = element_scanner(start, depth);
    let mut matcher = Matcher::new(target);
    let mut fed = start;
    let mut verdicts = Vec::new();
    for cut in cuts {
        scanner.feed(answer.get(fed..cut).unwrap_or_default(), &mut matcher);
        fed = cut.max(fed);
        if matcher.lost() {
            return None;
        }
        push_run(&mut verdicts, matcher.verdict(&scanner));
    }
    Some(verdicts)
}

/// `(kept, equals target)` over the cuts, building the repaired element at each one, as runs.
pub fn built_run(
    answer: &str,
    start: usize,
    depth: usize,
    cuts: impl Iterator<Item = usize>,
    target: Option<&Value>,
) -> Vec<(usize, (bool, bool))> {
    let mut scanner = element_scanner(start, depth);
    let mut builder = Builder::new(false);
    let mut fed = start;
    let mut verdicts = Vec::new();
    for cut in cuts {
        scanner.feed(answer.get(fed..cut).unwrap_or_default(), &mut builder);
        fed = cut.max(fed);
        let value = builder.materialise(&scanner);
        push_run(&mut verdicts, (value.is_some(), value.is_some() && value.as_ref() == target));
    }
    verdicts
}

/// Appends one cut with `value` to runs of `(cuts, value)`.
pub fn push_run<T: PartialEq>(runs: &mut Vec<(usize, T)>, value: T) {
    match runs.last_mut() {
        Some((count, last)) if *last == value => *count += 1,
        _ => runs.push((1, value)),
    }
}

/// Whether the number that starts at `start` has its final value already when cut at `cut`.
pub fn number_settled(answer: &str, start: usize, cut: usize) -> bool {
    let end = number_end(answer.as_bytes(), start);
    let prefix = answer.get(start..cut).and_then(parse_number);
    prefix.is_some() && prefix == answer.get(start..end).and_then(parse_number)
}

/// Where the RFC 8259 number that starts at `start` ends (as the scanner reads it).
fn number_end(bytes: &[u8], start: usize) -> usize {
    #[derive(Clone, Copy)]
    enum Num {
        Start,
        Minus,
        Zero,
        Int,
        Dot,
        Frac,
        E,
        ESign,
        Exp,
    }
    let mut state = Num::Start;
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        state = match (state, byte) {
            (Num::Start, b'-') => Num::Minus,
            (Num::Start | Num::Minus, b'0') => Num::Zero,
            (Num::Start | Num::Minus, b'1'..=b'9') | (Num::Int, b'0'..=b'9') => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::E,
            (Num::E, b'+' | b'-') => Num::ESign,
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Num::Exp,
            _ => break,
        };
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_settle_when_their_value_is_final() {
        let text = "[1.50, 12, 1-2, 1e5]";
        assert!(number_settled(text, 1, 4), "1.5 is 1.50");
        assert!(!number_settled(text, 1, 3), "1. is no number");
        assert!(!number_settled(text, 7, 8), "1 is not 12");
        assert!(number_settled(text, 11, 12), "1 ends before -");
        assert!(!number_settled(text, 16, 17), "1 is not 1e5");
        assert!(number_settled(text, 16, 19));
    }
}
