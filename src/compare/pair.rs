//! Paired runs: both sides of every case on the same provider, model, variables and settings, as
//! one batch — at once where the provider serves several requests, one after the other where it does
//! not (a llama.cpp-style server on this machine answers one request at a time and by default cuts a
//! running stream off when the next arrives). Or two recorded transcripts, replayed through the same
//! engine, keeping their recorded timings and token ids.

use std::path::Path;

use crate::prompt::template::Variables;
use crate::provider::replay::{Pace, Replay};
use crate::provider::ProviderError;
use crate::run::decodable;
use crate::run::factory::{concurrency_for, transcript_path, Concurrency, ReplaySequence};
use crate::run::{run_batch, Job, ProviderChoice, RunError, RunEvent, RunPlan, RunRecord, RunSettings};
use crate::truncate::transcript::Transcript;

use super::SideSpec;

/// Where an event of a paired batch comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// Index of the case (0 for a single run).
    pub case: usize,
    /// 0 for side A, 1 for side B.
    pub side: usize,
}

/// How many runs go at once for `settings`, and why (see [`concurrency_for`]); a comparison needs
/// two at once to run its sides concurrently.
pub fn pairing(settings: &RunSettings) -> Concurrency {
    concurrency_for(settings)
}

/// The plans of both sides for each case (`None`: the prompt's own variables), rendered with the
/// same `overrides` and `settings`; on the local model, each side's schema checked against the
/// constrained decoder first.
pub fn plans(
    specs: [&SideSpec; 2],
    cases: &[Option<String>],
    overrides: &Variables,
    settings: &RunSettings,
) -> Result<Vec<[RunPlan; 2]>, RunError> {
    for spec in specs {
        decodable::check_prompt(&spec.prompt, &spec.path, &spec.base_dir, settings)?;
    }
    cases
        .iter()
        .map(|case| {
            let plan = |spec: &SideSpec| {
                RunPlan::new(&spec.prompt, &spec.base_dir, case.as_deref(), overrides, settings, spec.reading.clone())
            };
            Ok([plan(specs[0])?, plan(specs[1])?])
        })
        .collect()
}

/// The jobs of live paired runs: every plan on the provider `choice` builds (one provider shared).
pub fn live_jobs(plans: Vec<[RunPlan; 2]>, choice: &ProviderChoice) -> Result<Vec<[Job; 2]>, RunError> {
    let provider = choice.build(None)?;
    Ok(plans
        .into_iter()
        .map(|[a, b]| [Job { provider: provider.clone(), plan: a }, Job { provider: provider.clone(), plan: b }])
        .collect())
}

/// The jobs that replay two transcripts: side A's from `transcripts[0]`, B's from `transcripts[1]`
/// (in a batch, each case's files are named as `run --record` names them: `A.CASE.jsonl`).
pub fn replay_jobs(plans: Vec<[RunPlan; 2]>, transcripts: [&Path; 2], batch: bool) -> Result<Vec<[Job; 2]>, RunError> {
    plans
        .into_iter()
        .map(|[a, b]| {
            let job = |mut plan: RunPlan, first: &Path| -> Result<Job, RunError> {
                let case = if batch { plan.case.clone() } else { None };
                // The transcripts are read once: they are the provider, and a side with no model
                // claimed plays under the model they recorded (the case's, in a batch).
                let sequence = ReplaySequence::open(first, case.as_deref(), Pace::Instant)?;
                if plan.request.model.is_empty() {
                    plan.request.model = sequence.model().to_string();
                }
                Ok(Job { provider: std::sync::Arc::new(sequence), plan })
            };
            Ok([job(a, transcripts[0])?, job(b, transcripts[1])?])
        })
        .collect()
}

/// Runs every pair, at most `concurrency` runs at a time, in order A then B of each case (so with 1
/// the sides run one after the other); `sink` gets each event with where it comes from. Dropping
/// the future cancels every run.
pub async fn run_pairs<F: FnMut(At, RunEvent) + Send>(
    pairs: &[[Job; 2]],
    concurrency: usize,
    mut sink: F,
) -> Vec<[RunRecord; 2]> {
    let jobs: Vec<Job> = pairs.iter().flat_map(|pair| pair.iter().cloned()).collect();
    let records =
        run_batch(&jobs, concurrency, |index, event| sink(At { case: index / 2, side: index % 2 }, event)).await;
    let mut records = records.into_iter();
    let mut pairs_out = Vec::with_capacity(pairs.len());
    while let (Some(a), Some(b)) = (records.next(), records.next()) {
        pairs_out.push([a, b]);
    }
    pairs_out
}

/// The transcripts of a recorded run: `first` (or the case's file), then its `.turn2`, ... files.
pub fn recorded_turns(first: &Path, case: Option<&str>) -> Result<Vec<Transcript>, ProviderError> {
    let mut turns = Vec::new();
    for turn in 1.. {
        let path = transcript_path(first, case, turn);
        if turn > 1 && !path.exists() {
            break;
        }
        turns.push(Replay::from_file(&path, Pace::Instant)?.transcript().clone());
    }
    Ok(turns)
}

/// Puts the recorded timings and chunks back into a record replayed at instant pace: each turn's
/// time to first token and duration are its transcript's, and the transcript (with any token ids)
/// is the recorded one.
pub fn keep_recorded_times(record: &mut RunRecord, transcripts: &[Transcript]) {
    for (turn, recorded) in record.turns.iter_mut().zip(transcripts) {
        let first = recorded.chunks.first().map(|c| c.t_ms);
        let end = recorded.end.as_ref().map(|e| e.t_ms).or(recorded.chunks.last().map(|c| c.t_ms)).unwrap_or(0);
        turn.ttft_ms = first;
        turn.duration_ms = end;
        turn.tokens_per_s = match (turn.usage, first) {
            (Some(usage), Some(first)) if end > first && usage.output_tokens > 0 => {
                Some((usage.output_tokens as f64 / ((end - first) as f64 / 1000.0) * 10.0).round() / 10.0)
            }
            _ => None,
        };
        turn.transcript = recorded.clone();
    }
    record.duration_ms = record.turns.iter().map(|t| t.duration_ms).sum();
}
