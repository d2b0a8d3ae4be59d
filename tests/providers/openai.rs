//! `openai` against the recorded llama-cpp-python wire traffic, served byte for byte.

use serde_json::json;
use tunebench::provider::wire_server::Reply;
use tunebench::provider::{Event, FinishReason, Provider, ProviderError, Request, StructuredMode};
use tunebench::truncate::tokens::count_o200k;

use crate::support::*;

fn hello() -> Request {
    Request::new("smollm2").user("Say hello in five words.").max_tokens(40).temperature(0.0)
}

fn person_schema() -> serde_json::Value {
    json!({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
           "required":["name","age"],"additionalProperties":false})
}

#[tokio::test]
async fn a_recorded_stream_arrives_delta_by_delta_and_ends_with_stop() {
    let server = serve(vec![recorded("llama-cpp-python/a1_chat_stream.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    // The role-only first chunk and the empty final delta carry no text.
    assert_eq!(deltas(&events)[..3], ["Hello", ",", " welcome"]);
    assert_eq!(text(&events), "Hello, welcome to my little corner of the world!");
    assert!(matches!(events[0], Event::Mode(_)), "{events:?}");
    assert_eq!(finish(&events), FinishReason::Stop);
    let sent = &server.received()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/chat/completions"));
    let body = sent.json();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], json!(40));
    assert_eq!(body["messages"], json!([{"role":"user","content":"Say hello in five words."}]));
    assert!(sent.header("authorization").is_none(), "no key, no header");
}

#[tokio::test]
async fn usage_is_counted_and_marked_estimated_when_the_server_sends_none() {
    // The server ignores stream_options.include_usage (a2).
    let server = serve(vec![recorded("llama-cpp-python/a2_chat_stream_include_usage.txt")]).await;
    let request = hello();
    let events = collect(openai(&server, quick()).stream(&request)).await;
    let usage = usage(&events).expect("usage");
    assert!(usage.estimated);
    assert_eq!(usage.output_tokens, count_o200k(&text(&events)) as u64);
    assert_eq!(usage.input_tokens, count_o200k("Say hello in five words.") as u64);
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn usage_from_the_stream_is_taken_as_sent() {
    let usage_chunk = sse(&json!({"id":"x","object":"chat.completion.chunk","choices":[],
        "usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}));
    let reply = Reply::chunked("text/event-stream")
        .chunk(oa_chunk(Some("Hi"), None))
        .chunk(oa_chunk(None, Some("stop")))
        .chunk(usage_chunk)
        .chunk("data: [DONE]\n\n")
        .end();
    let server = serve(vec![reply]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    let usage = usage(&events).unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.estimated), (11, 2, false));
    // Usage comes before the finish, which is last.
    assert!(matches!(events[events.len() - 2], Event::Usage(_)));
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn max_tokens_reached_is_length() {
    let server = serve(vec![recorded("llama-cpp-python/a3_chat_stream_length.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello().max_tokens(8))).await;
    assert_eq!(finish(&events), FinishReason::Length);
    assert!(text(&events).starts_with("Once"));
}

#[tokio::test]
async fn a_server_that_does_not_stream_still_answers_with_its_usage() {
    let server = serve(vec![recorded("llama-cpp-python/b_chat_nonstream.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    assert_eq!(text(&events), "The capital of France is Paris.");
    let usage = usage(&events).unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.estimated), (32, 7, false));
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn json_object_mode_sends_the_response_format_and_the_schema_in_the_prompt() {
    let server = serve(vec![recorded("llama-cpp-python/d4_json_object_stream.txt")]).await;
    let request = Request::new("smollm2")
        .user("Give me a person with a name and an age as JSON.")
        .structured(StructuredMode::JsonObject, Some(person_schema()));
    let events = collect(openai(&server, quick()).stream(&request)).await;
    let answer: serde_json::Value = serde_json::from_str(&text(&events)).expect("the answer is JSON");
    assert_eq!(answer, json!({"name": "John", "age": 25}));
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.schema_in_prompt), (StructuredMode::JsonObject, true));
    let body = server.received()[0].json();
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert!(body["messages"][0]["content"].as_str().unwrap().contains("\"additionalProperties\": false"));
}

#[tokio::test]
async fn a_rejected_json_schema_falls_back_to_json_object_and_says_why() {
    // llama-cpp-python answers 500 to response_format json_schema (d2), then serves json_object (d4).
    let server = serve(vec![
        recorded("llama-cpp-python/d2_json_schema.txt"),
        recorded("llama-cpp-python/d4_json_object_stream.txt"),
    ])
    .await;
    let request = Request::new("smollm2")
        .user("Give me a person with a name and an age as JSON.")
        .structured(StructuredMode::JsonSchema, Some(person_schema()));
    let events = collect(openai(&server, quick()).stream(&request)).await;
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.requested, mode.used), (StructuredMode::JsonSchema, StructuredMode::JsonObject));
    assert_eq!(mode.fallbacks.len(), 1);
    let reason = &mode.fallbacks[0].reason;
    assert!(reason.contains("HTTP 500") && reason.contains("Input should be 'text' or 'json_object'"), "{reason}");
    assert_eq!(finish(&events), FinishReason::Stop);
    assert!(serde_json::from_str::<serde_json::Value>(&text(&events)).is_ok());
    let sent = server.received();
    assert_eq!(sent[0].json()["response_format"]["type"], json!("json_schema"));
    assert_eq!(sent[0].json()["response_format"]["json_schema"]["schema"], person_schema());
    assert_eq!(sent[1].json()["response_format"]["type"], json!("json_object"));
}

#[tokio::test]
async fn a_server_rejecting_every_mode_gets_prompt_based_json() {
    let no_json_object = Reply::status(
        400,
        "application/json",
        r#"{"error":{"message":"response_format of type json_object is not supported","type":"invalid_request_error"}}"#,
    );
    let server = serve(vec![
        recorded("llama-cpp-python/d2_json_schema.txt"),
        no_json_object,
        recorded("llama-cpp-python/a1_chat_stream.txt"),
    ])
    .await;
    let request = Request::new("m")
        .system("Extract people.")
        .user("u")
        .structured(StructuredMode::JsonSchema, Some(person_schema()));
    let events = collect(openai(&server, quick()).stream(&request)).await;
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.schema_in_prompt, mode.fallbacks.len()), (StructuredMode::None, true, 2));
    assert!(mode.fallbacks[1].reason.contains("json_object is not supported"), "{mode:?}");
    let last = server.received()[2].json();
    assert!(last.get("response_format").is_none());
    let system = last["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Extract people.") && system.contains("JSON Schema"), "{system}");
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn a_stream_cut_off_after_done_without_a_finish_reason_is_interrupted() {
    // h2: the server was interrupted by another request: [DONE] with no finish chunk, then the
    // connection closed mid-body.
    let server = serve(vec![recorded("llama-cpp-python/h2_stream_interrupted_raw.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    assert_eq!(finish(&events), FinishReason::Interrupted);
    assert!(text(&events).starts_with("Once upon a time, in the land of Whiskers"), "{}", text(&events));
    assert!(text(&events).ends_with("learn new things."));
}

#[tokio::test]
async fn ping_comments_of_a_queued_stream_keep_it_alive() {
    // h4 at 100× speed: pings every 150 ms; a 250 ms read timeout never fires.
    let reply = tunebench::provider::wire_server::reply_from_recording(
        &fixture("llama-cpp-python/h4_stream_queued_ping_comments.txt"),
        100.0,
    )
    .unwrap();
    let server = serve(vec![reply]).await;
    let options =
        tunebench::provider::http::HttpOptions { read_timeout: std::time::Duration::from_millis(250), ..quick() };
    let events = collect(openai(&server, options).stream(&hello())).await;
    assert_eq!(text(&events), "Just a friendly reminder to");
    assert_eq!(finish(&events), FinishReason::Length);
}

#[tokio::test]
async fn context_overflow_is_a_400_that_says_so() {
    let server = serve(vec![recorded("llama-cpp-python/f6_context_overflow.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    let error = error(&events);
    assert_eq!(error.status(), Some(400));
    let message = error.to_string();
    assert!(message.contains("maximum context length is 4096 tokens"), "{message}");
    assert!(message.contains("context window"), "{message}");
}

#[tokio::test]
async fn a_wrong_base_url_is_a_404_that_names_the_url_and_model() {
    let server = serve(vec![recorded("llama-cpp-python/f7_wrong_path.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    let error = error(&events);
    let message = error.to_string();
    assert_eq!(error.status(), Some(404));
    assert!(message.contains(&format!("{}/v1/chat/completions", server.url())), "{message}");
    assert!(message.contains("\"smollm2\"") && message.contains("Not Found"), "{message}");
}

#[tokio::test]
async fn a_500_with_a_plain_text_body_is_reported_once_not_retried() {
    let server = serve(vec![recorded("llama-cpp-python/f1_malformed_json.txt")]).await;
    let events = collect(openai(&server, quick()).stream(&hello())).await;
    let error = error(&events);
    assert!(
        matches!(&error, ProviderError::Http { status: 500, message, .. } if message == "Internal Server Error"),
        "{error}"
    );
    assert_eq!(server.received().len(), 1);
    assert_eq!(events.len(), 1, "nothing but the error: {events:?}");
}
