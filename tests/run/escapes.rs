//! Model output carrying terminal escape sequences and control characters never reaches the terminal
//! raw: every CLI output mode that prints model text (run streamed, whole, --json; parse, truncate and
//! compare, human and --json; batch import, human and --json) is checked byte by byte.

use assert_cmd::Command;
use serde_json::json;

use crate::engine::sse_answer;
use crate::support::*;

/// Controls written as JSON escapes inside strings (valid JSON whose values hold them), raw inside a
/// string (invalid JSON), and raw in prose: ESC sequences (clear, colour, set title), BEL, CR, the
/// 8-bit CSI (U+009B), DEL and a right-to-left override.
const HOSTILE: &str = concat!(
    r#"{"topic": "clear\u001b[2J\u009b31m\u202e", "definition": "bell\u0007\u007f"}"#,
    "\n{\"topic\": \"raw \u{1b}[31m red\", \"definition\": \"x\"}\n",
    "\u{1b}]0;title\u{7} prose \r\u{9b}2J\u{202e}\u{7f}\n"
);

/// Runs `command` and checks that neither stream carries a character that drives a terminal.
fn clean(name: &str, command: &mut Command) -> String {
    let output = command.output().unwrap();
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let raw = text
            .chars()
            .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || ('\u{202a}'..='\u{202e}').contains(c));
        assert!(raw.is_none(), "{name}: {stream} carries {raw:?} raw:\n{text}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!stdout.is_empty() || !output.stderr.is_empty(), "{name}: printed nothing");
    stdout
}

#[test]
fn no_output_mode_prints_a_control_character_raw() {
    let (_runtime, server) = crate::cli::server(vec![sse_answer(HOSTILE, "stop")]);
    let dir = tempfile::tempdir().unwrap();
    let prompt = sample("extract-topics");
    let transcript = dir.path().join("t.jsonl");
    let base = format!("{}/v1", server.url());
    let run = |extra: &[&str]| {
        let mut command = tunebench(dir.path());
        command.arg("run").arg(&prompt).args(["--provider", "openai", "--base-url", &base]).args(extra);
        command
    };
    let streamed = clean("run", &mut run(&["--record", transcript.to_str().unwrap()]));
    assert!(streamed.contains("\\u{1b}]0;title\\u{7}"), "{streamed}");
    clean("run --no-stream", &mut run(&["--no-stream"]));
    let record = clean("run --json", &mut run(&["--json"]));
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["result"][0]["topic"], "clear\u{1b}[2J\u{9b}31m\u{202e}", "the JSON value is kept exactly");

    let answer = dir.path().join("answer.txt");
    std::fs::write(&answer, HOSTILE).unwrap();
    let array = dir.path().join("array.txt");
    std::fs::write(&array, format!("[{}, \"\u{1b}[5m\"]", HOSTILE.lines().next().unwrap())).unwrap();
    let prompt_arg = prompt.to_str().unwrap();
    for (name, args) in [
        ("parse", vec!["parse", "--prompt", prompt_arg]),
        ("parse --json", vec!["parse", "--prompt", prompt_arg, "--json"]),
        ("parse --summary", vec!["parse", "--prompt", prompt_arg, "--summary"]),
        ("truncate --at", vec!["truncate", "--prompt", prompt_arg, "--at", "60"]),
        ("truncate --at --json", vec!["truncate", "--prompt", prompt_arg, "--at", "60", "--json"]),
        ("truncate --sweep", vec!["truncate", "--prompt", prompt_arg, "--sweep"]),
        ("truncate --sweep --json", vec!["truncate", "--prompt", prompt_arg, "--sweep", "--json"]),
    ] {
        clean(name, tunebench(dir.path()).args(&args).arg(&answer));
        clean(&format!("{name} (transcript)"), tunebench(dir.path()).args(&args).arg(&transcript));
    }
    clean("parse --type json", tunebench(dir.path()).args(["parse", "--type", "json"]).arg(&array));
    clean("parse --type json --json", tunebench(dir.path()).args(["parse", "--type", "json", "--json"]).arg(&array));
    clean("parse --type text", tunebench(dir.path()).args(["parse", "--type", "text"]).arg(&answer));
    for json_flag in [None, Some("--json")] {
        let mut command = tunebench(dir.path());
        command.arg("compare").arg(&prompt).arg("--transcripts").arg(&transcript).arg(&transcript);
        command.args(json_flag);
        clean("compare --transcripts", &mut command);
    }

    // batch import, human and --json.
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(&prompt)
        .args(["--provider", "openai", "--model", "m", "-o"])
        .arg(dir.path().join("batch.jsonl"))
        .output()
        .unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = summary["custom_ids"][0].as_str().unwrap();
    let results = json!({"custom_id": id, "response": {"status_code": 200, "body": {
        "choices": [{"index": 0, "message": {"content": HOSTILE}, "finish_reason": "stop"}]}}});
    let bad = json!({"custom_id": "tb\u{1b}[2J", "error": {"message": "\u{1b}]0;x\u{7}"}});
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, format!("{results}\n{bad}\n\u{1b}[2J\u{9b}\n")).unwrap();
    clean("batch import", tunebench(dir.path()).args(["batch", "import"]).arg(&file));
    clean("batch import --json", tunebench(dir.path()).args(["batch", "import", "--json"]).arg(&file));
}

/// `sample-prompts/extract-topics.toml` with its id and first case renamed to `id` and `case`.
fn renamed_prompt(dir: &std::path::Path, id: &str, case: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(sample("extract-topics")).unwrap();
    let first_case = text.split("[[cases]]").nth(1).and_then(|c| c.split('"').nth(1)).unwrap().to_string();
    let text = text.replacen("id = \"extract-topics\"", &format!("id = {}", toml_string(id)), 1).replacen(
        &format!("name = \"{first_case}\""),
        &format!("name = {}", toml_string(case)),
        1,
    );
    let path = dir.join("renamed.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

#[test]
fn prompt_ids_and_case_names_reach_the_terminal_escaped() {
    let (_runtime, server) =
        crate::cli::server(vec![sse_answer("{\"topic\": \"a\", \"definition\": \"b\"}\n", "stop")]);
    let dir = tempfile::tempdir().unwrap();
    let prompt = renamed_prompt(dir.path(), "evil\u{1b}]0;pwned\u{7}\u{1b}[2J", "case\u{1b}[31m\u{9b}");
    let base = format!("{}/v1", server.url());
    for extra in [&["--all-cases"][..], &["--all-cases", "--no-stream"], &[]] {
        let mut command = tunebench(dir.path());
        command.arg("run").arg(&prompt).args(["--provider", "openai", "--base-url", &base]).args(extra);
        clean("run with a hostile id", &mut command);
    }
    clean("history", tunebench(dir.path()).arg("history"));
}

#[test]
fn a_prompt_id_never_writes_outside_the_transcripts_folder() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = renamed_prompt(dir.path(), "../../escaped", "../case");
    let output = tunebench(dir.path())
        .args(["batch", "export"])
        .arg(&prompt)
        .args(["--cases", "--provider", "openai", "--model", "m", "-o"])
        .arg(dir.path().join("batch.jsonl"))
        .output()
        .unwrap();
    let summary = stdout_json(&output);
    let ids: Vec<&str> = summary["custom_ids"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    let results: String = ids
        .iter()
        .map(|id| {
            let body = json!({"choices": [{"index": 0, "message": {"content": "{\"topic\": \"a\", \"definition\": \"b\"}"},
                              "finish_reason": "stop"}]});
            format!("{}\n", json!({"custom_id": id, "response": {"status_code": 200, "body": body}}))
        })
        .collect();
    let file = dir.path().join("results.jsonl");
    std::fs::write(&file, results).unwrap();
    let answers = dir.path().join("a").join("b").join("answers");
    let output = tunebench(dir.path())
        .args(["batch", "import", "--no-history", "--record"])
        .arg(&answers)
        .arg(&file)
        .output()
        .unwrap();
    // Imported, and scored against the cases' hand-written expected answers, which a/b are not (exit 1).
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("imported 2 of 2 requests from 2 lines: 2 ok"), "{stderr}");
    let written: Vec<String> =
        std::fs::read_dir(&answers).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(written.len(), ids.len(), "{written:?}");
    assert!(written.iter().all(|name| name.starts_with("_..") && name.ends_with(".jsonl")), "{written:?}");
    for outside in [dir.path().join("escaped.jsonl"), dir.path().join("a").join("escaped.jsonl")] {
        assert!(!outside.exists(), "{} was written", outside.display());
    }
}
