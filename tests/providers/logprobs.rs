//! Token probabilities from an OpenAI-compatible server (`logprobs: true, top_logprobs: 2`): asked
//! for only when the request says so, read from `choices[0].logprobs.content`, kept on each chunk of
//! the transcript, and replayed from it.
//!
//! No recording with logprobs exists in the shared wire fixtures (the llama-cpp-python captures all
//! have `"logprobs": null`), so the SSE lines are built here in the exact format of OpenAI's API
//! reference (chat completion chunk objects: `logprobs.content[*].{token, logprob, bytes,
//! top_logprobs}`, `refusal: null`; the first chunk carries the role and an empty content list).

use serde_json::json;
use tunebench::provider::record::Recorder;
use tunebench::provider::replay::{Pace, Replay};
use tunebench::provider::wire_server::Reply;
use tunebench::provider::{Event, FinishReason, Provider, Request, TokenProb};
use tunebench::truncate::transcript::Transcript;

use crate::support::*;

/// `(token, logprob, [(top token, top logprob)])`, as OpenAI sends one token.
type Token<'a> = (&'a str, f64, &'a [(&'a str, f64)]);

fn logprob_chunk(content: &str, tokens: &[Token]) -> String {
    let entry = |token: &str, logprob: f64| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()});
    let content_list: Vec<_> = tokens
        .iter()
        .map(|(token, logprob, top)| {
            let mut item = entry(token, *logprob);
            item["top_logprobs"] = json!(top.iter().map(|(t, lp)| entry(t, *lp)).collect::<Vec<_>>());
            item
        })
        .collect();
    sse(&json!({
        "id": "chatcmpl-9lprobs", "object": "chat.completion.chunk", "created": 1_694_268_190,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": {"content": content},
                     "logprobs": {"content": content_list, "refusal": null}, "finish_reason": null}]
    }))
}

fn reply() -> Reply {
    let first = sse(&json!({
        "id": "chatcmpl-9lprobs", "object": "chat.completion.chunk", "created": 1_694_268_190,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                     "logprobs": {"content": [], "refusal": null}, "finish_reason": null}]
    }));
    let last = sse(&json!({
        "id": "chatcmpl-9lprobs", "object": "chat.completion.chunk", "created": 1_694_268_190,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}]
    }));
    Reply::chunked("text/event-stream")
        .chunk(first)
        .chunk(logprob_chunk("Hello", &[("Hello", -0.31725305, &[("Hello", -0.31725305), ("Hi", -1.3190403)])]))
        // Two tokens in one chunk (a server may batch them).
        .chunk(logprob_chunk(
            "! How",
            &[
                ("!", -0.02380986, &[("!", -0.02380986), (",", -3.787621)]),
                (" How", -0.000054596, &[(" How", -0.000054596)]),
            ],
        ))
        .chunk(last)
        .chunk("data: [DONE]\n\n")
        .end()
}

fn probs(events: &[Event]) -> Vec<Vec<TokenProb>> {
    events.iter().filter_map(|e| if let Event::Probs(p) = e { Some(p.clone()) } else { None }).collect()
}

#[tokio::test]
async fn probabilities_are_asked_for_read_and_kept_in_the_transcript() {
    let server = serve(vec![reply()]).await;
    let request = Request { logprobs: true, ..Request::new("gpt-4o-mini").user("Say hello.") };
    let provider = openai(&server, quick());
    let mut recorder = Recorder::new(provider.name(), &request);
    let events = collect(provider.stream(&request)).await;
    events.iter().for_each(|event| recorder.observe(event));
    let body = server.received()[0].json();
    assert_eq!((body["logprobs"].clone(), body["top_logprobs"].clone()), (json!(true), json!(2)));
    assert_eq!(text(&events), "Hello! How");
    assert_eq!(finish(&events), FinishReason::Stop);
    // Each Probs follows the delta it belongs to.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Delta(_) => Some("delta"),
            Event::Probs(_) => Some("probs"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["delta", "probs", "delta", "probs"]);
    let probs = probs(&events);
    let hello = &probs[0][0];
    assert_eq!(hello.token, "Hello");
    assert!((hello.p.unwrap() - (-0.31725305f64).exp() as f32).abs() < 1e-6, "{hello:?}");
    let alt = hello.alt.as_ref().unwrap();
    assert_eq!(alt.token, "Hi", "the runner-up is the best other token");
    assert!((alt.p - (-1.3190403f64).exp() as f32).abs() < 1e-6);
    assert_eq!(probs[1].iter().map(|p| p.token.as_str()).collect::<Vec<_>>(), ["!", " How"]);
    assert!(probs[1][1].alt.is_none(), "no other token was listed");

    // The transcript keeps them per chunk, writes them and reads them back; a replay sends them again.
    let transcript = recorder.into_transcript();
    assert_eq!(transcript.chunks.iter().map(|c| c.probs.len()).collect::<Vec<_>>(), [1, 2]);
    let back = Transcript::parse(&transcript.to_jsonl()).unwrap();
    assert_eq!(back, transcript);
    let replayed = collect(Replay::new(back, Pace::Instant).stream(&request)).await;
    assert_eq!(self::probs(&replayed), probs);
}

#[tokio::test]
async fn probabilities_are_not_asked_for_unless_the_request_says_so() {
    let server = serve(vec![reply()]).await;
    let events = collect(openai(&server, quick()).stream(&Request::new("m").user("Say hello."))).await;
    let body = server.received()[0].json();
    assert!(body.get("logprobs").is_none() && body.get("top_logprobs").is_none(), "{body}");
    // A server that sends them anyway: they are kept all the same.
    assert_eq!(probs(&events).len(), 2);
}
