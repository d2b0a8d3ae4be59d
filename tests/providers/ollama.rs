//! `ollama` against NDJSON fixtures written from Ollama's API documentation.

use serde_json::json;
use tunebench::provider::ollama::Ollama;
use tunebench::provider::wire_server::WireServer;
use tunebench::provider::{Event, FinishReason, Provider, ProviderError, Request, StructuredMode};

use crate::support::*;

fn ollama(server: &WireServer) -> Ollama {
    Ollama::new(&server.url(), None, quick()).unwrap()
}

#[tokio::test]
async fn a_chat_stream_gives_deltas_eval_counts_and_done_reason() {
    let server = serve(vec![recorded("ollama/chat_stream.txt")]).await;
    let request = Request::new("llama3.2").user("why is the sky blue?").max_tokens(100).temperature(0.0);
    let events = collect(ollama(&server).stream(&request)).await;
    assert_eq!(text(&events), "The sky is blue because of Rayleigh scattering.");
    let usage = usage(&events).unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.estimated), (26, 9, false));
    assert_eq!(finish(&events), FinishReason::Stop);
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/api/chat");
    assert_eq!(sent.json()["options"], json!({"num_predict": 100, "temperature": 0.0}));
    assert_eq!(sent.json()["stream"], json!(true));
}

#[tokio::test]
async fn the_schema_is_sent_as_format() {
    let server = serve(vec![recorded("ollama/chat_structured_stream.txt")]).await;
    let schema = json!({"type":"object","properties":{"age":{"type":"integer"},"available":{"type":"boolean"}},"required":["age","available"]});
    let request = Request::new("llama3.1")
        .user("Ollama is 22 years old and busy saving the world.")
        .structured(StructuredMode::JsonSchema, Some(schema.clone()));
    let events = collect(ollama(&server).stream(&request)).await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text(&events)).unwrap(),
        json!({"age": 22, "available": false})
    );
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.schema_in_prompt), (StructuredMode::JsonSchema, false));
    assert_eq!(server.received()[0].json()["format"], schema);
}

#[tokio::test]
async fn num_predict_reached_is_length() {
    let server = serve(vec![recorded("ollama/chat_length.txt")]).await;
    let events = collect(ollama(&server).stream(&Request::new("llama3.2").user("story").max_tokens(4))).await;
    assert_eq!(text(&events), "Once upon a time");
    assert_eq!(finish(&events), FinishReason::Length);
}

#[tokio::test]
async fn a_missing_model_says_to_pull_it() {
    let server = serve(vec![recorded("ollama/model_not_found.txt")]).await;
    let error = error(&collect(ollama(&server).stream(&Request::new("llama9").user("hi"))).await);
    let message = error.to_string();
    assert_eq!(error.status(), Some(404));
    assert!(message.contains("model \"llama9\" not found") && message.contains("ollama pull llama9"), "{message}");
}

#[tokio::test]
async fn an_error_line_mid_stream_keeps_the_text_before_it() {
    let server = serve(vec![recorded("ollama/stream_error.txt")]).await;
    let events = collect(ollama(&server).stream(&Request::new("llama3.2").user("why?"))).await;
    assert_eq!(text(&events), "The sky");
    let error = error(&events);
    assert!(matches!(&error, ProviderError::Server { message, .. } if message.contains("unexpected EOF")), "{error}");
}

#[tokio::test]
async fn ollama_host_without_scheme_or_port_is_understood() {
    let server = serve(vec![recorded("ollama/chat_stream.txt")]).await;
    let host = server.url().trim_start_matches("http://").to_string();
    let provider = Ollama::from_lookup(None, |name| (name == "OLLAMA_HOST").then(|| host.clone()), quick()).unwrap();
    assert_eq!(provider.url(), format!("{}/api/chat", server.url()));
    assert_eq!(finish(&collect(provider.stream(&Request::new("llama3.2").user("hi"))).await), FinishReason::Stop);
}
