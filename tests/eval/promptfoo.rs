//! `tunebench eval promptfooconfig.yaml`: configs written from promptfoo's documented examples
//! (tests/fixtures/promptfoo/), run against the in-process server, each cell's verdict the one
//! promptfoo's documented semantics give; the labels in the record, the key read from the variable
//! the config names and never shown, the exit code of an assertion that is not evaluated.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tunebench::eval::score::Verdict;
use tunebench::provider::wire_server::{Received, Reply, WireServer};

use super::support::{record, stderr, tunebench};

/// A fixture folder copied into `dir` (the eval writes nothing beside it, but the copy is the test's own).
pub fn fixture(dir: &Path, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promptfoo").join(name);
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    to
}

/// A server answering each request by its model and the text of its user message: the first
/// `(model, marker, answer)` whose model is the request's (or `*`) and whose marker its text holds.
pub fn server(answers: &'static [(&'static str, &'static str, &'static str)]) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let handler = move |received: &Received| {
        let body = received.json();
        let model = body["model"].as_str().unwrap_or_default().to_string();
        let text =
            body["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].to_string()).unwrap_or_default();
        let answer = answers
            .iter()
            .find(|(m, marker, _)| (*m == "*" || *m == model) && text.contains(marker))
            .map_or("no answer for this request", |(_, _, answer)| answer);
        Reply::chat_stream(answer, "stop", Some((10, 5)))
    };
    let server = runtime.block_on(WireServer::start_handler(handler)).unwrap();
    (runtime, server)
}

/// `tunebench eval CONFIG --base-url URL --json ARGS...`.
pub fn eval_config(data: &Path, config: &Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(data)
        .arg("eval")
        .arg(config)
        .args(["--base-url", &format!("{}/v1", server.url()), "--json"])
        .args(args)
        .output()
        .unwrap()
}

/// Each row's verdicts, column by column: `(row name, [verdict per column])`.
pub fn verdicts(record: &tunebench::eval::EvalRecord) -> Vec<(String, Vec<Verdict>)> {
    (0..record.rows.len())
        .map(|row| {
            let mut cells: Vec<_> = record.cells.iter().filter(|c| c.row == row).collect();
            cells.sort_by_key(|c| c.column);
            (record.row_name(row).to_string(), cells.iter().map(|c| c.score.verdict).collect())
        })
        .collect()
}

const GUIDE_ANSWERS: &[(&str, &str, &str)] = &[
    ("gpt-4o-mini", "Hello world", "Bonjour le monde"),
    ("gpt-4o-mini", "Goodbye", "As an AI, I would say Auf Wiedersehen"),
    ("gpt-4o-mini", "Thank you", "Gracias"),
    ("gpt-4o", "Hello world", "Salut le monde"),
    ("gpt-4o", "Goodbye", "Tschüss"),
    ("gpt-4o", "Thank you", "Gracias."),
];

#[test]
fn the_getting_started_config_runs_as_prompts_times_providers() {
    use Verdict::{Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "guide");
    let (_runtime, server) = server(GUIDE_ANSWERS);
    let secret = "sk-test-not-to-be-shown-4711";
    let output = tunebench(dir.path())
        .arg("eval")
        .arg(folder.join("promptfooconfig.yaml"))
        .args(["--base-url", &format!("{}/v1", server.url()), "--json"])
        .env("PF_TEST_KEY", secret)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    let labels: Vec<&str> = record.columns.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Convert this English to {{language}}: {{input}} · openai:gpt-4o-mini",
            "Convert this English to {{language}}: {{input}} · big",
            "polite · openai:gpt-4o-mini",
            "polite · big",
        ]
    );
    // Each row: defaultTest's not-icontains "as an AI", then the test's own assertion.
    assert_eq!(
        verdicts(&record),
        [
            ("French greeting".to_string(), vec![Pass, Fail, Pass, Fail]),
            ("German farewell".to_string(), vec![Fail, Pass, Fail, Pass]),
            ("test 3 (language=Spanish, input=Thank you)".to_string(), vec![Pass, Fail, Pass, Fail]),
        ]
    );
    // The `big` provider's settings and key went with its own requests alone.
    let received = server.received();
    let big: Vec<&Received> = received.iter().filter(|r| r.json()["model"] == "gpt-4o").collect();
    assert_eq!(big.len(), 6);
    for request in &big {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {secret}").as_str()));
        assert_eq!(request.json()["max_tokens"], 64, "{}", request.body);
        assert_eq!(request.json()["temperature"], 0.0, "{}", request.body);
    }
    let mini: Vec<&Received> = received.iter().filter(|r| r.json()["model"] == "gpt-4o-mini").collect();
    assert_eq!(mini.len(), 6);
    assert!(mini.iter().all(|r| r.header("authorization").is_none() && r.json().get("max_tokens").is_none()));
    assert!(mini.iter().any(|r| r.body.contains("Please translate into French: Hello world")));
    // The key is never shown nor recorded.
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(!everything.contains(secret));
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(secret), "the key is in {}", entry.display());
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

const WEIGHT_ANSWERS: &[(&str, &str, &str)] = &[
    ("*", "bananas", "bananas forever #fruit"),
    ("*", "apples", "apples are crisp #fruit"),
    ("*", "cherries", "cherries #fruit"),
    ("*", "dates", "dates are sweet"),
    ("*", "figs", "Figs are greet"),
];

#[test]
fn weights_and_a_tests_threshold_decide_as_promptfoo_documents() {
    use Verdict::{Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "weights");
    let (_runtime, server) = server(WEIGHT_ANSWERS);
    let output = eval_config(dir.path(), &folder.join("promptfooconfig.yaml"), &server, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(record.columns[0].label, "Write a tweet about {{topic}} · openai:gpt-4o-mini");
    assert_eq!(
        verdicts(&record),
        [
            // contains (weight 3) passes, not-contains "#" fails: no threshold, so every one must pass.
            ("every assertion must pass".to_string(), vec![Fail]),
            // 3 of 4 weighted = 0.75 ≥ 0.5.
            ("threshold reached".to_string(), vec![Pass]),
            // 0.75 < 0.8.
            ("threshold missed".to_string(), vec![Fail]),
            // starts-with fails at weight 0, which counts for nothing.
            ("weight zero never fails".to_string(), vec![Pass]),
            // one edit from "Figs are great" (at most 2), starts with Figs, no digit.
            ("regex and levenshtein".to_string(), vec![Pass]),
        ]
    );
}

const CSV_ANSWERS: &[(&str, &str, &str)] = &[
    ("*", "Paris", "Paris is in France."),
    ("*", "Rome", "{\"city\": \"Rome\", \"country\": \"Italy\"}"),
    ("*", "Tokyo", "Tokyo is in Japan."),
    ("*", "Lima", "Sorry, Lima is in Peru."),
];

#[test]
fn a_csv_of_tests_runs_and_an_assertion_not_evaluated_is_an_error_with_its_own_exit_code() {
    use Verdict::{Error, Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "csv");
    let (_runtime, server) = server(CSV_ANSWERS);
    let config = folder.join("promptfooconfig.yaml");
    let output = eval_config(dir.path(), &config, &server, &[]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(
        verdicts(&record),
        [
            ("paris".to_string(), vec![Pass]),
            ("rome as json".to_string(), vec![Pass]),
            // contains-any passes; `similar` (embeddings) is not evaluated yet: never a pass.
            ("tokyo similar".to_string(), vec![Error]),
            // icontains peru passes; defaultTest's not-icontains "sorry" fails.
            ("test 4 (city=Lima)".to_string(), vec![Fail]),
        ]
    );
    let listed = record.not_evaluated();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].case.as_str(), listed[0].check.as_str()), ("tokyo similar", "assert similar"));
    assert!(listed[0].at.ends_with("tests.csv:4"), "{}", listed[0].at);
    // The table lists it by test and type, and says which exit code it gives.
    let human = tunebench(dir.path())
        .arg("eval")
        .arg(&config)
        .args(["--base-url", &format!("{}/v1", server.url())])
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(4));
    let table = String::from_utf8_lossy(&human.stdout);
    assert!(table.contains("not evaluated (1 checks; their cells are errors, exit 4):"), "{table}");
    assert!(table.contains("tokyo similar: assert similar ("), "{table}");
}

#[test]
fn a_config_is_found_by_its_content_and_a_bad_one_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_runtime, server) = server(CSV_ANSWERS);
    // Any name: the content says it is a promptfoo config.
    let config = dir.path().join("suite.yml");
    std::fs::write(
        &config,
        "prompts: ['Where is {{city}}?']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - vars: {city: Paris}\n    assert:\n      - type: contains\n        value: France\n",
    )
    .unwrap();
    let output = eval_config(dir.path(), &config, &server, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(record.rows, [Some("test 1 (city=Paris)".to_string())]);
    // A mistake is bad input at its file:line, before any request.
    std::fs::write(
        &config,
        "prompts: ['Where is {{city}}?']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - vars: {city: Paris}\n    assert:\n      - type: contains-everything\n",
    )
    .unwrap();
    let before = server.received().len();
    let output = eval_config(dir.path(), &config, &server, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("suite.yml:6: unknown assertion type \"contains-everything\""),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.received().len(), before);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(value.is_null());
}

#[test]
fn an_env_file_gives_the_key_the_config_names_and_a_bad_line_names_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "guide");
    let (_runtime, server) = server(GUIDE_ANSWERS);
    let secret = "sk-from-env-file-0815";
    let env = dir.path().join("keys.env");
    std::fs::write(&env, format!("# the big provider's key\nexport PF_TEST_KEY=\"{secret}\" # quoted\n\nUNUSED=1\n"))
        .unwrap();
    let run = |env_file: &Path| {
        tunebench(dir.path())
            .arg("eval")
            .arg(folder.join("promptfooconfig.yaml"))
            .args(["--base-url", &format!("{}/v1", server.url()), "--json", "--no-cache", "--env-file"])
            .arg(env_file)
            .env_remove("PF_TEST_KEY")
            .output()
            .unwrap()
    };
    let output = run(&env);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let keyed =
        server.received().iter().filter(|r| r.header("authorization") == Some(&format!("Bearer {secret}"))).count();
    assert_eq!(keyed, 6, "the gpt-4o column's six requests carry the env file's key");
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(!everything.contains(secret));
    // A bad line: file:line, before any request, the value not shown.
    std::fs::write(&env, format!("A=1\nPF_TEST_KEY='{secret}\n")).unwrap();
    let before = server.received().len();
    let output = run(&env);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("keys.env:2: PF_TEST_KEY: the single quote is not closed"), "{message}");
    assert!(!message.contains(secret));
    assert_eq!(server.received().len(), before);
}

#[test]
fn filter_failing_runs_again_only_the_cases_that_did_not_pass() {
    use Verdict::{Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "weights");
    let config = folder.join("promptfooconfig.yaml");
    let (_runtime, server) = server(WEIGHT_ANSWERS);
    let first = eval_config(dir.path(), &config, &server, &["--no-cache"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let first = record(&first);
    assert_eq!(server.received().len(), 5);
    let again = eval_config(dir.path(), &config, &server, &["--no-cache", "--filter-failing"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let again = record(&again);
    assert_eq!(
        verdicts(&again),
        [("every assertion must pass".to_string(), vec![Fail]), ("threshold missed".to_string(), vec![Fail])]
    );
    assert_eq!(server.received().len(), 7, "two requests, for the two failing cases alone");
    // By id: the first eval's failing cases again; an eval where every case passed runs nothing.
    let by_id = eval_config(dir.path(), &config, &server, &["--no-cache", &format!("--filter-failing={}", first.id)]);
    assert_eq!(record(&by_id).rows.len(), 2);
    let passing = eval_config(dir.path(), &config, &server, &["--case", "threshold reached", "--no-cache"]);
    assert_eq!(verdicts(&record(&passing)), [("threshold reached".to_string(), vec![Pass])]);
    let id = record(&passing).id;
    let before = server.received().len();
    let nothing = eval_config(dir.path(), &config, &server, &[&format!("--filter-failing={id}")]);
    assert_eq!(nothing.status.code(), Some(0), "{}", stderr(&nothing));
    assert!(stderr(&nothing).contains("nothing to run"), "{}", stderr(&nothing));
    assert_eq!(server.received().len(), before);
    let unknown = eval_config(dir.path(), &config, &server, &["--filter-failing=20990101-000000-00000"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("--filter-failing 20990101-000000-00000"), "{}", stderr(&unknown));
}

#[test]
fn retry_errors_asks_again_for_the_errored_cells_alone_and_keeps_the_rest() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use Verdict::{Error, Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "weights");
    let config = folder.join("promptfooconfig.yaml");
    // The first request about dates is refused; every later one is answered.
    let refused = Arc::new(AtomicUsize::new(0));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let count = Arc::clone(&refused);
    let handler = move |received: &Received| {
        let body = received.body.clone();
        if body.contains("dates") && count.fetch_add(1, Ordering::SeqCst) == 0 {
            return Reply::status(400, "application/json", "{\"error\": {\"message\": \"refused once\"}}");
        }
        let answer = WEIGHT_ANSWERS.iter().find(|(_, marker, _)| body.contains(marker)).map_or("?", |(_, _, a)| a);
        Reply::chat_stream(answer, "stop", Some((10, 5)))
    };
    let server = runtime.block_on(WireServer::start_handler(handler)).unwrap();
    let first = eval_config(dir.path(), &config, &server, &[]);
    let first = record(&first);
    let expected = |dates: Verdict| {
        vec![
            ("every assertion must pass".to_string(), vec![Fail]),
            ("threshold reached".to_string(), vec![Pass]),
            ("threshold missed".to_string(), vec![Fail]),
            ("weight zero never fails".to_string(), vec![dates]),
            ("regex and levenshtein".to_string(), vec![Pass]),
        ]
    };
    assert_eq!(verdicts(&first), expected(Error));
    let before = server.received().len();
    let retried = eval_config(dir.path(), &config, &server, &["--retry-errors", "--no-cache"]);
    assert_eq!(retried.status.code(), Some(1), "{}", stderr(&retried));
    assert!(stderr(&retried).contains(&format!("re-running the 1 errored cells of eval {}, 4 kept from it", first.id)));
    let retried = record(&retried);
    assert_eq!(server.received().len(), before + 1, "the errored cell alone is asked again");
    assert_eq!(verdicts(&retried), expected(Pass));
    assert_eq!(retried.totals.len(), 1);
    // The kept cells are the first eval's, answer and all.
    let kept = |r: &tunebench::eval::EvalRecord| r.cells.iter().find(|c| c.row == 0).unwrap().run.clone();
    assert_eq!(format!("{:?}", kept(&retried)), format!("{:?}", kept(&first)));
}

/// `tunebench import promptfoo CONFIG --out DIR` (`args` added).
fn import(data: &Path, config: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    tunebench(data).args(["import", "promptfoo"]).arg(config).arg("--out").arg(out).args(args).output().unwrap()
}

#[test]
fn an_imported_config_runs_the_same_matrix_with_the_same_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    for (name, answers) in [("guide", GUIDE_ANSWERS), ("csv", CSV_ANSWERS), ("weights", WEIGHT_ANSWERS)] {
        let folder = fixture(dir.path(), name);
        let config = folder.join("promptfooconfig.yaml");
        let (_runtime, server) = server(answers);
        let direct = eval_config(dir.path(), &config, &server, &["--no-cache"]);
        let out = dir.path().join(format!("{name}-imported"));
        let imported = import(dir.path(), &config, &out, &[]);
        assert_eq!(imported.status.code(), Some(0), "{}", stderr(&imported));
        assert!(out.join("suite.toml").is_file() && out.join("tests.jsonl").is_file());
        let again = tunebench(dir.path())
            .arg("eval")
            .arg(out.join("suite.toml"))
            .args(["--base-url", &format!("{}/v1", server.url()), "--json", "--no-cache"])
            .env("PF_TEST_KEY", "k")
            .output()
            .unwrap();
        assert_eq!(again.status.code(), direct.status.code(), "{name}: {}", stderr(&again));
        let (direct, again) = (record(&direct), record(&again));
        assert_eq!(verdicts(&again), verdicts(&direct), "{name}");
        let labels = |r: &tunebench::eval::EvalRecord| r.columns.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
        assert_eq!(labels(&again), labels(&direct), "{name}");
        let models = |r: &tunebench::eval::EvalRecord| r.columns.iter().map(|c| c.model_and_mode()).collect::<Vec<_>>();
        assert_eq!(models(&again), models(&direct), "{name}");
        assert_eq!(again.not_evaluated().len(), direct.not_evaluated().len(), "{name}");
    }
    // The big provider's settings live in its prompt files, its key by name alone.
    let big = std::fs::read_to_string(dir.path().join("guide-imported/p2-openai-gpt-4o-2.toml")).unwrap();
    assert!(big.contains("key_env = \"PF_TEST_KEY\""), "{big}");
    assert!(big.contains("max_tokens = 64"), "{big}");
}

#[test]
fn import_never_overwrites_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "weights");
    let config = folder.join("promptfooconfig.yaml");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("tests.jsonl"), "mine\n").unwrap();
    let refused = import(dir.path(), &config, &out, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("tests.jsonl exists already; nothing written (use --force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(out.join("tests.jsonl")).unwrap(), "mine\n");
    let forced = import(dir.path(), &config, &out, &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_eq!(std::fs::read_to_string(out.join("tests.jsonl")).unwrap().lines().count(), 5);
}

const STRUCTURED_ANSWERS: &[(&str, &str, &str)] = &[
    ("*", "Lisbon", "{\"city\": \"Lisbon\", \"country\": \"Portugal\"}"),
    ("*", "Oslo", "{\"city\": \"Oslo\", \"country\": \"Norway\"}"),
    ("*", "Nice", "{\"city\": \"Nice\", \"country\": \"Italy\"}"),
];

#[test]
fn a_raw_prompt_with_a_json_schema_asks_strict_mode_and_compares_json_as_json() {
    use Verdict::{Fail, Pass};
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture(dir.path(), "structured");
    let (_runtime, server) = server(STRUCTURED_ANSWERS);
    let output = eval_config(dir.path(), &folder.join("promptfooconfig.yaml"), &server, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(record.columns[0].label, "extract · openai:chat:gpt-4o-mini");
    assert_eq!(record.columns[0].model_and_mode(), "openai:gpt-4o-mini, json-schema");
    assert_eq!(
        verdicts(&record),
        [
            // Key order differs: JSON is compared as JSON.
            ("exact object".to_string(), vec![Pass]),
            ("schema holds".to_string(), vec![Pass]),
            ("wrong country".to_string(), vec![Fail]),
        ]
    );
    for request in server.received() {
        let format = &request.json()["response_format"];
        assert_eq!(format["type"], "json_schema", "{}", request.body);
        assert_eq!(format["json_schema"]["schema"]["required"], serde_json::json!(["city", "country"]));
    }
}

#[test]
fn a_suite_names_its_prompts_inside_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, "[[columns]]\nlabel = \"x\"\nprompt = \"../outside.toml\"\n").unwrap();
    let output = tunebench(dir.path()).arg("eval").arg(&suite).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("suite.toml"), "{}", stderr(&output));
    std::fs::write(&suite, "[[columns]]\nlabel = \"x\"\nprompt = \"a.toml\"\ncolour = \"red\"\n").unwrap();
    let output = tunebench(dir.path()).arg("eval").arg(&suite).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("suite.toml:4: not a suite: unknown field `colour`"), "{}", stderr(&output));
}
