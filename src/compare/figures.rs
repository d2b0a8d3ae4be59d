//! One side's figures from its run record: items and valid items of the final answer, tokens out,
//! time to first token, total time, finish reason, turns used.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::output::json::items_of;
use crate::output::{parse, Profile, Report, ResponseType};
use crate::run::RunRecord;
use crate::schema::Check;
use crate::truncate::strategy::passing;

/// What one side of a comparison produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SideFigures {
    /// Items in the final answer as the side's reader finds them (a json answer: the elements of the
    /// value, repaired under `lenient`; jsonl: every line that is JSON), before any schema check.
    pub items: usize,
    /// Of those, the items that pass the check of one item (the line schema, or the array's `items`).
    pub valid_items: usize,
    /// Output tokens over every turn (`None` when no turn reported any).
    pub tokens_out: Option<u64>,
    /// Some turn's tokens were counted here (o200k) because the provider sent none.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tokens_estimated: bool,
    /// Time to the first piece of the first turn's answer.
    pub ttft_ms: Option<u64>,
    /// The whole run, every turn.
    pub total_ms: u64,
    /// How the last turn ended (`stop`, `length`, ...; `error` when its stream failed).
    pub finish_reason: Option<String>,
    pub turns_used: u32,
    pub max_turns: u32,
    /// The final answer passed validation (the run record's `ok`).
    pub ok: bool,
}

impl SideFigures {
    /// The figures of `record`, whose final answer holds `items` items of which `valid_items` pass.
    pub fn of(record: &RunRecord, items: usize, valid_items: usize) -> Self {
        let usages: Vec<_> = record.turns.iter().filter_map(|t| t.usage).collect();
        let last = record.turns.last();
        let finish_reason = last.and_then(|t| match (&t.finish_reason, &t.error) {
            (Some(reason), _) => Some(reason.to_string()),
            (None, Some(_)) => Some("error".to_string()),
            (None, None) => None,
        });
        Self {
            items,
            valid_items,
            tokens_out: (!usages.is_empty()).then(|| usages.iter().map(|u| u.output_tokens).sum()),
            tokens_estimated: usages.iter().any(|u| u.estimated),
            ttft_ms: record.turns.first().and_then(|t| t.ttft_ms),
            total_ms: record.duration_ms,
            finish_reason,
            turns_used: record.turns.len() as u32,
            max_turns: record.max_turns,
            ok: record.ok,
        }
    }
}

/// The items of `answer` read as `response_type` under `profile` with no check (a json value's
/// elements, every JSON line of a jsonl answer), and those of them that pass `item_check`.
pub fn answer_items(
    answer: &str,
    response_type: ResponseType,
    profile: Profile,
    item_check: Option<&Arc<dyn Check>>,
) -> (Vec<Value>, Vec<Value>) {
    let all = match parse(response_type, profile, None, answer) {
        Report::Json(report) => report.value.map(items_of).unwrap_or_default(),
        Report::Jsonl(report) => report.items.into_values(),
        Report::Text(_) => Vec::new(),
    };
    let valid = passing(all.clone(), item_check.map(|c| &**c));
    (all, valid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::CompiledSchema;
    use serde_json::json;

    #[test]
    fn items_are_counted_before_and_after_the_item_check() {
        let schema = CompiledSchema::compile(&json!({"type": "object", "required": ["a"]})).unwrap();
        let check: Arc<dyn Check> = Arc::new(schema);
        let lines = "{\"a\": 1}\n{\"b\": 2}\nnot json\n";
        let (all, valid) = answer_items(lines, ResponseType::Jsonl, Profile::Lenient, Some(&check));
        assert_eq!((all.len(), valid.len()), (2, 1));
        let array = "[{\"a\": 1}, {\"b\": 2}, {\"a\": 3";
        let (all, valid) = answer_items(array, ResponseType::Json, Profile::Lenient, Some(&check));
        assert_eq!(all, [json!({"a": 1}), json!({"b": 2}), json!({"a": 3})]);
        assert_eq!(valid, [json!({"a": 1}), json!({"a": 3})]);
        assert_eq!(answer_items("hi", ResponseType::Text, Profile::Lenient, None).0.len(), 0);
    }
}
