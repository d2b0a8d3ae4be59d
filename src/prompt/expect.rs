//! What a case expects of its answer, as the prompt file writes it: the expected items or value
//! (`[cases.expected]`, inline or in an `expected_file` beside the prompt), the checks (`[[checks]]`
//! for every case, `[[cases.checks]]` for one), and the prompt's `[eval]` settings (pairing key, pass
//! thresholds, fields compared and their comparators, number tolerance, exact strings, fuzzy
//! pairing). Read with their place in the file, so every error and every failed check names
//! file:line; written back unchanged by a save.
//!
//! Scoring against these is `eval::score`; checking them against the prompt's schema (expected items
//! valid, pointers that can exist, the default pairing key) is [`resolve`].

mod approve;
pub mod assert;
mod check;
mod compare;
mod fields;
mod gold;
pub(crate) mod null;
mod parse;
pub mod resolve;
mod shape;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use assert::{AssertOp, AssertType, AssertWhat, NOT_EVALUATED};
pub use check::{CheckKind, CheckSpec};
pub use compare::Comparator;
pub use fields::{first_segment, pointer, pointer_error, Fields};
pub(crate) use parse::{parse_check, parse_eval, parse_expected, FieldValue, RawCheck, RawEval, RawExpected};

/// Where a table or value was written: the prompt file and the 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// Where something was written in its prompt file, when it was read from one (`None`: built in
/// memory). Ignored by `==`, as toml's `Spanned` is: a saved file lays its tables out anew, and a
/// prompt read back is the same prompt.
#[derive(Clone, Debug, Default)]
pub struct At(pub Option<Place>);

impl PartialEq for At {
    fn eq(&self, _: &At) -> bool {
        true
    }
}

/// The places of a list's entries (ignored by `==`, as [`At`] is).
#[derive(Clone, Debug, Default)]
pub struct Places(pub Vec<At>);

impl PartialEq for Places {
    fn eq(&self, _: &Places) -> bool {
        true
    }
}

impl At {
    /// `file:line`, or `fallback` when the place is not known.
    pub fn or(&self, fallback: impl FnOnce() -> String) -> String {
        self.0.as_ref().map_or_else(fallback, Place::to_string)
    }
}

/// A case's expected answer (`[cases.expected]`): exactly one of `items` (a jsonl answer, or a json
/// answer that is an array), `value` (a json answer that is one object; a text answer's text) or
/// `expected_file` (relative to the prompt file: a `.jsonl` file is items, one per line; a `.json`
/// file holding an array is items, anything else a value). `match` overrides the prompt's pairing key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The fields (names or JSON Pointers) answer items are paired with expected items on.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_on: Option<Fields>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<Value>>,
    /// What approving left out of the answer it wrote, when the user insisted on an answer that was
    /// not all valid (each part with where and why: `line 3: not JSON (...)`, `line 5: cut off by the
    /// token limit mid-record`). Scoring does not read it; it says the expected answer may be incomplete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The `[cases.expected]` table.
    #[serde(skip)]
    pub at: At,
    /// Each of `items` (or `value`: one entry).
    #[serde(skip)]
    pub item_at: Places,
}

impl Expected {
    /// Expected items written inline.
    pub fn items(items: Vec<Value>) -> Expected {
        Expected { items: Some(items), ..Expected::default() }
    }

    /// An expected value written inline.
    pub fn value(value: Value) -> Expected {
        Expected { value: Some(value), ..Expected::default() }
    }

    /// The place of item `index` (or of the table when unknown).
    pub fn item_place(&self, index: usize) -> Option<&Place> {
        self.item_at.0.get(index).and_then(|at| at.0.as_ref()).or(self.at.0.as_ref())
    }
}

/// The prompt's `[eval]` table: how every case is scored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSettings {
    /// The pairing key (a case's `[cases.expected] match` overrides it). Default: the union's `type`
    /// const plus the first required string field of the schema.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_on: Option<Fields>,
    /// The least F1 a case passes with (default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_f1: Option<f64>,
    /// The least field accuracy a case passes with (default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_fields: Option<f64>,
    /// Only these fields count in field accuracy (names or JSON Pointers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_fields: Option<Vec<String>>,
    /// These fields do not count in field accuracy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_fields: Vec<String>,
    /// Numbers agree when they differ by at most this much (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// Compare strings as written (default false: trimmed and case-folded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// Items left unpaired by their keys pair by key similarity at least this (0 < s <= 1), as an
    /// optimal assignment (default: off, only equal keys pair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_similarity: Option<f64>,
    /// How a field compares, by JSON Pointer within an item (`[eval.fields."/definition"]`); a field
    /// not named here compares as `exact` and `tolerance` say.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fields: std::collections::BTreeMap<String, Comparator>,
    /// Where each of `fields` is written (its `[eval.fields."/pointer"]` table).
    #[serde(skip)]
    pub field_at: std::collections::BTreeMap<String, At>,
    /// How a whole paired item is graded (`[eval.items] compare = "judge"`): its verdict is the
    /// item's credit in precision and recall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Comparator>,
    /// Where `items` is written (its `[eval.items]` table).
    #[serde(skip)]
    pub items_at: At,
    /// The embedder of `similar` checks and fields that name none (`openai:text-embedding-3-small`);
    /// `eval --embedder` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// Where `embedder` is written.
    #[serde(skip)]
    pub embedder_at: At,
    /// `promptfoo`: a cell's verdict is its checks' alone, as promptfoo gives it (an answer that does
    /// not fit the schema, or was cut at the token limit, is judged by its checks and says so in its
    /// reason); none: tunebench's (the schema and the token limit are verdicts of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<Verdicts>,
    /// `true`: `javascript`/`python` assertions get the answer parsed as JSON (its text when it is
    /// not JSON), as promptfoo hands them the answer of a provider asked for an inline JSON schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_output: Option<bool>,
    /// The `[eval]` table.
    #[serde(skip)]
    pub at: At,
}

/// Whose rule gives a cell's verdict (`[eval] verdicts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdicts {
    /// By the checks alone, as promptfoo gives a verdict by its assertions.
    Promptfoo,
    /// tunebench's: the schema and the token limit decide too.
    Tunebench,
}

impl EvalSettings {
    /// Whether a verdict is the checks' alone (`[eval] verdicts = "promptfoo"`).
    pub fn promptfoo_verdicts(&self) -> bool {
        self.verdicts == Some(Verdicts::Promptfoo)
    }

    /// Whether nothing is set (the table is not written).
    pub fn is_empty(&self) -> bool {
        *self == EvalSettings::default()
    }

    /// `pass_f1` or its default, 1.0.
    pub fn pass_f1(&self) -> f64 {
        self.pass_f1.unwrap_or(1.0)
    }

    /// `pass_fields` or its default, 1.0.
    pub fn pass_fields(&self) -> f64 {
        self.pass_fields.unwrap_or(1.0)
    }

    /// `tolerance` or its default, 0.
    pub fn tolerance(&self) -> f64 {
        self.tolerance.unwrap_or(0.0)
    }

    /// `exact` or its default, false.
    pub fn exact(&self) -> bool {
        self.exact.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests;
