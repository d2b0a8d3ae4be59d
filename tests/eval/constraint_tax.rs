//! The constraint tax (issue 30 §5): `eval --structured none,json-schema` runs the same cases in a
//! column per mode, and the totals split each column's answers into right, valid but wrong and
//! invalid (the record, the table and the HTML report).

use tunebench::provider::wire_server::{Received, WireServer};

use crate::support::*;

/// A server whose answers depend on the mode asked: in `none`, alpha's answer breaks the schema
/// (invalid) and beta's is right; in `json-schema`, alpha's is right and beta's valid but missing an
/// item (valid but wrong).
fn by_mode() -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime
        .block_on(WireServer::start_handler(|request: &Received| {
            // A jsonl answer has no server schema mode: json-schema falls back to the schema in the
            // prompt, which `none` leaves out here.
            let strict = request.body.contains("must validate against this JSON Schema");
            let alpha = request.body.contains("ALPHA-TEXT");
            let answer = match (strict, alpha) {
                (false, true) => "{\"entity\": \"Alpha\"}\n",
                (false, false) => BETA_RIGHT,
                (true, true) => ALPHA_RIGHT,
                (true, false) => "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n",
            };
            sse_answer(answer, "stop")
        }))
        .unwrap();
    (runtime, server)
}

#[test]
fn a_column_per_mode_splits_right_valid_but_wrong_and_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = by_mode();
    let html = dir.path().join("r.html");
    let output = eval(
        dir.path(),
        &prompt,
        &server,
        &["--structured", "none,json-schema", "--json", "-o", html.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    let modes: Vec<String> =
        record.columns.iter().map(|c| c.structured.map(|m| m.to_string()).unwrap_or_default()).collect();
    assert_eq!(modes, ["none", "json-schema"]);
    assert_eq!(record.column_label(1), "definitions · json-schema");
    let split: Vec<(usize, usize, usize)> =
        record.totals.iter().map(|t| (t.passed, t.valid_wrong, t.invalid)).collect();
    assert_eq!(split, [(1, 0, 1), (1, 1, 0)], "{:?}", record.totals);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<th>right</th><th>valid but wrong</th><th>invalid</th>"), "{page}");
    assert!(page.contains("<td class=\"num valid-wrong\">1</td><td class=\"num invalid\">0</td>"), "{page}");

    let table = eval(dir.path(), &prompt, &server, &["--structured", "none,json-schema"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("answers: 1 right · 0 valid but wrong · 1 invalid"), "{table}");
    assert!(table.contains("answers: 1 right · 1 valid but wrong · 0 invalid"), "{table}");
    // One mode: no column per mode, and a list is refused where one run takes one mode.
    let one = record_of(eval(dir.path(), &prompt, &server, &["--structured", "json-schema", "--json"]));
    assert_eq!(one.columns.len(), 1);
    let bad = eval(dir.path(), &prompt, &server, &["--structured", "none,strict"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("\"strict\" is not a structured mode"), "{}", stderr(&bad));
}

fn record_of(output: std::process::Output) -> tunebench::eval::EvalRecord {
    record(&output)
}
