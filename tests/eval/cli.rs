//! `tunebench eval` as a binary: the matrix and failures, the record on stdout and in the data
//! directory, JUnit read back by an XML parser, CSV read back by a CSV reader, and the exit codes.

use tunebench::eval::score::Verdict;

use crate::support::*;

#[test]
fn a_matrix_with_a_failing_case_exits_1_and_the_record_reads_back() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let junit = dir.path().join("out/report.xml");
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    let csv = dir.path().join("out/cells.csv");
    let output = eval(
        dir.path(),
        &prompt,
        &server,
        &["--json", "--junit", junit.to_str().unwrap(), "--csv", csv.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(record.rows, vec![Some("alpha".to_string()), Some(BETA.to_string())]);
    assert_eq!(record.columns.len(), 1);
    assert_eq!((record.columns[0].provider.as_str(), record.columns[0].prompt.as_str()), ("openai", "definitions"));
    let verdicts: Vec<Verdict> = record.cells.iter().map(|c| c.score.verdict).collect();
    assert_eq!(verdicts, vec![Verdict::Pass, Verdict::Fail]);
    assert_eq!(record.cells[0].run.items, 1);
    assert_eq!(record.cells[1].run.items, 1, "the schema-failing line is not handed on");
    assert_eq!(record.totals[0].passed, 1);
    assert_eq!(record.totals[0].cells, 2);
    assert_eq!((record.totals[0].tokens_in, record.totals[0].tokens_out), (60, 24));
    assert!(record.prompts[0].text.contains("ALPHA-TEXT"), "the prompt as run is kept");

    // The same record is in the data directory, typed; the runs are in the history.
    let kept = tunebench::eval::store::find_in(&dir.path().join("evals"), &record.id, None).unwrap();
    assert_eq!(kept, record);
    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records;
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].case.as_deref(), Some(BETA));

    // JUnit: a testsuite per column, a testcase per case, the failure with its message.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!((root.attribute("tests"), root.attribute("failures")), (Some("2"), Some("1")));
    let suites: Vec<roxmltree::Node> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("name"), Some("definitions"));
    let cases: Vec<roxmltree::Node> = suites[0].children().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.iter().map(|c| c.attribute("name").unwrap()).collect::<Vec<_>>(), vec!["alpha", BETA]);
    assert!(cases[0].children().all(|n| !n.has_tag_name("failure")));
    let failure = cases[1].children().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(failure.attribute("type"), Some("fail"));
    assert_eq!(failure.attribute("message"), Some(record.cells[1].score.reason.as_str()));

    // CSV: a header and a line per cell, the awkward case name intact.
    let mut reader = csv::Reader::from_path(&csv).unwrap();
    let header = reader.headers().unwrap().clone();
    assert_eq!(&header[0], "case");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[1][column("case")], BETA);
    assert_eq!((&rows[0][column("verdict")], &rows[1][column("verdict")]), ("pass", "fail"));
    assert_eq!(&rows[1][column("reason")], record.cells[1].score.reason.as_str());
    assert_eq!(&rows[0][column("tokens_out")], "12");
}

#[test]
fn the_human_matrix_names_columns_cells_and_failures() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output = eval(dir.path(), &prompt, &server, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(text.contains("[1] definitions  (openai)"), "{text}");
    let alpha = text.lines().find(|l| l.starts_with("alpha ")).unwrap();
    assert!(alpha.contains("pass"), "{text}");
    let beta = text.lines().find(|l| l.starts_with("beta ")).unwrap();
    assert!(beta.contains("fail"), "{text}");
    assert!(text.contains("1/2 passed (50%)"), "{text}");
    assert!(text.contains(&format!("failures:\n  {BETA} × [1] definitions: fail")), "{text}");
    assert!(stderr(&output).contains("[2/2]"), "progress per cell: {}", stderr(&output));
}

#[test]
fn every_case_passing_exits_0_and_case_picks_rows() {
    let (_runtime, right) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output = eval(dir.path(), &prompt, &right, &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(record(&output).all_passed());

    let (_runtime, wrong) = server(ALPHA_RIGHT, BETA_WRONG);
    let output = eval(dir.path(), &prompt, &wrong, &["--json", "--case", "alpha"]);
    assert_eq!(output.status.code(), Some(0), "only alpha runs: {}", stderr(&output));
    assert_eq!(record(&output).rows, vec![Some("alpha".to_string())]);
}

#[test]
fn repeats_count_passes_and_models_make_columns() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output =
        eval(dir.path(), &prompt, &server, &["--json", "--repeat", "3", "--model", "m1", "--model", "openai:m2"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(
        record.columns.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(),
        vec!["definitions · openai:m1", "definitions · openai:m2"]
    );
    assert_eq!(record.cells.len(), 2 * 2 * 3);
    assert_eq!(server.received().len(), 12);
    let models: Vec<String> =
        server.received().iter().map(|r| r.json()["model"].as_str().unwrap().to_string()).collect();
    assert_eq!(models.iter().filter(|m| *m == "m1").count(), 6);
    let alpha = record.groups.iter().find(|g| g.row == 0 && g.column == 1).unwrap();
    assert_eq!((alpha.passes, alpha.runs, alpha.pass_all, alpha.flaky), (3, 3, 1.0, false));
    let beta = record.groups.iter().find(|g| g.row == 1 && g.column == 0).unwrap();
    assert_eq!((beta.passes, beta.pass_all), (0, 0.0));
    assert_eq!(record.totals[0].pass_all, Some(0.5));
}

#[test]
fn twins_add_a_column_scored_against_the_same_items() {
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output = eval(dir.path(), &prompt, &server, &["--json", "--types", "jsonl,json"]);
    let record = record(&output);
    assert_eq!(record.columns.len(), 2, "{}", stderr(&output));
    assert_eq!((record.columns[1].prompt.as_str(), record.columns[1].twin), ("definitions-json", true));
    assert_eq!(record.columns[1].label, "definitions (json)");
    // The server answers the json twin in JSON Lines too: that is not one JSON array, so it fails.
    let twin: Vec<Verdict> = record.cells.iter().filter(|c| c.column == 1).map(|c| c.score.verdict).collect();
    assert_eq!(twin, vec![Verdict::Fail, Verdict::Fail], "{}", stderr(&output));
}

#[test]
fn bad_input_exits_2_and_names_the_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let cases: &[(&[&str], &str)] = &[
        (&["--case", "omega"], "--case \"omega\": no prompt has a case of that name (alpha, beta"),
        (&["--model", "vllm:"], "no model after \"vllm\""),
        (&["--baseline", "nope"], "\"nope\": no eval of that id"),
        (&["--types", "text"], "it has no text twin"),
        (&["--replay-speed", "soon"], "--replay-speed \"soon\""),
    ];
    for (args, message) in cases {
        let output = tunebench(dir.path()).arg("eval").arg(&prompt).args(*args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(message), "{args:?}: {}", stderr(&output));
    }
    let broken = prompt_in(dir.path(), &PROMPT.replace("match = \"entity\"", "match = \"entity\"\nbogus = 1"));
    let output = tunebench(dir.path()).arg("eval").arg(&broken).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("definitions.toml:"), "{}", stderr(&output));
    let missing = tunebench(dir.path()).args(["eval", "no-such.toml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no-such.toml"));
}

#[test]
fn a_provider_that_cannot_be_reached_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    // A port that was free a moment ago: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let output = tunebench(dir.path())
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &format!("http://127.0.0.1:{port}/v1"), "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let record = record(&output);
    assert!(record.cells.iter().all(|c| c.score.verdict == Verdict::Error));
    assert!(record.cells[0].run.error.as_deref().unwrap().contains("cannot reach"), "{:?}", record.cells[0].run);
}

/// An eval on the replay provider with nothing recorded to play is bad input (exit 2) before any cell
/// runs, and no eval of errors is recorded.
#[test]
fn a_replay_with_nothing_recorded_is_bad_input_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output = tunebench(dir.path()).arg("eval").arg(&prompt).args(["--provider", "replay"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("give --transcript FILE"), "{}", stderr(&output));
    assert!(!dir.path().join("evals").exists(), "nothing recorded");
}
