//! The guard against runaway lists in a jsonl answer (a small model repeats items until the token
//! limit). A record that is the same JSON value as an earlier one (key order and spacing aside) is a
//! repeat: its verdict becomes `skipped` ("repeats line N") and it is not counted as an item. The
//! answer is stopped at `max_repeats` repeats in a row (0: never), or once it holds `max_items` items;
//! the turn loop stops it at the end of the line that decided, so nothing is cut mid-record.

use std::collections::HashMap;

use serde_json::Value;

use super::limits::{enough_items, Limits};
use crate::output::{Items, LineStatus, LineVerdict, Report};

/// The reason a repeated line's verdict carries: `repeats line 3`.
const REPEATS: &str = "repeats line ";

/// Follows a jsonl answer's verdicts in order.
#[derive(Debug)]
pub(super) struct ItemGuard {
    max_items: Option<u32>,
    max_repeats: u32,
    /// Each record's canonical text, and the line it was first seen on.
    seen: HashMap<String, usize>,
    /// Valid records seen so far (the next one's index among the parser's items).
    valid: usize,
    /// Items kept (repeats not counted).
    kept: u32,
    /// Repeated lines since the last new record.
    in_a_row: u32,
}

impl ItemGuard {
    pub fn new(limits: &Limits) -> Self {
        Self {
            max_items: limits.max_items,
            max_repeats: limits.max_repeats,
            seen: HashMap::new(),
            valid: 0,
            kept: 0,
            in_a_row: 0,
        }
    }

    /// Judges the next verdict; `items` are the parser's items so far (a valid verdict's record is
    /// the next of them). A repeat's verdict is made `skipped`. `Some(why)` once the answer must stop.
    pub fn judge(&mut self, verdict: &mut LineVerdict, items: &Items) -> Option<String> {
        if !matches!(verdict.status, LineStatus::Valid { .. }) {
            return None;
        }
        let index = self.valid;
        self.valid += 1;
        let item = items.get(index)?;
        let key = canonical(&item);
        if let Some(first) = self.seen.get(&key) {
            verdict.status = LineStatus::Skipped { reason: format!("{REPEATS}{first}") };
            self.in_a_row += 1;
            return (self.max_repeats > 0 && self.in_a_row >= self.max_repeats).then(|| {
                format!(
                    "stopped by the client: {} repeated lines in a row (max_repeats {}: --max-repeats, or \
                     max_repeats in the prompt's [provider])",
                    self.in_a_row, self.max_repeats
                )
            });
        }
        self.seen.insert(key, verdict.line);
        self.in_a_row = 0;
        self.kept += 1;
        self.max_items.filter(|max| self.kept >= *max).map(enough_items)
    }
}

/// The final report of a guarded answer: each repeat's verdict `skipped` and its item removed, the
/// counts made again. The same verdicts the guard gave while the answer streamed.
pub(super) fn apply(report: &mut Report, limits: &Limits) {
    let Report::Jsonl(report) = report else { return };
    let mut guard = ItemGuard::new(limits);
    let mut repeats = Vec::new();
    let items = &report.items;
    for verdict in &mut report.lines {
        let index = guard.valid;
        guard.judge(verdict, items);
        if matches!(&verdict.status, LineStatus::Skipped { reason } if reason.starts_with(REPEATS)) {
            repeats.push(index);
        }
    }
    if repeats.is_empty() {
        return;
    }
    report.items.remove_all(&repeats);
    report.summary.valid -= repeats.len();
    report.summary.skipped += repeats.len();
}

/// The lines that repeat an earlier one, as `(line, first line)`.
pub fn repeated_lines(report: &Report) -> Vec<(usize, usize)> {
    let Report::Jsonl(report) = report else { return Vec::new() };
    report
        .lines
        .iter()
        .filter_map(|verdict| match &verdict.status {
            LineStatus::Skipped { reason } => {
                reason.strip_prefix(REPEATS).and_then(|first| first.parse().ok()).map(|first| (verdict.line, first))
            }
            _ => None,
        })
        .collect()
}

/// A value's text with every object's keys sorted and no spaces: equal for equal values.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (n, (key, value)) in entries.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(values) => {
            out.push('[');
            for (n, value) in values.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_canonical(value, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{parse, Profile, ResponseType};

    fn limits(max_items: Option<u32>, max_repeats: u32) -> Limits {
        Limits { max_items, max_repeats, ..Limits::default() }
    }

    /// Feeds every verdict of `answer` through a guard: the verdicts as shown, and the line it stopped at.
    fn guarded(answer: &str, limits: &Limits) -> (Vec<LineVerdict>, Option<(usize, String)>) {
        let Report::Jsonl(report) = parse(ResponseType::Jsonl, Profile::Lenient, None, answer) else { panic!() };
        let mut guard = ItemGuard::new(limits);
        let mut shown = Vec::new();
        for mut verdict in report.lines.clone() {
            let stop = guard.judge(&mut verdict, &report.items);
            shown.push(verdict.clone());
            if let Some(why) = stop {
                return (shown, Some((verdict.line, why)));
            }
        }
        (shown, None)
    }

    #[test]
    fn a_repeat_is_the_same_value_whatever_its_spacing_and_key_order() {
        let answer =
            "{\"a\": 1, \"b\": [1, {\"y\": 2, \"x\": 1}]}\n{\"b\":[1,{\"x\":1,\"y\":2}],\"a\":1}\n{\"a\": 2}\n";
        let (shown, stop) = guarded(answer, &limits(None, 0));
        assert_eq!(stop, None);
        assert_eq!(shown[1].status, LineStatus::Skipped { reason: "repeats line 1".into() });
        assert!(matches!(shown[2].status, LineStatus::Valid { .. }));
        let mut report = parse(ResponseType::Jsonl, Profile::Lenient, None, answer);
        apply(&mut report, &limits(None, 0));
        let Report::Jsonl(jsonl) = &report else { panic!() };
        assert_eq!(jsonl.items, [serde_json::json!({"a": 1, "b": [1, {"y": 2, "x": 1}]}), serde_json::json!({"a": 2})]);
        assert_eq!((jsonl.summary.valid, jsonl.summary.skipped), (2, 1));
        assert_eq!(jsonl.lines, shown, "the final verdicts are the ones shown live");
        assert_eq!(repeated_lines(&report), [(2, 1)]);
    }

    #[test]
    fn repeats_in_a_row_stop_the_answer_and_a_new_record_resets_the_count() {
        let answer = "{\"a\":1}\n{\"a\":2}\n{\"a\":1}\n{\"a\":3}\n{\"a\":2}\n{\"a\":1}\n{\"a\":4}\n";
        let (_, stop) = guarded(answer, &limits(None, 2));
        let (line, why) = stop.unwrap();
        assert_eq!(line, 6);
        assert!(why.contains("2 repeated lines in a row") && why.contains("--max-repeats"), "{why}");
        assert_eq!(guarded(answer, &limits(None, 3)).1, None);
        assert_eq!(guarded(answer, &limits(None, 0)).1, None);
    }

    #[test]
    fn max_items_counts_new_records_only() {
        let answer = "{\"a\":1}\n{\"a\":1}\nnot json\n{\"a\":2}\n{\"a\":3}\n";
        let (_, stop) = guarded(answer, &limits(Some(2), 0));
        let (line, why) = stop.unwrap();
        assert_eq!(line, 4, "the repeat and the invalid line are not items");
        assert!(why.contains("max_items 2") && why.contains("--max-items"), "{why}");
    }
}
