//! The truncation strategies a sweep compares, what each recovers from a prefix of the answer (from
//! scratch: the reference the one-pass sweep is tested against), and the figures at one cut.
//!
//! - `json`: the profile's JSON extraction of the prefix with NO repair (for `lenient`: fences, prose
//!   and trailing commas are fine, an unfinished value is not).
//! - `json-repair`: the `lenient` JSON parse of the prefix, repairing the truncated tail.
//! - `jsonl`: the profile's JSONL parser on the prefix (the last line read as if the answer ended).
//!
//! The items of a JSON value: an array's elements, the elements of the array under `"items"` of an
//! object (PtcRunner's list wrapper), else the value as one item. With a check, only the items that
//! pass it count, in order; "corrupt" compares each with the reference item AT THE SAME POSITION.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::json::{items_of, JsonParser};
use crate::output::jsonl::JsonlParser;
use crate::output::{OutputParser, Profile, Report};
use crate::schema::Check;

/// How a prefix of the answer is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The profile's JSON extraction, no repair.
    Json,
    /// The lenient JSON parse with the truncated tail repaired.
    JsonRepair,
    /// Complete JSONL records (the profile's JSONL parser).
    Jsonl,
}

impl Strategy {
    /// In the order the reference prefers them on a tie: json, jsonl, json-repair.
    pub const ALL: [Strategy; 3] = [Strategy::Json, Strategy::Jsonl, Strategy::JsonRepair];
    /// In the order reports and the truncation pane show them: json, json-repair, jsonl.
    pub const SHOWN: [Strategy; 3] = [Strategy::Json, Strategy::JsonRepair, Strategy::Jsonl];

    /// The name as CLI.md spells it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Json => "json",
            Strategy::JsonRepair => "json-repair",
            Strategy::Jsonl => "jsonl",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one strategy recovers at one cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutFigures {
    /// Items recovered (passing the check, when there is one).
    pub items: usize,
    /// How many of them differ from the reference item at the same position.
    pub corrupt: usize,
}

/// Keeps the items that pass `check` (all of them without one).
pub fn passing(items: Vec<Value>, check: Option<&dyn Check>) -> Vec<Value> {
    match check {
        None => items,
        Some(check) => items.into_iter().filter(|item| check.check(item).is_ok()).collect(),
    }
}

/// The items `strategy` recovers from `text` (a prefix of the answer), parsed from scratch.
pub fn recover(text: &str, strategy: Strategy, profile: Profile, check: Option<&Arc<dyn Check>>) -> Vec<Value> {
    match strategy {
        Strategy::Json => {
            let mut parser = JsonParser::new(profile, None);
            parser.feed(text);
            passing(parser.settled_value().map(items_of).unwrap_or_default(), check.map(|c| &**c))
        }
        Strategy::JsonRepair => {
            let mut parser = JsonParser::new(Profile::Lenient, None);
            parser.feed(text);
            let value = parser.lenient().and_then(|lenient| lenient.value());
            passing(value.map(items_of).unwrap_or_default(), check.map(|c| &**c))
        }
        Strategy::Jsonl => {
            let mut parser = JsonlParser::new(profile, check.cloned());
            parser.feed(text);
            match parser.into_report() {
                Report::Jsonl(report) => report.items.into_values(),
                _ => Vec::new(),
            }
        }
    }
}

/// How many of `items` differ from the reference item at the same position.
pub fn corrupt(items: &[Value], reference: &[Value]) -> usize {
    items.iter().enumerate().filter(|(at, item)| reference.get(*at) != Some(item)).count()
}

/// The reference of a sweep, from scratch: the full answer's items under whichever strategy recovers
/// the most (ties: json, then jsonl, then json-repair), and that strategy.
pub fn reference(answer: &str, profile: Profile, check: Option<&Arc<dyn Check>>) -> (Strategy, Vec<Value>) {
    let mut best: Option<(Strategy, Vec<Value>)> = None;
    for strategy in Strategy::ALL {
        let items = recover(answer, strategy, profile, check);
        if best.as_ref().is_none_or(|(_, most)| items.len() > most.len()) {
            best = Some((strategy, items));
        }
    }
    best.unwrap_or((Strategy::Json, Vec::new()))
}

/// The figures of `strategy` at byte offset `cut` (clamped to the answer, down to a character
/// boundary), by parsing `answer[..cut]` from scratch; `reference` is the full answer's items.
pub fn at_cut(
    answer: &str,
    cut: usize,
    strategy: Strategy,
    profile: Profile,
    check: Option<&Arc<dyn Check>>,
    reference: &[Value],
) -> CutFigures {
    let items = recover(prefix(answer, cut), strategy, profile, check);
    CutFigures { items: items.len(), corrupt: corrupt(&items, reference) }
}

/// `answer[..cut]`, with `cut` clamped to the answer and moved down to a character boundary.
pub fn prefix(answer: &str, cut: usize) -> &str {
    let mut cut = cut.min(answer.len());
    while !answer.is_char_boundary(cut) {
        cut -= 1;
    }
    answer.get(..cut).unwrap_or_default()
}
