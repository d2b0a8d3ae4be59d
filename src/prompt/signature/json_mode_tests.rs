//! Unit tests of PtcRunner's JSON-mode rules: answer shapes, the loop, and the prompt texts.

use std::collections::BTreeMap;

use serde_json::json;

use super::super::{parse, Signature};
use super::*;

fn sig(src: &str) -> Signature {
    parse(src).unwrap_or_else(|error| panic!("{error}"))
}

fn parse_error(message: &str) -> JsonModeError {
    JsonModeError::JsonParse { message: message.to_owned() }
}

#[test]
fn objects_extracted_as_ptcrunner_does() {
    let s = sig("() -> {count :int}");
    assert_eq!(accept(&s, "Here's the result:\n```json\n{\"count\": 42}\n```\n"), Ok(json!({"count": 42})));
    assert_eq!(accept(&s, "{\"count\": 1} Let me know"), Ok(json!({"count": 1})));
    assert_eq!(accept(&s, "nothing here"), Err(parse_error("No valid JSON found in response")));
    assert_eq!(accept(&s, "{count: 1}"), Err(parse_error("JSON parse error")));
}

#[test]
fn shape_rules() {
    let object = sig("() -> {value :int}");
    let not_object = parse_error("Response must be a JSON object, not an array or primitive");
    assert_eq!(accept(&object, "[1, 2, 3]"), Err(not_object.clone()));
    assert_eq!(accept(&sig("() -> :string"), "```json\n\"hi\"\n```"), Err(not_object.clone()));
    assert_eq!(accept(&sig("() -> :any"), "```\n42\n```"), Err(not_object));
    let ints = sig("() -> [:int]");
    assert_eq!(accept(&ints, "[1, 2]"), Ok(json!([1, 2])));
    assert_eq!(accept(&ints, "{\"items\": [3]}"), Ok(json!([3])));
    let wrapper = parse_error("Expected {\"items\": [...]} wrapper for array response");
    assert_eq!(accept(&ints, "{\"values\": [3]}"), Err(wrapper.clone()));
    assert_eq!(accept(&ints, "{\"items\": 3}"), Err(wrapper));
}

#[test]
fn any_skips_validation_and_others_validate() {
    assert_eq!(accept(&sig(":any"), "{\"anything\": \"works\"}"), Ok(json!({"anything": "works"})));
    assert_eq!(accept(&sig(":map"), "{\"a\": 1}"), Ok(json!({"a": 1})));
    let Err(JsonModeError::Validation { message, issues }) =
        accept(&sig("{results [{id :int}], n :int}"), "{\"results\": [{\"id\": \"x\"}]}")
    else {
        panic!("should be a validation error");
    };
    assert_eq!(message, "results.0.id: expected int, got string; n: expected field, got nil");
    assert_eq!(issues[0].path, "/results/0/id");
    let list = accept(&sig("[:int]"), "[\"not\", 1]").err();
    assert_eq!(list.map(|e| e.to_string()).as_deref(), Some("0: expected int, got string"));
    let root = accept(&sig("{}"), "{}").map(|_| ());
    assert_eq!(root, Ok(()));
}

#[test]
fn returned_keys_are_normalised_as_step_return() {
    let got = accept(&sig("{user-id :int, meta :map}"), r#"{"user-id": 1, "meta": {"a-b": [{"c-d": 1}]}}"#);
    assert_eq!(got, Ok(json!({"user_id": 1, "meta": {"a_b": [{"c_d": 1}]}})));
}

#[test]
fn normalising_a_very_deep_value_does_not_recurse() {
    let mut value = json!(1);
    for _ in 0..100_000 {
        // Not `json!`: it would serialise `value` recursively.
        value = Value::Object(Map::from_iter([("a-b".to_owned(), Value::Array(vec![value]))]));
    }
    let mut normalised = normalize_keys(value);
    assert!(normalised.get("a_b").is_some());
    // Take the value apart iteratively too: dropping it recursively would overflow the stack.
    let mut stack = vec![normalised.take()];
    while let Some(mut node) = stack.pop() {
        match &mut node {
            Value::Object(map) => stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v)),
            Value::Array(items) => stack.append(items),
            _ => {}
        }
    }
}

#[test]
fn the_loop_retries_until_accepted_or_out_of_turns() {
    let s = sig("() -> {value :int}");
    let (outcome, turns) = run_turns(&s, &["{\"value\": \"x\"}", "{\"value\": 42}"], 3);
    assert_eq!((outcome, turns), (Ok(json!({"value": 42})), 2));
    let (outcome, turns) = run_turns(&s, &["{\"wrong\": 1}", "{\"wrong\": 2}", "{\"value\": 1}"], 2);
    assert_eq!(turns, 2);
    let error = outcome.err();
    assert_eq!(error.as_ref().map(JsonModeError::reason), Some("validation_error"));
    assert_eq!(error.map(|e| e.to_string()).as_deref(), Some("value: expected field, got nil"));
    let (outcome, turns) = run_turns(&s, &["not json", "not json"], 2);
    assert_eq!((outcome.map_err(|e| e.reason()), turns), (Err("json_parse_error"), 2));
    let (outcome, turns) = run_turns(&s, &["{\"value\": 1}"], 0);
    assert_eq!((outcome.map_err(|e| e.reason()), turns), (Err("max_turns_exceeded"), 0));
    let (outcome, turns) = run_turns(&s, &[], 3);
    assert_eq!((outcome, turns), (Err(JsonModeError::NoAnswer), 0));
}

#[test]
fn feedback_carries_error_answer_and_format() {
    let s = sig("() -> {sentiment :string}");
    let error = parse_error("No valid JSON found in response");
    let text = feedback(&s, "{\"feeling\": \"positive\"}", &error);
    assert_eq!(
        text,
        "<error_feedback>\nYour response was not valid JSON or didn't match the expected format.\n\n\
         Error: No valid JSON found in response\n\nYour response was:\n{\"feeling\": \"positive\"}\n\n\
         Please return valid JSON matching this format:\n{\n  \"sentiment\": \"...\"\n}\n</error_feedback>"
    );
    let long = "é".repeat(300);
    let cut = feedback(&s, &long, &error);
    assert!(cut.contains(&format!("{}...\n", "é".repeat(300))), "600 bytes, 300 characters: kept");
    let longer = "x".repeat(501);
    assert!(feedback(&s, &longer, &error).contains(&format!("{}...\n", "x".repeat(500))));
}

#[test]
fn expected_output_section() {
    let s = sig("(text :string) -> {sentiment :string, score :float?, tags [:keyword], at {x :int}}");
    let mut descriptions = BTreeMap::new();
    descriptions.insert("sentiment".to_owned(), "One of: positive, negative".to_owned());
    descriptions.insert("score".to_owned(), String::new());
    assert_eq!(
        expected_output(&s, &descriptions),
        "Return a JSON object with these fields:\n\
         - `sentiment` (string) - One of: positive, negative\n\
         - `score` (number (optional))\n\
         - `tags` (array of string)\n\
         - `at` (object)\n\nExample format:\n```json\n\
         {\n  \"at\": {\n    \"x\": 0\n  },\n  \"score\": 0.0,\n  \"sentiment\": \"...\",\n  \"tags\": [\n    \"keyword\"\n  ]\n}\n```"
    );
    let list = sig("[{id :int}]");
    assert_eq!(output_instruction(&list), "Return a JSON array:");
    assert_eq!(field_descriptions(&list, &BTreeMap::new()), "(array of object)");
    assert_eq!(example_output(&list), "[\n  {\n    \"id\": 0\n  }\n]");
    assert!(field_descriptions(&sig(":any"), &BTreeMap::new()).contains("no wrapper needed"));
    assert_eq!(example_output(&sig(":any")), "{\n  \"data\": \"...\",\n  \"key\": \"value\"\n}");
    let message = user_message(&s, "Classify: great!", &descriptions);
    assert!(message.starts_with("<task>\nClassify: great!\n</task>\n\n<expected_output>\nReturn a JSON object"));
    assert!(message.ends_with("```\n</expected_output>"));
    assert!(SYSTEM_PROMPT.contains("Return ONLY valid JSON"));
}

#[test]
fn answer_check_applies_the_shape_rules() {
    let check = AnswerCheck(sig("[:int]"));
    assert_eq!(check.check(&json!({"items": [1]})), Ok(None));
    assert_eq!(check.check(&json!([1])), Ok(None));
    let issues = check.check(&json!([1, "x"])).err().unwrap_or_default();
    assert_eq!(issues, vec![SchemaIssue { path: "/1".into(), message: "expected int, got string".into() }]);
    let issues = check.check(&json!(3)).err().unwrap_or_default();
    assert_eq!(issues[0].path, "");
    assert!(issues[0].message.starts_with("Response must be a JSON object"));
}
