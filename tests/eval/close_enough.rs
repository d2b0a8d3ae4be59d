//! Close enough (issue 30): the invoice line the issue tried, "Espresso machine" expected and "One
//! Espresso machine" answered, scored as a fuzzy pair with partial credit, and a free-text field by
//! similarity, through `tunebench eval` against the in-process server: the record (`--json`), the
//! table, CSV, JUnit and HTML all say so; a bad comparator stops the eval before any model call.

use tunebench::provider::wire_server::WireServer;

use crate::support::*;

/// An invoice prompt: lines paired on their description, then by similarity (0.7); the note compared
/// by similarity (0.9).
const INVOICE: &str = r#"id = "invoice"
response_type = "jsonl"
template = "List the lines of this invoice: {{text}}"
schema = '''{"type": "object", "properties": {"description": {"type": "string"}, "quantity": {"type": "integer"}, "note": {"type": "string"}}, "required": ["description", "quantity"]}'''

[variables]
text = "nothing"

[eval]
match = "description"
match_similarity = 0.7
pass_f1 = 0.7

[eval.fields."/note"]
compare = "similarity"
threshold = 0.9

[[cases]]
name = "cafe"
variables = { text = "ALPHA-TEXT" }
[cases.expected]
items = [
  { description = "Espresso machine", quantity = 1, note = "Delivered Monday" },
  { description = "Milk frother", quantity = 2 },
]
"#;

const ANSWER: &str = "{\"description\": \"One Espresso machine\", \"quantity\": 1, \"note\": \"Delivered on Monday\"}\n{\"description\": \"Milk frother\", \"quantity\": 2}\n";

fn invoice_server() -> (tokio::runtime::Runtime, WireServer) {
    server(ANSWER, ANSWER)
}

#[test]
fn one_espresso_machine_is_a_fuzzy_pair_with_partial_credit_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), INVOICE);
    let (_runtime, server) = invoice_server();
    let out = |name: &str| dir.path().join(name).display().to_string();
    let output =
        eval(dir.path(), &prompt, &server, &["--json", "-o", &out("r.csv"), "-o", &out("r.xml"), "-o", &out("r.html")]);
    // Fields 0.95 < pass_fields 1.0: a fail, with its partial scores.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    let score = &record.cells[0].score;
    let items = score.items.as_ref().unwrap();
    // Credit 1 (Milk frother) + 0.80 (1 − 4/20) of 2 on each side: P = R = F1 = 0.90.
    assert_eq!((items.paired, items.fuzzy), (2, 1));
    assert!((items.f1 - 0.9).abs() < 1e-9, "{items:?}");
    // Fields: two quantities agree, the note scores 1 − 3/19 ≈ 0.842: (2 + 0.842) / 3 ≈ 0.947.
    let note = 1.0 - 3.0 / 19.0;
    assert!((items.field_accuracy - (2.0 + note) / 3.0).abs() < 1e-9, "{items:?}");
    let json = serde_json::to_value(&score.differences).unwrap();
    assert_eq!(
        json[0],
        serde_json::json!({"kind": "fuzzy", "key": "Espresso machine", "got_key": "One Espresso machine", "similarity": 0.8})
    );
    assert_eq!(json[1]["kind"], "field");
    assert_eq!(json[1]["note"], "similarity 0.84 < 0.90");
    assert!((json[1]["score"].as_f64().unwrap() - note).abs() < 1e-9, "{json}");
    assert_eq!(score.differences.len(), 2, "no missing and no extra: {json}");

    let fuzzy_line = "Espresso machine ~ One Espresso machine: paired by key similarity 0.80";
    let note_line =
        "Espresso machine /note: expected \"Delivered Monday\", got \"Delivered on Monday\" (similarity 0.84 < 0.90)";
    let csv = std::fs::read_to_string(out("r.csv")).unwrap();
    assert!(csv.contains("0.9") && csv.contains("0.947"), "{csv}");
    for file in ["r.xml", "r.html"] {
        let text = std::fs::read_to_string(out(file)).unwrap();
        assert!(text.contains("paired by key similarity 0.80"), "{file}: {text}");
        assert!(text.contains("(similarity 0.84 &lt; 0.90)"), "{file}: {text}");
    }
    // The table (the answer now comes from the response cache).
    let output = eval(dir.path(), &prompt, &server, &[]);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains(fuzzy_line) && table.contains(note_line), "{table}");
}

#[test]
fn without_match_similarity_the_same_answer_is_one_missing_and_one_extra() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &INVOICE.replace("match_similarity = 0.7\n", ""));
    let (_runtime, server) = invoice_server();
    let record = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    let score = &record.cells[0].score;
    let items = score.items.as_ref().unwrap();
    assert_eq!((items.paired, items.fuzzy, items.f1), (1, 0, 0.5));
    let kinds: Vec<String> = serde_json::to_value(&score.differences)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"missing\"", "\"extra\""]);
}

#[test]
fn a_bad_comparator_stops_the_eval_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let (_runtime, server) = invoice_server();
    for (bad, line, says) in [
        ("compare = \"similarity\"", "compare = \"fuzzy\"", "unknown comparator \"fuzzy\" for field \"/note\""),
        ("threshold = 0.9", "threshold = 9", "`threshold` is a share from 0.0 to 1.0, not 9"),
        ("[eval.fields.\"/note\"]", "[eval.fields.\"/note~\"]", "\"/note~\" is not a JSON Pointer"),
    ] {
        let prompt = prompt_in(dir.path(), &INVOICE.replace(bad, line));
        let output = eval(dir.path(), &prompt, &server, &[]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        let at = INVOICE.lines().position(|l| l == bad).unwrap() + 1;
        assert!(said.contains(&format!("definitions.toml:{at}:")), "{said}");
        assert!(said.contains(says), "{said}");
    }
    assert!(server.received().is_empty(), "no model was called");
}

#[test]
fn eval_diff_says_when_only_the_comparator_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (_runtime, server) = invoice_server();
    let strict = INVOICE.replace("pass_f1 = 0.7\n", "pass_f1 = 0.7\npass_fields = 0.9\n");
    let prompt = prompt_in(dir.path(), &strict.replace("threshold = 0.9", "threshold = 0.95"));
    // The note at 0.84 against 0.95 scores 0.84: fields (2 + 0.84) / 3 = 0.947 ≥ 0.9, a pass.
    let first = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    // Loosened to 0.8 the note agrees: the same answer (from the cache), only the scoring differs.
    std::fs::write(&prompt, strict.replace("threshold = 0.9", "threshold = 0.8")).unwrap();
    let second = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    assert_eq!(first.cells[0].run.answer, second.cells[0].run.answer);
    let diff = tunebench(dir.path()).args(["eval", "diff", &first.id, &second.id, "--json"]).output().unwrap();
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let diff: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(diff["prompts"][0]["scoring_only"], true, "{diff}");
    assert_eq!(diff["cases"][0]["same_answer"], true, "{diff}");
    let human = tunebench(dir.path()).args(["eval", "diff", &first.id, &second.id]).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("prompt invoice changed (only its [eval] settings: how answers are scored)"), "{human}");
    assert!(human.contains("only the comparator changed: the answers are the same, scored differently"), "{human}");
    assert!(human.contains("  the same answer: only its scoring changed"), "{human}");
    assert!(human.contains("  fixed: Espresso machine /note"), "{human}");
    // An edit outside [eval] is not scoring only.
    std::fs::write(&prompt, strict.replace("List the lines", "List every line")).unwrap();
    let third = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    let diff = tunebench(dir.path()).args(["eval", "diff", &second.id, &third.id]).output().unwrap();
    let human = String::from_utf8(diff.stdout).unwrap();
    assert!(!human.contains("only the comparator changed") && !human.contains("only its [eval]"), "{human}");
}
