//! `judge` checks end to end through `tunebench eval`: the judge (`openai:…` on the in-process wire
//! server) grades each answer against its rubric: a pass, a fail, a malformed verdict asked again
//! once, a verdict malformed twice (the cell an error, never a pass), the judge's call recorded in the
//! cell, and a re-run answered from the response cache; an unknown judge is an input error.

use serde_json::Value;
use tunebench::eval::score::Verdict;
use tunebench::provider::wire_server::WireServer;

use super::support::{base_url, record, sse_answer, stderr, tunebench};

const PROMPT: &str = r#"id = "judged"
response_type = "json"
template = "Describe TOPIC-{{case}} as JSON"

[variables]
case = "none"

[[checks]]
kind = "judge"
name = "on topic"
judge = "openai:judge-model"
rubric = "RUBRIC: the description is about the topic it was asked for"

[[cases]]
name = "pass"
variables = { case = "pass" }

[[cases]]
name = "fail"
variables = { case = "fail" }

[[cases]]
name = "retry"
variables = { case = "retry" }

[[cases]]
name = "broken"
variables = { case = "broken" }
"#;

/// The answers (by the topic in the request) and the judge's verdicts (by the answer it judges).
fn server() -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let route = |text: &str, answer: &str| (text.to_string(), sse_answer(answer, "stop"));
    let routes = vec![
        // The second ask of the retried verdict carries its first, malformed answer.
        route("MALFORMED-ONCE", r#"{"reason": "on topic after all", "pass": true, "score": 0.8}"#),
        route("ANSWER-pass", r#"{"reason": "it describes the topic", "pass": true, "score": 0.9}"#),
        route("ANSWER-fail", r#"{"reason": "it describes something else", "pass": false, "score": 0.1}"#),
        route("ANSWER-retry", r#"{"reason": "MALFORMED-ONCE", "score": 2}"#),
        route("ANSWER-broken", "no verdict here"),
        route("TOPIC-pass", r#"{"text": "ANSWER-pass"}"#),
        route("TOPIC-fail", r#"{"text": "ANSWER-fail"}"#),
        route("TOPIC-retry", r#"{"text": "ANSWER-retry"}"#),
        route("TOPIC-broken", r#"{"text": "ANSWER-broken"}"#),
    ];
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

fn eval(dir: &std::path::Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(dir)
        .arg("eval")
        .arg(dir.join("judged.toml"))
        .args(["--provider", "openai", "--base-url", &base_url(server), "--json", "--concurrency", "1"])
        .args(args)
        .env("OPENAI_BASE_URL", base_url(server))
        .output()
        .unwrap()
}

#[test]
fn a_judge_passes_fails_retries_a_malformed_verdict_once_and_errors_on_two_then_answers_from_the_cache() {
    let (_runtime, server) = server();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("judged.toml"), PROMPT).unwrap();
    let output = eval(dir.path(), &server, &[]);
    let first = record(&output);
    let by_case = |record: &tunebench::eval::EvalRecord, case: &str| {
        let cell = record.cells.iter().find(|c| c.case.as_deref() == Some(case)).unwrap().clone();
        let check = serde_json::to_value(&cell.score.checks[0]).unwrap();
        (cell.score.verdict, cell.score.reason, check)
    };
    let (verdict, reason, check) = by_case(&first, "pass");
    assert_eq!(verdict, Verdict::Pass, "{reason}\n{}", stderr(&output));
    assert_eq!(check["graded"]["score"], 0.9);
    assert_eq!(check["graded"]["reason"], "it describes the topic");
    let call = &check["graded"]["judge"];
    assert_eq!(call["model"], "openai:judge-model");
    assert_eq!(call["turns"], 1);
    assert!(call["request"].to_string().contains("ANSWER-pass") && call["request"].to_string().contains("RUBRIC"));
    assert_eq!(call["request"]["model"], "judge-model");
    assert_eq!(call["usage"]["output_tokens"], 12);

    let (verdict, reason, check) = by_case(&first, "fail");
    assert_eq!(verdict, Verdict::Fail, "{reason}");
    assert!(reason.contains("on topic"), "{reason}");
    assert!(check["message"].as_str().unwrap().contains("score 0.10: it describes something else"), "{check}");

    let (verdict, reason, check) = by_case(&first, "retry");
    assert_eq!(verdict, Verdict::Pass, "{reason}");
    assert_eq!(check["graded"]["judge"]["turns"], 2);
    assert_eq!(check["graded"]["reason"], "on topic after all");

    let (verdict, reason, check) = by_case(&first, "broken");
    assert_eq!(verdict, Verdict::Error, "{reason}");
    assert!(
        reason.contains("on topic") && reason.contains("judge openai:judge-model answered no verdict twice"),
        "{reason}"
    );
    assert_eq!(check["not_evaluated"], true);

    // Four answers, and six judge turns (one retried, one malformed twice).
    let asked = server.received().len();
    assert_eq!(asked, 4 + 6, "answers and judge turns");
    let again = record(&eval(dir.path(), &server, &[]));
    assert_eq!(server.received().len(), asked, "nothing changed: every answer and verdict comes from the cache");
    let (verdict, _, check) = by_case(&again, "pass");
    assert_eq!((verdict, check["graded"]["judge"]["cached"].clone()), (Verdict::Pass, Value::Bool(true)));
}

#[test]
fn an_unknown_judge_or_a_judge_check_with_no_model_is_an_input_error_before_any_model_call() {
    let (_runtime, server) = server();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("judged.toml"), PROMPT.replace("openai:judge-model", "gpt4")).unwrap();
    let output = eval(dir.path(), &server, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("judged.toml:8") && stderr(&output).contains("judge \"gpt4\" is not a model"),
        "{}",
        stderr(&output)
    );

    std::fs::write(dir.path().join("judged.toml"), PROMPT.replace("judge = \"openai:judge-model\"\n", "")).unwrap();
    let output = eval(dir.path(), &server, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("names no `judge` model, and no --judge was given"), "{}", stderr(&output));
    let output = eval(dir.path(), &server, &["--judge", "bedrock:claude"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--judge: judge \"bedrock:claude\" is not a model"), "{}", stderr(&output));
    assert!(server.received().is_empty(), "no model was called");

    // With --judge, the checks that name none are judged by it.
    let output = eval(dir.path(), &server, &["--judge", "openai:judge-model", "--case", "pass"]);
    let record = record(&output);
    assert_eq!(record.cells[0].score.verdict, Verdict::Pass, "{}", stderr(&output));
}
