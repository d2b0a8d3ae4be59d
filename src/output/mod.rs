//! Incremental parsers that turn a model's answer, fed chunk by chunk, into items and per-line verdicts.
//!
//! One parser per response type (`text`, `json`, `jsonl`), each under a [`Profile`]. The live view, the
//! final parse and the truncation sweep all drive the same parser: `feed` chunks, read the state.

use serde::{Deserialize, Serialize};

use crate::schema::SchemaIssue;

/// How the answer is to be read, as TrustGraph's `response-type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ResponseType {
    /// The answer as is.
    Text,
    /// One JSON value; the schema describes the whole answer.
    Json,
    /// One JSON value per line; the schema describes each line.
    Jsonl,
}

/// Whose rules turn text into JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Tolerates what real models do (fences, prose, CRLF, BOM, trailing commas, pretty-printed
    /// records) and repairs a truncated tail, reporting every repair.
    #[default]
    Lenient,
    /// RFC 8259 only, nothing stripped.
    Strict,
    /// Exactly TrustGraph's `parse_json` / `parse_jsonl` + per-object filtering.
    Trustgraph,
    /// Exactly PtcRunner's JSON extraction (json only).
    Ptc,
}

/// The fate of one JSONL line (or of one record spanning several lines).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineVerdict {
    /// 1-based number of the line the record starts on.
    pub line: usize,
    /// 1-based number of the last line of a record that spans several lines (pretty-printed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    #[serde(flatten)]
    pub status: LineStatus,
    /// What the profile changed or noticed to read this record (e.g. "removed trailing comma at
    /// column 9", "record 2 of 2 on this line"); empty when the line was read as it stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

/// What became of a line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LineStatus {
    /// Parsed and valid; `branch` names the `oneOf` branch it matched, if the schema is a union.
    Valid {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<String>,
    },
    /// Not JSON; `column` is 1-based, in characters.
    InvalidJson { error: String, column: usize },
    /// JSON, but not valid against the schema: every failing instance path.
    SchemaError { errors: Vec<SchemaIssue> },
    /// Not a record at all (empty, fence, prose); `reason` says which.
    Skipped { reason: String },
}

/// Counts of line verdicts by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub valid: usize,
    pub invalid_json: usize,
    pub schema_error: usize,
    pub skipped: usize,
}

/// What a parse found, in the shape `tunebench parse --json` prints (see CLI.md). It reads back from
/// that shape too (`read_back.rs`: the response type says which report it is).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Report {
    Text(TextReport),
    Json(JsonReport),
    Jsonl(JsonlReport),
}

/// A `text` answer: passed through verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextReport {
    pub response_type: ResponseType,
    pub profile: Profile,
    pub text: String,
}

/// A `jsonl` answer: the items the profile hands to its consumer, and a verdict for every line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JsonlReport {
    pub response_type: ResponseType,
    pub profile: Profile,
    pub items: Items,
    pub lines: Vec<LineVerdict>,
    pub summary: Summary,
}

/// A `json` answer: the value, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JsonReport {
    pub response_type: ResponseType,
    pub profile: Profile,
    pub ok: bool,
    pub value: Option<serde_json::Value>,
    /// The `oneOf` branch the value matched, if the schema is a union.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub error: Option<JsonError>,
    /// Schema errors, each with its failing instance path.
    pub errors: Vec<SchemaIssue>,
    /// What the lenient profile changed to get a value (empty when nothing was repaired).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
}

/// Why a `json` answer gave no (valid) value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonError {
    pub kind: JsonErrorKind,
    pub message: String,
    /// 1-based line and column in the answer, where the error has a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

/// The three ways a `json` answer fails, as PtcRunner and CLI.md name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonErrorKind {
    NoJsonFound,
    InvalidJson,
    SchemaError,
}

/// One change the lenient profile made to the text to get a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Byte offset in the answer where the change applies.
    pub at: usize,
    /// What was done, e.g. "closed string", "closed array", "removed trailing comma",
    /// "dropped incomplete tail `tr`", "stripped fence".
    pub what: String,
}

mod items;
pub mod json;
pub mod jsonl;
mod read_back;

pub use self::items::Items;
pub mod text;

use std::sync::Arc;

use crate::schema::Check;

/// An incremental parser for one response type under one profile: feed chunks, read the state any time.
pub trait OutputParser: Send {
    /// Feeds the next chunk of the answer (any split, even inside a UTF-8 character's string or a token).
    fn feed(&mut self, chunk: &str);
    /// The report as if the answer had ended after the last chunk fed; the parser's state is unchanged,
    /// so feeding may go on afterwards.
    fn report(&self) -> Report;
    /// The final report, consuming the parser: the same as [`OutputParser::report`], without copying
    /// what the parser already holds (use it once the answer has ended).
    fn into_report(self: Box<Self>) -> Report {
        self.report()
    }
    /// Verdicts of the JSONL records whose last line has ended so far (always empty for text and json).
    fn lines(&self) -> &[LineVerdict] {
        &[]
    }
    /// The items of those JSONL records (the records of the valid verdicts, in order); `None` for text
    /// and json.
    fn items(&self) -> Option<&Items> {
        None
    }
}

/// The parser for `response_type` under `profile`, checking items against `check` when given.
pub fn parser_for(
    response_type: ResponseType,
    profile: Profile,
    check: Option<Arc<dyn Check>>,
) -> Box<dyn OutputParser> {
    match response_type {
        ResponseType::Text => Box::new(text::TextParser::new(profile)),
        ResponseType::Json => Box::new(json::JsonParser::new(profile, check)),
        ResponseType::Jsonl => Box::new(jsonl::JsonlParser::new(profile, check)),
    }
}

/// Parses a whole answer at once: the same machine as streaming, fed one chunk.
pub fn parse(response_type: ResponseType, profile: Profile, check: Option<Arc<dyn Check>>, text: &str) -> Report {
    let mut parser = parser_for(response_type, profile, check);
    parser.feed(text);
    parser.into_report()
}
