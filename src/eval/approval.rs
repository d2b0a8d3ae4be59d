//! What approving a run's answer as its case's expected answer writes: exactly the answer's valid,
//! complete items (a jsonl answer's valid lines, a json array's elements that match the schema and
//! were not cut, a json or text answer's value), and what it leaves out, each part named with where
//! and why (a line that is not JSON, a schema error, the tail the token limit cut, a failed stream).
//! An answer that leaves something out is refused; the user may insist, and then the valid items are
//! written with what was left out kept beside them in `[cases.expected] left_out`.

use std::path::Path;

use serde_json::Value;

use super::values::cut;
use crate::output::json::JsonParser;
use crate::output::{LineStatus, OutputParser, Profile, Report};
use crate::prompt::file::{Case, PromptError, PromptFile};
use crate::run::RunRecord;

/// How much of a message a left-out part quotes.
const QUOTED: usize = 80;

/// What approving one run's answer would write.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Approval {
    /// The case the answer becomes the expected answer of.
    pub case: String,
    /// What is written: the valid, complete items (a list answer), or the one value.
    pub answer: Approved,
    /// Each part of the answer that is not written, with where and why (empty: the answer is whole).
    pub left_out: Vec<String>,
}

/// The part of an answer that approving writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Approved {
    /// Nothing in the answer is valid and complete.
    #[default]
    Nothing,
    /// A list answer's items (jsonl lines, a json array's elements).
    Items(Vec<Value>),
    /// A json answer that is one value, or a text answer's text.
    Value(Value),
}

impl Approval {
    /// What approving `record`'s answer would write; `Err` when the run has no case to approve into.
    pub fn of(record: &RunRecord) -> Result<Approval, String> {
        let Some(case) = record.case.clone() else {
            return Err("the run has no case: only a case's answer can be approved as expected".into());
        };
        let mut left_out = Vec::new();
        let answer = match record.turns.last() {
            None => {
                left_out.push("the run has no answer".to_string());
                Approved::Nothing
            }
            Some(turn) => match &turn.parse {
                Report::Jsonl(report) => {
                    let last = report.lines.len().saturating_sub(1);
                    for (index, line) in report.lines.iter().enumerate() {
                        let at = match line.end_line {
                            Some(end) => format!("lines {}-{end}", line.line),
                            None => format!("line {}", line.line),
                        };
                        match &line.status {
                            LineStatus::InvalidJson { .. } if cut_off(record) && index == last => {
                                left_out.push(format!("{at}: cut off by the token limit mid-record"));
                            }
                            LineStatus::InvalidJson { error, column } => {
                                left_out.push(format!("{at}: not JSON (column {column}: {})", cut(error, QUOTED)));
                            }
                            LineStatus::SchemaError { errors } => left_out.push(format!(
                                "{at}: does not match the schema ({})",
                                errors.first().map_or(String::new(), |e| issue(&e.path, &e.message))
                            )),
                            LineStatus::Valid { .. } | LineStatus::Skipped { .. } => {}
                        }
                    }
                    Approved::Items(report.items.to_values())
                }
                Report::Json(report) => match &report.value {
                    None => {
                        let why = report.error.as_ref().map_or("no value".to_string(), |e| cut(&e.message, QUOTED));
                        left_out.push(format!("no valid JSON: {why}"));
                        Approved::Nothing
                    }
                    Some(Value::Array(elements)) => {
                        let complete = if cut_off(record) { complete_elements(&turn.output) } else { elements.len() };
                        let mut kept = Vec::new();
                        for (index, element) in elements.iter().enumerate() {
                            let errors: Vec<_> =
                                report.errors.iter().filter(|e| element_of(&e.path) == Some(index)).collect();
                            if index >= complete {
                                left_out.push(format!("item {}: cut off by the token limit", index + 1));
                            } else if let Some(first) = errors.first() {
                                let why = issue(&first.path, &first.message);
                                left_out.push(format!("item {}: does not match the schema ({why})", index + 1));
                            } else {
                                kept.push(element.clone());
                            }
                        }
                        // An error about the array as a whole (too few items, say) belongs to no one item.
                        for error in report.errors.iter().filter(|e| element_of(&e.path).is_none()) {
                            left_out.push(format!(
                                "the answer does not match the schema ({})",
                                issue(&error.path, &error.message)
                            ));
                            kept.clear();
                        }
                        Approved::Items(kept)
                    }
                    Some(value) => {
                        if let Some(first) = report.errors.first() {
                            left_out.push(format!(
                                "the answer does not match the schema ({})",
                                issue(&first.path, &first.message)
                            ));
                            Approved::Nothing
                        } else if cut_off(record) && !report.repairs.is_empty() {
                            left_out.push("the answer was cut off by the token limit and repaired".to_string());
                            Approved::Nothing
                        } else {
                            Approved::Value(value.clone())
                        }
                    }
                },
                Report::Text(report) => Approved::Value(Value::String(report.text.clone())),
            },
        };
        if let Some(why) = unfinished(record) {
            left_out.push(why);
        }
        Ok(Approval { case, answer, left_out })
    }

    /// Whether the whole answer is written (nothing left out).
    pub fn is_whole(&self) -> bool {
        self.left_out.is_empty()
    }

    /// Whether there is anything to write (an empty list is nothing).
    pub fn has_answer(&self) -> bool {
        match &self.answer {
            Approved::Nothing => false,
            Approved::Items(items) => !items.is_empty(),
            Approved::Value(_) => true,
        }
    }

    /// What is written, in words: `4 items`, `1 item`, `1 value`, `nothing`.
    pub fn count(&self) -> String {
        match &self.answer {
            Approved::Nothing => "nothing".to_string(),
            Approved::Items(items) if items.len() == 1 => "1 item".to_string(),
            Approved::Items(items) => format!("{} items", items.len()),
            Approved::Value(_) => "1 value".to_string(),
        }
    }

    /// Why approving is refused, when something is left out: `2 parts are not a real answer: line 3:
    /// not JSON (...); line 5: cut off ...`.
    pub fn refusal(&self) -> Option<String> {
        match self.left_out.as_slice() {
            [] => None,
            [one] => Some(format!("1 part of the answer is not a real answer: {one}")),
            many => Some(format!("{} parts of the answer are not a real answer: {}", many.len(), many.join("; "))),
        }
    }

    /// The answer as written, one line per item (each item as compact JSON), for a confirmation.
    pub fn lines(&self) -> Vec<String> {
        match &self.answer {
            Approved::Nothing => Vec::new(),
            Approved::Items(items) => items.iter().map(Value::to_string).collect(),
            Approved::Value(Value::String(text)) => text.lines().map(str::to_string).collect(),
            Approved::Value(value) => vec![value.to_string()],
        }
    }
}

/// Writes `approval` into its case of `prompt` as the expected answer. An approval that leaves part of
/// the answer out is refused with the reason unless `insist`: then the valid items are written and
/// `[cases.expected] left_out` lists what was not. An answer with nothing valid is always refused.
pub fn approve(prompt: &mut PromptFile, approval: &Approval, insist: bool) -> Result<(), PromptError> {
    let (answer, left_out) =
        written(approval, insist).map_err(|message| PromptError::Expectation { id: prompt.id.clone(), message })?;
    prompt.approve(&approval.case, &answer, left_out)
}

/// What approving writes (the answer and what it leaves out), or why it is refused.
fn written(approval: &Approval, insist: bool) -> Result<(Value, Vec<String>), String> {
    let case = &approval.case;
    let answer = match &approval.answer {
        _ if !approval.has_answer() => {
            let why = approval.refusal().unwrap_or_else(|| "there is no answer".to_string());
            return Err(format!("case {case:?}: nothing to approve: {why}"));
        }
        Approved::Items(items) => Value::Array(items.clone()),
        Approved::Value(value) => value.clone(),
        Approved::Nothing => Value::Null,
    };
    let left_out = match approval.refusal() {
        Some(why) if !insist => return Err(format!("case {case:?}: not approved: {why}")),
        Some(_) => approval.left_out.clone(),
        None => Vec::new(),
    };
    Ok((answer, left_out))
}

/// Writes `approval` into its row of the dataset the prompt file at `prompt_path` names
/// (`cases_file`), as [`approve`] writes an inline case (refused the same way unless `insist`; a
/// dataset row has no `left_out`, so what was left out is not kept). Only that row's bytes change
/// ([`crate::dataset::write_rows`]); `was` is the row's case as the front end read it: a row that
/// changed on disk since (its variables or its expected answer) is not written over. Returns the
/// prompt read again with its dataset, to score with.
pub fn approve_in_dataset(
    prompt_path: &Path,
    approval: &Approval,
    insist: bool,
    was: Option<&Case>,
) -> Result<PromptFile, String> {
    let base_dir = crate::run::setup::base_dir(prompt_path);
    let read = || -> Result<PromptFile, String> {
        let mut prompt = PromptFile::load(prompt_path).map_err(|e| e.to_string())?;
        crate::dataset::read_into(&mut prompt, prompt_path, &base_dir, None, &Default::default())
            .map_err(|e| e.to_string())?;
        Ok(prompt)
    };
    let prompt = read()?;
    let case = &approval.case;
    let Some(dataset) = &prompt.dataset else {
        return Err(format!("case {case:?}: the prompt names no dataset (cases_file) to write it into"));
    };
    if !prompt.cases.iter().skip(dataset.first).any(|c| &c.name == case) {
        return Err(format!("case {case:?} is not a row of {}", dataset.path.display()));
    }
    let (answer, _) = written(approval, insist)?;
    let edit = crate::dataset::RowEdit { case, was, variables: None, expected: Some(&answer) };
    crate::dataset::write_rows(&dataset.path, &[edit]).map_err(|e| e.to_string())?;
    read()
}

/// Whether the answer ended before it was complete: the token limit (or the client's cap), a stop, a
/// failed stream.
fn cut_off(record: &RunRecord) -> bool {
    record.truncated || record.cancelled || record.error.is_some()
}

/// Why the answer may be missing its end, if it may (said once, after the parts left out).
fn unfinished(record: &RunRecord) -> Option<String> {
    if let Some(error) = &record.error {
        return Some(format!("the stream failed before the answer ended ({})", cut(error, QUOTED)));
    }
    if record.cancelled {
        return Some("the run was stopped before the answer ended".to_string());
    }
    record.truncated.then(|| "the answer hit the token limit: what would have followed is missing".to_string())
}

/// How many top-level elements of a cut json answer were complete before the cut (the lenient
/// reading's settled items; the element the cut fell in is not among them).
fn complete_elements(output: &str) -> usize {
    let mut parser = JsonParser::new(Profile::Lenient, None);
    parser.feed(output);
    parser.lenient().map_or(0, |lenient| lenient.epoch_items(lenient.epoch()).len())
}

/// The element of a json array answer a schema error's instance path is in (`/3/name` → 3).
fn element_of(path: &str) -> Option<usize> {
    path.strip_prefix('/')?.split('/').next()?.parse().ok()
}

/// `/definition: "definition" is a required property`.
fn issue(path: &str, message: &str) -> String {
    let path = if path.is_empty() { "/" } else { path };
    format!("{path}: {}", cut(message, QUOTED))
}

#[cfg(test)]
mod tests;
