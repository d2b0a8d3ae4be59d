//! A check as the prompt file writes it: a small table with a `kind` and the fields that kind takes.
//!
//! | kind | fields | passes when |
//! |---|---|---|
//! | `equals` | `path`, `value`, `each`, `exact` | the value at `path` equals `value` |
//! | `one_of` | `path`, `values`, `each`, `exact` | it equals one of `values` |
//! | `contains` | `path`, `value`, `each`, `exact` | a string holds `value`, or an array has an element equal to it |
//! | `regex` | `path`, `pattern`, `each` | a string matches `pattern` (Rust regex syntax; `(?i)` ignores case) |
//! | `range` | `path`, `min`, `max`, `each` | a number within `[min, max]` |
//! | `length` | `path`, `min`, `max`, `each` | a string's length in characters, or an array's, within bounds |
//! | `items` | `min`, `max` | the answer's item count within bounds |
//! | `exists` / `absent` | `path`, `each` | the value at `path` is there and not null / missing or null |
//! | `unique` | `path` | no two items share the value at `path` (the whole item when no path) |
//! | `no_repeated_lines` | | no non-blank line of the answer text comes twice |
//! | `finish_not_length` | | the answer did not stop at the token limit |
//! | `max_tokens_out` | `max` | output tokens (every turn's, as the provider reported them) at most `max` |
//! | `max_ttft_ms` | `max` | the first turn's time to first token at most `max` milliseconds |
//! | `assert` | `type`, `value`, `threshold`, `weight`, `judge` (`llm-rubric`'s grader), `embedder`, `base_url`, `key_env`, `transform` (JavaScript run on the answer first) | promptfoo's assertion `type` holds on the answer text ([`super::AssertOp`]) |
//! | `command` | `command`, `timeout` | the program `command` (an argument list, run in the prompt's folder) answers `{"pass": true}` |
//! | `judge` | `rubric`, `judge`, `path`, `threshold`, `base_url`, `key_env` | a model (`judge`, else `--judge`) grades the answer (or the value at `path`) against `rubric` |
//! | `similar` | `embedder`, `value`, `path`, `threshold`, `base_url`, `key_env` | the answer's text (or the value at `path` in the whole answer) is alike in meaning to `value` (a text, or a list of which any will do; default: the expected answer at `path`): the cosine similarity of their embeddings from `embedder` (`openai:text-embedding-3-small`, `ollama:nomic-embed-text`) at least `threshold` (default 0.75) |
//!
//! `assert` checks judge the answer's text with promptfoo's semantics (a promptfoo config's assertions
//! become them). A case's `assert` checks pass together when each passes, or, when the case gives a
//! `pass_score`, when their weighted score (`weight`, default 1) reaches it; `python` and
//! `javascript` run as `command` checks (through `python3` / `node`), `llm-rubric` as a `judge`; a type
//! tunebench cannot evaluate (`g-eval`, `moderation`, …) is not evaluated, and its cell is an error.
//!
//! A `judge`'s or an `embedder`'s server is its provider's own (variables, default) unless the check
//! names one: `base_url`, and `key_env` the variable its key is read from.
//!
//! `command`, `judge` and `similar` checks run after the answer (`eval::grade`): a program or a model that fails
//! (missing, non-zero exit, past its `timeout` in seconds, default 30, or an answer not of the shape
//! `{"pass", "score", "reason"}`) makes the cell an error, never a pass.
//!
//! Every check may have a `name` (the report shows it). `path` is a JSON Pointer (default `""`, the
//! whole item). With `each = true` (the default) it points into every item of the answer: every
//! line of a jsonl answer, every element of a json array answer (or of PtcRunner's `{"items": [...]}`),
//! the one value of a json object answer, the text of a text answer; every item must pass, and an
//! answer with no items passes (add `items` with `min` to ask for some). With `each = false` it points
//! into the whole answer: the array of items for jsonl (so `/0/entity` is the first item's), the value
//! for json. Strings compare trimmed and case-folded unless `exact = true`; numbers within `[eval]
//! tolerance`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use super::{AssertType, At};

/// What a check tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    Equals,
    OneOf,
    Contains,
    Regex,
    Range,
    Length,
    Items,
    Exists,
    Absent,
    Unique,
    NoRepeatedLines,
    FinishNotLength,
    MaxTokensOut,
    MaxTtftMs,
    Assert,
    Command,
    Judge,
    Similar,
}

impl CheckKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [CheckKind; 18] = [
        CheckKind::Equals,
        CheckKind::OneOf,
        CheckKind::Contains,
        CheckKind::Regex,
        CheckKind::Range,
        CheckKind::Length,
        CheckKind::Items,
        CheckKind::Exists,
        CheckKind::Absent,
        CheckKind::Unique,
        CheckKind::NoRepeatedLines,
        CheckKind::FinishNotLength,
        CheckKind::MaxTokensOut,
        CheckKind::MaxTtftMs,
        CheckKind::Assert,
        CheckKind::Command,
        CheckKind::Judge,
        CheckKind::Similar,
    ];

    /// The name as the file writes it.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Equals => "equals",
            CheckKind::OneOf => "one_of",
            CheckKind::Contains => "contains",
            CheckKind::Regex => "regex",
            CheckKind::Range => "range",
            CheckKind::Length => "length",
            CheckKind::Items => "items",
            CheckKind::Exists => "exists",
            CheckKind::Absent => "absent",
            CheckKind::Unique => "unique",
            CheckKind::NoRepeatedLines => "no_repeated_lines",
            CheckKind::FinishNotLength => "finish_not_length",
            CheckKind::MaxTokensOut => "max_tokens_out",
            CheckKind::MaxTtftMs => "max_ttft_ms",
            CheckKind::Assert => "assert",
            CheckKind::Command => "command",
            CheckKind::Judge => "judge",
            CheckKind::Similar => "similar",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<CheckKind> {
        CheckKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The fields this kind takes besides `kind` and `name`, and which of them it needs.
    pub(crate) fn fields(self) -> (&'static [&'static str], Need) {
        use CheckKind::*;
        match self {
            Equals | Contains => (&["path", "value", "each", "exact"], Need::All(&["value"])),
            OneOf => (&["path", "values", "each", "exact"], Need::All(&["values"])),
            Regex => (&["path", "pattern", "each"], Need::All(&["pattern"])),
            Range | Length => (&["path", "min", "max", "each"], Need::Any(&["min", "max"])),
            Items => (&["min", "max"], Need::Any(&["min", "max"])),
            Exists | Absent => (&["path", "each"], Need::All(&["path"])),
            Unique => (&["path"], Need::All(&[])),
            NoRepeatedLines | FinishNotLength => (&[], Need::All(&[])),
            MaxTokensOut | MaxTtftMs => (&["max"], Need::All(&["max"])),
            Assert => (
                &["type", "value", "threshold", "weight", "judge", "embedder", "base_url", "key_env", "transform"],
                Need::All(&["type"]),
            ),
            Command => (&["command", "timeout"], Need::All(&["command"])),
            Judge => (&["rubric", "judge", "path", "threshold", "base_url", "key_env"], Need::All(&["rubric"])),
            Similar => (&["embedder", "value", "path", "threshold", "base_url", "key_env"], Need::All(&[])),
        }
    }

    /// Whether the check reads the answer's items (not only the run's record or text).
    pub fn reads_items(self) -> bool {
        !matches!(
            self,
            CheckKind::NoRepeatedLines
                | CheckKind::FinishNotLength
                | CheckKind::MaxTokensOut
                | CheckKind::MaxTtftMs
                | CheckKind::Assert
                | CheckKind::Command
                | CheckKind::Judge
                | CheckKind::Similar
        )
    }
}

/// Which fields a kind needs: all of these, or at least one.
pub(crate) enum Need {
    All(&'static [&'static str]),
    Any(&'static [&'static str]),
}

/// One check: `[[checks]]` (every case) or `[[cases.checks]]` (one case).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckSpec {
    pub kind: CheckKind,
    /// What the report calls it (default: the kind and the path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A JSON Pointer into each item (or the whole answer with `each = false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Apply `path` to every item (default true) or to the whole answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub each: Option<bool>,
    /// Compare strings as written (default: trimmed and case-folded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// An `assert` check's promptfoo type (`not-icontains`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub assert: Option<AssertType>,
    /// An `assert` check's threshold (levenshtein's most edits, latency's ms, cost's dollars).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// How heavily an `assert` check counts in its case's score (default 1; 0: it always passes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// A `command` check's program and its arguments (the program relative to the prompt's folder, or
    /// found on `PATH` when it has no `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// A `command` check's most seconds (default 30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// A `judge` check's rubric: what the answer must satisfy, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rubric: Option<String>,
    /// A `judge` check's model: `local`, `openai:gpt-4o-mini`, `ollama:qwen2.5` (default: `--judge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// A `similar` check's (or promptfoo `similar` assertion's) embedding model:
    /// `openai:text-embedding-3-small`, `ollama:nomic-embed-text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// The base URL of the `judge` or `embedder` server (a promptfoo grader's `config.apiBaseUrl`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variable the `judge` or `embedder` server's key is read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// An `assert` check's transforms (promptfoo's test `options.transform`, then its own `transform`):
    /// JavaScript that turns the answer into what the check judges, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transform: Option<Vec<String>>,
    /// A key written in the config that names the grader (promptfoo's `apiKey`): in memory only.
    #[serde(skip)]
    pub key: Option<crate::provider::ApiKey>,
    /// The check's table in the file.
    #[serde(skip)]
    pub at: At,
}

impl CheckSpec {
    /// A check of `kind` with no fields set (set the ones it needs).
    pub fn new(kind: CheckKind) -> CheckSpec {
        CheckSpec {
            kind,
            name: None,
            path: None,
            each: None,
            exact: None,
            pattern: None,
            min: None,
            max: None,
            value: None,
            values: None,
            assert: None,
            threshold: None,
            weight: None,
            command: None,
            timeout: None,
            rubric: None,
            judge: None,
            embedder: None,
            base_url: None,
            key_env: None,
            transform: None,
            key: None,
            at: At::default(),
        }
    }

    /// The check as a report names it: its `name`, else the kind and the path (`regex /entity`).
    pub fn label(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        if let Some(assert) = &self.assert {
            return format!("assert {assert}");
        }
        match self.path.as_deref() {
            Some(path) if !path.is_empty() => format!("{} {path}", self.kind.name()),
            _ => self.kind.name().to_string(),
        }
    }

    /// What the check is, whatever line it is written on (`eval diff` pairs a check's results across
    /// evals by it): `name NAME` when it has a name, else its kind and every field it sets, as compact
    /// JSON (`{"kind":"regex","path":"/entity","pattern":"^[A-Z]"}`).
    pub fn identity(&self) -> String {
        match &self.name {
            Some(name) => format!("name {name}"),
            // Serializing plain values cannot fail; the label stands in if it ever did.
            None => serde_json::to_string(self).unwrap_or_else(|_| self.label()),
        }
    }

    /// Where the check's judge or embedder is called (`base_url`, `key_env`, a key in memory).
    pub fn server(&self) -> crate::provider::endpoint::Server {
        crate::provider::endpoint::Server {
            base_url: self.base_url.clone(),
            key_env: self.key_env.clone(),
            key: self.key.clone(),
        }
    }

    /// The pointer (`""`: the whole item or answer).
    pub fn pointer(&self) -> &str {
        self.path.as_deref().unwrap_or("")
    }

    /// Whether `path` applies to every item (the default) rather than the whole answer.
    pub fn each(&self) -> bool {
        self.each.unwrap_or(true)
    }

    /// Whether strings compare as written.
    pub fn exact(&self) -> bool {
        self.exact.unwrap_or(false)
    }
}

impl<'de> Deserialize<'de> for CheckSpec {
    /// The same rules as the prompt file's reader, without places (for a check read from anywhere else).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CheckSpec, D::Error> {
        let table = serde_json::Map::<String, Value>::deserialize(deserializer)?;
        let fields = table.into_iter().map(|(k, v)| (k, super::parse::FieldValue::Json(v), 0..0)).collect();
        super::parse_check(fields, At::default()).map_err(|(_, message)| serde::de::Error::custom(message))
    }
}
