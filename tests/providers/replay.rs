//! Recording live streams to transcripts and replaying them: the same events, at the pace asked for.

use std::time::{Duration, Instant};

use tunebench::provider::record::{recorded as record_stream, Recorder};
use tunebench::provider::replay::{Pace, Replay};
use tunebench::provider::wire_server::Reply;
use tunebench::provider::{Event, FinishReason, Provider, ProviderError, Request, StructuredMode};
use tunebench::truncate::transcript::{Chunk, End, Header, Transcript};

use crate::support::*;

fn without_retries(events: &[Event]) -> Vec<Event> {
    events.iter().filter(|e| !matches!(e, Event::Retrying { .. })).cloned().collect()
}

/// Records the live stream of `reply` and checks its replay from the transcript file text.
async fn record_then_replay(replies: Vec<Reply>, request: Request) -> (Vec<Event>, Transcript) {
    let server = serve(replies).await;
    let provider = openai(&server, quick());
    let (stream, recorder) = record_stream(provider.stream(&request), Recorder::new(provider.name(), &request));
    let live = collect(stream).await;
    let transcript = recorder.lock().unwrap().transcript().clone();
    let file = Transcript::parse(&transcript.to_jsonl()).expect("the transcript reads back");
    assert_eq!(file, transcript);
    let replayed = collect(Replay::new(file, Pace::Instant).stream(&request)).await;
    assert_eq!(replayed, without_retries(&live), "replay == live");
    (live, transcript)
}

#[tokio::test]
async fn a_recorded_run_replays_with_identical_events() {
    let request = Request::new("smollm2").user("Say hello in five words.");
    let (live, transcript) = record_then_replay(vec![recorded("llama-cpp-python/a1_chat_stream.txt")], request).await;
    assert_eq!(transcript.answer(), text(&live));
    assert_eq!(transcript.header.provider, "openai");
    assert_eq!(transcript.end.as_ref().and_then(|e| e.finish_reason.as_deref()), Some("stop"));
    assert!(transcript.chunks.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
}

#[tokio::test]
async fn the_structured_mode_and_its_fallback_replay_too() {
    let schema = serde_json::json!({"type":"object","properties":{"name":{"type":"string"}}});
    let request =
        Request::new("smollm2").user("A person as JSON.").structured(StructuredMode::JsonSchema, Some(schema));
    let replies =
        vec![recorded("llama-cpp-python/d2_json_schema.txt"), recorded("llama-cpp-python/d4_json_object_stream.txt")];
    let (_, transcript) = record_then_replay(replies, request).await;
    assert_eq!(transcript.header.request["mode"]["used"], "json-object");
}

#[tokio::test]
async fn errors_and_partial_answers_replay_too() {
    let reply = Reply::chunked("text/event-stream")
        .chunk(oa_chunk(Some("part"), None))
        .then(tunebench::provider::wire_server::Step::Reset);
    let (live, transcript) = record_then_replay(vec![reply], Request::new("m").user("u")).await;
    assert!(matches!(live.last(), Some(Event::Error(ProviderError::Broken { .. }))));
    assert_eq!(transcript.answer(), "part");
}

fn paced_transcript() -> Transcript {
    let chunk = |t_ms, delta: &str| Chunk { t_ms, delta: delta.to_string(), token: None, probs: Vec::new() };
    Transcript {
        header: Header {
            transcript: 1,
            provider: "openai".into(),
            model: "m".into(),
            request: serde_json::Value::Null,
        },
        chunks: vec![chunk(0, "a"), chunk(150, "b"), chunk(300, "c")],
        end: Some(End { t_ms: 300, finish_reason: Some("length".into()), usage: None, error: None }),
    }
}

async fn timed(pace: Pace) -> (Duration, Vec<Event>) {
    let started = Instant::now();
    let events = collect(Replay::new(paced_transcript(), pace).stream(&Request::default())).await;
    (started.elapsed(), events)
}

#[tokio::test]
async fn replay_keeps_the_recorded_pace_or_goes_faster() {
    let (recorded_pace, events) = timed(Pace::Recorded).await;
    assert_eq!(text(&events), "abc");
    assert_eq!(finish(&events), FinishReason::Length);
    assert!(recorded_pace >= Duration::from_millis(300), "{recorded_pace:?}");
    let (double, _) = timed(Pace::Speed(2.0)).await;
    assert!(double >= Duration::from_millis(150) && double < recorded_pace, "{double:?} vs {recorded_pace:?}");
    let (instant, events) = timed(Pace::Instant).await;
    assert!(instant < Duration::from_millis(100), "{instant:?}");
    assert_eq!(
        events,
        [
            Event::Delta("a".into()),
            Event::Delta("b".into()),
            Event::Delta("c".into()),
            Event::Finish(FinishReason::Length)
        ]
    );
}

#[tokio::test]
async fn a_transcript_file_replays_and_a_bad_one_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, paced_transcript().to_jsonl()).unwrap();
    let replay = Replay::from_file(&path, Pace::Instant).unwrap();
    assert_eq!(text(&collect(replay.stream(&Request::default())).await), "abc");
    std::fs::write(&path, "{\"transcript\":1}\n{\"t_ms\":1}\n").unwrap();
    let error = Replay::from_file(&path, Pace::Instant).unwrap_err();
    assert!(error.to_string().contains("run.jsonl") && error.to_string().contains("line 2"), "{error}");
}
