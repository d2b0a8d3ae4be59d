//! Truncation shown beside the repaired result, failed streams keeping their partial answer, server
//! errors, and the history file.

use serde_json::json;
use tunebench::output::{LineStatus, Report};
use tunebench::provider::wire_server::{Reply, Step};
use tunebench::provider::{FinishReason, ProviderError};
use tunebench::run::history;

use crate::support::*;

const PERSON_PROMPT: &str = r#"
id = "person"
response_type = "json"
template = "Output a JSON object with fields id (integer) and name (string). Output only JSON."
schema = '{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id", "name"]}'
[provider]
max_tokens = 20
"#;

#[tokio::test]
async fn a_json_answer_cut_by_max_tokens_is_repaired_and_flagged_truncated() {
    // A real capture: max_tokens 20, the answer stops inside a fenced object.
    let server = serve(vec![recorded("llama-cpp-python/c_max_tokens_20_length.txt")]).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(&prompt_file(dir.path(), "person", PERSON_PROMPT), None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert_eq!(record.turns[0].output, "```json\n{\n  \"id\": 1,\n  \"name\": \"John Doe\"");
    assert_eq!(record.turns[0].finish_reason, Some(FinishReason::Length));
    assert_eq!(record.result, json!({"id": 1, "name": "John Doe"}));
    assert!(record.ok, "the repaired value passes the schema");
    assert!(record.truncated && record.repaired);
    let first = &record.warnings[0];
    assert!(
        first.starts_with("truncated: the answer hit the max-tokens limit of 20 (finish_reason length)"),
        "{first}"
    );
    assert!(first.contains("repaired from the cut answer"), "{first}");
    assert!(
        record.warnings.iter().any(|w| w.starts_with("repaired: ") && w.contains("closed")),
        "{:?}",
        record.warnings
    );
    let value = serde_json::to_value(&record).unwrap();
    assert_eq!((value["truncated"].clone(), value["repaired"].clone()), (json!(true), json!(true)));
    assert_eq!(record.turns[0].usage.map(|u| (u.output_tokens, u.estimated)), Some((20, false)));
}

#[tokio::test]
async fn a_jsonl_answer_cut_by_max_tokens_keeps_its_complete_lines() {
    let server = serve(vec![recorded("run/definitions_length_stream.txt")]).await;
    let plan = plan(&sample("extract-definitions"), None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert!(record.truncated && !record.ok);
    assert_eq!(record.result.as_array().map(Vec::len), Some(2));
    assert!(record.warnings[0].contains("2 complete items kept; line 3 was cut mid-record"), "{:?}", record.warnings);
}

#[tokio::test]
async fn a_failed_stream_keeps_the_partial_answer_and_is_not_retried() {
    // The recorded stream up to the middle of line 2, then a TCP reset.
    let full = recorded("run/definitions_stream.txt");
    let cut_at = full.steps.len() * 45 / 100;
    let mut steps: Vec<Step> = full.steps.into_iter().take(cut_at).collect();
    steps.push(Step::Reset);
    let server = serve(vec![Reply { steps }]).await;
    let plan = plan(&sample("extract-definitions"), Some(3));
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert_eq!(server.received().len(), 1, "a broken stream is reported, not retried");
    assert!(!record.ok);
    let turn = &record.turns[0];
    assert!(matches!(turn.error, Some(ProviderError::Broken { .. })), "{:?}", turn.error);
    assert_eq!(turn.finish_reason, None);
    assert!(turn.output.starts_with("{\"entity\": \"mitochondria\""), "{}", turn.output);
    assert!(turn.output.len() > 100 && !turn.output.ends_with('\n'), "{:?}", turn.output);
    let Report::Jsonl(parse) = &turn.parse else { panic!() };
    assert!(matches!(parse.lines[0].status, LineStatus::Valid { .. }));
    assert_eq!(record.result.as_array().map(Vec::len), Some(1), "the complete line is kept");
    assert!(turn.transcript.end.as_ref().is_some_and(|end| end.error.is_some()));
    assert!(record.error.as_deref().is_some_and(|e| e.contains("broke mid-stream")), "{:?}", record.error);
    assert!(record.warnings.iter().any(|w| w.starts_with("the stream failed after")), "{:?}", record.warnings);
}

#[tokio::test]
async fn a_server_error_ends_the_run_with_its_message() {
    let server = serve(vec![Reply::status(500, "text/plain", "Internal Server Error")]).await;
    let plan = plan(&sample("extract-definitions"), Some(2));
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert!(!record.ok);
    assert_eq!(record.turns.len(), 1);
    assert_eq!(record.turns[0].output, "");
    assert!(record.error.as_deref().is_some_and(|e| e.contains("HTTP 500")), "{:?}", record.error);
}

#[tokio::test]
async fn records_are_appended_to_the_history_file() {
    let server =
        serve(vec![recorded("run/definitions_stream.txt"), recorded("run/definitions_invalid_stream.txt")]).await;
    let plan = plan(&sample("extract-definitions"), None);
    let (first, _) = run(openai(&server).as_ref(), &plan).await;
    let (second, _) = run(openai(&server).as_ref(), &plan).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join(history::HISTORY_FILE);
    history::append_to(&path, &first).unwrap();
    history::append_to(&path, &second).unwrap();
    let lines = history::read(&path).unwrap().records;
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0].ok, lines[1].ok), (true, false));
    assert_eq!(lines, [first, second], "each record reads back as it was appended");
    assert!(history::read(&dir.path().join("none.jsonl")).unwrap().records.is_empty());
}

#[tokio::test]
async fn a_torn_history_line_is_skipped_and_never_glued_to() {
    let server = serve(vec![recorded("run/definitions_stream.txt")]).await;
    let (record, _) = run(openai(&server).as_ref(), &plan(&sample("extract-definitions"), None)).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(history::HISTORY_FILE);
    history::append_to(&path, &record).unwrap();
    // An append cut short: half a record and no newline, as a kill or a full disk leaves it.
    let whole = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{whole}{}", &whole[..whole.len() / 2])).unwrap();
    history::append_to(&path, &record).unwrap();
    history::append_to(&path, &record).unwrap();
    let read = history::read(&path).unwrap();
    assert_eq!(read.records.len(), 3, "the records around the torn line are all kept");
    assert!(read.records.iter().all(|r| *r == record));
    assert_eq!(read.skipped.len(), 1);
    assert_eq!(read.skipped[0].line, 2);
    let warnings = read.warnings(&path);
    assert!(warnings[0].contains("line 2: skipped (cut short: an append was interrupted)"), "{warnings:?}");
}

#[test]
fn a_file_in_the_way_of_the_data_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("data");
    std::fs::write(&blocker, "not a directory").unwrap();
    let error = history::create_dir(&blocker.join("inner")).unwrap_err();
    assert!(
        error.contains(&blocker.join("inner").display().to_string()) && error.contains("a file of that name"),
        "{error}"
    );
    assert!(error.contains("TUNEBENCH_DATA_DIR"), "{error}");
}

/// `tunebench ARGS` run by `sh` under a file-size limit of `blocks` × 512 bytes.
fn under_file_limit(data_dir: &std::path::Path, blocks: u32, args: &str) -> std::process::Output {
    let binary = assert_cmd::cargo::cargo_bin("tunebench");
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f {blocks}; exec '{}' {args}", binary.display()))
        .env("TUNEBENCH_DATA_DIR", data_dir)
        .output()
        .unwrap()
}

#[test]
fn a_history_append_cut_short_by_the_file_size_limit_is_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(history::HISTORY_FILE);
    let line = format!("{}\n", json!({"prompt": "earlier", "pad": "x".repeat(70)}));
    std::fs::write(&path, line.repeat(5000 / line.len())).unwrap();
    let before = std::fs::read(&path).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let args = format!(
        "run {root}/sample-prompts/extract-definitions.toml --provider replay \
         --transcript {root}/sample-prompts/answers/extract-definitions.jsonl --replay-speed instant"
    );
    // 10 blocks: 5,120 bytes, less than the history plus one record.
    let output = under_file_limit(dir.path(), 10, &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the run was not added to the history") && stderr.contains("too large"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "no half line is left behind");
    // Without the limit the next run appends as usual (its answer is cut: exit 1), and every line reads.
    let output = under_file_limit(dir.path(), 100_000, &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code() == Some(1) && !stderr.contains("not added to the history"), "{stderr}");
    // The filler lines are not run records: each is skipped and named; the new record reads.
    let read = history::read(&path).unwrap();
    assert_eq!((read.records.len(), read.skipped.len()), (1, before.len() / line.len()));
    assert!(
        read.skipped.iter().all(|s| s.message.starts_with("not a run record: missing field")),
        "{:?}",
        read.skipped
    );
}

#[test]
fn a_prompt_save_cut_short_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{}/tests/fixtures/trustgraph-prompts.json", env!("CARGO_MANIFEST_DIR"));
    let out = dir.path().join("prompts");
    std::fs::create_dir(&out).unwrap();
    let output = under_file_limit(dir.path(), 1, &format!("import trustgraph {config} --out {}", out.display()));
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    let left: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|name| !name.ends_with(".tmp")), "{left:?}");
}
