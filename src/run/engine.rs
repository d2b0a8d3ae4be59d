//! The turn loop (PtcRunner's JSON-mode loop over a streaming provider), and batches of cases run
//! concurrently under a bound.
//!
//! A turn whose answer fails validation is followed, while turns remain, by a retry carrying the
//! answer and its feedback (see [`super::feedback`] for the message and the context cap). A turn whose
//! stream failed ends the run: the partial answer stays in the record with the error. Text answers
//! are never retried.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt;

use super::feedback::{self, Exchange};
use super::limits::Stop;
use super::plan::RunPlan;
use super::record::{now_ms, repairs_of, result_of, warnings_of, RunRecord, Turn};
use super::turn::stream_turn;
use super::RunEvent;
use crate::output::ResponseType;
use crate::provider::{FinishReason, Provider, Request};

/// Runs `plan` through `provider`, reporting progress to `sink`; returns the run record.
/// Dropping the future cancels the run (and closes the provider's connection) with no record; see
/// [`run_until`] for a cancel that keeps one.
pub async fn run<F: FnMut(RunEvent) + Send>(provider: &dyn Provider, plan: &RunPlan, sink: F) -> RunRecord {
    run_until(provider, plan, sink, std::future::pending()).await
}

/// [`run`], stopped when `cancel` completes or the plan's deadline passes, whichever comes first:
/// the stream is dropped at once (the connection closes), no further turn starts, and the record
/// keeps the partial answer, marked `cancelled` with the [`Stop`]'s warning (the last turn's
/// transcript ends `interrupted`, so it replays).
pub async fn run_until<F, C>(provider: &dyn Provider, plan: &RunPlan, mut sink: F, cancel: C) -> RunRecord
where
    F: FnMut(RunEvent) + Send,
    C: std::future::Future<Output = Stop> + Send,
{
    let timeout = plan.limits.timeout;
    let deadline = async move {
        tokio::time::sleep(timeout).await;
        Stop::Deadline(timeout)
    };
    let cancel = futures_util::FutureExt::fuse(futures_util::future::select(Box::pin(cancel), Box::pin(deadline)));
    let cancel = futures_util::FutureExt::map(cancel, |either| either.factor_first().0);
    futures_util::pin_mut!(cancel);
    let mut stopped = None;
    let started_at_ms = now_ms();
    let started = Instant::now();
    // Counted only when a retry needs it (the tokenizer is not loaded for runs that pass at once).
    let mut budget: Option<u64> = None;
    let mut request = plan.request.clone();
    // A sampling run given no seed gets a fresh one, kept for its retries and in its record.
    super::seed::choose(&mut request);
    let mut exchanges: Vec<Exchange> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    let mut no_room = false;
    for number in 1..=plan.max_turns {
        sink(RunEvent::TurnStarted { turn: number, max_turns: plan.max_turns, request: request.clone() });
        let (mut turn, stop) = stream_turn(provider, plan, &request, number, &mut sink, &mut cancel).await;
        sink(RunEvent::TurnEnded(Box::new(turn.summary())));
        stopped = stop;
        let retry = stopped.is_none()
            && !turn.ok
            && turn.error.is_none()
            && number < plan.max_turns
            && plan.reading.response_type != ResponseType::Text;
        if !retry {
            turns.push(turn);
            break;
        }
        let message = feedback::message(plan, &turn.output, &turn.parse, turn.finish_reason.as_ref());
        exchanges.push(Exchange { answer: turn.output.clone(), feedback: message.clone() });
        let budget = *budget.get_or_insert_with(|| feedback::budget(plan));
        let Some(messages) = feedback::retry_messages(&plan.request.messages, &exchanges, budget) else {
            no_room = true;
            turns.push(turn);
            break;
        };
        turn.feedback = Some(message.clone());
        sink(RunEvent::Feedback { turn: number, message });
        request = Request { messages, seed: request.seed, ..plan.request.clone() };
        turns.push(turn);
    }
    let mut record = record_of(provider.name(), plan, turns, started_at_ms);
    record.duration_ms = started.elapsed().as_millis() as u64;
    record.seed = request.seed;
    if let Some(stop) = stopped {
        record.cancelled = true;
        record.ok = false;
        record.warnings.retain(|w| !w.starts_with("interrupted:"));
        record.warnings.push(stop.warning());
    }
    if no_room {
        record.warnings.push(format!(
            "no retry: the feedback does not fit in the context window ({} tokens); give a larger context size",
            plan.context_tokens
        ));
    }
    sink(RunEvent::RunEnded { ok: record.ok, turns: record.turns.len() as u32 });
    record
}

fn record_of(provider: &str, plan: &RunPlan, turns: Vec<Turn>, started_at_ms: u64) -> RunRecord {
    let last = turns.last();
    let (ok, result, truncated, repaired, warnings, error, mode) = match last {
        Some(turn) => (
            turn.ok,
            result_of(&turn.parse),
            turn.finish_reason == Some(FinishReason::Length),
            !repairs_of(&turn.parse).is_empty(),
            warnings_of(turn),
            turn.error.as_ref().map(ToString::to_string),
            turn.mode.clone(),
        ),
        None => (false, serde_json::Value::Null, false, false, Vec::new(), None, plan.mode.clone()),
    };
    RunRecord {
        prompt: plan.prompt.clone(),
        case: plan.case.clone(),
        provider: provider.to_string(),
        model: plan.request.model.clone(),
        structured: plan.mode.requested,
        response_type: plan.reading.response_type,
        profile: plan.reading.profile,
        ok,
        result,
        truncated,
        repaired,
        warnings,
        error,
        variables: plan.variables.clone(),
        mode,
        max_turns: plan.max_turns,
        started_at_ms,
        duration_ms: 0,
        cancelled: false,
        batch: None,
        seed: None,
        turns,
    }
}

/// One run of a batch: a plan and the provider that answers it.
#[derive(Clone)]
pub struct Job {
    pub provider: Arc<dyn Provider>,
    pub plan: RunPlan,
}

/// Runs every job, at most `concurrency` at a time (llama.cpp-style servers answer one request at a
/// time: use 1 for them). `sink` gets each event with the index of its job; records come back in
/// job order.
pub async fn run_batch<F: FnMut(usize, RunEvent) + Send>(jobs: &[Job], concurrency: usize, sink: F) -> Vec<RunRecord> {
    run_batch_until(jobs, concurrency, sink, std::future::pending()).await
}

/// [`run_batch`], every run stopped as [`run_until`] stops one when `cancel` completes: runs under
/// way keep their partial answers; runs not yet started end at once, cancelled with no answer.
pub async fn run_batch_until<F, C>(jobs: &[Job], concurrency: usize, sink: F, cancel: C) -> Vec<RunRecord>
where
    F: FnMut(usize, RunEvent) + Send,
    C: std::future::Future<Output = Stop> + Send,
{
    let mut done: Vec<Option<RunRecord>> = vec![None; jobs.len()];
    let keep = |index: usize, record: &RunRecord| {
        if let Some(slot) = done.get_mut(index) {
            *slot = Some(record.clone());
        }
    };
    run_batch_each(jobs.iter().cloned().enumerate(), concurrency, sink, keep, cancel).await;
    done.into_iter().flatten().collect()
}

/// [`run_batch_until`] over jobs (each with its index) made as they are needed (at most `concurrency`
/// are held at once), and `finished` gets each record (with its job's index) the moment its run ends,
/// before the others are done: a front end scores and shows each run as it completes. Nothing is kept
/// here, so a batch of any size runs in the memory of its runs under way.
pub async fn run_batch_each<J, F, D, C>(jobs: J, concurrency: usize, sink: F, finished: D, cancel: C)
where
    J: IntoIterator<Item = (usize, Job)>,
    J::IntoIter: Send,
    F: FnMut(usize, RunEvent) + Send,
    D: FnMut(usize, &RunRecord) + Send,
    C: std::future::Future<Output = Stop> + Send,
{
    let cancel = futures_util::FutureExt::shared(futures_util::FutureExt::boxed(cancel));
    let sink = Mutex::new((sink, finished));
    let sink = &sink;
    let runs = futures_util::stream::iter(jobs.into_iter().map(|(index, job)| {
        let cancel = cancel.clone();
        async move {
            let forward = move |event: RunEvent| {
                let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                (sink.0)(index, event);
            };
            let record = run_until(job.provider.as_ref(), &job.plan, forward, cancel).await;
            let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            (sink.1)(index, &record);
        }
    }))
    .buffer_unordered(concurrency.max(1));
    runs.for_each(|()| std::future::ready(())).await;
}
