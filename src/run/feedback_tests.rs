//! The feedback message's contents and limits, and the context cap of retry messages.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::output::{parse, Profile, ResponseType};
use crate::prompt::template::Variables;
use crate::provider::{ModeReport, Request};
use crate::run::plan::Reading;
use crate::schema::{Check, CompiledSchema};

fn plan(response_type: ResponseType, schema: serde_json::Value) -> RunPlan {
    let check: Arc<dyn Check> = Arc::new(CompiledSchema::compile(&schema).unwrap());
    RunPlan {
        prompt: "p".into(),
        case: None,
        variables: Variables::new(),
        reading: Reading { response_type, profile: Profile::Lenient, check: Some(check) },
        expected: Expected::Schema(schema),
        request: Request::new("m").system("Be brief.").user("List things.").max_tokens(100),
        mode: ModeReport::default(),
        max_turns: 3,
        context_tokens: 1000,
        limits: crate::run::Limits::default(),
        live_sweep: None,
    }
}

fn report(plan: &RunPlan, answer: &str) -> Report {
    parse(plan.reading.response_type, plan.reading.profile, plan.reading.check.clone(), answer)
}

#[test]
fn json_feedback_names_each_error_path_quotes_the_answer_and_gives_the_schema() {
    let plan = plan(
        ResponseType::Json,
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n", "m"]}),
    );
    let answer = "{\"n\": \"three\"}";
    let message = message(&plan, answer, &report(&plan, answer), None);
    assert!(message.starts_with("<error_feedback>\nYour response was not valid JSON"), "{message}");
    assert!(message.contains("- /n: "), "{message}");
    assert!(message.contains("- (root): \"m\" is a required property"), "{message}");
    assert!(message.contains("Your response was:\n{\"n\": \"three\"}\n"), "{message}");
    assert!(message.contains("Please return valid JSON matching this JSON Schema:\n{"), "{message}");
    assert!(message.ends_with("</error_feedback>"));
    assert!(!message.contains("token limit"));

    let broken = "{\"n\": 3,";
    let cut = message_for_length(&plan, broken);
    assert!(cut.contains("cut off by the token limit"), "{cut}");
}

fn message_for_length(plan: &RunPlan, answer: &str) -> String {
    message(plan, answer, &report(plan, answer), Some(&FinishReason::Length))
}

#[test]
fn long_answers_and_many_errors_are_cut() {
    let plan = plan(ResponseType::Jsonl, json!({"type": "object", "required": ["a"]}));
    let answer: String = (0..40).map(|i| format!("{{\"b\": {i}, \"pad\": \"{}\"}}\n", "x".repeat(20))).collect();
    let message = message(&plan, &answer, &report(&plan, &answer), None);
    assert_eq!(message.lines().filter(|l| l.starts_with("- line ")).count(), MAX_ERRORS);
    assert!(message.contains("- ... and 20 more"), "{message}");
    let quoted = message.split("Your response was:\n").nth(1).and_then(|rest| rest.split("\n\nPlease").next()).unwrap();
    assert_eq!(quoted.chars().count(), ANSWER_CHARS + 3, "{quoted}");
    assert!(quoted.ends_with("..."));
    assert!(message.contains("each matching this JSON Schema"));
    let huge = plan.clone();
    let mut big = serde_json::Map::new();
    for i in 0..500 {
        big.insert(format!("property_{i}"), json!({"type": "string", "description": "a long description"}));
    }
    let huge = RunPlan { expected: Expected::Schema(json!({"properties": big})), ..huge };
    let message = super::message(&huge, "{}", &report(&plan, "nope"), None);
    assert!(message.len() < EXPECTED_CHARS + ANSWER_CHARS + 2000, "{}", message.len());
}

#[test]
fn retries_fit_the_context_cap() {
    let base = vec![
        Message { role: Role::System, content: "Be brief.".into() },
        Message { role: Role::User, content: "List things.".into() },
    ];
    let small = Exchange { answer: "{\"b\": 1}".into(), feedback: "fix it".into() };
    let messages = retry_messages(&base, std::slice::from_ref(&small), 500).unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!((messages[2].role, messages[2].content.as_str()), (Role::Assistant, "{\"b\": 1}"));
    assert_eq!((messages[3].role, messages[3].content.as_str()), (Role::User, "fix it"));

    // A long newest answer is cut to what is left; older exchanges that no longer fit are dropped.
    let long = Exchange { answer: "word ".repeat(5000), feedback: "fix it again".into() };
    let medium = Exchange { answer: "word ".repeat(100), feedback: "fix".into() };
    let messages = retry_messages(&base, &[medium, long.clone()], 500).unwrap();
    assert_eq!(messages.len(), 4, "the older exchange was dropped");
    assert!(messages[2].content.contains("cut here to fit the context window"), "{}", messages[2].content);
    let added: u64 = messages[2..].iter().map(|m| tokens(&m.content) + 4).sum();
    assert!(added <= 500, "{added}");
    // With room, every exchange is kept in order.
    let messages = retry_messages(&base, &[small.clone(), small.clone()], 500).unwrap();
    assert_eq!(messages.len(), 6);
    // No room even for the feedback: no retry.
    assert!(retry_messages(&base, &[long], 10).is_none());
    assert!(retry_messages(&base, &[], 500).is_none());
}

#[test]
fn the_budget_leaves_room_for_the_prompt_and_the_answer() {
    let plan = plan(ResponseType::Json, json!({}));
    let base: u64 = plan.request.messages.iter().map(|m| tokens(&m.content) + 4).sum();
    assert_eq!(budget(&plan), 900 - base - 100);
    let tiny = RunPlan { context_tokens: 50, ..plan };
    assert_eq!(budget(&tiny), 0);
    assert_eq!(tokens(""), 0);
    assert_eq!(tokens("héllo wörld"), count_o200k("héllo wörld") as u64);
    assert!(tokens(&"é".repeat(3000)) > 0);
}
