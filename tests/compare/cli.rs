//! `tunebench compare` as a binary: from two transcripts, live against the in-process server (one
//! case and every case), the twin's diff and saved file, and exit codes 0/1/2.

use std::path::Path;

use assert_cmd::Command;
use serde_json::{json, Value};
use tunebench::prompt::file::PromptFile;
use tunebench::provider::wire_server::{reply_from_recording, WireServer};

use crate::support::*;

fn tunebench(data_dir: &Path) -> Command {
    let mut command = Command::cargo_bin("tunebench").unwrap();
    command.env("TUNEBENCH_DATA_DIR", data_dir).env_remove("OPENAI_BASE_URL").env_remove("OPENAI_API_KEY");
    command
}

fn stdout_json(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    })
}

fn transcripts() -> [String; 2] {
    ["compare/definitions-json.jsonl", "compare/definitions.jsonl"].map(|p| fixture(p).display().to_string())
}

#[test]
fn two_transcripts_compare_as_json_in_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = transcripts();
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--types", "json,jsonl", "--json", "--transcripts", &a, &b])
        .output()
        .unwrap();
    // Side B's UTP line fails its schema, so not both answers pass: exit 1.
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let report = stdout_json(&output);
    let sides = report["sides"].as_array().unwrap();
    assert_eq!((sides[0]["label"].clone(), sides[1]["label"].clone()), (json!("json"), json!("jsonl")));
    assert_eq!(sides[0]["prompt"], "extract-definitions-json");
    assert_eq!(sides[0]["run"]["ok"], true);
    assert_eq!(sides[0]["run"]["truncated"], true);
    assert_eq!(sides[1]["run"]["ok"], false);
    assert_eq!(sides[0]["figures"]["ttft_ms"], 100);
    assert_eq!(sides[1]["figures"]["valid_items"], 5);
    // Each side's sweep is `truncate --sweep --json`'s report over its own answer.
    assert_eq!(sides[0]["sweep"]["full_items"], 4);
    assert_eq!(
        sides[0]["sweep"]["strategies"]["json-repair"]["steps"],
        json!([[0, 0, 0], [1, 1, 0], [2, 2, 0], [3, 3, 1], [4, 3, 0], [5, 4, 0]])
    );
    assert_eq!(sides[1]["sweep"]["of"], 11);
    let agreement = &report["agreement"];
    assert_eq!(
        [&agreement["key"], &agreement["both"], &agreement["only_a"], &agreement["only_b"], &agreement["differ"]],
        [&json!("entity"), &json!(3), &json!(1), &json!(2), &json!(2)]
    );
    assert_eq!(
        report["truncation"]["crossings"],
        json!([{"at": 10, "ahead": "jsonl/jsonl", "behind": "json/json-repair"}])
    );
    assert_eq!(report["truncation"]["tokens"], "model");
}

#[test]
fn the_human_table_shows_both_sides_their_agreement_and_their_resilience() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = transcripts();
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--transcripts", &a, &b, "--key", "entity"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("derived twin of") && stderr.contains("schema: wrapped"), "{stderr}");
    assert!(
        stdout.contains("json (extract-definitions-json)") && stdout.contains("jsonl (extract-definitions)"),
        "{stdout}"
    );
    let finish = stdout.lines().find(|l| l.starts_with("finish")).unwrap();
    assert!(finish.contains("length") && finish.contains("stop"), "{finish}");
    assert!(
        stdout.contains("agreement on \"entity\": 3 in both (1 same, 2 differ), 1 only in json, 2 only in jsonl"),
        "{stdout}"
    );
    assert!(stdout.contains("definition: \"A copy of a gene.\" | \"A copy.\""), "{stdout}");
    let repair = stdout.lines().find(|l| l.starts_with("json/json-repair")).unwrap();
    assert!(repair.contains("token 1") && repair.contains("0.500") && repair.contains("1 (max 1)"), "{repair}");
    let never = stdout.lines().find(|l| l.starts_with("json/json ")).unwrap();
    assert!(never.contains("never"), "{never}");
    assert!(stdout.contains("at token 10: jsonl/jsonl overtakes json/json-repair"), "{stdout}");
}

/// A runtime that keeps the server answering while the binary runs.
fn live_server() -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let read = |p: &str| std::fs::read_to_string(fixture(&format!("wire/{p}"))).unwrap();
    let routes = vec![
        (
            "Output format: a JSON array".to_string(),
            reply_from_recording(&read("compare/definitions_json_stream.txt"), 1.0).unwrap(),
        ),
        ("Output format: JSONL".to_string(), reply_from_recording(&read("run/definitions_stream.txt"), 1.0).unwrap()),
    ];
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

#[test]
fn a_live_comparison_runs_both_sides_one_after_the_other_on_a_local_server() {
    let (_runtime, server) = live_server();
    let dir = tempfile::tempdir().unwrap();
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--types", "jsonl,json", "--base-url", &format!("{}/v1", server.url()), "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report = stdout_json(&output);
    // --types jsonl,json puts the jsonl prompt on side A.
    assert_eq!(report["sides"][0]["label"], "jsonl");
    assert_eq!(report["sides"][1]["prompt"], "extract-definitions-json");
    assert_eq!(report["agreement"]["both"], 2);
    assert_eq!(report["agreement"]["only_a"], 1);
    assert_eq!(server.max_in_flight(), 1);
    assert_eq!(server.received().len(), 2);
    // Both runs were added to the history.
    let history = std::fs::read_to_string(dir.path().join("history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 2);
}

/// A live comparison of the definitions sample on `server` (with `extra` flags), both sides recorded
/// into `dir`: the two transcripts' paths and the command's output (it succeeded).
fn record_live(dir: &Path, server: &WireServer, extra: &[&str]) -> ([String; 2], std::process::Output) {
    let [a, b] = ["a.jsonl", "b.jsonl"].map(|name| dir.join(name).display().to_string());
    let live = tunebench(dir)
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--base-url", &format!("{}/v1", server.url()), "--json", "--no-history", "--record", &a, &b])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(live.status.code(), Some(0), "{}", String::from_utf8_lossy(&live.stderr));
    ([a, b], live)
}

#[test]
fn a_recorded_comparison_compares_again_from_its_transcripts() {
    let (_runtime, server) = live_server();
    let dir = tempfile::tempdir().unwrap();
    let ([a, b], live) = record_live(dir.path(), &server, &[]);
    let replayed = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--json", "--transcripts", &a, &b])
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    let (live, replayed) = (stdout_json(&live), stdout_json(&replayed));
    assert_eq!(live["agreement"], replayed["agreement"]);
    assert_eq!(live["truncation"], replayed["truncation"]);
    for side in 0..2 {
        assert_eq!(live["sides"][side]["sweep"], replayed["sides"][side]["sweep"]);
        assert_eq!(live["sides"][side]["run"]["result"], replayed["sides"][side]["run"]["result"]);
    }
    assert_eq!(server.received().len(), 2, "the second comparison sent nothing");
    // The replay keeps the recorded timing: time to first token is the first chunk's t_ms.
    let recorded = std::fs::read_to_string(&a).unwrap();
    let first_chunk: Value = serde_json::from_str(recorded.lines().nth(1).unwrap()).unwrap();
    assert_eq!(replayed["sides"][0]["figures"]["ttft_ms"], first_chunk["t_ms"]);
}

#[test]
fn every_case_as_a_batch_gives_a_row_per_case_and_the_totals() {
    let (_runtime, server) = live_server();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.url());
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--all-cases", "--base-url", &url, "--json", "--no-history"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report = stdout_json(&output);
    let cases: Vec<_> = report["cases"].as_array().unwrap().iter().map(|c| c["case"].clone()).collect();
    assert_eq!(cases, [json!("astronomy"), json!("medicine-comparisons"), json!("nothing-to-define")]);
    // The server gives the same answers to every case: 3 items a side, 2 in both, per case.
    let totals = &report["totals"];
    assert_eq!(totals["cases"], 3);
    assert_eq!(totals["sides"][0]["items"], 9);
    assert_eq!(totals["sides"][1]["valid_items"], 9);
    assert_eq!([&totals["both"], &totals["only_a"], &totals["only_b"]], [&json!(6), &json!(3), &json!(3)]);
    assert_eq!(totals["ok_cases"], 3);
    assert_eq!(server.received().len(), 6);
    assert!(!dir.path().join("history.jsonl").exists(), "--no-history");

    let human = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-definitions"))
        .args(["--all-cases", "--base-url", &url, "--no-history"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("astronomy")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("total (3 cases)")), "{stdout}");
}

#[test]
fn the_twin_diff_and_the_saved_twin() {
    let dir = tempfile::tempdir().unwrap();
    let output = tunebench(dir.path()).arg("compare").arg(sample("extract-topics")).arg("--diff").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("--- A extract-topics-json\n+++ B extract-topics\n"), "{stdout}");
    assert!(stdout.contains("@@ template\n") && stdout.contains("- Output format: a JSON array"), "{stdout}");
    let saved = dir.path().join("twin.toml");
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-topics"))
        .args(["--diff", "--json", "--save-twin"])
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let fields: Vec<_> =
        stdout_json(&output)["fields"].as_array().unwrap().iter().map(|f| f["field"].clone()).collect();
    assert_eq!(fields, [json!("id"), json!("description"), json!("response_type"), json!("template"), json!("schema")]);
    assert_eq!(PromptFile::load(&saved).unwrap(), PromptFile::load(sample("extract-topics-json")).unwrap());
}

#[test]
fn bad_input_exits_2_naming_the_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = sample("extract-definitions");
    let cases: [(&[&str], &str); 5] = [
        (&["--types", "json,json"], "--types json,json: the two sides need different types"),
        (&["--types", "json"], "--types json: give two response types"),
        (&["--transcripts", "/nonexistent/a.jsonl", "/nonexistent/b.jsonl"], "/nonexistent/a.jsonl"),
        (&["--case", "geology"], "geology"),
        (&["--provider", "gpt", "--base-url", "http://127.0.0.1:9/v1"], "\"gpt\""),
    ];
    for (args, message) in cases {
        let output = tunebench(dir.path()).arg("compare").arg(&prompt).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let output = tunebench(dir.path())
        .arg("compare")
        .arg(sample("classify-sentiment"))
        .args(["--types", "jsonl,text"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("classify-sentiment") && stderr.contains("text"), "{stderr}");
}

/// A comparison replayed from its transcripts claims no model of its own: each side's record names the
/// model its transcript recorded, not the prompt's `[provider] model` (the workbench's compare screen
/// and this command build their settings in one place, `compare::flow::settings`).
#[test]
fn a_replayed_comparison_names_the_model_its_transcripts_recorded() {
    let (_runtime, server) = live_server();
    let dir = tempfile::tempdir().unwrap();
    let ([a, b], _) = record_live(dir.path(), &server, &["--model", "served-model"]);
    // The same prompt, now naming another model in its [provider] table.
    let text = std::fs::read_to_string(sample("extract-definitions")).unwrap();
    let prompt = dir.path().join("extract-definitions.toml");
    std::fs::write(&prompt, text.replace("[provider]\n", "[provider]\nmodel = \"the-prompts-model\"\n")).unwrap();
    let replayed =
        tunebench(dir.path()).arg("compare").arg(&prompt).args(["--json", "--transcripts", &a, &b]).output().unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    let replayed = stdout_json(&replayed);
    for side in 0..2 {
        assert_eq!(
            replayed["sides"][side]["run"]["model"], "served-model",
            "side {side}: {}",
            replayed["sides"][side]["run"]
        );
    }
}
