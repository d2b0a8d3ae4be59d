//! The retry message sent after a failed answer, and the cap that keeps retries inside the context.
//!
//! For a signature prompt answered as json, the message is PtcRunner's own (`json_mode::feedback`:
//! the error, the answer cut to 500 characters, the example format). For a JSON Schema (or a jsonl
//! answer) it is the same message with what a schema says: every error with its path or line (at most
//! [`MAX_ERRORS`], each at most [`ERROR_CHARS`] characters), the answer cut to 500 characters, and the
//! schema as the expected format (at most [`EXPECTED_CHARS`] characters).
//!
//! **The cap.** A retry sends the first turn's messages, then earlier answers as assistant messages,
//! each followed by its feedback as a user message. Those added messages get at most
//! `0.9 × context_tokens − (first turn's message tokens) − max_tokens` tokens (max_tokens unknown:
//! a quarter of the context), counted with o200k; the newest feedback always goes in whole, the
//! newest answer is cut to what is left, and older exchanges are dropped, oldest first, when they no
//! longer fit whole. When the newest feedback does not fit with 32 tokens to spare for the answer (or
//! a note that it was left out), no retry is sent and the record says why.

use serde_json::Value;

use super::plan::{Expected, RunPlan};
use crate::output::{JsonReport, JsonlReport, LineStatus, Report};
use crate::prompt::signature::json_mode::{self, JsonModeError};
use crate::provider::{FinishReason, Message, Role};
use crate::schema::SchemaIssue;
use crate::truncate::tokens::count_o200k;

/// Characters of the failed answer quoted in the feedback (PtcRunner's cut).
pub const ANSWER_CHARS: usize = 500;
/// Errors listed in a schema feedback message; the rest are counted.
pub const MAX_ERRORS: usize = 20;
/// Characters of one listed error.
pub const ERROR_CHARS: usize = 300;
/// Characters of the expected format (the schema text).
pub const EXPECTED_CHARS: usize = 4000;

/// The feedback for `answer`, whose parse `report` failed.
pub fn message(plan: &RunPlan, answer: &str, report: &Report, finish: Option<&FinishReason>) -> String {
    if let (Expected::Signature(sig), Report::Json(json)) = (&plan.expected, report) {
        let error = json_mode::accept(sig, answer).err().unwrap_or_else(|| mode_error(json));
        return json_mode::feedback(sig, answer, &error);
    }
    let (heading, errors) = match report {
        Report::Json(r) => ("Your response was not valid JSON or didn't match the expected format.", json_errors(r)),
        Report::Jsonl(r) => (
            "Your response was not valid JSON Lines, or some of its lines didn't match the expected format.",
            jsonl_errors(r),
        ),
        Report::Text(_) => ("Your response didn't match the expected format.", Vec::new()),
    };
    let mut listed: Vec<String> =
        errors.iter().take(MAX_ERRORS).map(|e| format!("- {}", cut(e, ERROR_CHARS))).collect();
    if errors.len() > MAX_ERRORS {
        listed.push(format!("- ... and {} more", errors.len() - MAX_ERRORS));
    }
    let limit = match finish {
        Some(FinishReason::Length) => "\n\nYour response was cut off by the token limit: write a shorter answer.",
        _ => "",
    };
    let jsonl = matches!(report, Report::Jsonl(_));
    format!(
        "<error_feedback>\n{heading}\n\nErrors:\n{}{limit}\n\nYour response was:\n{}\n\n{}\n</error_feedback>",
        listed.join("\n"),
        cut(answer.trim_end(), ANSWER_CHARS),
        expected_format(&plan.expected, jsonl)
    )
}

/// A JSON-mode error from a report, for the rare answer PtcRunner's reading accepts but the profile's
/// check did not.
fn mode_error(report: &JsonReport) -> JsonModeError {
    if !report.errors.is_empty() {
        let message: Vec<String> = report.errors.iter().map(issue_text).collect();
        return JsonModeError::Validation { message: message.join("; "), issues: report.errors.clone() };
    }
    let message = report.error.as_ref().map_or("JSON parse error".to_string(), |e| e.message.clone());
    JsonModeError::JsonParse { message }
}

fn issue_text(issue: &SchemaIssue) -> String {
    let path = if issue.path.is_empty() { "(root)" } else { &issue.path };
    format!("{path}: {}", issue.message)
}

fn json_errors(report: &JsonReport) -> Vec<String> {
    let mut errors: Vec<String> = report
        .error
        .iter()
        .filter(|_| report.errors.is_empty())
        .map(|e| {
            let at = match (e.line, e.column) {
                (Some(line), Some(column)) => format!(" (line {line}, column {column})"),
                _ => String::new(),
            };
            format!("{}{at}", e.message)
        })
        .collect();
    errors.extend(report.errors.iter().map(issue_text));
    errors
}

fn jsonl_errors(report: &JsonlReport) -> Vec<String> {
    let mut errors = Vec::new();
    for verdict in &report.lines {
        match &verdict.status {
            LineStatus::InvalidJson { error, column } => {
                errors.push(format!("line {}: invalid JSON at column {column}: {error}", verdict.line))
            }
            LineStatus::SchemaError { errors: issues } => {
                errors.extend(issues.iter().map(|issue| format!("line {}: {}", verdict.line, issue_text(issue))))
            }
            LineStatus::Valid { .. } | LineStatus::Skipped { .. } => {}
        }
    }
    errors
}

fn expected_format(expected: &Expected, jsonl: bool) -> String {
    let asked = if jsonl {
        "Please return the whole answer again as JSON Lines: one JSON value per line"
    } else {
        "Please return valid JSON"
    };
    match expected {
        Expected::Schema(schema) => {
            let text = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
            let each = if jsonl { ", each matching" } else { " matching" };
            format!("{asked}{each} this JSON Schema:\n{}", cut(&text, EXPECTED_CHARS))
        }
        Expected::Signature(sig) => {
            let example = json_mode::example_value(&sig.returns);
            let text = if jsonl { compact(&example) } else { json_mode::example_output(sig) };
            let each = if jsonl { ", each like" } else { " matching" };
            format!("{asked}{each} this format:\n{}", cut(&text, EXPECTED_CHARS))
        }
        Expected::Nothing => format!("{asked}."),
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// At most `max` characters of `text`, with `...` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}...", text.get(..at).unwrap_or_default()),
    }
}

/// A failed answer and the feedback it drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub answer: String,
    pub feedback: String,
}

/// Tokens the messages added by retries may take (see the module documentation).
pub fn budget(plan: &RunPlan) -> u64 {
    let context = u64::from(plan.context_tokens);
    let reserve = plan.request.max_tokens.map_or(context / 4, u64::from);
    let base: u64 = plan.request.messages.iter().map(|m| tokens(&m.content) + 4).sum();
    (context * 9 / 10).saturating_sub(base).saturating_sub(reserve)
}

/// The next turn's messages: the first turn's, then the exchanges that fit in `budget` tokens (newest
/// feedback whole, newest answer cut to fit, older exchanges whole or not at all). `None` when the
/// newest feedback alone does not fit.
pub fn retry_messages(base: &[Message], exchanges: &[Exchange], budget: u64) -> Option<Vec<Message>> {
    let (newest, older) = exchanges.split_last()?;
    let feedback_tokens = tokens(&newest.feedback) + 4;
    let mut remaining = budget.checked_sub(feedback_tokens)?;
    if remaining < MIN_ANSWER_TOKENS {
        return None;
    }
    let answer = fit(&newest.answer, remaining.saturating_sub(4));
    remaining = remaining.saturating_sub(tokens(&answer) + 4);
    let mut kept = vec![(answer, newest.feedback.clone())];
    for exchange in older.iter().rev() {
        let cost = tokens(&exchange.answer) + tokens(&exchange.feedback) + 8;
        if cost > remaining {
            break;
        }
        remaining -= cost;
        kept.push((exchange.answer.clone(), exchange.feedback.clone()));
    }
    let mut messages = base.to_vec();
    for (answer, feedback) in kept.into_iter().rev() {
        messages.push(Message { role: Role::Assistant, content: answer });
        messages.push(Message { role: Role::User, content: feedback });
    }
    Some(messages)
}

/// The least room an answer message needs (the "omitted" marker fits in it).
const MIN_ANSWER_TOKENS: u64 = 32;

const OMITTED: &str = "[the previous answer is omitted to fit the context window; the feedback below quotes its start]";

/// `answer` cut at a piece boundary so it takes at most `max` tokens, marked when cut.
fn fit(answer: &str, max: u64) -> String {
    if tokens(answer) <= max {
        return answer.to_string();
    }
    // Room for the marker that says where and how much was cut.
    let room = max.saturating_sub(24);
    let mut used = 0;
    let mut end = 0;
    for piece in pieces(answer) {
        let cost = count_o200k(piece) as u64;
        if used + cost > room {
            break;
        }
        used += cost;
        end += piece.len();
    }
    if end == 0 {
        return OMITTED.to_string();
    }
    let rest = answer.get(end..).map_or(0, |r| r.chars().count());
    format!(
        "{}\n[... cut here to fit the context window: {rest} more characters]",
        answer.get(..end).unwrap_or_default()
    )
}

/// o200k tokens of `text`, counted in pieces of about 1 KiB (linear time on any input).
pub fn tokens(text: &str) -> u64 {
    pieces(text).map(|piece| count_o200k(piece) as u64).sum()
}

/// `text` in pieces of at most 1 KiB, cut at character boundaries.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut at = rest.len().min(1024);
        while !rest.is_char_boundary(at) {
            at -= 1;
        }
        let (piece, tail) = rest.split_at(at);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
#[path = "feedback_tests.rs"]
mod tests;
