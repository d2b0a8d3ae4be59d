//! A provider's batch output read back into run records: each result line's answer goes through the
//! run engine as a one-turn run (the same parser, checks, verdicts, warnings and transcript as a live
//! run), so history, compare and the workbench show it like one. A line that cannot be imported (not
//! JSON, no `custom_id`, one the manifest does not know, a repeat) is reported by its line number and
//! the rest are still imported; a request the provider failed becomes a failed record with its error.

use std::collections::HashMap;

use serde::Serialize;

use super::format::{read_result, sent_request, Outcome};
use super::manifest::Manifest;
use crate::provider::{Event, EventStream, Provider, Request};
use crate::run::record::now_ms;
use crate::run::{engine, RunRecord, RunSetup};

/// What an import read: the records, the lines it could not use, and the requests with no result.
#[derive(Debug, Serialize)]
pub struct Imported {
    /// Result lines read (blank lines not counted).
    pub lines: usize,
    /// One record per imported `custom_id`, in result-file order.
    pub records: Vec<RunRecord>,
    /// Lines not imported, and requests the provider failed.
    pub errors: Vec<LineError>,
    /// `custom_id`s of the manifest with no result line.
    pub missing: Vec<String>,
}

/// A line of the result file that was not imported as a passing answer, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineError {
    /// 1-based line number in the result file.
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_id: Option<String>,
    pub message: String,
    /// A run record was still written for it (the provider failed the request).
    pub recorded: bool,
}

/// A provider that answers with a batch result already received.
struct Answered {
    name: &'static str,
    events: Vec<Event>,
}

impl Provider for Answered {
    fn name(&self) -> &str {
        self.name
    }

    fn stream(&self, _request: &Request) -> EventStream {
        Box::pin(futures_util::stream::iter(self.events.clone()))
    }
}

/// The events a live stream would have delivered for `outcome`.
fn events_of(outcome: &Outcome, mode_of: impl FnOnce() -> crate::provider::ModeReport) -> Vec<Event> {
    if let Some(error) = &outcome.error {
        return vec![Event::Error(error.clone())];
    }
    let mut events = vec![Event::Mode(mode_of())];
    if !outcome.text.is_empty() {
        events.push(Event::Delta(outcome.text.clone()));
    }
    events.extend(outcome.usage.map(Event::Usage));
    events.extend(outcome.finish.clone().map(Event::Finish));
    events
}

/// Imports the result lines `results` of the batch `manifest` describes.
pub async fn import(manifest: &Manifest, results: &str) -> Imported {
    let entries: HashMap<&str, usize> =
        manifest.entries.iter().enumerate().map(|(i, e)| (e.custom_id.as_str(), i)).collect();
    // The schema of a prompt is compiled once for all its entries.
    let mut setups: HashMap<(usize, Option<crate::output::Profile>), RunSetup> = HashMap::new();
    // Each prompt is read back once for all its entries.
    let prompts: Vec<anyhow::Result<crate::prompt::file::PromptFile>> =
        manifest.prompts.iter().map(|p| p.prompt_file()).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut imported = Imported { lines: 0, records: Vec::new(), errors: Vec::new(), missing: Vec::new() };
    for (index, text) in results.lines().enumerate() {
        let line = index + 1;
        if text.trim().is_empty() {
            continue;
        }
        imported.lines += 1;
        let error = |custom_id: Option<&str>, message: String| LineError {
            line,
            custom_id: custom_id.map(str::to_string),
            message,
            recorded: false,
        };
        let outcome = match read_result(manifest.engine, text) {
            Ok(outcome) => outcome,
            Err(message) => {
                imported.errors.push(error(None, message));
                continue;
            }
        };
        let id = outcome.custom_id.as_str();
        let Some(&at) = entries.get(id) else {
            let message = format!(
                "custom_id {id:?} is not one of the {} requests of batch {} (was this result file written for another batch?)",
                manifest.entries.len(),
                manifest.tag
            );
            imported.errors.push(error(Some(id), message));
            continue;
        };
        if let Some(first) = seen.get(id) {
            let message = format!("custom_id {id:?} was already imported from line {first}; this line is skipped");
            imported.errors.push(error(Some(id), message));
            continue;
        }
        seen.insert(id.to_string(), line);
        let entry = &manifest.entries[at];
        let planned = match (manifest.prompt_of(entry), prompts.get(entry.prompt)) {
            (Some(exported), Some(Ok(prompt))) => {
                let key = (entry.prompt, entry.profile);
                let setup = match setups.get(&key) {
                    Some(setup) => Ok(setup),
                    None => exported
                        .setup(prompt.clone(), entry.settings.clone(), entry.profile)
                        .map(|setup| &*setups.entry(key).or_insert(setup)),
                };
                setup.and_then(|setup| entry.plan_for(setup))
            }
            (_, Some(Err(e))) => Err(anyhow::anyhow!("{e:#}")),
            _ => Err(anyhow::anyhow!("the manifest names prompt {} for it, and has no such prompt", entry.prompt)),
        };
        let plan = match planned {
            Ok(plan) => plan,
            Err(e) => {
                imported.errors.push(error(Some(id), format!("{e:#}")));
                continue;
            }
        };
        let events = events_of(&outcome, || sent_request(manifest.engine, &plan.request).1);
        let provider = Answered { name: manifest.engine.provider(), events };
        let mut record = engine::run(&provider, &plan, |_| {}).await;
        record.batch = Some(outcome.custom_id.clone());
        record.started_at_ms = outcome.created_at_ms.unwrap_or_else(now_ms);
        record.duration_ms = 0;
        for turn in &mut record.turns {
            // Nothing streamed: the batch has no timings of its own.
            (turn.ttft_ms, turn.tokens_per_s, turn.duration_ms) = (None, None, 0);
        }
        if let Some(failure) = &outcome.error {
            imported.errors.push(LineError { recorded: true, ..error(Some(id), failure.to_string()) });
        }
        imported.records.push(record);
    }
    imported.missing =
        manifest.entries.iter().filter(|e| !seen.contains_key(&e.custom_id)).map(|e| e.custom_id.clone()).collect();
    imported
}
