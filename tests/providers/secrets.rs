//! API keys never appear in errors, events, transcripts or debug output — even when a server echoes them.

use tunebench::provider::anthropic::Anthropic;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::record::{recorded as record_stream, Recorder};
use tunebench::provider::wire_server::{Reply, Step};
use tunebench::provider::{ApiKey, Provider, Request};

use crate::support::*;

const KEY: &str = "sk-live-SECRET-0123456789";

fn leaks(text: &str) -> bool {
    text.contains(KEY) || text.contains("SECRET-0123456789")
}

#[tokio::test]
async fn echoed_keys_are_redacted_from_every_error() {
    let echo = format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\"}}}}");
    let broken = format!("data: {{\"choices\": [{{\"delta\": {{\"content\": \"{KEY}");
    let replies = vec![
        Reply::status(401, "application/json", &echo),
        Reply::status(500, "text/plain", &format!("auth failed for Bearer {KEY}")),
        Reply::status(200, "text/html", &format!("<p>{KEY}</p>")),
        Reply::chunked("text/event-stream").chunk(format!("{broken}\n\n")).end(),
        Reply::chunked("text/event-stream").chunk(oa_chunk(Some("x"), None)).then(Step::Reset),
    ];
    let server = serve(replies).await;
    let provider = OpenAi::new(&format!("{}/v1", server.url()), ApiKey::new(KEY), quick()).unwrap();
    assert!(!leaks(&format!("{provider:?}")));
    for _ in 0..5 {
        let request = Request::new("m").user("u");
        let (stream, recorder) = record_stream(provider.stream(&request), Recorder::new("openai", &request));
        let events = collect(stream).await;
        let error = error(&events);
        assert!(!leaks(&error.to_string()), "{error}");
        assert!(!leaks(&format!("{events:?}")), "{events:?}");
        assert!(!leaks(&recorder.lock().unwrap().transcript().to_jsonl()));
    }
    // The key did go to the server, in the header only.
    assert!(server
        .received()
        .iter()
        .all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}")) && !leaks(&r.body)));
}

#[tokio::test]
async fn anthropic_keys_stay_in_the_header_too() {
    let echo = format!("{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {KEY}\"}}}}");
    let server = serve(vec![Reply::status(401, "application/json", &echo)]).await;
    let provider = Anthropic::new(&server.url(), ApiKey::new(KEY), quick()).unwrap();
    let error = error(&collect(provider.stream(&Request::new("claude").user("u"))).await);
    assert!(!leaks(&error.to_string()) && error.to_string().contains("[redacted]"), "{error}");
    assert!(!leaks(&format!("{provider:?}")));
}
