//! Batch lines: what export writes for each provider, and every shape of result line read back.

use serde_json::json;

use super::*;
use crate::provider::StructuredMode;

fn request() -> Request {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
    Request::new("gpt-x").system("s").user("u").max_tokens(50).structured(StructuredMode::JsonSchema, Some(schema))
}

#[test]
fn openai_lines_carry_the_body_run_sends_without_streaming() {
    let (line, mode) = input_line(Engine::Openai, "tbabc-00001-p", &request());
    assert_eq!(line["custom_id"], "tbabc-00001-p");
    assert_eq!((line["method"].as_str(), line["url"].as_str()), (Some("POST"), Some("/v1/chat/completions")));
    let body = &line["body"];
    assert_eq!(body["model"], "gpt-x");
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert!(body.get("stream").is_none() && body.get("stream_options").is_none(), "{body}");
    assert_eq!(mode.used, StructuredMode::JsonSchema);
    assert!(!mode.schema_in_prompt);
}

#[test]
fn anthropic_lines_put_the_schema_in_the_system_prompt_as_run_does() {
    let (line, mode) = input_line(Engine::Anthropic, "tbabc-00001-p", &request());
    let params = &line["params"];
    assert_eq!(params["model"], "gpt-x");
    assert_eq!(params["max_tokens"], 50);
    assert!(params["system"].as_str().unwrap().contains("must validate against this JSON Schema"), "{params}");
    assert!(params.get("stream").is_none());
    assert_eq!(params["messages"], json!([{"role": "user", "content": "u"}]));
    assert_eq!((mode.used, mode.schema_in_prompt), (StructuredMode::None, true));
    assert_eq!(mode.fallbacks.len(), 2, "{mode:?}");
}

#[test]
fn openai_results_give_text_finish_usage_and_time() {
    let line = json!({"id": "batch_req_1", "custom_id": "c1", "response": {"status_code": 200, "request_id": "r",
        "body": {"id": "chatcmpl-1", "object": "chat.completion", "created": 1711652795,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"a\": 1}"}, "finish_reason": "length"}],
                 "usage": {"prompt_tokens": 22, "completion_tokens": 2, "total_tokens": 24}}}, "error": null});
    let outcome = read_result(Engine::Openai, &line.to_string()).unwrap();
    assert_eq!(outcome.custom_id, "c1");
    assert_eq!(outcome.text, "{\"a\": 1}");
    assert_eq!(outcome.finish, Some(FinishReason::Length));
    assert_eq!(
        outcome.usage,
        Some(Usage { input_tokens: 22, output_tokens: 2, estimated: false, cached_input_tokens: 0 })
    );
    assert_eq!(outcome.created_at_ms, Some(1_711_652_795_000));
    assert!(outcome.error.is_none());
}

#[test]
fn openai_error_objects_and_error_statuses_name_the_request_and_the_reason() {
    let line = json!({"id": "batch_req_2", "custom_id": "c2", "response": null,
                      "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}});
    let outcome = read_result(Engine::Openai, &line.to_string()).unwrap();
    let error = outcome.error.unwrap().to_string();
    assert!(error.contains("request c2") && error.contains("batch_expired: This request could not"), "{error}");
    let line = json!({"custom_id": "c3", "response": {"status_code": 400, "body": {"error": {"message": "Invalid model", "type": "invalid_request_error", "code": null}}}});
    let error = read_result(Engine::Openai, &line.to_string()).unwrap().error.unwrap().to_string();
    assert!(error.contains("HTTP 400") && error.contains("Invalid model"), "{error}");
}

#[test]
fn anthropic_results_of_every_type() {
    let ok = json!({"custom_id": "a1", "result": {"type": "succeeded", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "{\"a\":"}, {"type": "text", "text": " 2}"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 4}}}});
    let outcome = read_result(Engine::Anthropic, &ok.to_string()).unwrap();
    assert_eq!((outcome.text.as_str(), outcome.finish), ("{\"a\": 2}", Some(FinishReason::Stop)));
    assert_eq!(outcome.usage.map(|u| u.output_tokens), Some(4));
    let errored = json!({"custom_id": "a2", "result": {"type": "errored", "error": {"type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}}});
    let error = read_result(Engine::Anthropic, &errored.to_string()).unwrap().error.unwrap().to_string();
    assert!(error.contains("invalid_request_error: max_tokens: Field required"), "{error}");
    for (kind, words) in [("canceled", "canceled"), ("expired", "expired")] {
        let line = json!({"custom_id": "a3", "result": {"type": kind}});
        let error = read_result(Engine::Anthropic, &line.to_string()).unwrap().error.unwrap().to_string();
        assert!(error.contains(words), "{error}");
    }
}

#[test]
fn lines_that_cannot_be_matched_say_why() {
    let cases = [
        ("{not json", "not JSON"),
        ("[1]", "expected a JSON object, got an array"),
        (r#"{"response": {}}"#, "no custom_id"),
        (r#"{"custom_id": 7, "response": {}}"#, "custom_id is a number"),
        (r#"{"custom_id": "x"}"#, "not a batch result line"),
        (r#"{"custom_id": "x", "response": {"status_code": 200, "body": {}}}"#, "no choices[0]"),
        (r#"{"custom_id": "x", "result": {"type": "weird"}}"#, "\"weird\" is not succeeded"),
    ];
    for (line, expected) in cases {
        let error = read_result(Engine::Openai, line).unwrap_err();
        assert!(error.contains(expected), "{line}: {error}");
    }
}
