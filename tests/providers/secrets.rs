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

/// A server that answers every request with a redirect (`status`) to `to`.
async fn redirecting(status: u16, to: &str) -> tunebench::provider::wire_server::WireServer {
    serve(vec![Reply::with_headers(status, &[("location", to), ("content-type", "text/plain")], "moved")]).await
}

#[tokio::test]
async fn no_key_or_body_follows_a_redirect_to_another_origin() {
    use tunebench::provider::ollama::Ollama;
    for status in [301, 302, 303, 307, 308] {
        // The other origin logs whatever reaches it: nothing may.
        let elsewhere = serve(vec![Reply::status(200, "text/event-stream", "data: [DONE]\n\n")]).await;
        let origin = redirecting(status, &format!("{}/v1/chat/completions", elsewhere.url())).await;
        let providers: Vec<(&str, Box<dyn Provider>)> = vec![
            ("openai", Box::new(OpenAi::new(&format!("{}/v1", origin.url()), ApiKey::new(KEY), quick()).unwrap())),
            ("anthropic", Box::new(Anthropic::new(&origin.url(), ApiKey::new(KEY), quick()).unwrap())),
            ("ollama", Box::new(Ollama::new(&origin.url(), ApiKey::new(KEY), quick()).unwrap())),
        ];
        for (name, provider) in providers {
            let events = collect(provider.stream(&Request::new("m").user("the secret prompt"))).await;
            let error = error(&events).to_string();
            assert!(
                error.contains(&format!("HTTP {status}"))
                    && error.contains("another origin")
                    && error.contains(&elsewhere.url()),
                "{name} {status}: {error}"
            );
            assert!(!leaks(&error), "{error}");
        }
        assert_eq!(elsewhere.received(), Vec::new(), "{status}: the other origin was reached");
        assert_eq!(origin.received().len(), 3, "{status}");
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_key() {
    let target = oa_chunk(Some("hi"), Some("stop"));
    let server = tunebench::provider::wire_server::WireServer::start_handler(move |request| {
        if request.path == "/v1/chat/completions" {
            Reply::with_headers(307, &[("location", "/v2/chat/completions")], "")
        } else {
            Reply::chunked("text/event-stream").chunk(target.clone()).chunk("data: [DONE]\n\n").end()
        }
    })
    .await
    .unwrap();
    let provider = OpenAi::new(&format!("{}/v1", server.url()), ApiKey::new(KEY), quick()).unwrap();
    let events = collect(provider.stream(&Request::new("m").user("u"))).await;
    assert_eq!(text(&events), "hi");
    let received = server.received();
    assert_eq!(
        received.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        ["/v1/chat/completions", "/v2/chat/completions"]
    );
    assert!(received.iter().all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}"))));
}
