//! The eval's embedder: `[eval] embedder` and `eval --embedder MODEL` (the flag wins) give the
//! embedding model to `similar` checks, `compare = "similar"` fields and promptfoo's `similar`
//! assertions that name none, against the in-process wire server serving the recorded embeddings
//! (tests/fixtures/wire/embeddings/); a bad one is an exit 2 naming where it is written, before any
//! model is called.

use tunebench::eval::score::Verdict;

use super::similar::{answers, cell, check_prompt, run, server, threshold, ALIKE, UNLIKE, WANTED};
use super::support::{base_url, record, sse_answer, stderr, tunebench};

/// The `similar` check prompt with no embedder of its own and `eval` (an `[eval]` table) added.
fn prompt_without_embedder(threshold: f64, eval: &str) -> String {
    let prompt = check_prompt(threshold).replace("embedder = \"openai:smollm2\"\n", "");
    assert!(!prompt.contains("embedder"));
    prompt.replacen("\n[[checks]]", &format!("\n{eval}\n[[checks]]"), 1)
}

fn verdicts(record: &tunebench::eval::EvalRecord) -> (Verdict, Verdict, Verdict) {
    let verdict = |case: &str| cell(record, case).score.verdict;
    (verdict("alike"), verdict("unlike"), verdict("broken"))
}

#[test]
fn a_similar_check_and_field_naming_no_embedder_use_the_eval_table_s_and_the_flag_wins_over_it() {
    let (_alike, _unlike, threshold) = threshold();
    let (_runtime, wire) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_without_embedder(threshold, "[eval]\nembedder = \"openai:smollm2\"\n");
    std::fs::write(dir.path().join("similar.toml"), &prompt).unwrap();
    let output = run(dir.path(), "similar.toml", &wire, &[]);
    assert_eq!(verdicts(&record(&output)), (Verdict::Pass, Verdict::Fail, Verdict::Error), "{}", stderr(&output));
    assert!(wire.received().iter().any(|r| r.path == "/v1/embeddings" && r.json()["model"] == "smollm2"));

    // `--embedder` wins over `[eval] embedder` (an Ollama model no server here serves).
    let prompt = prompt_without_embedder(threshold, "[eval]\nembedder = \"ollama:nowhere-model\"\n");
    std::fs::write(dir.path().join("similar.toml"), &prompt).unwrap();
    let output = run(dir.path(), "similar.toml", &wire, &["--embedder", "openai:smollm2", "--no-cache"]);
    assert_eq!(verdicts(&record(&output)), (Verdict::Pass, Verdict::Fail, Verdict::Error), "{}", stderr(&output));
    assert!(wire.received().iter().all(|r| !r.body.contains("nowhere-model")));

    // A `compare = "similar"` field naming no embedder: the flag's.
    let line = |definition: &str| serde_json::json!({"term": "cat", "definition": definition}).to_string() + "\n";
    let (_runtime, wire) = server(vec![
        ("TOPIC-alike".to_string(), sse_answer(&line(ALIKE), "stop")),
        ("TOPIC-unlike".to_string(), sse_answer(&line(UNLIKE), "stop")),
    ]);
    let fields = FIELD_PROMPT.replace("THRESHOLD", &threshold.to_string());
    std::fs::write(dir.path().join("fields.toml"), &fields).unwrap();
    let output = run(dir.path(), "fields.toml", &wire, &["--embedder", "openai:smollm2"]);
    let scored = record(&output);
    let (good, bad) = (&cell(&scored, "alike").score, &cell(&scored, "unlike").score);
    assert_eq!((good.verdict, bad.verdict), (Verdict::Pass, Verdict::Fail), "{}", stderr(&output));
    assert!(bad.differences.iter().any(|d| format!("{d:?}").contains("similar")), "{:?}", bad.differences);
}

const FIELD_PROMPT: &str = r#"id = "fields"
response_type = "jsonl"
template = "Define TOPIC-{{case}}"
schema = '''{"type": "object", "properties": {"term": {"type": "string"}, "definition": {"type": "string"}}, "required": ["term"]}'''

[variables]
case = "none"

[eval]
match = "term"

[eval.fields."/definition"]
compare = "similar"
threshold = THRESHOLD

[[cases]]
name = "alike"
variables = { case = "alike" }
[cases.expected]
items = [{ term = "cat", definition = "A cat sat on the mat." }]

[[cases]]
name = "unlike"
variables = { case = "unlike" }
[cases.expected]
items = [{ term = "cat", definition = "A cat sat on the mat." }]
"#;

#[test]
fn a_promptfoo_similar_naming_no_embedder_is_not_evaluated_and_runs_with_the_embedder_flag() {
    let (_alike, _unlike, threshold) = threshold();
    let (_runtime, wire) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"prompts:
  - 'Say TOPIC-{{{{case}}}}'
providers:
  - openai:chat-model
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
"#
    );
    std::fs::write(dir.path().join("promptfooconfig.yaml"), &config).unwrap();
    let eval = |args: &[&str]| {
        tunebench(dir.path())
            .arg("eval")
            .arg(dir.path().join("promptfooconfig.yaml"))
            .args(["--base-url", &base_url(&wire), "--json", "--concurrency", "1"])
            .args(args)
            .env("OPENAI_BASE_URL", base_url(&wire))
            .output()
            .unwrap()
    };
    let output = eval(&[]);
    assert_eq!(output.status.code(), Some(4), "not evaluated without an embedder: {}", stderr(&output));
    assert!(wire.received().iter().all(|r| r.path != "/v1/embeddings"));

    let output = eval(&["--embedder", "openai:smollm2"]);
    assert_eq!(output.status.code(), Some(1), "a failing cell, nothing not evaluated: {}", stderr(&output));
    let scored = record(&output);
    let verdict = |name: &str| {
        let row = (0..scored.rows.len()).find(|row| scored.row_name(*row) == name).unwrap();
        scored.cells.iter().find(|c| c.row == row).unwrap().score.verdict
    };
    assert_eq!((verdict("alike"), verdict("unlike")), (Verdict::Pass, Verdict::Fail));
    assert!(wire.received().iter().any(|r| r.path == "/v1/embeddings" && r.json()["model"] == "smollm2"));
}

#[test]
fn a_bad_or_missing_embedder_is_an_input_error_before_any_model_call() {
    let (_runtime, server) = server(answers());
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(String, Vec<&str>, &str, &str)> = vec![
        (
            prompt_without_embedder(0.5, "[eval]\nembedder = \"anthropic:claude\"\n"),
            vec![],
            "`[eval] embedder`: embedder \"anthropic:claude\": anthropic serves no embeddings",
            "similar.toml:",
        ),
        (
            prompt_without_embedder(0.5, "[eval]\nembedder = \"\"\n"),
            vec![],
            "`embedder` is PROVIDER:MODEL",
            "similar.toml:",
        ),
        (
            prompt_without_embedder(0.5, ""),
            vec!["--embedder", "smollm2"],
            "--embedder: embedder \"smollm2\" names no model",
            "",
        ),
        (
            prompt_without_embedder(0.5, ""),
            vec![],
            "names no `embedder`, and there is no `[eval] embedder` or --embedder",
            "similar.toml:",
        ),
    ];
    for (prompt, args, says, at) in cases {
        std::fs::write(dir.path().join("similar.toml"), &prompt).unwrap();
        let output = run(dir.path(), "similar.toml", &server, &args);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{says}: {error}");
        assert!(error.contains(says), "{error}\nshould say: {says}");
        assert!(error.contains(at), "names where: {error}");
    }
    assert!(server.received().is_empty(), "no model was called");
}
