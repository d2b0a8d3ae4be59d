//! The schema pane's live lint. Small texts are linted in place, on the key. Large ones
//! ([`State::heavy`]) in the background: a key in the schema only marks the lint stale and a lint is
//! asked for once typing settles (`Msg::Settled`); a change of provider, structured mode or file asks
//! at once. A lint is a job (`Effect::Lint`, latest wins in the runner) that comes back as
//! `Msg::Linted` and is shown only when nothing moved on since it was asked for (a schema edit or a
//! newer lint makes it stale: dropped). The workbench's start lints a small schema in place and asks for a large one's lint at once.

use serde_json::Value;

use crate::prompt::signature;
use crate::run::{decodable, setup, SetupOptions};
use crate::schema::lint_schema_text;
use crate::tui::state::{SchemaKind, State};
use crate::tui::workbench::state::Lint;

pub use crate::tui::msg::LintRequest;

impl LintRequest {
    /// The schema as the state holds it now, under the workbench's choices.
    pub fn of(state: &State) -> LintRequest {
        let options = SetupOptions { target: state.choice.target(), ..SetupOptions::default() };
        let decoder =
            setup::settings(&state.saved, &options).ok().map(|settings| (settings, state.saved.response_type));
        LintRequest {
            asked: state.workbench.lint_asked,
            kind: state.schema_kind.clone(),
            text: state.schema.text(),
            decoder,
        }
    }

    /// The lint: JSON syntax errors at line:column, schema errors at their path, signature errors
    /// with their column; and, when the next run holds the answer to the schema (the local model
    /// under json-schema or constrained), what the constrained decoder refuses, at its path. Off the
    /// loop: a large schema takes a while to read and compile.
    pub fn lint(&self) -> Lint {
        let text = &self.text;
        match self.kind {
            SchemaKind::Signature => Lint {
                what: "signature",
                issues: match signature::parse(text.trim()) {
                    Ok(_) => Vec::new(),
                    Err(e) => e.to_string().lines().map(str::to_string).collect(),
                },
            },
            _ if text.trim().is_empty() => Lint { what: "no schema", issues: Vec::new() },
            _ => Lint {
                what: "JSON Schema",
                issues: match lint_schema_text(text) {
                    Ok(schema) => self.refused_by_decoder(schema.source()),
                    Err(issues) => issues.iter().map(ToString::to_string).collect(),
                },
            },
        }
    }

    /// What the constrained decoder refuses in `schema` (the run would be refused for it: the same check).
    fn refused_by_decoder(&self, schema: &Value) -> Vec<String> {
        let Some((settings, response_type)) = &self.decoder else { return Vec::new() };
        decodable::refusal(settings, *response_type, Some(schema)).iter().map(ToString::to_string).collect()
    }
}

/// Lints the schema editor's text now, in place (a small text: cheap enough for the key).
pub fn lint_now(state: &mut State) {
    state.workbench.lint_asked += 1;
    state.workbench.lint = LintRequest::of(state).lint();
    state.workbench.schema_unlinted = false;
    state.workbench.lint_due = false;
}

/// The schema or what it is checked against changed (its text replaced, the provider or the
/// structured mode): linted now, or for a large text asked for at the end of this message (`update`
/// turns it into `Effect::Lint`).
pub fn relint(state: &mut State) {
    if !state.heavy() {
        return lint_now(state);
    }
    state.workbench.lint_due = true;
    state.workbench.schema_unlinted = true;
}

/// A key changed the schema's text: linted now; for a large text the lint shown, and any on its
/// way, are of older text, and the next is asked for when typing settles.
pub fn schema_edited(state: &mut State) {
    if !state.heavy() {
        return lint_now(state);
    }
    state.workbench.lint_asked += 1;
    state.workbench.schema_unlinted = true;
}

/// The lint to ask for at the end of a message: one was due ([`relint`]), or typing settled
/// (`settled`) on a schema whose lint is stale.
pub fn ask(state: &mut State, settled: bool) -> Option<LintRequest> {
    let due = std::mem::take(&mut state.workbench.lint_due) || (settled && state.workbench.schema_unlinted);
    if !due {
        return None;
    }
    state.workbench.lint_asked += 1;
    Some(LintRequest::of(state))
}

/// A lint is back: shown when it is the newest asked for and the schema has not changed since, else
/// dropped (the lint of the newer text follows).
pub fn linted(state: &mut State, asked: u64, lint: Lint) {
    if asked == state.workbench.lint_asked {
        state.workbench.lint = lint;
        state.workbench.schema_unlinted = false;
    }
}
