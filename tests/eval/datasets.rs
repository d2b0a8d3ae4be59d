//! Datasets of cases (`cases_file`, `--cases`): a JSONL, a CSV and a YAML dataset give the same
//! verdicts as the same cases inline; a dataset beside inline cases; a bad row stops the eval before
//! any request is sent; `run --cases` runs every row.

use tunebench::eval::score::Verdict;

use crate::support::*;

/// [`PROMPT`] without its `[[cases]]`: the cases come from a dataset.
fn prompt_without_cases() -> String {
    let end = PROMPT.find("[[cases]]").unwrap();
    PROMPT[..end].to_string()
}

const JSONL: &str = r#"{"name": "alpha", "vars": {"text": "ALPHA-TEXT"}, "expected": [{"entity": "Alpha", "definition": "The first letter."}]}
{"name": "beta <&\"x\">, y", "text": "BETA-TEXT", "expected": [{"entity": "Beta", "definition": "The second letter."}, {"entity": "Gamma", "definition": "The third letter."}]}
"#;

const CSV: &str = "name,text,expected\n\
alpha,ALPHA-TEXT,\"[{\"\"entity\"\": \"\"Alpha\"\", \"\"definition\"\": \"\"The first letter.\"\"}]\"\n\
\"beta <&\"\"x\"\">, y\",BETA-TEXT,\"[{\"\"entity\"\": \"\"Beta\"\", \"\"definition\"\": \"\"The second letter.\"\"}, {\"\"entity\"\": \"\"Gamma\"\", \"\"definition\"\": \"\"The third letter.\"\"}]\"\n";

const YAML: &str = r#"- name: alpha
  vars: {text: ALPHA-TEXT}
  expected:
    - {entity: Alpha, definition: The first letter.}
- name: 'beta <&"x">, y'
  vars: {text: BETA-TEXT}
  expected:
    - {entity: Beta, definition: The second letter.}
    - {entity: Gamma, definition: The third letter.}
"#;

/// Rows, verdicts and reasons of an eval's record.
fn outcome(output: &std::process::Output) -> (Vec<Option<String>>, Vec<(Verdict, String)>) {
    let record = record(output);
    (record.rows, record.cells.iter().map(|c| (c.score.verdict, c.score.reason.clone())).collect())
}

#[test]
fn jsonl_csv_and_yaml_datasets_give_the_inline_cases_verdicts() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);
    let inline_dir = tempfile::tempdir().unwrap();
    let inline_prompt = prompt_in(inline_dir.path(), PROMPT);
    let inline = eval(inline_dir.path(), &inline_prompt, &server, &["--json", "--no-cache"]);
    assert_eq!(inline.status.code(), Some(1), "{}", stderr(&inline));
    let want = outcome(&inline);
    assert_eq!(want.1.iter().map(|(v, _)| *v).collect::<Vec<_>>(), [Verdict::Pass, Verdict::Fail]);

    for (file, text) in [("cases.jsonl", JSONL), ("cases.csv", CSV), ("cases.yaml", YAML)] {
        // Named by the prompt.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), text).unwrap();
        let prompt = prompt_in(dir.path(), &format!("cases_file = \"{file}\"\n{}", prompt_without_cases()));
        let output = eval(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
        assert_eq!(output.status.code(), Some(1), "{file}: {}", stderr(&output));
        assert_eq!(outcome(&output), want, "{file}");
        // Given on the command line.
        let dir = tempfile::tempdir().unwrap();
        let cases = dir.path().join(file);
        std::fs::write(&cases, text).unwrap();
        let prompt = prompt_in(dir.path(), &prompt_without_cases());
        let output = eval(dir.path(), &prompt, &server, &["--json", "--no-cache", "--cases", cases.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{file}: {}", stderr(&output));
        assert_eq!(outcome(&output), want, "{file} by --cases");
    }
}

#[test]
fn inline_cases_and_a_dataset_run_together() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    // alpha inline, beta from the dataset.
    let alpha_only = PROMPT.find("[[cases]]\nname = 'beta").map(|end| &PROMPT[..end]).unwrap();
    let prompt = prompt_in(dir.path(), &format!("cases_file = \"more.jsonl\"\n{alpha_only}"));
    let beta = JSONL.lines().nth(1).unwrap();
    std::fs::write(dir.path().join("more.jsonl"), format!("{beta}\n")).unwrap();
    let output = eval(dir.path(), &prompt, &server, &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (rows, verdicts) = outcome(&output);
    assert_eq!(rows, [Some("alpha".to_string()), Some(BETA.to_string())]);
    assert!(verdicts.iter().all(|(v, _)| *v == Verdict::Pass), "{verdicts:?}");

    // `--case` picks a dataset row like an inline case.
    let output = eval(dir.path(), &prompt, &server, &["--json", "--case", BETA]);
    assert_eq!(outcome(&output).0, [Some(BETA.to_string())]);
}

#[test]
fn a_bad_row_stops_the_eval_before_any_request() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &prompt_without_cases().replace("[variables]\ntext = \"nothing\"\n", ""));
    // Line 1 is good; line 3 lacks the variable the template needs.
    let jsonl = dir.path().join("cases.jsonl");
    std::fs::write(&jsonl, "{\"text\": \"ALPHA-TEXT\"}\n\n{\"txt\": \"BETA-TEXT\"}\n").unwrap();
    let output = eval(dir.path(), &prompt, &server, &["--cases", jsonl.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    let want = format!("{}:3: the template (line 1) needs the variable `text`", jsonl.display());
    assert!(message.contains(&want), "{message}");
    // Lines 2 and 3-4 (a quoted line break) are good; the row on line 5 has bad JSON as its expected answer.
    let csv = dir.path().join("cases.csv");
    std::fs::write(&csv, "text,expected\nALPHA-TEXT,\"[]\"\n\"BETA\nTEXT\",\"[]\"\nGAMMA,\"[{\"\"entity\"\"\"\n")
        .unwrap();
    let output = eval(dir.path(), &prompt, &server, &["--cases", csv.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains(&format!("{}:5: column `expected`: ", csv.display())), "{message}");
    assert!(server.received().is_empty(), "no request before every row is checked");
}

#[test]
fn run_with_cases_runs_every_row() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.yaml");
    std::fs::write(&cases, YAML).unwrap();
    let prompt = prompt_in(dir.path(), &prompt_without_cases());
    let output = tunebench(dir.path())
        .arg("run")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--json", "--cases"])
        .arg(&cases)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let cases: Vec<&str> = report["runs"].as_array().unwrap().iter().map(|r| r["case"].as_str().unwrap()).collect();
    assert_eq!(cases, ["alpha", BETA]);
    assert_eq!(server.received().len(), 2);
}

#[test]
fn the_readmes_sample_dataset_joins_the_samples_cases() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts");
    // Each review answered with its expected label; "a-gift" answered wrong.
    let answer = |sentiment: &str| sse_answer(&format!("{{\"sentiment\": \"{sentiment}\", \"score\": 0.8}}"), "stop");
    let routes = [
        ("left earbud", "neutral"),
        ("third replacement", "negative"),
        ("Best purchase", "very positive"),
        ("two weeks late", "negative"),
        ("Nothing more", "neutral"),
        ("my dad uses it", "negative"),
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = routes.iter().map(|(text, label)| (text.to_string(), answer(label))).collect();
    let server = runtime.block_on(tunebench::provider::wire_server::WireServer::start_routed(routes)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The README's command, on the wire server.
    let cases = samples.join("classify-sentiment.cases.csv");
    let args = ["--json", "--cases", cases.to_str().unwrap()];
    let output = eval(dir.path(), &samples.join("classify-sentiment.toml"), &server, &args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let (rows, verdicts) = outcome(&output);
    let rows: Vec<&str> = rows.iter().map(|r| r.as_deref().unwrap()).collect();
    assert_eq!(rows, ["mixed", "sarcasm", "five-point-scale", "late-delivery", "does-the-job", "a-gift"]);
    let verdicts: Vec<Verdict> = verdicts.iter().map(|(v, _)| *v).collect();
    use Verdict::{Fail, Pass};
    assert_eq!(verdicts, [Pass, Pass, Pass, Pass, Pass, Fail]);
}

/// A plan holds no dataset row, whatever the columns: each column's copy of the prompt keeps its
/// inline cases alone, its columns share one index of the dataset (names and offsets, no case held),
/// and a row is read again from the file, whole, when a cell wants it.
#[test]
fn a_plan_holds_no_dataset_row() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &format!("cases_file = \"cases.jsonl\"\n{}", prompt_without_cases()));
    std::fs::write(dir.path().join("cases.jsonl"), JSONL).unwrap();
    let options = tunebench::eval::EvalOptions {
        prompts: vec![prompt],
        repeat: 1,
        types: vec![tunebench::output::ResponseType::Jsonl, tunebench::output::ResponseType::Json],
        setup: tunebench::run::SetupOptions::from_flags(tunebench::prompt::file::ProviderSettings {
            name: Some("openai".into()),
            model: Some("m1".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..Default::default()
        })
        .unwrap(),
        ..Default::default()
    };
    let plan = tunebench::eval::EvalPlan::new(&options).unwrap();
    assert_eq!(plan.columns.len(), 2, "the prompt and its twin");
    assert_eq!(plan.cells.len(), 4);
    for column in &plan.columns {
        assert!(column.setup.prompt.cases.is_empty(), "a column's prompt holds no dataset row");
    }
    let cases = &plan.columns[0].cases;
    assert!(std::sync::Arc::ptr_eq(cases, &plan.columns[1].cases));
    assert!(cases.prompt.cases.is_empty());
    let dataset = cases.dataset.as_ref().unwrap();
    assert_eq!((dataset.len(), dataset.held()), (2, 0), "a JSONL dataset is indexed, its cases read from the file");
    let beta = plan.columns[1].case(1).unwrap().unwrap();
    assert_eq!(beta.name, "beta <&\"x\">, y");
    assert_eq!(beta.variables.get("text"), Some(&serde_json::json!("BETA-TEXT")));
    let expected = beta.expected.as_ref().and_then(|e| e.items.as_ref()).map(Vec::len);
    assert_eq!(expected, Some(2), "the row is read whole, its expected answer with it");
    // The file changed under the eval: the row is not the one checked, and the error says so.
    std::fs::write(dir.path().join("cases.jsonl"), JSONL.replace("beta", "delta")).unwrap();
    let error = plan.columns[0].case(1).unwrap_err().to_string();
    assert!(error.contains("cases.jsonl:2") && error.contains("changed"), "{error}");
}

/// Rows of a dataset cut short after the plan indexed it are `error` cells that say why (the row
/// could not be read again, at its file and line), so the eval does not pass.
#[test]
fn rows_cut_from_the_dataset_during_the_eval_are_error_cells() {
    let (runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &format!("cases_file = \"cases.jsonl\"\n{}", prompt_without_cases()));
    std::fs::write(dir.path().join("cases.jsonl"), JSONL).unwrap();
    let options = tunebench::eval::EvalOptions {
        prompts: vec![prompt],
        repeat: 1,
        setup: tunebench::run::SetupOptions::from_flags(tunebench::prompt::file::ProviderSettings {
            name: Some("openai".into()),
            model: Some("m1".into()),
            base_url: Some(base_url(&server)),
            ..Default::default()
        })
        .unwrap(),
        ..Default::default()
    };
    let plan = tunebench::eval::EvalPlan::new(&options).unwrap();
    assert_eq!(plan.cells.len(), 2);
    // The file loses its second row once the plan has indexed it.
    std::fs::write(dir.path().join("cases.jsonl"), JSONL.lines().next().unwrap()).unwrap();
    let pipeline =
        tunebench::eval::pipeline::Pipeline { plan: &plan, concurrency: 1, record_history: false, wrap: None };
    let ran = runtime.block_on(tunebench::eval::pipeline::run(pipeline, |_| {}, std::future::pending())).unwrap();
    let record = ran.record;
    let verdicts: Vec<Verdict> = record.cells.iter().map(|c| c.score.verdict).collect();
    assert_eq!(verdicts, [Verdict::Pass, Verdict::Error], "{:?}", record.cells);
    let reason = &record.cells[1].score.reason;
    assert!(reason.contains("cases.jsonl:2") && reason.contains("could not be read again"), "{reason}");
    assert_eq!(record.cells[1].case.as_deref(), Some(BETA));
    assert!(!record.all_passed() && !record.unreachable());
    assert_eq!(server.received().len(), 1, "the row cut short sends no request");
}

/// A check of a dataset row is placed at the row as the user wrote the dataset's path (its
/// `cases_file` beside the prompt named on the command line), for JSONL, CSV and YAML alike.
#[test]
fn a_rows_check_is_placed_at_the_dataset_as_written() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let check = r#"[{"kind": "items", "min": 5}]"#;
    let files = [
        ("cases.jsonl", format!("{{\"name\": \"alpha\", \"text\": \"ALPHA-TEXT\", \"checks\": {check}}}\n"), 1),
        ("cases.csv", format!("name,text,checks\nalpha,ALPHA-TEXT,\"{}\"\n", check.replace('"', "\"\"")), 2),
        ("cases.yaml", format!("- name: alpha\n  text: ALPHA-TEXT\n  checks: {check}\n"), 1),
    ];
    for (file, text, line) in files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("p").join(file), text).unwrap();
        prompt_in(&dir.path().join("p"), &format!("cases_file = \"{file}\"\n{}", prompt_without_cases()));
        let output = tunebench(dir.path())
            .current_dir(dir.path())
            .args(["eval", "p/definitions.toml", "--provider", "openai", "--base-url", &base_url(&server), "--json"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{file}: {}", stderr(&output));
        let record = record(&output);
        assert_eq!(record.cells[0].score.checks[0].at, format!("p/{file}:{line}"), "{file}");
    }
}
