//! A judge of whole items (`[eval.items] compare = "judge"`) end to end through `tunebench eval`,
//! against the in-process wire server: each paired item judged once (the expected and the answered
//! item as JSON), its score the item's credit in precision and recall, its reason in the difference
//! row, its request, answer and usage kept in the cell; a re-run answered from the response cache; a
//! judge that gives no verdict making the cell an error; bad input an exit 2 naming file:line and the
//! table before any model is called.

use tunebench::eval::score::{Difference, Verdict};
use tunebench::eval::EvalRecord;
use tunebench::provider::wire_server::{Reply, WireServer};

use super::support::{base_url, record, sse_answer, stderr, tunebench};

const PROMPT: &str = r#"id = "items"
response_type = "jsonl"
template = "List TOPIC-{{case}}"
schema = '''{"type": "object", "properties": {"term": {"type": "string"}, "note": {"type": "string"}}, "required": ["term"]}'''

[variables]
case = "none"

[eval]
match = "term"
ignore_fields = ["note"]

[eval.items]
compare = "judge"
judge = "openai:judge-model"
rubric = "RUBRIC: the answered item means what the expected one does"

[[cases]]
name = "mixed"
variables = { case = "mixed" }
[cases.expected]
items = [
  { term = "cat", note = "EXPECTED-CAT" },
  { term = "dog", note = "EXPECTED-DOG" },
  { term = "cow", note = "EXPECTED-COW" },
]
"#;

/// The answer: cat and cow judged good, dog judged bad (its note is the marker the judge's route
/// matches).
fn answer() -> String {
    [("cat", "NOTE-GOOD"), ("dog", "NOTE-BAD"), ("cow", "NOTE-GOOD")]
        .iter()
        .map(|(term, note)| serde_json::json!({"term": term, "note": note}).to_string() + "\n")
        .collect()
}

fn server(verdict_bad: &str) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes: Vec<(String, Reply)> = vec![
        ("TOPIC-mixed".to_string(), sse_answer(&answer(), "stop")),
        ("NOTE-GOOD".to_string(), sse_answer(r#"{"reason": "same meaning", "pass": true, "score": 1.0}"#, "stop")),
        ("NOTE-BAD".to_string(), sse_answer(verdict_bad, "stop")),
    ];
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

fn run(dir: &std::path::Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(dir)
        .arg("eval")
        .arg(dir.join("items.toml"))
        .args(["--provider", "openai", "--base-url", &base_url(server), "--json", "--concurrency", "1"])
        .args(args)
        .env("OPENAI_BASE_URL", base_url(server))
        .output()
        .unwrap()
}

fn judged_requests(server: &WireServer) -> Vec<String> {
    server.received().into_iter().map(|r| r.body).filter(|body| body.contains("RUBRIC")).collect()
}

#[test]
fn an_item_judge_grades_each_paired_item_whole_its_score_the_items_credit_and_its_reason_in_the_row() {
    let bad = r#"{"reason": "JUDGE-SAYS the dog is described wrongly", "pass": false, "score": 0.25}"#;
    let (_runtime, server) = server(bad);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("items.toml"), PROMPT).unwrap();
    let output = run(dir.path(), &server, &[]);
    let record: EvalRecord = record(&output);
    let score = &record.cells[0].score;
    assert_eq!(score.verdict, Verdict::Fail, "{}\n{}", score.reason, stderr(&output));
    // Three pairs: two judged pass (credit 1), one 0.25: precision = recall = 2.25 / 3.
    let items = score.items.as_ref().unwrap();
    assert_eq!(items.paired, 3);
    assert!((items.precision - 0.75).abs() < 1e-9 && (items.f1 - 0.75).abs() < 1e-9, "{items:?}");
    assert_eq!(items.field_accuracy, 1.0, "the item judge weighs in F1, not in field accuracy");
    let rows: Vec<&Difference> = score.differences.iter().collect();
    assert_eq!(
        rows,
        [&Difference::Item {
            key: "dog".into(),
            got_key: "dog".into(),
            score: 0.25,
            note: "judge 0.25: JUDGE-SAYS the dog is described wrongly".into()
        }]
    );
    assert!(score.reason.contains("F1 0.75"), "{}", score.reason);
    // Each distinct pair asked once, told both items as JSON; the calls kept in the cell.
    let asked = judged_requests(&server);
    assert_eq!(asked.len(), 3, "one call per distinct pair");
    let dog = asked.iter().find(|body| body.contains("NOTE-BAD")).unwrap();
    assert!(dog.contains("EXPECTED-DOG") && dog.contains("The expected item"), "{dog}");
    let kept: Vec<(&str, &str)> =
        score.field_judges.iter().map(|j| (j.field.as_str(), j.got["term"].as_str().unwrap_or_default())).collect();
    assert_eq!(kept, [("", "cat"), ("", "dog"), ("", "cow")]);
    let dog_call = &score.field_judges[1].call;
    assert!(dog_call.answer.contains("JUDGE-SAYS") && dog_call.usage.is_some(), "{dog_call:?}");

    // The re-run asks nothing: answers and verdicts from the cache.
    let before = server.received().len();
    let again = super::support::record(&run(dir.path(), &server, &[]));
    assert_eq!(server.received().len(), before);
    assert_eq!(again.cells[0].score.differences, score.differences);
    assert!(again.cells[0].score.field_judges.iter().all(|j| j.call.cached));
}

#[test]
fn an_item_judge_that_gives_no_verdict_makes_the_cell_an_error_not_a_fail_or_a_pass() {
    let (_runtime, server) = server("no verdict here");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("items.toml"), PROMPT).unwrap();
    let output = run(dir.path(), &server, &[]);
    let score = &record(&output).cells[0].score;
    assert_eq!(score.verdict, Verdict::Error, "{}", score.reason);
    assert!(score.reason.contains("dog (the whole item)") && score.reason.contains("judge"), "{}", score.reason);
}

#[test]
fn a_bad_item_table_is_an_input_error_naming_file_line_and_table_before_any_model_call() {
    let (_runtime, server) = server("{}");
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(String, &str, &[&str])> = vec![
        (
            PROMPT.replace("compare = \"judge\"", "compare = \"similarity\""),
            "`[eval.items]`: an item is compared by \"judge\"",
            &[],
        ),
        (
            PROMPT.replace("rubric = \"RUBRIC: the answered item means what the expected one does\"\n", ""),
            "`[eval.items]`: the `judge` comparator needs a `rubric`",
            &[],
        ),
        (
            PROMPT.replace("judge = \"openai:judge-model\"\n", "judge = \"openai:judge\"\nthreshold = 2\n"),
            "`threshold` is a share",
            &[],
        ),
        (PROMPT.replace("judge = \"openai:judge-model\"\n", "pattern = \"x\"\n"), "has no `pattern`", &[]),
        (
            PROMPT.replace("judge = \"openai:judge-model\"\n", ""),
            "`[eval.items]`: items are compared by a judge that names no `judge` model, and no --judge was given",
            &[],
        ),
    ];
    for (prompt, says, args) in cases {
        std::fs::write(dir.path().join("items.toml"), &prompt).unwrap();
        let output = run(dir.path(), &server, args);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{says}: {error}");
        assert!(error.contains(says), "{error}\nshould say: {says}");
        assert!(error.contains("items.toml:"), "names the file and line: {error}");
    }
    assert!(server.received().is_empty(), "no model was called");
}
