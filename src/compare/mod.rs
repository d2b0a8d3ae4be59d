//! json vs jsonl side by side: twin prompts, paired runs, per-side figures, agreement, truncation
//! curves on one token axis, and the same over every test case. Headless (no terminal code): the
//! `compare` command prints it, the workbench's compare view renders it.
//!
//! ```text
//! PromptFile ──twin_of──▶ its json/jsonl twin            (prompt_diff: what differs)
//! [SideSpec; 2] ──pair::plans──▶ [Job; 2] per case ──pair::run_pairs──▶ [RunRecord; 2] per case
//!                                      (or two transcripts replayed: pair::recorded_turns)
//! Comparison::new(case, [side, record]×2, key) ─▶ figures · agreement · chart     cases::totals(&[Comparison])
//! ```
//!
//! - [`twin`]: the json-array twin of a jsonl prompt and back; [`diff`]: two prompts field by field.
//! - [`pair`]: both sides' runs on the same provider, model, variables and settings, at once where
//!   the provider allows and one after the other where it does not; or replays of two transcripts.
//! - [`figures`]: items, valid items, tokens out, time to first token, total time, finish, turns.
//! - [`agreement`]: items in both, only in A or B, differing field by field, matched on a key.
//! - [`chart`]: each side's truncation sweep as curves, crossings, first yield, resilience, corrupt.
//! - [`cases`]: a batch of cases summed, with a row per case.

pub mod agreement;
pub mod cases;
pub mod chart;
pub mod diff;
pub mod figures;
pub mod flow;
pub mod pair;
pub mod twin;
mod twin_text;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

pub use agreement::{agree, default_key, Agreement, Row, RowStatus};
pub use chart::{Chart, Crossing, Curve};
pub use figures::SideFigures;
pub use twin::{twin_of, twin_type, Twin, TwinError};

use crate::output::ResponseType;
use crate::prompt::file::PromptFile;
use crate::run::{Reading, RunRecord};
use crate::schema::Check;
use crate::truncate::cut::{Answer, Cuts, Unit};
use crate::truncate::sweep::{sweep_points, Sweep};

/// One side as it is set up: its label, prompt, and how its answers are read and checked.
#[derive(Clone)]
pub struct SideSpec {
    /// What the side is called in reports: its response type (`json`, `jsonl`), or its prompt's id.
    pub label: String,
    pub prompt: PromptFile,
    /// The prompt file (a derived twin: the file it was derived from); errors name it.
    pub path: PathBuf,
    /// The prompt file's directory (for `schema_file`).
    pub base_dir: PathBuf,
    /// The reader and the check of the whole answer (as `run` uses them).
    pub reading: Reading,
    /// The check of ONE item (the line schema, or the array's `items`), for the figures and sweep.
    pub item_check: Option<Arc<dyn Check>>,
}

/// One side of one case, compared.
#[derive(Clone, Debug)]
pub struct Side {
    pub label: String,
    /// The prompt's id.
    pub prompt: String,
    pub response_type: ResponseType,
    pub figures: SideFigures,
    /// The final answer's items that pass the item check (what agreement matches).
    pub items: Vec<Value>,
    pub run: RunRecord,
    /// The sweep of the final answer over every token cut.
    pub sweep: Sweep,
    /// The final answer's length in tokens.
    pub tokens: usize,
}

/// Both sides of one case: figures, agreement, and the truncation chart.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub case: Option<String>,
    pub sides: [Side; 2],
    pub agreement: Agreement,
    pub chart: Chart,
}

impl Comparison {
    /// Compares two run records of the same case; `key` picks the agreement key (default: see
    /// [`default_key`]).
    pub fn new(case: Option<String>, specs: [&SideSpec; 2], records: [RunRecord; 2], key: Option<&str>) -> Self {
        let model_tokens = records.iter().all(|r| r.turns.last().is_some_and(|t| t.transcript.has_token_ids()));
        let [record_a, record_b] = records;
        let sides = [side(specs[0], record_a, model_tokens), side(specs[1], record_b, model_tokens)];
        let key = match key {
            Some(key) => Some(key.to_string()),
            None => default_key(&sides[0].items, &sides[1].items, specs[0].item_check.as_ref()),
        };
        let agreement = agree(&sides[0].items, &sides[1].items, key.as_deref());
        let curves = sides
            .iter()
            .enumerate()
            .flat_map(|(at, side)| {
                chart::strategies_of(side.response_type)
                    .iter()
                    .map(move |&strategy| chart::curve(at, &side.label, strategy, &side.sweep, side.tokens))
            })
            .collect();
        let chart = chart::chart(curves, if model_tokens { "model" } else { "o200k" });
        Self { case, sides, agreement, chart }
    }

    /// Both final answers passed validation.
    pub fn ok(&self) -> bool {
        self.sides.iter().all(|s| s.run.ok)
    }
}

fn side(spec: &SideSpec, record: RunRecord, model_tokens: bool) -> Side {
    let answer = answer_of(&record, model_tokens);
    let (all, valid) =
        figures::answer_items(&answer.text, spec.reading.response_type, spec.reading.profile, spec.item_check.as_ref());
    let cuts = Cuts::new(&answer, Unit::Token).unwrap_or_else(|_| Cuts::o200k(&answer.text));
    let sweep = sweep_points(&answer.text, cuts.points(), spec.reading.profile, spec.item_check.clone());
    let tokens = cuts.total();
    Side {
        label: spec.label.clone(),
        prompt: spec.prompt.id.clone(),
        response_type: spec.reading.response_type,
        figures: SideFigures::of(&record, all.len(), valid.len()),
        items: valid,
        run: record,
        tokens,
        sweep,
    }
}

/// The last turn's answer, cut at its recorded chunks when they are the model's tokens on both sides.
fn answer_of(record: &RunRecord, model_tokens: bool) -> Answer {
    let Some(turn) = record.turns.last() else { return Answer::default() };
    let recorded = turn.transcript.answer() == turn.output;
    Answer {
        text: turn.output.clone(),
        chunk_ends: recorded.then(|| turn.transcript.chunk_ends()),
        chunks_are_tokens: model_tokens && recorded,
        transcript: None,
    }
}

#[cfg(test)]
mod timing;
