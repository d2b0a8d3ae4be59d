//! The peer conformance file: every case of `tests/fixtures/cases.jsonl` (copied unchanged from
//! `shared/fixtures/peers/`) is run through the profile it pins, in one test, so nothing is retyped.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod json;
mod jsonl;
mod signature;

use serde_json::Value;

/// Kinds that concern streaming providers (the live-run issue), not parsing: counted, not run here.
const STREAM_KINDS: &[&str] = &["stream_llm_chunks", "stream_prompt_client_callback", "stream_prompt_service_forward"];

type Handler = fn(&Value) -> Option<Result<(), String>>;

#[test]
fn every_peer_case_is_reproduced() {
    let text = include_str!("../fixtures/cases.jsonl");
    let handlers: [(&str, Handler); 3] =
        [("jsonl", jsonl::check), ("json", json::check), ("signature", signature::check)];
    let mut failures = Vec::new();
    let (mut ran, mut stream) = (0, 0);
    for (index, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line).expect("cases.jsonl is JSON");
        let kind = case["kind"].as_str().unwrap_or_default();
        if STREAM_KINDS.contains(&kind) {
            stream += 1;
            continue;
        }
        let outcomes: Vec<_> =
            handlers.iter().filter_map(|(name, handler)| handler(&case).map(|outcome| (name, outcome))).collect();
        match outcomes.as_slice() {
            [(_, Ok(()))] => ran += 1,
            [(name, Err(why))] => failures.push(format!(
                "line {} [{name}] {}: {why}",
                index + 1,
                case["source"].as_str().unwrap_or_default()
            )),
            [] => failures.push(format!("line {}: no handler for kind {kind:?}", index + 1)),
            _ => failures.push(format!("line {}: several handlers claim kind {kind:?}", index + 1)),
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(ran + stream, 245, "every case is accounted for");
    assert_eq!(stream, 8);
}
