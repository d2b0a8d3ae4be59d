//! `vllm`: a vLLM server is OpenAI-compatible; tunebench finds it by `VLLM_BASE_URL` (else
//! `http://127.0.0.1:8000/v1`) and `VLLM_API_KEY`, sends `response_format` json_schema for a json
//! answer and a Lark line grammar (`structured_outputs.grammar`) for a jsonl one, and steps down to the
//! prompt alone, saying why, when the server refuses it.

use serde_json::json;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::wire_server::{Reply, WireServer};
use tunebench::provider::{Event, FinishReason, Provider, Request, StructuredMode};

use crate::support::*;

fn vllm(server: &WireServer) -> OpenAi {
    let base = format!("{}/v1", server.url());
    let env = move |name: &str| match name {
        "VLLM_BASE_URL" => Some(base.clone()),
        "VLLM_API_KEY" => Some("token-abc123".to_string()),
        _ => None,
    };
    OpenAi::vllm_from_lookup(None, env, quick()).expect("provider")
}

fn line_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]})
}

#[tokio::test]
async fn a_json_answer_asks_for_the_json_schema_with_the_key_and_is_named_vllm() {
    let server = serve(vec![recorded("llama-cpp-python/d4_json_object_stream.txt")]).await;
    let provider = vllm(&server);
    assert_eq!(provider.name(), "vllm");
    let request = Request::new("Qwen/Qwen2.5-7B-Instruct")
        .user("Give me a person as JSON.")
        .structured(StructuredMode::JsonSchema, Some(line_schema()));
    let events = collect(provider.stream(&request)).await;
    assert_eq!(finish(&events), FinishReason::Stop);
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer token-abc123"));
    let body = sent.json();
    assert_eq!(body["response_format"]["json_schema"]["schema"], line_schema());
    assert!(body.get("structured_outputs").is_none());
}

#[tokio::test]
async fn a_jsonl_answer_is_held_line_by_line_by_a_lark_grammar() {
    let server = serve(vec![recorded("llama-cpp-python/a1_chat_stream.txt")]).await;
    let mut request = Request::new("m").system("Answer in JSON Lines.").user("People, please.");
    request = request.structured(StructuredMode::JsonSchema, Some(line_schema()));
    request.jsonl = true;
    let events = collect(vllm(&server).stream(&request)).await;
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.schema_in_prompt), (StructuredMode::JsonSchema, false));
    let body = server.received()[0].json();
    assert!(body.get("response_format").is_none(), "one value would be forced: {body}");
    let grammar = body["structured_outputs"]["grammar"].as_str().unwrap();
    assert!(grammar.starts_with("start: line (\"\\n\" line)* \"\\n\"?\nline: %json {"), "{grammar}");
    assert!(grammar.contains("\"required\":[\"name\",\"age\"]"), "{grammar}");
}

#[tokio::test]
async fn a_server_without_the_grammar_backend_gets_the_prompt_alone_and_the_record_says_why() {
    let refused = Reply::status(
        400,
        "application/json",
        r#"{"object":"error","message":"structured_outputs: grammar is not supported by the xgrammar backend","type":"BadRequestError","code":400}"#,
    );
    let server = serve(vec![refused, recorded("llama-cpp-python/a1_chat_stream.txt")]).await;
    let mut request = Request::new("m").system("Answer in JSON Lines.").user("u");
    request = request.structured(StructuredMode::JsonSchema, Some(line_schema()));
    request.jsonl = true;
    let events = collect(vllm(&server).stream(&request)).await;
    let Event::Mode(mode) = &events[0] else { panic!("{events:?}") };
    assert_eq!((mode.used, mode.fallbacks.len()), (StructuredMode::None, 1), "{mode:?}");
    assert_eq!(mode.fallbacks[0].to, StructuredMode::None, "json-object would force one value");
    assert!(mode.fallbacks[0].reason.contains("HTTP 400") && mode.fallbacks[0].reason.contains("xgrammar"), "{mode:?}");
    let retry = server.received()[1].json();
    assert!(retry.get("structured_outputs").is_none() && retry.get("response_format").is_none(), "{retry}");
    assert_eq!(retry["messages"][0]["content"], "Answer in JSON Lines.", "the prompt already describes each line");
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[tokio::test]
async fn with_nothing_set_a_vllm_server_is_looked_for_on_port_8000() {
    let provider = OpenAi::vllm_from_lookup(None, |_| None, quick()).unwrap();
    assert_eq!(provider.url(), "http://127.0.0.1:8000/v1/chat/completions");
}
