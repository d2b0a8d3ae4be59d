//! `anthropic` against Messages SSE fixtures written from Anthropic's streaming documentation.

use serde_json::json;
use tunebench::provider::anthropic::Anthropic;
use tunebench::provider::wire_server::WireServer;
use tunebench::provider::{ApiKey, Event, FinishReason, Provider, ProviderError, Request, StructuredMode};

use crate::support::*;

fn anthropic(server: &WireServer) -> Anthropic {
    Anthropic::new(&server.url(), ApiKey::new("sk-ant-test-key"), quick()).unwrap()
}

#[tokio::test]
async fn a_messages_stream_gives_text_usage_and_stop_reason() {
    let server = serve(vec![recorded("anthropic/messages_stream.txt")]).await;
    let request = Request::new("claude-opus-4-6").system("Be brief.").user("Hello").max_tokens(256);
    let events = collect(anthropic(&server).stream(&request)).await;
    assert_eq!(deltas(&events), ["Hello", "!"]);
    let usage = usage(&events).unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.estimated), (25, 15, false));
    assert_eq!(finish(&events), FinishReason::Stop);
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let body = sent.json();
    assert_eq!((body["system"].clone(), body["max_tokens"].clone()), (json!("Be brief."), json!(256)));
    assert_eq!(body["messages"], json!([{"role":"user","content":"Hello"}]));
}

#[tokio::test]
async fn max_tokens_is_length() {
    let server = serve(vec![recorded("anthropic/messages_max_tokens.txt")]).await;
    let events = collect(anthropic(&server).stream(&Request::new("claude").user("story").max_tokens(3))).await;
    assert_eq!(text(&events), "Once upon a");
    assert_eq!(finish(&events), FinishReason::Length);
}

#[tokio::test]
async fn an_error_event_keeps_the_text_before_it() {
    let server = serve(vec![recorded("anthropic/messages_error_event.txt")]).await;
    let events = collect(anthropic(&server).stream(&Request::new("claude").user("hi"))).await;
    assert_eq!(text(&events), "Hello there");
    let error = error(&events);
    assert!(matches!(&error, ProviderError::Server { message, .. } if message == "Overloaded"), "{error}");
    // message_start had counted the input: the usage before the error keeps it.
    assert_eq!(usage(&events).map(|u| (u.input_tokens, u.estimated)), Some((25, true)));
}

#[tokio::test]
async fn a_bad_key_names_anthropic_api_key() {
    let server = serve(vec![recorded("anthropic/authentication_401.txt")]).await;
    let error = error(&collect(anthropic(&server).stream(&Request::new("claude").user("hi"))).await);
    let message = error.to_string();
    assert!(message.contains("invalid x-api-key") && message.contains("set ANTHROPIC_API_KEY"), "{message}");
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let server = serve(vec![recorded("anthropic/overloaded_529.txt"), recorded("anthropic/messages_stream.txt")]).await;
    let events = collect(anthropic(&server).stream(&Request::new("claude").user("hi"))).await;
    assert!(matches!(&events[0], Event::Retrying { after_ms: 20, .. }), "{events:?}");
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn a_schema_goes_in_the_prompt_and_the_record_says_so() {
    let server = serve(vec![recorded("anthropic/messages_stream.txt")]).await;
    let request =
        Request::new("claude").user("hi").structured(StructuredMode::JsonSchema, Some(json!({"type":"object"})));
    let events = collect(anthropic(&server).stream(&request)).await;
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.schema_in_prompt), (StructuredMode::None, true));
    assert!(mode.fallbacks.iter().any(|f| f.reason.contains("anthropic provider has no json-schema mode")), "{mode:?}");
    assert!(server.received()[0].json()["system"].as_str().unwrap().contains("JSON Schema"));
}
