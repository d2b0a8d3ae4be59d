//! The engine end to end: stream, live verdicts, validation, record, replay, retry with feedback.

use serde_json::json;
use tunebench::output::{LineStatus, Report};
use tunebench::prompt::file::ProviderSettings;
use tunebench::prompt::signature::json_mode;
use tunebench::provider::replay::Pace;
use tunebench::provider::wire_server::Reply;
use tunebench::provider::{FinishReason, Role, StructuredMode};
use tunebench::run::job::write_transcripts;
use tunebench::run::{Expected, ReplaySequence, RunEvent};

use crate::support::*;

const ANSWER: &str = concat!(
    "{\"entity\": \"mitochondria\", \"definition\": \"Membrane-bound organelles that produce most of a cell's supply of ATP.\"}\n",
    "{\"entity\": \"ribosome\", \"definition\": \"A molecular machine that translates messenger RNA into chains of amino acids.\"}\n",
    "{\"entity\": \"messenger RNA\", \"definition\": \"A single-stranded copy of a gene that carries its instructions to the ribosomes.\"}\n",
);

#[tokio::test]
async fn a_jsonl_prompt_streams_validates_and_records() {
    let server = serve(vec![recorded("run/definitions_stream.txt")]).await;
    let plan = plan(&sample("extract-definitions"), None);
    let (record, events) = run(openai(&server).as_ref(), &plan).await;

    assert_eq!(streamed(&events), ANSWER);
    // Each line's verdict arrives the moment the line completes, before the answer ends.
    let line_at: Vec<usize> =
        events.iter().enumerate().filter(|(_, e)| matches!(e, RunEvent::Line(_))).map(|(i, _)| i).collect();
    let last_delta = events.iter().rposition(|e| matches!(e, RunEvent::Delta(_))).unwrap();
    assert_eq!(line_at.len(), 3, "{events:?}");
    assert!(line_at[0] < last_delta && line_at[1] < last_delta, "{line_at:?} vs {last_delta}");
    assert!(matches!(events[0], RunEvent::TurnStarted { turn: 1, max_turns: 1, .. }));
    assert!(matches!(events.last(), Some(RunEvent::RunEnded { ok: true, turns: 1 })));

    assert!(record.ok && !record.truncated && !record.repaired, "{:?}", record.warnings);
    assert_eq!(record.result.as_array().map(Vec::len), Some(3));
    assert_eq!(record.result[2]["entity"], "messenger RNA");
    let turn = &record.turns[0];
    assert_eq!(turn.output, ANSWER);
    assert_eq!(turn.finish_reason, Some(FinishReason::Stop));
    assert_eq!(turn.chunks, turn.transcript.chunks.len());
    assert!(turn.chunks > 50, "one chunk per token: {}", turn.chunks);
    assert_eq!(turn.transcript.answer(), ANSWER);
    assert!(turn.usage.unwrap().estimated, "llama-cpp-python sends no usage");
    assert!(turn.ttft_ms.is_some() && turn.tokens_per_s.is_some());
    let Report::Jsonl(parse) = &turn.parse else { panic!("{:?}", turn.parse) };
    assert_eq!((parse.summary.valid, parse.summary.invalid_json, parse.summary.schema_error), (3, 0, 0));

    // What was sent: the rendered prompt and the prompt's [provider] settings.
    let sent = server.received()[0].json();
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "You are a helpful assistant."}));
    assert!(sent["messages"][1]["content"].as_str().unwrap().contains("Mitochondria are membrane-bound organelles"));
    assert_eq!((sent["max_tokens"].clone(), sent["temperature"].clone()), (json!(1024), json!(0.0)));
    assert!(sent.get("response_format").is_none());

    // The record has CLI.md's shape.
    let value = serde_json::to_value(&record).unwrap();
    assert_eq!(value["prompt"], "extract-definitions");
    assert_eq!(value["provider"], "openai");
    assert_eq!(value["structured"], "none");
    assert_eq!(value["ok"], true);
    let turn = &value["turns"][0];
    for key in ["output", "finish_reason", "usage", "ttft_ms", "duration_ms", "chunks", "parse", "feedback"] {
        assert!(turn.get(key).is_some(), "turns[0].{key} is missing: {turn}");
    }
    assert_eq!(turn["finish_reason"], "stop");
    assert_eq!(turn["feedback"], serde_json::Value::Null);
    assert_eq!(turn["parse"]["summary"]["valid"], 3);
    assert!(turn["usage"]["input_tokens"].as_u64().unwrap() > 100);
    assert_eq!(turn["transcript"]["header"]["request"]["max_tokens"], 1024);
}

#[tokio::test]
async fn the_recorded_transcript_replays_with_identical_results() {
    let server = serve(vec![recorded("run/definitions_stream.txt")]).await;
    let plan = plan(&sample("extract-definitions"), None);
    let (live, live_events) = run(openai(&server).as_ref(), &plan).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.jsonl");
    assert_eq!(write_transcripts(&live, &file, None).unwrap(), std::slice::from_ref(&file));

    for pace in [Pace::Instant, Pace::Speed(50.0)] {
        let replay = ReplaySequence::open(&file, None, pace).unwrap();
        let (again, events) = run(&replay, &plan).await;
        assert_eq!(again.provider, "replay");
        assert_eq!(again.result, live.result);
        assert_eq!(again.turns[0].parse, live.turns[0].parse, "items and verdicts");
        assert_eq!(again.turns[0].output, live.turns[0].output);
        assert_eq!(again.turns[0].chunks, live.turns[0].chunks);
        assert_eq!(again.turns[0].finish_reason, live.turns[0].finish_reason);
        assert_eq!(again.turns[0].usage, live.turns[0].usage);
        assert_eq!(again.mode, live.mode);
        let lines = |events: &[RunEvent]| -> Vec<RunEvent> {
            events.iter().filter(|e| matches!(e, RunEvent::Line(_))).cloned().collect()
        };
        assert_eq!(lines(&events), lines(&live_events));
        assert_eq!(streamed(&events), streamed(&live_events));
    }
}

#[tokio::test]
async fn a_failed_answer_is_retried_with_the_feedback_and_the_previous_answer() {
    let server =
        serve(vec![recorded("run/definitions_invalid_stream.txt"), recorded("run/definitions_stream.txt")]).await;
    let plan = plan(&sample("extract-definitions"), Some(3));
    let (record, events) = run(openai(&server).as_ref(), &plan).await;

    assert!(record.ok, "{:?}", record.warnings);
    assert_eq!(record.turns.len(), 2);
    let first = &record.turns[0];
    assert!(!first.ok);
    let Report::Jsonl(parse) = &first.parse else { panic!() };
    assert!(matches!(parse.lines[1].status, LineStatus::SchemaError { .. }), "{:?}", parse.lines);
    assert!(matches!(parse.lines[2].status, LineStatus::InvalidJson { .. }), "{:?}", parse.lines);
    let feedback = first.feedback.clone().expect("feedback recorded on the failed turn");
    assert!(feedback.contains("line 2: (root): \"definition\" is a required property"), "{feedback}");
    assert!(feedback.contains("line 3: invalid JSON at column"), "{feedback}");
    assert!(feedback.contains("Your response was:\n{\"entity\": \"mitochondria\""), "{feedback}");
    assert!(feedback.contains("each matching this JSON Schema:") && feedback.contains("\"required\""), "{feedback}");
    assert!(record.turns[1].ok && record.turns[1].feedback.is_none());
    assert!(events.iter().any(|e| matches!(e, RunEvent::Feedback { turn: 1, message } if *message == feedback)));
    assert!(events.iter().any(|e| matches!(e, RunEvent::TurnStarted { turn: 2, max_turns: 3, .. })));

    // Turn 2's request: the first turn's messages, the failed answer, then the feedback.
    let received = server.received();
    assert_eq!(received.len(), 2);
    let first_messages = received[0].json()["messages"].clone();
    let messages = received[1].json()["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 4, "{messages}");
    assert_eq!(messages[0], first_messages[0]);
    assert_eq!(messages[1], first_messages[1]);
    assert_eq!(messages[2], json!({"role": "assistant", "content": first.output}));
    assert_eq!(messages[3], json!({"role": "user", "content": feedback}));
    let request = record.turns[1].request().unwrap();
    assert_eq!(request.messages[2].role, Role::Assistant);
}

#[tokio::test]
async fn a_signature_prompt_gets_ptcrunners_own_feedback() {
    let wrong = "{\"feeling\": \"positive\"}";
    let right = "{\"sentiment\": \"positive\", \"score\": 0.93}";
    let server = serve(vec![sse_answer(wrong, "stop"), sse_answer(right, "stop")]).await;
    let plan = plan(&sample("classify-sentiment"), None);
    assert_eq!(plan.max_turns, 3, "the prompt's max_turns");
    let Expected::Signature(sig) = &plan.expected else { panic!("a signature prompt") };
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert!(record.ok);
    assert_eq!(record.result, json!({"sentiment": "positive", "score": 0.93}));
    let expected = json_mode::feedback(sig, wrong, &json_mode::accept(sig, wrong).unwrap_err());
    assert_eq!(record.turns[0].feedback.as_deref(), Some(expected.as_str()));
    assert!(expected.contains("Your response was:\n{\"feeling\": \"positive\"}"), "{expected}");
}

/// A streamed answer in llama-cpp-python's framing, a few characters per chunk.
pub fn sse_answer(answer: &str, finish: &str) -> Reply {
    let event = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "smollm2",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut reply = Reply::chunked("text/event-stream; charset=utf-8").chunk(event(json!({"role": "assistant"}), None));
    let chars: Vec<char> = answer.chars().collect();
    for piece in chars.chunks(5) {
        reply = reply.chunk(event(json!({"content": piece.iter().collect::<String>()}), None));
    }
    reply.chunk(event(json!({}), Some(finish))).chunk("data: [DONE]\n\n").end()
}

#[tokio::test]
async fn json_prompts_ask_for_the_mode_and_jsonl_prompts_describe_the_schema_instead() {
    let server = serve(vec![recorded("run/definitions_stream.txt")]).await;
    let cli = ProviderSettings {
        name: Some("openai".into()),
        structured: Some("json-schema".into()),
        ..ProviderSettings::default()
    };
    let plan = plan_with(&sample("extract-definitions"), None, &cli, None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    let sent = server.received()[0].json();
    assert!(sent.get("response_format").is_none(), "a per-line schema must not bind the whole answer: {sent}");
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Every line must validate against this JSON Schema"));
    assert_eq!((record.mode.requested, record.mode.used), (StructuredMode::JsonSchema, StructuredMode::None));
    assert!(record.mode.schema_in_prompt);
    assert!(record.mode.fallbacks[0].reason.contains("one JSON value per line"), "{:?}", record.mode);
    assert_eq!(serde_json::to_value(&record).unwrap()["structured"], "json-schema");

    let server = serve(vec![sse_answer("{\"sentiment\": \"positive\", \"score\": 0.5}", "stop")]).await;
    let plan = plan_with(&sample("classify-sentiment"), None, &cli, None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    let sent = server.received()[0].json();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["schema"]["required"], json!(["sentiment", "score"]));
    assert_eq!(record.mode.used, StructuredMode::JsonSchema);
    assert!(record.ok);
}

/// A cancel stops the stream at once and still gives a record: the partial answer, marked cancelled,
/// whose transcript replays to the same partial answer.
#[tokio::test]
async fn a_cancelled_run_keeps_its_partial_answer_in_a_replayable_record() {
    let answer = ANSWER.repeat(20);
    let chunks: Vec<tunebench::truncate::transcript::Chunk> = answer
        .split_inclusive(' ')
        .enumerate()
        .map(|(i, delta)| tunebench::truncate::transcript::Chunk {
            t_ms: i as u64,
            delta: delta.into(),
            token: None,
            probs: Vec::new(),
        })
        .collect();
    let total = chunks.len();
    let transcript = tunebench::truncate::transcript::Transcript {
        header: tunebench::truncate::transcript::Header {
            transcript: 1,
            provider: "test".into(),
            model: "m".into(),
            request: serde_json::Value::Null,
        },
        chunks,
        end: None,
    };
    let provider = tunebench::provider::replay::Replay::new(transcript, Pace::Recorded);
    let one_turn = plan(&sample("extract-definitions"), Some(1));
    let plan = plan(&sample("extract-definitions"), Some(3));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut stop = Some(stop);
    let mut deltas = 0;
    let mut events = Vec::new();
    let record = tunebench::run::engine::run_until(
        &provider,
        &plan,
        |event| {
            if matches!(event, RunEvent::Delta(_)) {
                deltas += 1;
                if deltas == 30 {
                    let _ = stop.take().map(|s| s.send(()));
                }
            }
            events.push(event);
        },
        async {
            let _ = stopped.await;
            tunebench::run::Stop::User
        },
    )
    .await;
    assert!(record.cancelled && !record.ok, "{:?}", record.warnings);
    assert_eq!(record.turns.len(), 1, "no retry after a cancel (max_turns 3)");
    let turn = &record.turns[0];
    let shown = streamed(&events);
    assert!(turn.chunks >= 30 && turn.chunks < total, "stopped early: {} of {total}", turn.chunks);
    assert_eq!(turn.output, shown, "the record holds what was shown");
    assert!(answer.starts_with(&turn.output));
    assert!(record.warnings.iter().any(|w| w.starts_with("cancelled by the user")), "{:?}", record.warnings);
    assert!(!record.warnings.iter().any(|w| w.starts_with("interrupted:")), "{:?}", record.warnings);
    assert_eq!(serde_json::to_value(&record).unwrap()["cancelled"], true);
    // The transcript replays to the same partial answer.
    assert_eq!(turn.transcript.answer(), turn.output);
    assert_eq!(turn.transcript.end.as_ref().and_then(|e| e.finish_reason.as_deref()), Some("interrupted"));
    let replayed = tunebench::provider::replay::Replay::new(turn.transcript.clone(), Pace::Instant);
    let (again, again_events) = run(&replayed, &one_turn).await;
    assert_eq!(streamed(&again_events), turn.output);
    assert!(!again.cancelled);
    // An uncancelled run says nothing of it.
    assert!(serde_json::to_value(&again).unwrap().get("cancelled").is_none());
}

/// A last line the answer's end completes (no newline after it) gets its verdict event too, after the
/// stream ends, so the lines pane shows every line the record has.
#[tokio::test]
async fn the_last_line_without_a_newline_gets_its_verdict() {
    let answer = ANSWER.trim_end();
    let server = serve(vec![sse_answer(answer, "stop")]).await;
    let plan = plan(&sample("extract-definitions"), None);
    let (record, events) = run(openai(&server).as_ref(), &plan).await;
    let verdicts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Line(verdict) => Some(verdict.clone()),
            _ => None,
        })
        .collect();
    let Report::Jsonl(parse) = &record.turns[0].parse else { panic!("{:?}", record.turns[0].parse) };
    assert_eq!(parse.lines.len(), 3);
    assert_eq!(verdicts, parse.lines);
}

/// The live sweep is opt-in: without it no figures are sent; with it the items at each cut that
/// changes them, then the answer's sweep, which is `sweep_points` over the answer and its deltas.
#[tokio::test]
async fn the_live_sweep_is_opt_in_and_is_the_answers_sweep() {
    let server = serve(vec![recorded("run/definitions_stream.txt"), recorded("run/definitions_stream.txt")]).await;
    let mut plan = plan(&sample("extract-definitions"), None);
    let (_, events) = run(openai(&server).as_ref(), &plan).await;
    assert!(!events.iter().any(|e| matches!(e, RunEvent::Cut { .. } | RunEvent::Swept(_))));

    plan.live_sweep = Some(tunebench::run::LiveSweep { item_check: None });
    let (record, events) = run(openai(&server).as_ref(), &plan).await;
    let mut ends = Vec::new();
    let mut cuts = Vec::new();
    for event in &events {
        match event {
            RunEvent::Delta(text) => ends.push(ends.last().copied().unwrap_or(0) + text.len()),
            RunEvent::Cut { cut, items } => cuts.push((*cut, *items)),
            _ => {}
        }
    }
    let Some(RunEvent::Swept(sweep)) = events.iter().find(|e| matches!(e, RunEvent::Swept(_))) else { panic!() };
    let offsets = tunebench::truncate::points::Offsets::from(ends);
    let expected = tunebench::truncate::sweep::sweep_points(
        &record.turns[0].output,
        tunebench::truncate::points::Points::Ends(&offsets),
        plan.reading.profile,
        None,
    );
    assert_eq!(**sweep, expected);
    assert_eq!(cuts.last().map(|(_, items)| items.jsonl), Some(3), "{cuts:?}");
    for (cut, items) in cuts {
        assert_eq!(sweep.figures(tunebench::truncate::strategy::Strategy::Jsonl)[cut].items, items.jsonl);
    }
}

/// At a temperature above 0 an OpenAI-compatible server is sent the seed: the one given, or a fresh
/// one when none was; either way the record keeps the seed that was sent. Greedy runs send none.
#[tokio::test]
async fn a_sampling_run_sends_its_seed_and_records_it() {
    let sampled = |temperature: f64| ProviderSettings {
        name: Some("openai".into()),
        temperature: Some(temperature),
        ..ProviderSettings::default()
    };
    let replies = (0..4).map(|_| recorded("run/definitions_stream.txt")).collect();
    let server = serve(replies).await;
    let provider = openai(&server);
    let prompt = sample("extract-definitions");

    let mut given = plan_with(&prompt, None, &sampled(0.7), None);
    given.request.seed = Some(7);
    let (record, _) = run(provider.as_ref(), &given).await;
    assert_eq!((record.seed, server.received()[0].json()["seed"].clone()), (Some(7), json!(7)));

    let fresh = plan_with(&prompt, None, &sampled(0.7), None);
    let (first, _) = run(provider.as_ref(), &fresh).await;
    let (second, _) = run(provider.as_ref(), &fresh).await;
    let sent: Vec<serde_json::Value> = server.received()[1..3].iter().map(|r| r.json()["seed"].clone()).collect();
    assert_eq!(sent, [json!(first.seed.unwrap()), json!(second.seed.unwrap())], "the record keeps the seed sent");
    assert_ne!(first.seed, second.seed, "each run given no seed samples with a fresh one");

    let (greedy, _) = run(provider.as_ref(), &plan_with(&prompt, None, &sampled(0.0), None)).await;
    assert_eq!((greedy.seed, server.received()[3].json().get("seed").cloned()), (None, None));
}
