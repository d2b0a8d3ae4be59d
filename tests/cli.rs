//! The headless commands driven as a user would: reports, exit codes 0/1/2, and bad input of every kind.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn tunebench() -> Command {
    Command::cargo_bin("tunebench").unwrap()
}

fn repo(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path).display().to_string()
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)))
}

const KG_PROMPT: &str = "sample-prompts/agent-kg-extract.toml";
const KG_ANSWER: &str = "sample-prompts/answers/agent-kg-extract.txt";

#[test]
fn parse_reports_a_verdict_per_line_with_branch_and_path() {
    let out = tunebench().args(["parse", "--json", "--prompt", &repo(KG_PROMPT), &repo(KG_ANSWER)]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report = json_of(&out);
    assert_eq!(report["response_type"], "jsonl");
    assert_eq!(report["profile"], "lenient");
    let lines = report["lines"].as_array().unwrap();
    assert_eq!(lines[0]["status"], "skipped");
    assert_eq!(lines[0]["reason"], "fence");
    assert_eq!(lines[1]["status"], "valid");
    assert_eq!(lines[1]["branch"], "definition");
    assert_eq!(lines[3]["status"], "schema_error");
    assert_eq!(lines[3]["errors"][0]["path"], "/object-entity");
    assert_eq!(lines[6]["status"], "invalid_json");
    assert!(lines[6]["column"].as_u64().unwrap() > 1);
    assert_eq!(report["summary"], serde_json::json!({"valid": 4, "invalid_json": 2, "schema_error": 1, "skipped": 1}));
    assert_eq!(report["items"].as_array().unwrap().len(), 4);
}

#[test]
fn strict_fails_with_exit_1_and_summary_prints_only_counts() {
    let out = tunebench()
        .args(["parse", "--strict", "--summary", "--json", "--prompt", &repo(KG_PROMPT), &repo(KG_ANSWER)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["response_type", "profile", "summary"]);
    // A fully valid answer passes --strict.
    let good = "{\"type\": \"definition\", \"entity\": \"DNA\", \"definition\": \"A molecule.\"}\n";
    tunebench().args(["parse", "--strict", "--prompt", &repo(KG_PROMPT), "-"]).write_stdin(good).assert().code(0);
}

#[test]
fn trustgraph_profile_hands_over_what_invoke_returns() {
    let out = tunebench()
        .args(["parse", "--json", "--profile", "trustgraph", "--prompt", &repo(KG_PROMPT), &repo(KG_ANSWER)])
        .output()
        .unwrap();
    let report = json_of(&out);
    // The schema-failing relationship is filtered out, as TrustGraph's invoke does.
    let items = report["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert!(items.iter().all(|i| i["object-entity"] != "false"));
}

#[test]
fn json_with_a_signature_under_ptc() {
    let answer = "Sure! Here it is:\n```json\n{\"sentiment\": \"positive\", \"score\": 0.9}\n```\n";
    let out = tunebench()
        .args([
            "parse",
            "--json",
            "--type",
            "json",
            "--profile",
            "ptc",
            "--signature",
            "{sentiment :string, score :float}",
            "-",
        ])
        .write_stdin(answer)
        .output()
        .unwrap();
    let report = json_of(&out);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["value"]["score"], 0.9);
    let out = tunebench()
        .args([
            "parse",
            "--json",
            "--strict",
            "--type",
            "json",
            "--profile",
            "ptc",
            "--signature",
            "{sentiment :string}",
            "-",
        ])
        .write_stdin("no json here")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["kind"], "no_json_found");
}

#[test]
fn lenient_json_reports_its_repairs() {
    let out = tunebench()
        .args(["parse", "--json", "--type", "json", "-"])
        .write_stdin("[{\"entity\": \"DNA\"}, {\"entity\": \"RN")
        .output()
        .unwrap();
    let report = json_of(&out);
    assert_eq!(report["value"], serde_json::json!([{"entity": "DNA"}, {"entity": "RN"}]));
    let repairs: Vec<&str> =
        report["repairs"].as_array().unwrap().iter().map(|r| r["what"].as_str().unwrap()).collect();
    assert!(repairs.contains(&"closed string") && repairs.contains(&"closed array"), "{repairs:?}");
}

#[test]
fn signature_prints_the_schema_and_errors_with_a_caret() {
    let out = tunebench().args(["signature", "(text :string) -> [{id :int}]"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema = json_of(&out);
    assert_eq!(schema["properties"]["items"]["type"], "array");
    let out = tunebench().args(["signature", "{a :int, b [:strin]}"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains('^') && err.contains("strin"), "{err}");
}

#[test]
fn truncate_at_a_chunk_gives_the_prefix_and_its_report() {
    let transcript = repo("sample-prompts/answers/extract-definitions-json.jsonl");
    let prompt = repo("sample-prompts/extract-definitions-json.toml");
    let out = tunebench()
        .args(["truncate", "--json", "--unit", "chunk", "--at", "40", "--prompt", &prompt, &transcript])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_of(&out);
    assert_eq!(report["cut"], 40);
    assert_eq!(report["unit"], "chunk");
    assert_eq!(report["of"], 130);
    let text = report["text"].as_str().unwrap();
    let full: String = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .skip(1)
        .take(40)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, full);
    assert_eq!(report["response_type"], "json");
}

#[test]
fn sweep_of_twins_shows_jsonl_surviving_where_json_fails() {
    let sweep = |prompt: &str, answer: &str| {
        let out = tunebench()
            .args(["truncate", "--sweep", "--json", "--unit", "chunk", "--prompt", &repo(prompt), &repo(answer)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        json_of(&out)
    };
    let array =
        sweep("sample-prompts/extract-definitions-json.toml", "sample-prompts/answers/extract-definitions-json.jsonl");
    let lines = sweep("sample-prompts/extract-definitions.toml", "sample-prompts/answers/extract-definitions.jsonl");
    // The array was cut by max_tokens: a strict parse never yields anything, repair recovers the complete items.
    assert_eq!(array["strategies"]["json"]["resilience"], 0.0);
    assert_eq!(array["strategies"]["json"]["steps"], serde_json::json!([[0, 0, 0]]));
    assert!(array["strategies"]["json-repair"]["resilience"].as_f64().unwrap() > 0.0);
    assert_eq!(lines["full_items"], 4);
    assert!(lines["strategies"]["jsonl"]["resilience"].as_f64().unwrap() > 0.3);
    for report in [&array, &lines] {
        let steps = report["strategies"]["jsonl"]["steps"].as_array().unwrap();
        assert_eq!(steps[0], serde_json::json!([0, 0, 0]));
        assert!(steps.windows(2).all(|w| w[0][0].as_u64() < w[1][0].as_u64()));
    }
}

#[test]
fn chunk_cuts_of_plain_text_are_a_usage_error() {
    let out =
        tunebench().args(["truncate", "--unit", "chunk", "--at", "3", "-"]).write_stdin("{\"a\":1}").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--unit chunk needs a transcript"));
    let out =
        tunebench().args(["truncate", "--unit", "char", "--at", "99", "-"]).write_stdin("{\"a\":1}").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut 99 is past the end"));
}

#[test]
fn bad_input_is_a_clear_error_or_a_report_never_a_crash() {
    // Invalid UTF-8: exit 2 naming where.
    let out = tunebench().args(["parse", "-"]).write_stdin(b"{\"a\":1}\n{\"b\":\"\xff\"}\n".to_vec()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("standard input:2:7") && err.contains("0xff"), "{err}");
    // NUL bytes, empty input, 10,000 nested brackets, one huge line: a report under every type and profile.
    let deep = "[".repeat(10_000);
    let huge = format!("{{\"a\":\"{}\"}}", "x".repeat(8_000_000));
    let inputs: [&[u8]; 4] = [b"\0{\"a\":\0}\n\0", b"", deep.as_bytes(), huge.as_bytes()];
    for input in inputs {
        for kind in ["text", "json", "jsonl"] {
            for profile in ["lenient", "strict", "trustgraph", "ptc"] {
                let out = tunebench()
                    .args(["parse", "--json", "--type", kind, "--profile", profile, "-"])
                    .write_stdin(input.to_vec())
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{kind}/{profile}: {}", String::from_utf8_lossy(&out.stderr));
                json_of(&out);
            }
        }
    }
    let out =
        tunebench().args(["truncate", "--sweep", "--unit", "char", "--json", "-"]).write_stdin(deep).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn bad_schema_and_missing_files_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, "{\"type\": \"object\",\n \"properties\": {\"n\": {\"type\": \"integr\"}}}").unwrap();
    let out =
        tunebench().args(["parse", "--schema", schema.to_str().unwrap(), "-"]).write_stdin("{}").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("schema.json") && err.contains("/properties/n/type"), "{err}");
    std::fs::write(&schema, "{\"type\": \"object\",\n \"properties\": }").unwrap();
    let out =
        tunebench().args(["parse", "--schema", schema.to_str().unwrap(), "-"]).write_stdin("{}").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2:16"), "{err}");
    let out = tunebench().args(["parse", "/no/such/answer.txt"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/answer.txt"));
    let out = tunebench().args(["parse", "--type", "yaml", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn human_output_escapes_control_characters() {
    let out = tunebench().args(["parse", "--type", "text", "-"]).write_stdin("hi\u{1b}[2J there").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && text.contains("\\u{1b}[2J"), "{text}");
}

/// `tunebench … | head -1`: the reader closes the pipe after one line; the command ends quietly
/// (exit 0, no panic message), in human and JSON output alike.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("answer.jsonl");
    let line = "{\"topic\": \"inflation\", \"definition\": \"Prices rising over time.\"}\n";
    std::fs::write(&answer, line.repeat(20_000)).unwrap();
    for json in [false, true] {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"));
        command.arg("parse").arg(&answer);
        if json {
            command.arg("--json");
        }
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(!first.is_empty());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "json {json}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// The binary the tests drive is built with the test equipment (feature `testing`, from the
/// dev-dependency on this package), so `bench` is there; a plain `cargo build` leaves it out.
#[test]
fn the_tested_binary_has_the_bench_command() {
    let out = tunebench().args(["bench", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--tui-only"));
}
