//! PtcRunner signatures (`(text :string) -> {sentiment :string, score :float}`): parsed into a type
//! tree, mapped to JSON Schema as PtcRunner's JSON-mode era does, values validated PtcRunner's way,
//! and PtcRunner's JSON-mode answer rules, retry loop and prompt texts.
//!
//! Reference: the peers' SEMANTICS.md §2.2–2.5 and PtcRunner @ec1a0b9d (`sub_agent/signature*`,
//! `loop/json_mode.ex`, `priv/prompts/json-*.md`).

pub mod json_mode;
mod parse;
mod to_schema;
mod types;
mod validate;

pub use parse::{parse_in, SignatureError, MAX_DEPTH};
pub use to_schema::type_schema;
pub use types::{SigType, Signature};
pub use validate::{is_iso8601_with_offset, type_name, validate_type, PathSegment, SigIssue};

use serde_json::Value;

use crate::schema::{Check, SchemaIssue};

/// Which PtcRunner behaviour to reproduce where its versions differ (§2.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Era {
    /// 4ffefe2d (2026-01-16): a top-level list is not wrapped, `:any` → `{}`.
    V0,
    /// e00430c9 (2026-01-17): a top-level list is wrapped, `:any` → `{}` still.
    Early,
    /// c530d8bf..ec1a0b9d, JSON mode as it shipped: wrapped lists, `:any` → `{"type":"object"}`.
    #[default]
    JsonMode,
    /// 2026-05 (842a9925): as JSON mode, plus `:datetime` (a plain string schema) and `:boolean`.
    Later,
}

/// Parses a signature: `(p :T, …) -> R`, `() -> R` or the shorthand `R`. Accepts the later
/// additions `:datetime` and `:boolean` too (use [`parse_in`] with an older [`Era`] to reject them).
pub fn parse(src: &str) -> Result<Signature, SignatureError> {
    parse_in(src, Era::Later)
}

impl std::str::FromStr for Signature {
    type Err = SignatureError;

    fn from_str(src: &str) -> Result<Self, Self::Err> {
        parse(src)
    }
}

/// A signature checks a value against its return type (no JSON-mode answer rules; for those, see
/// [`json_mode::AnswerCheck`]).
impl Check for Signature {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        self.validate(value).map(|()| None)
    }
}
