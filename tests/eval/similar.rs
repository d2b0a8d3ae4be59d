//! Embedding similarity end to end through `tunebench eval`, against the in-process wire server
//! serving the embeddings recorded from a real llama-cpp-python server (tests/fixtures/wire/embeddings/):
//! a `similar` check and a `similar` field comparator passing and failing by their threshold, the
//! re-run answered from the response cache (no second request), a failing embedder making the cell
//! an error; `judge` and `command` as field comparators changing a field's score with their reason in
//! the difference; and bad input (unknown comparator, threshold outside 0..1, `similar` without an
//! embedder, an embedder that cannot be resolved, a command that does not exist) an exit 2 naming
//! the file, line and field before any model is called.

use serde_json::Value;
use tunebench::eval::score::{Difference, Verdict};
use tunebench::eval::EvalRecord;
use tunebench::provider::wire_server::{reply_from_recording, Reply, WireServer};

use super::support::{base_url, record, sse_answer, stderr, tunebench};

/// The texts the recordings embedded: the value a check wants, an answer "alike" (the same text: the
/// recorded server's vectors for SmolLM2 are near-orthogonal whatever the texts, see the fixtures'
/// README, and the same text twice scores highest, 0.01) and one unlike it (-0.06).
pub(super) const WANTED: &str = "A cat sat on the mat.";
pub(super) const ALIKE: &str = WANTED;
pub(super) const UNLIKE: &str = "Quarterly revenue rose by nine percent.";

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/wire/embeddings/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn recorded(name: &str) -> Reply {
    reply_from_recording(&fixture(name), 1.0).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The cosine similarity of the two vectors a recorded `/v1/embeddings` response holds (llama-cpp-python
/// sends one vector per token for this model: their mean, as llama.cpp's mean pooling).
fn recorded_similarity(name: &str) -> f64 {
    let text = fixture(name);
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let value: Value = serde_json::from_str(body.trim()).unwrap();
    let vector = |i: usize| -> Vec<f64> {
        let rows: Vec<Vec<f64>> = value["data"][i]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row.as_array().unwrap().iter().map(|n| n.as_f64().unwrap()).collect())
            .collect();
        (0..rows[0].len()).map(|d| rows.iter().map(|row| row[d]).sum::<f64>() / rows.len() as f64).collect()
    };
    let (a, b) = (vector(0), vector(1));
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(&a) * norm(&b))
}

/// The recorded similarities (alike, unlike) and a threshold between them, within 0..1 (the recorded
/// model's vectors are near-orthogonal: see the fixtures' README).
pub(super) fn threshold() -> (f64, f64, f64) {
    let (alike, unlike) =
        (recorded_similarity("e1_embeddings_alike.txt"), recorded_similarity("e2_embeddings_unlike.txt"));
    let threshold = (alike / 2.0 * 1000.0).round() / 1000.0;
    assert!(
        threshold > 0.0 && alike >= threshold && unlike < threshold,
        "the recordings should fall either side: {alike} vs {unlike}"
    );
    (alike, unlike, threshold)
}

/// The server: embeddings by the answer they embed (recorded), answers by the case's topic, a
/// judge's verdicts by the answer it judges.
pub(super) fn server(extra: Vec<(String, Reply)>) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut routes = vec![
        (format!("\"input\":[\"{ALIKE}\",\"{WANTED}\"]"), recorded("e1_embeddings_alike.txt")),
        (format!("\"input\":[\"{UNLIKE}\""), recorded("e2_embeddings_unlike.txt")),
        ("\"input\":[\"BROKEN".to_string(), recorded("e4_embeddings_bad_input.txt")),
    ];
    routes.extend(extra);
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

pub(super) fn run(dir: &std::path::Path, file: &str, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(dir)
        .arg("eval")
        .arg(dir.join(file))
        .args(["--provider", "openai", "--base-url", &base_url(server), "--json", "--concurrency", "1"])
        .args(args)
        .env("OPENAI_BASE_URL", base_url(server))
        .output()
        .unwrap()
}

pub(super) fn cell<'a>(record: &'a EvalRecord, case: &str) -> &'a tunebench::eval::CellRecord {
    record.cells.iter().find(|c| c.case.as_deref() == Some(case)).unwrap()
}

pub(super) fn check_prompt(threshold: f64) -> String {
    format!(
        r#"id = "similar"
template = "Say TOPIC-{{{{case}}}}"

[variables]
case = "none"

[[checks]]
kind = "similar"
name = "like the wanted text"
embedder = "openai:smollm2"
value = "{WANTED}"
threshold = {threshold}

[[cases]]
name = "alike"
variables = {{ case = "alike" }}

[[cases]]
name = "unlike"
variables = {{ case = "unlike" }}

[[cases]]
name = "broken"
variables = {{ case = "broken" }}
"#
    )
}

pub(super) fn answers() -> Vec<(String, Reply)> {
    vec![
        ("TOPIC-alike".to_string(), sse_answer(ALIKE, "stop")),
        ("TOPIC-unlike".to_string(), sse_answer(UNLIKE, "stop")),
        ("TOPIC-broken".to_string(), sse_answer("BROKEN embedder input", "stop")),
    ]
}

#[test]
fn a_similar_check_passes_and_fails_by_its_threshold_errors_when_the_embedder_fails_and_reruns_from_the_cache() {
    let (alike, unlike, threshold) = threshold();
    let (_runtime, server) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("similar.toml"), check_prompt(threshold)).unwrap();
    let output = run(dir.path(), "similar.toml", &server, &[]);
    let first = record(&output);

    let alike_cell = cell(&first, "alike");
    assert_eq!(alike_cell.score.verdict, Verdict::Pass, "{}\n{}", alike_cell.score.reason, stderr(&output));
    let graded = alike_cell.score.checks[0].graded.as_ref().unwrap();
    assert!((graded.score - alike).abs() < 1e-6, "{} vs recorded {alike}", graded.score);

    let unlike_cell = cell(&first, "unlike");
    assert_eq!(unlike_cell.score.verdict, Verdict::Fail, "{}", unlike_cell.score.reason);
    let check = &unlike_cell.score.checks[0];
    let says = format!("similar {unlike:.2} < {threshold:.2}");
    assert!(check.message.as_deref().unwrap_or_default().contains(&says), "{check:?} should say {says}");

    // The embedder answered an error: the cell is an error, never a pass or a fail.
    let broken = cell(&first, "broken");
    assert_eq!(broken.score.verdict, Verdict::Error, "{}", broken.score.reason);
    assert!(
        broken.score.reason.contains("embedder openai:smollm2 failed") && broken.score.reason.contains("HTTP"),
        "{}",
        broken.score.reason
    );

    // Three answers and three embedding requests, each `{"model", "input": [answer, value]}` to /v1/embeddings.
    let received = server.received();
    let embeds: Vec<_> = received.iter().filter(|r| r.path == "/v1/embeddings").collect();
    assert_eq!((received.len(), embeds.len()), (6, 3), "{received:?}");
    assert!(embeds.iter().any(|r| r.json() == serde_json::json!({"model": "smollm2", "input": [ALIKE, WANTED]})));

    // Nothing changed: the answers and the vectors come from the response cache; the failed request is asked again.
    let again = record(&run(dir.path(), "similar.toml", &server, &[]));
    assert_eq!(server.received().len(), 6 + 1, "only the failed embedding is asked again");
    assert_eq!(cell(&again, "alike").score.verdict, Verdict::Pass);
    assert_eq!(cell(&again, "unlike").score.verdict, Verdict::Fail);
    assert_eq!(cell(&again, "broken").score.verdict, Verdict::Error);
}

const FIELDS_PROMPT: &str = r#"id = "fields"
response_type = "jsonl"
template = "Define TOPIC-{{case}}"
schema = '''{"type": "object", "properties": {"term": {"type": "string"}, "definition": {"type": "string"}, "note": {"type": "string"}, "tag": {"type": "string"}}, "required": ["term"]}'''

[variables]
case = "none"

[eval]
match = "term"
pass_fields = 0.5

[eval.fields."/definition"]
compare = "similar"
threshold = THRESHOLD
embedder = "openai:smollm2"

[eval.fields."/note"]
compare = "judge"
judge = "openai:judge-model"
rubric = "RUBRIC: the note says the same as the expected one"

[eval.fields."/tag"]
compare = "command"
command = ["python3", "tag_check.py"]

[[cases]]
name = "alike"
variables = { case = "alike" }
[cases.expected]
items = [{ term = "cat", definition = "A cat sat on the mat.", note = "NOTE-EXPECTED", tag = "animal" }]

[[cases]]
name = "unlike"
variables = { case = "unlike" }
[cases.expected]
items = [{ term = "cat", definition = "A cat sat on the mat.", note = "NOTE-EXPECTED", tag = "animal" }]
"#;

/// A grading program: the answer's tag against the expected one, by their first letter.
const TAG_CHECK: &str = r#"import json, sys
job = json.load(sys.stdin)
got, want = job["answer"] or "", job["expected"]
same = got == want
reason = "same tag" if same else "tag %r is not %r (item %s, field %s)" % (got, want, job["item"]["term"], job["field"])
print(json.dumps({"pass": same, "score": 1.0 if same else (0.5 if got[:1] == want[:1] else 0.0), "reason": reason}))
"#;

#[test]
fn similar_judge_and_command_field_comparators_give_partial_credit_and_say_why_in_the_difference() {
    let (_alike, unlike, threshold) = threshold();
    let line = |definition: &str, note: &str, tag: &str| {
        serde_json::json!({"term": "cat", "definition": definition, "note": note, "tag": tag}).to_string() + "\n"
    };
    let mut routes = vec![
        ("NOTE-GOOD".to_string(), sse_answer(r#"{"reason": "same meaning", "pass": true, "score": 0.9}"#, "stop")),
        (
            "NOTE-BAD".to_string(),
            sse_answer(r#"{"reason": "JUDGE-SAYS it contradicts", "pass": false, "score": 0.25}"#, "stop"),
        ),
    ];
    routes.extend([
        ("TOPIC-alike".to_string(), sse_answer(&line(ALIKE, "NOTE-GOOD", "animal"), "stop")),
        ("TOPIC-unlike".to_string(), sse_answer(&line(UNLIKE, "NOTE-BAD", "alien"), "stop")),
    ]);
    let (_runtime, server) = server(routes);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("fields.toml"), FIELDS_PROMPT.replace("THRESHOLD", &threshold.to_string())).unwrap();
    std::fs::write(dir.path().join("tag_check.py"), TAG_CHECK).unwrap();
    let output = run(dir.path(), "fields.toml", &server, &[]);
    let record = record(&output);

    let good = cell(&record, "alike");
    assert_eq!(good.score.verdict, Verdict::Pass, "{}\n{}", good.score.reason, stderr(&output));
    assert_eq!(good.score.items.as_ref().unwrap().field_accuracy, 1.0, "{:?}", good.score.differences);

    let bad = cell(&record, "unlike");
    let fields: Vec<(&str, Option<f64>, &str)> = bad
        .score
        .differences
        .iter()
        .filter_map(|d| match d {
            Difference::Field { field, score, note, .. } => {
                Some((field.as_str(), *score, note.as_deref().unwrap_or("")))
            }
            _ => None,
        })
        .collect();
    let row = |name: &str| *fields.iter().find(|(f, _, _)| *f == name).unwrap_or_else(|| panic!("{name}: {fields:?}"));
    // The similarity is the field's credit (none below 0: the recorded one is -0.06).
    let (_, score, note) = row("/definition");
    assert_eq!(score.unwrap_or(0.0), unlike.max(0.0), "{note}");
    assert_eq!(note, format!("similar {unlike:.2} < {threshold:.2}"));
    let (_, score, note) = row("/note");
    assert_eq!((score, note), (Some(0.25), "judge 0.25: JUDGE-SAYS it contradicts"));
    let (_, score, note) = row("/tag");
    assert_eq!((score, note), (Some(0.5), "command 0.50: tag 'alien' is not 'animal' (item cat, field /tag)"));
    // Field accuracy is the mean of the four fields' credit: term (a key, not compared) aside.
    let accuracy = bad.score.items.as_ref().unwrap().field_accuracy;
    assert!((accuracy - (unlike.max(0.0) + 0.25 + 0.5) / 3.0).abs() < 1e-9, "{accuracy}");
    assert_eq!(bad.score.verdict, Verdict::Fail, "{}", bad.score.reason);
    // The field judge's request, answer and usage are kept with the cell, as a judge check's are.
    let judged: Vec<(&str, &serde_json::Value, &str, bool)> = bad
        .score
        .field_judges
        .iter()
        .map(|j| (j.field.as_str(), &j.got, j.call.answer.as_str(), j.call.request.to_string().contains("RUBRIC")))
        .collect();
    assert_eq!(judged.len(), 1, "{judged:?}");
    let (field, got, answer, asked_rubric) = judged[0];
    assert_eq!((field, got), ("/note", &serde_json::json!("NOTE-BAD")));
    assert!(answer.contains("JUDGE-SAYS") && asked_rubric, "{answer}");
    assert_eq!(good.score.field_judges.len(), 1, "the passing field's judge is kept too");

    // The judge was told the expected value; the re-run asks nothing.
    let asked = server.received();
    let judged = asked.iter().find(|r| r.body.contains("NOTE-BAD") && r.body.contains("RUBRIC")).unwrap();
    assert!(judged.body.contains("NOTE-EXPECTED"), "{}", judged.body);
    let again = super::support::record(&run(dir.path(), "fields.toml", &server, &[]));
    assert_eq!(
        server.received().len(),
        asked.len(),
        "every answer, vector and verdict from the cache (the program runs again)"
    );
    assert_eq!(cell(&again, "unlike").score.differences, bad.score.differences);
}

#[test]
fn a_field_grader_that_fails_makes_the_cell_an_error_not_a_pass() {
    let (_, _, threshold) = threshold();
    let answer =
        serde_json::json!({"term": "cat", "definition": "BROKEN definition", "note": "x", "tag": "animal"}).to_string();
    let (_runtime, server) = server(vec![
        ("NOTE-".to_string(), sse_answer("no verdict", "stop")),
        ("TOPIC-alike".to_string(), sse_answer(&answer, "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let prompt = FIELDS_PROMPT.replace("THRESHOLD", &threshold.to_string());
    std::fs::write(dir.path().join("fields.toml"), prompt).unwrap();
    std::fs::write(dir.path().join("tag_check.py"), "print('not a verdict')\n").unwrap();
    let output = run(dir.path(), "fields.toml", &server, &["--case", "alike"]);
    let scored = &record(&output).cells[0].score;
    assert_eq!(scored.verdict, Verdict::Error, "{}", scored.reason);
    assert!(
        scored.reason.contains("/definition") && scored.reason.contains("embedder openai:smollm2 failed"),
        "{}",
        scored.reason
    );
}

#[test]
fn bad_comparators_and_embedders_are_input_errors_naming_file_line_and_field_before_any_model_call() {
    let (_runtime, server) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tag_check.py"), TAG_CHECK).unwrap();
    let base = FIELDS_PROMPT.replace("THRESHOLD", "0.8");
    // (what is changed, what the message says); the `/definition` table starts on line 14.
    let cases: Vec<(String, &str)> = vec![
        (
            base.replace("compare = \"similar\"", "compare = \"semantic\""),
            "unknown comparator \"semantic\" for field \"/definition\"",
        ),
        (base.replace("threshold = 0.8", "threshold = 1.5"), "`threshold` is a share from 0.0 to 1.0, not 1.5"),
        (base.replace("embedder = \"openai:smollm2\"\n", ""), "the `similar` comparator needs an `embedder`"),
        (
            base.replace("openai:smollm2", "anthropic:claude"),
            "embedder \"anthropic:claude\": anthropic serves no embeddings",
        ),
        (base.replace("openai:smollm2", "smollm2"), "embedder \"smollm2\" names no model"),
        (
            base.replace("tag_check.py", "missing_check.py"),
            "`[eval.fields.\"/tag\"]`: `command`: argument \"missing_check.py\"",
        ),
        (
            base.replace("[\"python3\", ", "[\"no-such-program-here\", "),
            "program \"no-such-program-here\" is not found on PATH",
        ),
    ];
    for (prompt, says) in cases {
        std::fs::write(dir.path().join("fields.toml"), &prompt).unwrap();
        let output = run(dir.path(), "fields.toml", &server, &[]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{says}: {error}");
        assert!(error.contains(says), "{error}\nshould say: {says}");
        assert!(error.contains("fields.toml:"), "names the file and line: {error}");
    }
    assert!(server.received().is_empty(), "no model was called");
}

#[test]
fn a_promptfoo_similar_assertion_runs_with_the_embedder_its_options_name() {
    let (_alike, _unlike, threshold) = threshold();
    let (_runtime, server) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"prompts:
  - 'Say TOPIC-{{{{case}}}}'
providers:
  - openai:chat-model
defaultTest:
  options:
    provider:
      embedding:
        id: openai:embedding:smollm2
tests:
  - description: alike
    vars: {{ case: alike }}
    assert:
      - type: similar
        value: "{WANTED}"
        threshold: {threshold}
  - description: unlike
    vars: {{ case: unlike }}
    assert:
      - type: similar
        value: "{WANTED}"
        threshold: {threshold}
  - description: not unlike
    vars: {{ case: unlike }}
    assert:
      - type: not-similar
        value: "{WANTED}"
        threshold: {threshold}
"#
    );
    std::fs::write(dir.path().join("promptfooconfig.yaml"), &config).unwrap();
    let output = tunebench(dir.path())
        .arg("eval")
        .arg(dir.path().join("promptfooconfig.yaml"))
        .args(["--base-url", &base_url(&server), "--json", "--concurrency", "1"])
        .env("OPENAI_BASE_URL", base_url(&server))
        .output()
        .unwrap();
    // A failing cell, and nothing not evaluated: exit 1, not 4.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    let verdict = |name: &str| {
        let row = (0..record.rows.len()).find(|row| record.row_name(*row) == name).unwrap();
        record.cells.iter().find(|c| c.row == row).unwrap().score.verdict
    };
    assert_eq!(
        (verdict("alike"), verdict("unlike"), verdict("not unlike")),
        (Verdict::Pass, Verdict::Fail, Verdict::Pass)
    );
    assert!(server.received().iter().any(|r| r.path == "/v1/embeddings" && r.json()["model"] == "smollm2"));

    // An embedder tunebench cannot call is bad input at its line.
    let bad = config.replace("openai:embedding:smollm2", "huggingface:sentence-similarity:all-MiniLM");
    std::fs::write(dir.path().join("promptfooconfig.yaml"), bad).unwrap();
    let output = tunebench(dir.path()).arg("eval").arg(dir.path().join("promptfooconfig.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("promptfooconfig.yaml:")
            && stderr(&output).contains("\"huggingface\" is not a provider"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn ollama_embed_and_the_openai_shape_are_read_from_their_wire_answers() {
    use tunebench::provider::embed::{Embedder, EmbedderModel};
    use tunebench::provider::http::HttpOptions;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime
        .block_on(WireServer::start(vec![recorded("ollama_embed_multiple.txt"), recorded("e3_wrong_path.txt")]))
        .unwrap();
    let host = server.url();
    let lookup = |name: &str| (name == "OLLAMA_HOST").then(|| host.clone());
    let model = EmbedderModel::parse("ollama:embeddings:all-minilm").unwrap();
    let embedder = Embedder::new(&model, lookup, HttpOptions::default()).unwrap();
    let inputs = ["Why is the sky blue?".to_string(), "Why is the grass green?".to_string()];
    let body = runtime.block_on(embedder.send(&inputs)).unwrap();
    let vectors = embedder.vectors(&body, 2).unwrap();
    assert_eq!((vectors[0][0], vectors[1][9], vectors[0].len()), (0.010071029, 0.09072481, 10));
    let sent = &server.received()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/api/embed"));
    assert_eq!(sent.json(), serde_json::json!({"model": "all-minilm", "input": inputs}));
    // A 404 is an error naming the status and where to look, never vectors.
    let error = runtime.block_on(embedder.send(&inputs)).unwrap_err().to_string();
    assert!(error.contains("HTTP 404") && error.contains("all-minilm"), "{error}");
}
