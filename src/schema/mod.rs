//! JSON Schema compiled once, validation with every failing instance path, `oneOf` branch names, lint.

mod compiled;
mod lint;
mod tape;

pub(crate) use compiled::kind_of;
pub use compiled::{CompiledSchema, InvalidSchema};
pub use lint::{lint_schema_text, LintIssue};
pub use tape::{Tape, TapeJson, TapeNode};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One failing check: the instance path (JSON Pointer, `""` for the root) and the message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SchemaIssue {
    pub path: String,
    pub message: String,
}

/// Anything a parsed value is checked against: a compiled JSON Schema or a PtcRunner signature.
///
/// `Ok(branch)` when valid (`branch` names the `oneOf` branch matched, if any); `Err` lists every issue.
pub trait Check: Send + Sync {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>>;

    /// The same check of a value read onto a [`Tape`] (a JSONL record); the same verdict as
    /// [`Check::check`] of [`Tape::to_value`], which is what this default does.
    fn check_tape(&self, tape: &Tape) -> Result<Option<String>, Vec<SchemaIssue>> {
        self.check(&tape.to_value())
    }
}
