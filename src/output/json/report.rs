//! Turns each profile's state into the `json` report: the value (with its repairs) or the error with
//! its 1-based line and column, then the schema check.

use serde_json::Value;

use super::extract::{ptc_detail, trustgraph_detail};
use super::lenient::{Lenient, Phase};
use super::repair::tail_repairs;
use super::scan::{OpenToken, ScanError};
use crate::output::{JsonError, JsonErrorKind, JsonReport, Profile, Repair, ResponseType};
use crate::schema::Check;

/// Why there is no value: kind, message, byte offset in the answer.
pub struct Failure {
    kind: JsonErrorKind,
    message: String,
    at: Option<usize>,
}

pub type Outcome = Result<(Value, Vec<Repair>), Failure>;

fn invalid(error: &ScanError) -> Failure {
    Failure { kind: JsonErrorKind::InvalidJson, message: error.message.clone(), at: Some(error.at) }
}

pub fn lenient(text: &str, state: &Lenient) -> Outcome {
    if let Some(error) = state.fatal() {
        return Err(invalid(error));
    }
    let Some(value) = state.value() else {
        if let Some(error) = state.first_error() {
            return Err(invalid(error));
        }
        if state.phase() == Phase::Value {
            let scanner = state.scanner();
            // A root number that is whole but not representable (`1e400`) is kept by no repair.
            let message = if scanner.stack().is_empty() && scanner.open_token() == (OpenToken::Number { valid: true }) {
                format!("number out of range: {}", scanner.number_text())
            } else {
                "the answer ends before a value is complete".to_string()
            };
            return Err(Failure { kind: JsonErrorKind::InvalidJson, message, at: Some(text.len()) });
        }
        let message = "no JSON value found".to_string();
        return Err(Failure { kind: JsonErrorKind::NoJsonFound, message, at: None });
    };
    let mut repairs = Vec::new();
    let note = |at: usize, what: &str| Repair { at, what: what.into() };
    if state.bom() {
        repairs.push(note(0, "stripped BOM"));
    }
    let start = state.candidate_start();
    if let Some(fence) = state.fence().filter(|&fence| fence < start) {
        repairs.push(note(fence, "stripped fence"));
    }
    let content = state.content_start().min(start);
    let before = text.get(content..start).unwrap_or_default();
    if let Some(skipped) = before.find(|c: char| !c.is_whitespace()) {
        repairs.push(note(content + skipped, "skipped text before the value"));
    }
    repairs.extend(state.builder().trailing_commas().iter().map(|&at| note(at, "removed trailing comma")));
    if state.phase() == Phase::Value {
        repairs.extend(tail_repairs(text, state.scanner()));
    } else if let Some(end) = state.value_end() {
        let after = text.get(end..).unwrap_or_default();
        if let Some(first) = after.find(|c: char| !c.is_whitespace()) {
            let rest = after.get(first..).unwrap_or_default();
            let fence_only = rest.strip_prefix("```").is_some_and(|tail| tail.trim().is_empty());
            let what = if fence_only { "stripped closing fence" } else { "ignored text after the value" };
            repairs.push(note(end + first, what));
        }
    }
    repairs.sort_by_key(|repair| repair.at);
    Ok((value, repairs))
}

pub fn strict(text: &str, value: Option<Value>, error: Option<ScanError>) -> Outcome {
    if let Some(value) = value {
        return Ok((value, Vec::new()));
    }
    if let Some(error) = error {
        return Err(invalid(&error));
    }
    if text.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
        let message = "no JSON value: the answer is empty".to_string();
        return Err(Failure { kind: JsonErrorKind::NoJsonFound, message, at: None });
    }
    let message = "the answer ends before the value is complete".to_string();
    Err(Failure { kind: JsonErrorKind::InvalidJson, message, at: Some(text.len()) })
}

pub fn trustgraph(text: &str) -> Outcome {
    trustgraph_detail(text).map(|value| (value, Vec::new())).map_err(|failure| Failure {
        kind: JsonErrorKind::InvalidJson,
        message: format!("JSON parse fail: {}", failure.message),
        at: failure.at,
    })
}

pub fn ptc(text: &str) -> Outcome {
    ptc_detail(text).map(|value| (value, Vec::new())).map_err(|(kind, failure)| Failure {
        kind,
        message: failure.message,
        at: failure.at,
    })
}

/// 1-based line and column (in characters) of byte `at` in `text`.
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = text.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before.get(line_start..).unwrap_or_default().chars().count() + 1;
    (line, column)
}

pub fn finish(text: &str, profile: Profile, check: Option<&dyn Check>, outcome: Outcome) -> JsonReport {
    let mut report = JsonReport {
        response_type: ResponseType::Json,
        profile,
        ok: false,
        value: None,
        branch: None,
        error: None,
        errors: Vec::new(),
        repairs: Vec::new(),
    };
    match outcome {
        Err(failure) => {
            let position = failure.at.map(|at| line_column(text, at));
            report.error = Some(JsonError {
                kind: failure.kind,
                message: failure.message,
                line: position.map(|(line, _)| line),
                column: position.map(|(_, column)| column),
            });
        }
        Ok((value, repairs)) => {
            report.repairs = repairs;
            match check.map(|check| check.check(&value)) {
                None => report.ok = true,
                Some(Ok(branch)) => {
                    report.ok = true;
                    report.branch = branch;
                }
                Some(Err(issues)) => {
                    let first = issues.first().map(|issue| (issue.path.as_str(), issue.message.as_str()));
                    let message = match (profile, first) {
                        (Profile::Trustgraph, Some((_, message))) => format!("Schema validation fail: {message}"),
                        (Profile::Trustgraph, None) => "Schema validation fail".to_string(),
                        (_, Some((path, message))) => format!(
                            "the value does not match the schema ({} issue(s)); at `{path}`: {message}",
                            issues.len()
                        ),
                        (_, None) => "the value does not match the schema".to_string(),
                    };
                    report.error =
                        Some(JsonError { kind: JsonErrorKind::SchemaError, message, line: None, column: None });
                    report.errors = issues;
                }
            }
            report.value = Some(value);
        }
    }
    report
}
