//! Imported batches scored as evals: `batch import` scores each answer against its case's expected
//! items as `eval` does, keeps the eval, and `eval --from-batch TAG` prints its matrix.

use serde_json::{json, Value};
use tunebench::eval::score::Verdict;

use crate::support::*;

fn openai_result(custom_id: &str, content: &str) -> Value {
    json!({"id": format!("batch_req_{custom_id}"), "custom_id": custom_id, "error": null,
           "response": {"status_code": 200, "request_id": "req_1", "body": {
               "id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_000_000, "model": "gpt-4o-mini",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}}})
}

#[test]
fn imported_answers_are_scored_and_their_matrix_printed() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let exported = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(&prompt)
        .args(["--provider", "openai", "--cases", "--model", "gpt-4o-mini", "-o"])
        .arg(dir.path().join("batch.jsonl"))
        .output()
        .unwrap();
    assert_eq!(exported.status.code(), Some(0), "{}", stderr(&exported));
    let summary: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let ids: Vec<&str> = summary["custom_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let tag = summary["tag"].as_str().unwrap();
    let results = format!("{}\n{}\n", openai_result(ids[0], ALPHA_RIGHT), openai_result(ids[1], BETA_WRONG));
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, results).unwrap();

    let imported = tunebench(dir.path()).args(["batch", "import", "--json"]).arg(&file).output().unwrap();
    assert_eq!(imported.status.code(), Some(1), "beta fails: {}", stderr(&imported));
    let report: Value = serde_json::from_slice(&imported.stdout).unwrap();
    let verdicts: Vec<&str> =
        report["eval"]["verdicts"].as_array().unwrap().iter().map(|v| v["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, vec!["pass", "fail"], "{report}");
    assert_eq!(report["eval"]["verdicts"][1]["case"], BETA);

    let matrix = tunebench(dir.path()).args(["eval", "--from-batch", tag, "--json"]).output().unwrap();
    assert_eq!(matrix.status.code(), Some(1), "{}", stderr(&matrix));
    let record = record(&matrix);
    assert_eq!(record.batch.as_deref(), Some(tag));
    assert_eq!(record.id, report["eval"]["id"].as_str().unwrap());
    assert_eq!(record.columns[0].label, "definitions");
    assert_eq!(record.columns[0].model, "gpt-4o-mini");
    let verdicts: Vec<Verdict> = record.cells.iter().map(|c| c.score.verdict).collect();
    assert_eq!(verdicts, vec![Verdict::Pass, Verdict::Fail]);
    assert_eq!(record.cells[0].run.batch.as_deref(), Some(ids[0]));
    assert_eq!(record.totals[0].tokens_in, 240);

    let human = tunebench(dir.path()).args(["eval", "--from-batch", tag]).output().unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(text.contains("1/2 passed"), "{text}");
    let unknown = tunebench(dir.path()).args(["eval", "--from-batch", "abcdef"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no imported batch of that tag"), "{}", stderr(&unknown));
}
