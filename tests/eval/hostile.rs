//! Hostile files around `tunebench eval`: a prompt's files stay inside its folder (a `..`, an absolute
//! path or a link out is refused and the file's content shows nowhere), pipes and devices are refused
//! without blocking, a report never replaces an input, a cache entry edited by hand is not served,
//! and the CSV report carries no terminal escape.

use std::path::{Path, PathBuf};

use tunebench::eval::score::Verdict;

use crate::support::*;

const SECRET: &str = "SECRET-TOKEN-7f3a";

/// The test prompt with alpha's expected items in `expected_file = "{name}"`.
fn with_expected_file(name: &str) -> String {
    PROMPT.replace(
        "items = [{ entity = \"Alpha\", definition = \"The first letter.\" }]",
        &format!("expected_file = {name:?}"),
    )
}

/// The test prompt with its schema in `schema_file = "{name}"`.
fn with_schema_file(name: &str) -> String {
    let start = PROMPT.find("schema = '''").unwrap();
    let end = start + PROMPT[start..].find("'''\n").unwrap() + 4;
    format!("{}schema_file = {name:?}\n{}", &PROMPT[..start], &PROMPT[end..])
}

/// A folder `prompts/` for the prompt and, beside it (outside it), `secret.json`.
fn folders() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let prompts = top.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    let secret = top.path().join("secret.json");
    std::fs::write(&secret, format!("[{{\"entity\": \"Alpha\", \"definition\": \"{SECRET}\"}}]")).unwrap();
    (top, prompts, secret)
}

/// Every byte the command left: its output and every file under `dir` but the secret.
fn everything_written(dir: &Path, output: &std::process::Output, secret: &Path) -> String {
    let mut all = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(output));
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() && entry.path() != secret {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    all
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn a_prompts_files_outside_its_folder_are_refused_and_never_shown() {
    let (top, prompts, secret) = folders();
    std::os::unix::fs::symlink(&secret, prompts.join("gold.json")).unwrap();
    std::os::unix::fs::symlink(top.path(), prompts.join("up")).unwrap();
    let absolute = secret.display().to_string();
    let cases: Vec<(String, &str, &str)> = vec![
        (with_expected_file("../secret.json"), "expected_file", "a `..` that leaves the folder"),
        (with_expected_file(&absolute), "expected_file", "an absolute path"),
        (with_expected_file("gold.json"), "expected_file", "outside the folder"),
        (with_expected_file("up/secret.json"), "expected_file", "outside the folder"),
        (with_schema_file("../secret.json"), "schema_file", "a `..` that leaves the folder"),
        (with_schema_file(&absolute), "schema_file", "an absolute path"),
        (with_schema_file("gold.json"), "schema_file", "outside the folder"),
    ];
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    for (text, field, why) in cases {
        let prompt = prompt_in(&prompts, &text);
        let junit = top.path().join("report.xml");
        let csv = top.path().join("cells.csv");
        let args = ["--json", "--junit", junit.to_str().unwrap(), "--csv", csv.to_str().unwrap()];
        let output = eval(top.path(), &prompt, &server, &args);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{field} {why}: {said}");
        assert!(said.contains(&format!("`{field}`")) && said.contains(why), "{field} {why}: {said}");
        assert!(said.contains("definitions.toml:") || field == "schema_file", "the file and line: {said}");
        assert!(!junit.exists() && !csv.exists(), "{field} {why}: no report");
        assert!(!everything_written(top.path(), &output, &secret).contains(SECRET), "{field} {why}: the secret leaked");
    }
    assert!(server.received().is_empty(), "nothing was run");
}

#[cfg(unix)]
#[test]
fn pipes_and_devices_are_refused_at_once_with_the_files_name() {
    let (top, prompts, _) = folders();
    mkfifo(&prompts.join("pipe.json"));
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    for text in [with_expected_file("pipe.json"), with_schema_file("pipe.json")] {
        let prompt = prompt_in(&prompts, &text);
        let output = eval(top.path(), &prompt, &server, &["--json"]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains("pipe.json") && said.contains("a named pipe (FIFO), not a regular file"), "{said}");
    }
    // The prompt file itself: a pipe, a device.
    mkfifo(&prompts.join("pipe.toml"));
    for prompt in [prompts.join("pipe.toml"), PathBuf::from("/dev/zero")] {
        let output = eval(top.path(), &prompt, &server, &["--json"]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains(&prompt.display().to_string()) && said.contains("not a regular file"), "{said}");
    }
    // A prompt too large for a prompt file is refused before it is read.
    let huge = prompts.join("huge.toml");
    std::fs::File::create(&huge).unwrap().set_len(tunebench::files::PROMPT_FILE.bytes + 1).unwrap();
    let said = stderr(&eval(top.path(), &huge, &server, &["--json"]));
    assert!(said.contains("huge.toml: larger than 64 MiB, the most a prompt file may hold"), "{said}");
    assert!(server.received().is_empty());
}

#[test]
fn a_report_that_would_replace_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gold.json"), "[{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}]")
        .unwrap();
    let prompt = prompt_in(dir.path(), &with_expected_file("gold.json"));
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let before = std::fs::read_to_string(&prompt).unwrap();
    let gold = dir.path().join("gold.json");
    // `eval --junit a.toml a.toml`, and a report over a file the prompt names (given another way).
    let other_name = dir.path().join(".").join("gold.json");
    for (flag, path) in [("--junit", &prompt), ("--csv", &prompt), ("--csv", &other_name), ("-o", &other_name)] {
        let output = tunebench(dir.path())
            .arg("eval")
            .args([flag, path.to_str().unwrap()])
            .arg(&prompt)
            .args(["--provider", "openai", "--base-url", &base_url(&server)])
            .output()
            .unwrap();
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{flag} {}: {said}", path.display());
        assert!(said.contains(flag) && said.contains("an input of this command"), "{said}");
    }
    assert_eq!(std::fs::read_to_string(&prompt).unwrap(), before);
    assert!(std::fs::read_to_string(&gold).unwrap().contains("The first letter."));
    assert!(server.received().is_empty(), "refused before anything ran");
}

#[test]
fn a_cache_entry_edited_by_hand_is_asked_again_and_scored_for_real() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let first = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    assert_eq!(first.cells.iter().map(|c| c.score.verdict).collect::<Vec<_>>(), vec![Verdict::Pass, Verdict::Pass]);
    assert_eq!(server.received().len(), 2);
    // Alpha's recorded answer edited on disk: "Alpha" becomes "Zlpha" (a wrong item).
    let mut entries = Vec::new();
    let mut stack = vec![dir.path().join("cache/responses")];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                entries.push(entry.path());
            }
        }
    }
    let edited: Vec<&PathBuf> =
        entries.iter().filter(|p| std::fs::read_to_string(p).unwrap().contains("Alp")).collect();
    let [entry] = edited.as_slice() else { panic!("one entry with alpha's answer: {entries:?}") };
    std::fs::write(entry, std::fs::read_to_string(entry).unwrap().replace("Alp", "Zlp")).unwrap();

    let second = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    assert_eq!(server.received().len(), 3, "the edited entry is a miss: alpha is asked again");
    assert!(server.received()[2].body.contains("ALPHA-TEXT"));
    let cells: Vec<(Verdict, bool)> = second.cells.iter().map(|c| (c.score.verdict, c.run.cached)).collect();
    assert_eq!(cells, vec![(Verdict::Pass, false), (Verdict::Pass, true)], "the real answer's verdict");
    // The fresh answer was stored again: a third run asks nothing.
    let third = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    assert_eq!(server.received().len(), 3);
    assert!(third.cells.iter().all(|c| c.run.cached && c.score.verdict == Verdict::Pass));
}

#[test]
fn the_csv_report_carries_no_terminal_escape_and_still_parses() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "alpha\u{1b}]0;pwned\u{7}";
    let prompt = prompt_in(dir.path(), &PROMPT.replace("name = \"alpha\"", "name = \"alpha\\u001b]0;pwned\\u0007\""));
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let csv = dir.path().join("cells.csv");
    let output = eval(dir.path(), &prompt, &server, &["--json", "--csv", csv.to_str().unwrap()]);
    assert_eq!(record(&output).rows[0].as_deref(), Some(hostile), "{}", stderr(&output));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
    let mut reader = csv::Reader::from_path(&csv).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][0], "alpha\\u{1b}]0;pwned\\u{7}");
    assert_eq!(&rows[1][0], BETA);
}

#[cfg(unix)]
#[test]
fn a_report_replaces_only_a_report_of_its_kind_never_a_fifo_a_device_or_another_file() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &with_expected_file("gold.json"));
    std::fs::write(dir.path().join("gold.json"), "[{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}]")
        .unwrap();
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    // Another prompt file the shell's glob handed to --junit, a dataset, a FIFO, a link to a device.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "id = \"other\"\ntemplate = \"x\"\n").unwrap();
    let rows = dir.path().join("rows.jsonl");
    std::fs::write(&rows, "{\"name\": \"a\", \"vars\": {}}\n").unwrap();
    let fifo = dir.path().join("out.json");
    mkfifo(&fifo);
    let device = dir.path().join("null.csv");
    std::os::unix::fs::symlink("/dev/null", &device).unwrap();
    for (flag, path, says) in [
        ("--junit", &other, "is not a JUnit XML report"),
        ("-o", &rows, "is not a JSONL report"),
        ("-o", &fifo, "not a regular file"),
        ("--csv", &device, "not a regular file"),
    ] {
        let output = eval(dir.path(), &prompt, &server, &[flag, path.to_str().unwrap()]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{flag} {}: {said}", path.display());
        assert!(said.contains(flag) && said.contains(says), "{said}");
    }
    assert!(server.received().is_empty(), "refused before anything ran");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "id = \"other\"\ntemplate = \"x\"\n");
    assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_symlink());
    // A report of its own kind is replaced.
    let report = dir.path().join("report.xml");
    let first = eval(dir.path(), &prompt, &server, &["--junit", report.to_str().unwrap()]);
    assert!(first.status.code().is_some_and(|c| c < 2), "{}", stderr(&first));
    let again = eval(dir.path(), &prompt, &server, &["--junit", report.to_str().unwrap()]);
    assert!(again.status.code().is_some_and(|c| c < 2), "{}", stderr(&again));
}
