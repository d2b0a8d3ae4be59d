//! Faults: each one leaves a clear last event, keeps the text received before it, and ends the stream.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tunebench::provider::http::HttpOptions;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::wire_server::{Reply, Step};
use tunebench::provider::{Event, FinishReason, Provider, ProviderError, Request};

use crate::support::*;

fn request() -> Request {
    Request::new("smollm2").user("Say hello.")
}

/// A stream that sent "Hel" + "lo" and then does `then`.
fn two_deltas_then(then: Step) -> Reply {
    Reply::chunked("text/event-stream").chunk(oa_chunk(Some("Hel"), None)).chunk(oa_chunk(Some("lo"), None)).then(then)
}

#[tokio::test]
async fn http_400_carries_the_server_message() {
    let server = serve(vec![Reply::status(
        400,
        "application/json",
        r#"{"error":{"message":"'messages' is a required property"}}"#,
    )])
    .await;
    let error = error(&collect(openai(&server, quick()).stream(&request())).await);
    assert!(
        error.to_string().contains("HTTP 400") && error.to_string().contains("'messages' is a required property"),
        "{error}"
    );
}

#[tokio::test]
async fn http_401_without_a_key_says_which_variable_to_set() {
    let server =
        serve(vec![Reply::status(401, "application/json", r#"{"error":{"message":"Missing bearer token"}}"#)]).await;
    let error = error(&collect(openai(&server, quick()).stream(&request())).await);
    assert!(error.to_string().contains("No API key was sent: set OPENAI_API_KEY"), "{error}");
}

#[tokio::test]
async fn http_401_with_a_key_says_the_key_was_refused() {
    let server =
        serve(vec![Reply::status(401, "application/json", r#"{"error":{"message":"Incorrect API key"}}"#)]).await;
    let key = tunebench::provider::ApiKey::new("sk-abcdef").unwrap();
    let provider = OpenAi::new(&format!("{}/v1", server.url()), Some(key), quick()).unwrap();
    let error = error(&collect(provider.stream(&request())).await);
    assert!(error.to_string().contains("The API key in OPENAI_API_KEY was refused"), "{error}");
    assert_eq!(server.received()[0].header("authorization"), Some("Bearer sk-abcdef"));
}

#[tokio::test]
async fn http_429_waits_as_told_and_retries() {
    let limited = Reply::with_headers(
        429,
        &[("content-type", "application/json"), ("retry-after", "1")],
        r#"{"error":{"message":"Rate limit reached"}}"#,
    );
    let server = serve(vec![limited, recorded("llama-cpp-python/a1_chat_stream.txt")]).await;
    let started = Instant::now();
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert!(started.elapsed() >= Duration::from_secs(1), "waited {:?}", started.elapsed());
    assert!(
        matches!(&events[0], Event::Retrying { attempt: 1, after_ms: 1000, reason } if reason.contains("Rate limit reached")),
        "{events:?}"
    );
    assert_eq!(finish(&events), FinishReason::Stop);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn http_429_retries_are_bounded() {
    let limited = Reply::with_headers(
        429,
        &[("content-type", "application/json"), ("retry-after-ms", "10")],
        r#"{"error":{"message":"slow down"}}"#,
    );
    let server = serve(vec![limited]).await;
    let options = HttpOptions { max_retries: 2, ..quick() };
    let events = collect(openai(&server, options).stream(&request())).await;
    let error = error(&events);
    assert!(error.to_string().contains("gave up after 2 retries"), "{error}");
    assert_eq!(server.received().len(), 3);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Retrying { .. })).count(), 2);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_limit_is_reported_at_once() {
    let limited =
        Reply::with_headers(429, &[("content-type", "text/plain"), ("retry-after", "3600")], "come back later");
    let server = serve(vec![limited]).await;
    let error = error(&collect(openai(&server, quick()).stream(&request())).await);
    assert!(error.to_string().contains("retry after 3600 s, longer than the 5 s limit"), "{error}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn http_503_is_retried_then_reported() {
    let unavailable = Reply::with_headers(
        503,
        &[("content-type", "text/plain"), ("retry-after-ms", "20")],
        "Service Unavailable: loading model",
    );
    let server = serve(vec![unavailable.clone(), recorded("llama-cpp-python/a1_chat_stream.txt")]).await;
    assert_eq!(finish(&collect(openai(&server, quick()).stream(&request())).await), FinishReason::Stop);
    let server = serve(vec![unavailable]).await;
    let options = HttpOptions { max_retries: 1, ..quick() };
    let error = error(&collect(openai(&server, options).stream(&request())).await);
    assert_eq!(error.status(), Some(503));
    assert!(
        error.to_string().contains("loading model") && error.to_string().contains("unavailable or overloaded"),
        "{error}"
    );
}

#[tokio::test]
async fn a_connection_reset_mid_stream_keeps_the_partial_answer() {
    let server = serve(vec![two_deltas_then(Step::Reset)]).await;
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert_eq!(text(&events), "Hello");
    let error = error(&events);
    assert!(matches!(error, ProviderError::Broken { .. }), "{error}");
    assert!(error.to_string().contains("connection broke mid-stream"), "{error}");
    assert!(usage(&events).is_some_and(|u| u.estimated && u.output_tokens > 0));
}

#[tokio::test]
async fn a_connection_closed_mid_body_is_broken_too() {
    let server = serve(vec![two_deltas_then(Step::Close)]).await;
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert_eq!(text(&events), "Hello");
    assert!(matches!(error(&events), ProviderError::Broken { .. }));
}

#[tokio::test]
async fn a_stream_that_ends_without_finish_reason_or_done_is_interrupted_not_stop() {
    let server = serve(vec![two_deltas_then(Step::Write(b"0\r\n\r\n".to_vec()))]).await;
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert_eq!(text(&events), "Hello");
    assert_eq!(finish(&events), FinishReason::Interrupted);
}

#[tokio::test]
async fn a_malformed_sse_event_ends_the_stream_with_the_bad_text_quoted() {
    let broken = "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"wor\n\n";
    let server = serve(vec![Reply::chunked("text/event-stream")
        .chunk(oa_chunk(Some("Hel"), None))
        .chunk(broken)
        .chunk(oa_chunk(Some("ld"), None))
        .end()])
    .await;
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert_eq!(text(&events), "Hel");
    let error = error(&events);
    assert!(
        matches!(&error, ProviderError::Malformed { snippet, .. } if snippet.contains("\"content\": \"wor")),
        "{error}"
    );
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_closes_the_connection() {
    let server = serve(vec![two_deltas_then(Step::AwaitClose)]).await;
    let options = HttpOptions { read_timeout: Duration::from_millis(300), ..quick() };
    let started = Instant::now();
    let events = collect(openai(&server, options).stream(&request())).await;
    assert_eq!(text(&events), "Hello");
    assert!(matches!(error(&events), ProviderError::Stalled { after_ms: 300, .. }), "{events:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(server.wait_for_client_closes(1, Duration::from_secs(3)).await, "the connection was closed");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_too() {
    let server = serve(vec![Reply::default().then(Step::AwaitClose)]).await;
    let options = HttpOptions { read_timeout: Duration::from_millis(200), ..quick() };
    let events = collect(openai(&server, options).stream(&request())).await;
    assert!(matches!(error(&events), ProviderError::Stalled { .. }), "{events:?}");
    assert_eq!(events.len(), 1);
}

#[tokio::test]
async fn a_10_mb_event_arrives_whole() {
    let big = "x".repeat(10 * 1024 * 1024);
    let server = serve(vec![Reply::chunked("text/event-stream")
        .chunk(oa_chunk(Some(&big), None))
        .chunk(oa_chunk(None, Some("stop")))
        .chunk("data: [DONE]\n\n")
        .end()])
    .await;
    let events = collect(openai(&server, quick()).stream(&request())).await;
    assert_eq!(deltas(&events), [big.as_str()]);
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn an_event_over_the_size_limit_is_refused_not_buffered() {
    let big = "x".repeat(10 * 1024 * 1024);
    let server = serve(vec![Reply::chunked("text/event-stream")
        .chunk(oa_chunk(Some("ok"), None))
        .chunk(oa_chunk(Some(&big), None))
        .end()])
    .await;
    let options = HttpOptions { max_line_bytes: 1024 * 1024, ..quick() };
    let events = collect(openai(&server, options).stream(&request())).await;
    assert_eq!(text(&events), "ok");
    let error = error(&events);
    assert!(matches!(error, ProviderError::TooLarge { limit_bytes: 1048576, .. }), "{error}");
}

#[tokio::test]
async fn a_wrong_content_type_is_named_with_what_came_instead() {
    let server =
        serve(vec![Reply::status(200, "text/html; charset=utf-8", "<html><body>Please log in</body></html>")]).await;
    let error = error(&collect(openai(&server, quick()).stream(&request())).await);
    let message = error.to_string();
    assert!(
        message.contains("expected text/event-stream")
            && message.contains("\"text/html\"")
            && message.contains("Please log in"),
        "{message}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAi::new(&url, None, quick()).unwrap();
    let error = error(&collect(provider.stream(&request())).await);
    assert!(matches!(error, ProviderError::Connect { .. }), "{error}");
    assert!(error.to_string().contains(&url) && error.to_string().contains("Is the server running"), "{error}");
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = serve(vec![two_deltas_then(Step::AwaitClose)]).await;
    let mut stream = openai(&server, quick()).stream(&request());
    loop {
        if let Some(Event::Delta(_)) = stream.next().await {
            break;
        }
    }
    drop(stream);
    assert!(server.wait_for_client_closes(1, Duration::from_secs(3)).await, "the server saw the connection close");
}
