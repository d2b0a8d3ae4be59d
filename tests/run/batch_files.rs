//! `tunebench batch export` and `batch import` as binaries: the case matrix written as OpenAI's and
//! Anthropic's batch input (the very body `run` sends), result files read back into run records with
//! their verdicts, and every bad line reported by number while the rest is imported.

use std::path::Path;

use serde_json::{json, Value};

use crate::engine::sse_answer;
use crate::support::*;

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Exports extract-topics (both cases) and its json twin for `provider`; returns the export summary.
fn export(dir: &Path, provider: &str) -> Value {
    let output = tunebench(dir)
        .args(["batch", "export"])
        .arg(sample("extract-topics"))
        .args(["--provider", provider, "--cases", "--twins", "--model", "gpt-4o-mini", "--structured", "json-schema"])
        .arg("-o")
        .arg(dir.join("batch.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    stdout_json(&output)
}

fn openai_result(custom_id: &str, content: &str, finish: &str) -> Value {
    json!({"id": format!("batch_req_{custom_id}"), "custom_id": custom_id, "error": null,
           "response": {"status_code": 200, "request_id": "req_1", "body": {
               "id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_000_000, "model": "gpt-4o-mini",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}}})
}

#[test]
fn export_writes_every_case_and_twin_as_the_request_run_sends() {
    let dir = tempfile::tempdir().unwrap();
    let summary = export(dir.path(), "openai");
    assert_eq!(summary["requests"], 4, "{summary}");
    let batch = lines_of(&dir.path().join("batch.jsonl"));
    let ids: Vec<&str> = batch.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    assert_eq!(ids, summary["custom_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>());
    assert!(
        ids[0].ends_with("-extract-topics-economics") && ids[3].ends_with("-extract-topics-json-music-theory"),
        "{ids:?}"
    );
    assert!(dir.path().join("batch.manifest.json").exists());
    let tag = summary["tag"].as_str().unwrap();
    assert!(dir.path().join("batches").join(format!("{tag}.json")).exists(), "kept in the data directory");
    // jsonl: no server-side schema mode (it would force one value); json twin: json_schema.
    assert!(batch[0]["body"].get("response_format").is_none());
    assert!(batch[0]["body"]["messages"][0]["content"].as_str().unwrap().contains("Answer in JSON Lines"));
    assert_eq!(batch[2]["body"]["response_format"]["type"], "json_schema");
    assert_eq!(batch[2]["body"]["response_format"]["json_schema"]["schema"]["type"], "array");
    assert!(batch[1]["body"]["messages"][1]["content"].as_str().unwrap().contains("An interval is the distance"));

    // The live request of the same case is the same body, streaming fields aside.
    let (_runtime, server) =
        crate::cli::server(vec![sse_answer("{\"topic\": \"a\", \"definition\": \"b\"}\n", "stop")]);
    let output = tunebench(dir.path())
        .arg("run")
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "--model", "gpt-4o-mini", "--structured", "json-schema", "--case", "economics"])
        .args(["--base-url", &format!("{}/v1", server.url()), "--no-history"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let mut live = server.received()[0].json();
    let live = live.as_object_mut().unwrap();
    live.remove("stream");
    live.remove("stream_options");
    assert_eq!(Value::Object(live.clone()), batch[0]["body"]);
}

#[test]
fn import_judges_each_answer_and_reports_bad_lines_by_number() {
    let dir = tempfile::tempdir().unwrap();
    let summary = export(dir.path(), "openai");
    let ids: Vec<String> =
        summary["custom_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let results = [
        openai_result(&ids[0], "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n{\"topic\": \"interest rate\", \"definition\": \"The central bank's tool.\"}\n", "stop").to_string(),
        "this line is not json".to_string(),
        openai_result(&ids[1], "{\"topic\": \"interval\"}\n", "stop").to_string(),
        openai_result(&ids[2], "[{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}, {\"topic\": \"inter", "length").to_string(),
        json!({"id": "batch_req_x", "custom_id": ids[3], "response": null,
               "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}).to_string(),
        openai_result("someone-else-1", "{}", "stop").to_string(),
        json!({"response": {"status_code": 200, "body": {}}}).to_string(),
        openai_result(&ids[0], "{}", "stop").to_string(),
    ];
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, results.join("\n") + "\n").unwrap();
    let output = tunebench(dir.path()).args(["batch", "import"]).arg(&file).arg("--json").output().unwrap();
    assert_eq!(output.status.code(), Some(1), "a failed answer and bad lines: exit 1");
    let report = stdout_json(&output);
    assert_eq!((report["requests"].clone(), report["imported"].clone()), (json!(4), json!(4)), "{report}");
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs[0]["batch"], ids[0]);
    assert_eq!((runs[0]["ok"].clone(), runs[0]["result"].as_array().map(Vec::len)), (json!(true), Some(2)));
    assert_eq!(runs[0]["turns"][0]["usage"], json!({"input_tokens": 120, "output_tokens": 30}));
    assert_eq!(runs[0]["started_at_ms"], 1_764_000_000_000u64);
    assert_eq!(runs[0]["provider"], "openai");
    assert_eq!(runs[1]["ok"], false);
    assert_eq!(runs[1]["turns"][0]["parse"]["summary"]["schema_error"], 1, "{}", runs[1]);
    assert_eq!(runs[2]["prompt"], "extract-topics-json");
    assert_eq!((runs[2]["truncated"].clone(), runs[2]["repaired"].clone()), (json!(true), json!(true)));
    assert_eq!(runs[2]["result"][0]["topic"], "inflation");
    assert!(runs[2]["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("truncated: the answer hit the max-tokens limit of 1024"));
    assert_eq!(runs[3]["ok"], false);
    assert!(runs[3]["error"].as_str().unwrap().contains("batch_expired"), "{}", runs[3]);
    let errors = report["errors"].as_array().unwrap();
    let by_line: Vec<(u64, &str)> =
        errors.iter().map(|e| (e["line"].as_u64().unwrap(), e["message"].as_str().unwrap())).collect();
    assert_eq!(by_line.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![2, 5, 6, 7, 8], "{errors:?}");
    assert!(by_line[0].1.contains("not JSON"));
    assert!(by_line[1].1.contains("batch_expired") && errors[1]["recorded"] == true);
    assert!(by_line[2].1.contains("\"someone-else-1\" is not one of the 4 requests"));
    assert!(by_line[3].1.contains("no custom_id"));
    assert!(by_line[4].1.contains("already imported from line 1"));
    assert_eq!(report["missing"], json!([]));

    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records;
    assert_eq!(history.len(), 4);
    assert!(history.iter().all(|r| r.batch.is_some()));
    // The imported turn's transcript ends as the provider said, so it replays like a live one.
    let transcript = &history[0].turns[0].transcript;
    assert_eq!(transcript.end.as_ref().and_then(|end| end.finish_reason.as_deref()), Some("stop"));
    assert_eq!(transcript.chunks.len(), 1);

    // `history` lists them by batch tag, and --failed keeps the three that failed (one truncated).
    let tag = summary["tag"].as_str().unwrap();
    let listed = tunebench(dir.path()).args(["history", "--batch", tag, "--failed", "--json"]).output().unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", String::from_utf8_lossy(&listed.stderr));
    let failed: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let failed_ids: Vec<&Value> = failed.iter().map(|r| &r["batch"]).collect();
    assert_eq!(failed_ids, vec![&json!(ids[1]), &json!(ids[2]), &json!(ids[3])]);
    let human =
        tunebench(dir.path()).args(["history", "--prompt", "extract-topics-json", "--last", "1"]).output().unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("FAILED    extract-topics-json [music-theory]  openai gpt-4o-mini  no result"), "{text}");
    assert!(String::from_utf8_lossy(&human.stderr).starts_with("1 of 4 runs in "));
}

#[test]
fn lines_of_other_batches_are_reported_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    // Another batch exported here too (its manifest is in the data directory), then this one.
    let other = export(dir.path(), "openai");
    let summary = export(dir.path(), "openai");
    let tag = summary["tag"].as_str().unwrap();
    assert_ne!(other["tag"].as_str().unwrap(), tag);
    let ids: Vec<&str> = summary["custom_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let answer = "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n";
    // The first line belongs to a batch with no manifest here, the second to the other batch.
    let mut lines = vec![
        openai_result("tbabcdef-0-someone-else-x", answer, "stop").to_string(),
        openai_result(other["custom_ids"][0].as_str().unwrap(), answer, "stop").to_string(),
    ];
    lines.extend(ids.iter().map(|id| openai_result(id, answer, "stop").to_string()));
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let output = tunebench(dir.path()).args(["batch", "import"]).arg(&file).arg("--json").output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let report = stdout_json(&output);
    assert_eq!((report["tag"].as_str(), report["imported"].clone()), (Some(tag), json!(4)), "{report}");
    assert_eq!(report["missing"], json!([]));
    let errors = report["errors"].as_array().unwrap();
    let lines: Vec<u64> = errors.iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [1, 2], "{errors:?}");
    for error in errors {
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&format!("is not one of the 4 requests of batch {tag}")), "{message}");
    }
}

#[test]
fn anthropic_results_import_with_the_manifest_named() {
    let dir = tempfile::tempdir().unwrap();
    let summary = export(dir.path(), "anthropic");
    let batch = lines_of(&dir.path().join("batch.jsonl"));
    assert!(batch[2]["params"]["system"].as_str().unwrap().contains("must validate against this JSON Schema"));
    assert!(batch[2]["params"].get("response_format").is_none());
    let ids: Vec<&str> = summary["custom_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let answer = |id: &str, text: &str| {
        json!({"custom_id": id, "result": {"type": "succeeded", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 90, "output_tokens": 20}}}})
        .to_string()
    };
    let results = [
        answer(ids[0], "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}"),
        answer(ids[2], "[{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}]"),
        json!({"custom_id": ids[1], "result": {"type": "errored", "error": {"type": "error",
               "error": {"type": "overloaded_error", "message": "Overloaded"}}}})
        .to_string(),
    ];
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, results.join("\n")).unwrap();
    // Another data directory: the manifest is found only when named.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = tunebench(elsewhere.path()).args(["batch", "import"]).arg(&file).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("give --manifest FILE"), "{stderr}");
    let output = tunebench(elsewhere.path())
        .args(["batch", "import"])
        .arg(&file)
        .arg("--manifest")
        .arg(dir.path().join("batch.manifest.json"))
        .arg("--json")
        .output()
        .unwrap();
    let report = stdout_json(&output);
    assert_eq!(report["imported"], 3, "{report}");
    let runs = report["runs"].as_array().unwrap();
    assert_eq!((runs[0]["ok"].clone(), runs[0]["provider"].clone()), (json!(true), json!("anthropic")));
    assert_eq!(runs[1]["ok"], true, "{}", runs[1]);
    assert_eq!(runs[1]["mode"]["schema_in_prompt"], true);
    assert!(runs[2]["error"].as_str().unwrap().contains("overloaded_error: Overloaded"));
    assert_eq!(report["missing"], json!([ids[3]]));
}

#[test]
fn export_errors_name_the_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "-o"])
        .arg(dir.path().join("b.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("extract-topics.toml: no model") && stderr.contains("--model"), "{stderr}");
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(sample("classify-sentiment"))
        .args(["--provider", "openai", "--model", "m", "--twins", "-o"])
        .arg(dir.path().join("b.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--twins") && stderr.contains("twin"), "{stderr}");
    // The output over the prompt it exports: refused, the prompt left as it was.
    let prompt = dir.path().join("topics.toml");
    std::fs::copy(sample("extract-topics"), &prompt).unwrap();
    let before = std::fs::read(&prompt).unwrap();
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(&prompt)
        .args(["--provider", "openai", "--model", "m", "-o"])
        .arg(&prompt)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--output") && stderr.contains("an input of this command"), "{stderr}");
    assert_eq!(std::fs::read(&prompt).unwrap(), before);
}

#[test]
fn a_cases_file_makes_the_matrix_and_names_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.jsonl");
    let lines = [
        json!({"name": "gdp", "variables": {"text": "Gross domestic product measures output."}}).to_string(),
        String::new(),
        json!({"text": "A sonnet has fourteen lines."}).to_string(),
    ];
    std::fs::write(&cases, lines.join("\n")).unwrap();
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "--twins", "--model", "m", "--cases-file"])
        .arg(&cases)
        .arg("-o")
        .arg(dir.path().join("batch.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let summary = stdout_json(&output);
    assert_eq!(summary["requests"], 4);
    let batch = lines_of(&dir.path().join("batch.jsonl"));
    assert!(batch[0]["custom_id"].as_str().unwrap().ends_with("-extract-topics-gdp"));
    assert!(batch[1]["custom_id"].as_str().unwrap().ends_with("-extract-topics-line-3"));
    assert!(batch[1]["body"]["messages"][1]["content"].as_str().unwrap().contains("A sonnet has fourteen lines."));
    let answer = |line: &Value| {
        openai_result(line["custom_id"].as_str().unwrap(), "{\"topic\": \"t\", \"definition\": \"d\"}", "stop")
    };
    let results: Vec<String> = batch.iter().take(2).map(|line| answer(line).to_string()).collect();
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, results.join("\n")).unwrap();
    let output = tunebench(dir.path()).args(["batch", "import", "--json"]).arg(&file).output().unwrap();
    let report = stdout_json(&output);
    assert_eq!(report["runs"][0]["case"], "gdp");
    assert_eq!(report["runs"][1]["case"], "line-3");
    assert_eq!(report["runs"][1]["ok"], true);
    assert_eq!(report["missing"].as_array().map(Vec::len), Some(2), "the twin's two requests");

    std::fs::write(&cases, "{\"text\": \"a\"}\n[1, 2]\n").unwrap();
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "--model", "m", "--cases-file"])
        .arg(&cases)
        .arg("-o")
        .arg(dir.path().join("b.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cases.jsonl:2: expected a JSON object"), "{stderr}");
}
