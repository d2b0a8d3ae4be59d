//! One turn: send the request, feed every delta to the parser as it arrives, report JSONL verdicts the
//! moment their line completes, write the transcript down, and time it; with the plan's live sweep,
//! advance it with each delta and report the items at each cut that changes them, then the sweep.
//! A jsonl answer is guarded ([`super::repeats`]): a repeated line is shown and kept as `skipped`,
//! and the answer stops at the end of the line that reached `max_repeats` or `max_items`.

use std::time::Instant;

use futures_util::future::{Either, FusedFuture};
use futures_util::StreamExt;

use super::limits::{answer_too_large, Stop, TokenGuard};
use super::plan::RunPlan;
use super::record::{passes, Turn};
use super::repeats::{self, ItemGuard};
use super::RunEvent;
use crate::output::{parser_for, OutputParser, Report, ResponseType};
use crate::provider::record::Recorder;
use crate::provider::{Event, FinishReason, ModeReport, Provider, ProviderError, Request, Usage};
use crate::truncate::sweep::Live;

/// Streams `request` through `provider` as turn `number` of `plan`. When `cancel` completes first,
/// the stream is dropped at once and the turn keeps the partial answer (the [`Stop`] comes back with
/// it). An answer that passes `max_tokens` (counted here) or the plan's answer-size cap is stopped by
/// the client: the turn keeps what came, ends `length`, and says why in `cut_by_client`. A jsonl
/// answer the item guard stops ends `stop` at the end of its last line (the rest of that chunk is
/// dropped from the answer and the transcript), and says why in `cut_by_client` too.
pub(super) async fn stream_turn<F: FnMut(RunEvent) + Send, C: FusedFuture<Output = Stop> + Unpin>(
    provider: &dyn Provider,
    plan: &RunPlan,
    request: &Request,
    number: u32,
    sink: &mut F,
    cancel: &mut C,
) -> (Turn, Option<Stop>) {
    let mut live = plan.live_sweep.as_ref().map(|sweep| Live::new(plan.reading.profile, sweep.item_check.clone()));
    let mut parser = parser_for(plan.reading.response_type, plan.reading.profile, plan.reading.check.clone());
    let mut recorder = Recorder::new(provider.name(), request);
    let started = Instant::now();
    let mut stream = provider.stream(request);
    let mut output = String::new();
    let mut chunks = 0usize;
    let mut seen_lines = 0usize;
    let mut first: Option<Instant> = None;
    // The provider's own report; the plan's steps are added when it is shown.
    let mut mode: Option<ModeReport> = None;
    let mut usage: Option<Usage> = None;
    let mut finish: Option<FinishReason> = None;
    let mut error: Option<ProviderError> = None;
    let mut stopped = None;
    let mut tokens = TokenGuard::new(request.max_tokens);
    let mut items = (plan.reading.response_type == ResponseType::Jsonl).then(|| ItemGuard::new(&plan.limits));
    let mut cut_by_client = None;
    let mut cached = false;
    let mut finish_by_client = FinishReason::Length;
    // Probabilities of tokens whose text was held back (or not shown) wait for the next shown piece.
    let mut held_probs = Vec::new();
    let mut last_shown = false;
    // The thought as generated (tags included) and its tokens.
    let mut thought: Option<(String, u32)> = None;
    loop {
        // The cancel is polled first: once it fires, no further event is read.
        let event = match futures_util::future::select(&mut *cancel, stream.next()).await {
            Either::Left((stop, _)) => {
                stopped = Some(stop);
                break;
            }
            Either::Right((Some(event), _)) => event,
            Either::Right((None, _)) => break,
        };
        recorder.observe(&event);
        match event {
            Event::Cached => {
                cached = true;
                // A kept answer was counted against this very request's max_tokens when it was
                // recorded (the key holds the request; an answer the client cut is never kept), so it
                // is not counted again: a cached eval never builds the tokenizer.
                tokens = TokenGuard::new(None);
            }
            Event::Mode(report) => {
                sink(RunEvent::Mode(plan.mode_with(Some(&report))));
                mode = Some(report);
            }
            Event::Retrying { attempt, after_ms, reason } => sink(RunEvent::Waiting { attempt, after_ms, reason }),
            Event::Thinking { text, .. } => {
                let (raw, tokens) = thought.get_or_insert_with(Default::default);
                raw.push_str(&text);
                *tokens += 1;
                sink(RunEvent::Thinking(text));
            }
            Event::Delta(text) | Event::Token { text, .. } => {
                first.get_or_insert_with(Instant::now);
                chunks += 1;
                last_shown = !text.is_empty();
                if text.is_empty() {
                    continue;
                }
                let over_size = (output.len() + text.len()) as u64 > plan.limits.max_answer_bytes;
                let mut verdicts = Vec::new();
                if over_size {
                    cut_by_client = Some(answer_too_large(plan.limits.max_answer_bytes));
                } else {
                    let (kept, stop) = feed(parser.as_mut(), &text, items.as_mut(), &mut seen_lines, &mut verdicts);
                    let text = match text.get(..kept) {
                        Some(kept_text) if stop.is_some() => {
                            recorder.keep_last_chunk(kept);
                            kept_text.to_string()
                        }
                        _ => text,
                    };
                    cut_by_client = tokens.add(&text);
                    if stop.is_some() {
                        (cut_by_client, finish_by_client) = (stop, FinishReason::Stop);
                    }
                    output.push_str(&text);
                    let cut = live.as_mut().and_then(|live| {
                        let before = live.items();
                        let items = live.push(&text);
                        (items != before).then(|| RunEvent::Cut { cut: live.cuts() - 1, items })
                    });
                    sink(RunEvent::Delta(text));
                    if let Some(cut) = cut {
                        sink(cut);
                    }
                }
                for verdict in verdicts {
                    sink(RunEvent::Line(verdict));
                }
                if cut_by_client.is_some() {
                    // The answer is cut as max_tokens would have cut it (or ends at a line the item
                    // guard stopped at); the connection closes.
                    let reason = finish_by_client.clone();
                    recorder.observe(&Event::Finish(reason.clone()));
                    sink(RunEvent::Finish(reason.clone()));
                    finish = Some(reason);
                    break;
                }
            }
            Event::Probs(probs) if last_shown => {
                held_probs.extend(probs);
                sink(RunEvent::Probs(std::mem::take(&mut held_probs)));
            }
            Event::Probs(probs) => held_probs.extend(probs),
            Event::Usage(tokens) => {
                sink(RunEvent::Usage(tokens));
                usage = Some(tokens);
            }
            Event::Finish(reason) => {
                sink(RunEvent::Finish(reason.clone()));
                finish = Some(reason);
            }
            Event::Error(failure) => {
                sink(RunEvent::StreamError(failure.clone()));
                error = Some(failure);
            }
        }
    }
    drop(stream);
    let ended = Instant::now();
    if finish.is_none() && error.is_none() {
        // The provider's stream stopped without its last event: say so, as the providers do.
        let reason = FinishReason::Interrupted;
        recorder.observe(&Event::Finish(reason.clone()));
        sink(RunEvent::Finish(reason.clone()));
        finish = Some(reason);
    }
    let mut parse = parser.into_report();
    if items.is_some() {
        repeats::apply(&mut parse, &plan.limits);
    }
    // The last line, ended by the answer's end rather than a newline, is judged only now.
    if let Report::Jsonl(report) = &parse {
        for verdict in report.lines.get(seen_lines..).unwrap_or_default() {
            sink(RunEvent::Line(verdict.clone()));
        }
    }
    if let Some(live) = live {
        sink(RunEvent::Swept(Box::new(live.finish())));
    }
    let ttft_ms = first.map(|at| at.duration_since(started).as_millis() as u64);
    let generating = first.map(|at| ended.duration_since(at).as_secs_f64()).filter(|s| *s > 0.0);
    let tokens_per_s = match (usage, generating) {
        (Some(u), Some(seconds)) if u.output_tokens > 0 => {
            Some((u.output_tokens as f64 / seconds * 10.0).round() / 10.0)
        }
        _ => None,
    };
    let ok = error.is_none() && passes(&parse);
    let turn = Turn {
        turn: number,
        output,
        finish_reason: finish,
        error,
        usage,
        ttft_ms,
        duration_ms: ended.duration_since(started).as_millis() as u64,
        tokens_per_s,
        chunks,
        parse,
        ok,
        feedback: None,
        mode: plan.mode_with(mode.as_ref()),
        transcript: recorder.into_transcript(),
        cut_by_client,
        cached,
        thinking: thought.map(|(raw, tokens)| super::record::Thinking::of(&raw, tokens)),
    };
    (turn, stopped)
}

/// Feeds `text` to the parser and collects the verdicts it completes (as the guard shows them). With
/// a guard, `text` is fed line by line, and feeding stops after the line where the guard stops the
/// answer: the bytes fed and, then, why it stops.
fn feed(
    parser: &mut dyn OutputParser,
    text: &str,
    mut guard: Option<&mut ItemGuard>,
    seen: &mut usize,
    verdicts: &mut Vec<crate::output::LineVerdict>,
) -> (usize, Option<String>) {
    let mut fed = 0;
    while fed < text.len() {
        let rest = text.get(fed..).unwrap_or_default();
        let piece = match (&guard, rest.find('\n')) {
            (Some(_), Some(newline)) => newline + 1,
            _ => rest.len(),
        };
        parser.feed(rest.get(..piece).unwrap_or_default());
        fed += piece;
        let lines = parser.lines();
        let mut stop = None;
        for verdict in lines.get(*seen..).unwrap_or_default() {
            let mut verdict = verdict.clone();
            if let (Some(guard), Some(items)) = (guard.as_deref_mut(), parser.items()) {
                stop = stop.or(guard.judge(&mut verdict, items));
            }
            verdicts.push(verdict);
        }
        *seen = lines.len();
        if stop.is_some() {
            return (fed, stop);
        }
    }
    (fed, None)
}
