//! `tunebench run` as a binary: against an in-process server, replayed from its own recording, and
//! its exit codes (0 ok, 1 failed answer, 2 usage or input error).

use serde_json::json;
use tunebench::provider::wire_server::{Reply, WireServer};

use crate::engine::sse_answer;
use crate::support::*;

/// A runtime that keeps the server answering while the binary runs.
pub fn server(replies: Vec<Reply>) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(serve(replies));
    (runtime, server)
}

#[test]
fn run_streams_validates_records_and_replays_identically() {
    let (_runtime, server) = server(vec![recorded("run/definitions_stream.txt")]);
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("definitions.jsonl");
    let prompt = sample("extract-definitions");
    let output = tunebench(dir.path())
        .arg("run")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &format!("{}/v1", server.url())])
        .arg("--record")
        .arg(&transcript)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let answer = String::from_utf8(output.stdout).unwrap();
    assert!(answer.starts_with("{\"entity\": \"mitochondria\"") && answer.lines().count() == 3, "{answer}");
    assert!(stderr.contains("jsonl: 3 valid, 0 invalid_json, 0 schema_error, 0 skipped"), "{stderr}");
    assert!(stderr.contains("finish stop") && stderr.contains("tokens/s") && stderr.contains("ttft"), "{stderr}");
    assert!(transcript.exists(), "{stderr}");

    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].prompt, "extract-definitions");
    let live_result = history[0].result.clone();
    let live_parse = serde_json::to_value(&history[0].turns[0].parse).unwrap();

    let output = tunebench(dir.path())
        .arg("run")
        .arg(&prompt)
        .args(["--provider", "replay", "--replay-speed", "instant", "--json", "--transcript"])
        .arg(&transcript)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let record = stdout_json(&output);
    assert_eq!(record["provider"], "replay");
    assert_eq!(record["model"], "", "the live run named no model");
    assert_eq!(record["result"], live_result);
    assert_eq!(record["turns"][0]["parse"], live_parse, "identical items and verdicts");
    assert_eq!(tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records.len(), 2);
}

#[test]
fn a_failing_answer_exits_1_with_the_record() {
    let (_runtime, server) = server(vec![recorded("run/definitions_invalid_stream.txt")]);
    let dir = tempfile::tempdir().unwrap();
    let output = tunebench(dir.path())
        .arg("run")
        .arg(sample("extract-definitions"))
        .args(["--base-url", &format!("{}/v1", server.url()), "--max-turns", "1", "--json", "--no-history"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let record = stdout_json(&output);
    assert_eq!(record["ok"], false);
    assert_eq!(
        record["turns"][0]["parse"]["summary"],
        json!({"valid":1,"invalid_json":1,"schema_error":1,"skipped":0})
    );
    assert!(!dir.path().join("history.jsonl").exists(), "--no-history");
}

#[test]
fn no_stream_prints_the_whole_answer_and_control_characters_are_escaped() {
    let (_runtime, server) = server(vec![sse_answer("clear \u{1b}[2J screen\r\n", "stop")]);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_file(dir.path(), "say", "template = \"Say something.\"\n");
    let output = tunebench(dir.path())
        .arg("run")
        .arg(&prompt)
        .args(["--base-url", &format!("{}/v1", server.url()), "--no-stream"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout, "clear \\u{1b}[2J screen\\r\n");
}

#[test]
fn usage_and_input_errors_exit_2_and_name_the_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = sample("extract-definitions");
    let cases: &[(&[&str], &str)] = &[
        (&["--var", "novalue"], "--var \"novalue\": expected NAME=VALUE"),
        (&["--case", "nope"], "its cases are: astronomy, medicine-comparisons, nothing-to-define"),
        (&["--provider", "local", "--model", "/nonexistent/m.gguf"], "\"/nonexistent/m.gguf\" is not a file"),
        (&["--provider", "gpt"], "\"gpt\" (from --provider) is not a provider"),
        (&["--max-turns", "0"], "at least 1 turn"),
        (&["--structured", "strict"], "invalid value 'strict'"),
        (&["--provider", "replay"], "--transcript FILE"),
        (&["--replay-speed", "soon"], "--replay-speed \"soon\""),
    ];
    for (args, message) in cases {
        let output = tunebench(dir.path()).arg("run").arg(&prompt).args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let missing = tunebench(dir.path()).args(["run", "no-such-prompt.toml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no-such-prompt.toml"));
}

#[test]
fn all_cases_run_as_a_batch() {
    let replies = vec![recorded("run/definitions_stream.txt")];
    let (_runtime, server) = server(replies);
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("batch.jsonl");
    let output = tunebench(dir.path())
        .arg("run")
        .arg(sample("extract-definitions"))
        .args(["--base-url", &format!("{}/v1", server.url()), "--all-cases", "--json", "--record"])
        .arg(&transcript)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let batch = stdout_json(&output);
    assert_eq!(batch["ok"], true);
    let cases: Vec<&str> = batch["runs"].as_array().unwrap().iter().map(|r| r["case"].as_str().unwrap()).collect();
    assert_eq!(cases, ["astronomy", "medicine-comparisons", "nothing-to-define"]);
    assert_eq!(server.received().len(), 3);
    assert!(dir.path().join("batch.astronomy.jsonl").exists());
    assert!(dir.path().join("batch.nothing-to-define.jsonl").exists());
    assert_eq!(tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records.len(), 3);
}
