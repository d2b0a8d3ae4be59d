//! Graded checks end to end through `tunebench eval` on the in-process wire server: a `command` check
//! running a real Python script (the sample's, and scripts that print garbage, fail, hang or look for
//! API keys), and a command that does not exist refused before any model call.

use std::path::Path;

use serde_json::Value;
use tunebench::eval::score::Verdict;
use tunebench::provider::wire_server::WireServer;

use super::support::{base_url, eval, record, sse_answer, stderr, tunebench};

/// A server answering every request holding a route's text with its answer.
fn server(routes: &[(&str, &str)]) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = routes.iter().map(|(text, answer)| (text.to_string(), sse_answer(answer, "stop"))).collect();
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

fn samples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts")
}

/// Each cell's case, verdict, reason and first check's result.
fn cells(output: &std::process::Output) -> Vec<(String, Verdict, String, Value)> {
    let record = record(output);
    record
        .cells
        .iter()
        .map(|c| {
            let check = c.score.checks.first().map(|c| serde_json::to_value(c).unwrap()).unwrap_or(Value::Null);
            (c.case.clone().unwrap_or_default(), c.score.verdict, c.score.reason.clone(), check)
        })
        .collect()
}

#[test]
fn the_sample_python_check_passes_a_grounded_answer_and_fails_an_invented_city_with_its_reason() {
    let (_runtime, server) = server(&[
        ("Dover to Calais", r#"{"cities": ["Dover", "Calais"]}"#),
        ("band plays Lisbon", r#"{"cities": ["Lisbon", "Porto", "Paris"]}"#),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let output = eval(dir.path(), &samples().join("find-cities.toml"), &server, &["--json", "--no-cache"]);
    let cells = cells(&output);
    assert_eq!(cells.len(), 2, "{}", stderr(&output));
    let (case, verdict, reason, check) = &cells[0];
    assert_eq!((case.as_str(), *verdict), ("ferry", Verdict::Pass), "{reason}");
    assert_eq!(check["passed"], true);
    assert_eq!(check["graded"]["score"], 1.0);
    let (case, verdict, reason, check) = &cells[1];
    assert_eq!((case.as_str(), *verdict), ("tour", Verdict::Fail), "{reason}");
    assert!(reason.contains("every city is in the sentence"), "{reason}");
    assert_eq!(check["passed"], false);
    let score = check["graded"]["score"].as_f64().unwrap();
    assert!((score - 2.0 / 3.0).abs() < 1e-9, "{check}");
    assert_eq!(check["graded"]["reason"], "not in the sentence: Paris");
    assert!(check["message"].as_str().unwrap().contains("score 0.67: not in the sentence: Paris"), "{check}");
}

/// A prompt in `dir` whose cases each run one script of `scripts` (name, Python source) as a
/// `command` check, with `timeout` seconds (30 for all but `hang`).
fn prompt_with_scripts(dir: &Path, scripts: &[(&str, &str)], hang_timeout: f64) -> std::path::PathBuf {
    let mut text = String::from(
        "id = \"graded\"\nresponse_type = \"json\"\ntemplate = \"Answer {{case}} as JSON\"\n\n[variables]\ncase = \"none\"\n",
    );
    for (name, source) in scripts {
        let timeout = if *name == "hang" { hang_timeout } else { 30.0 };
        std::fs::write(dir.join(format!("{name}.py")), source).unwrap();
        text.push_str(&format!(
            "\n[[cases]]\nname = \"{name}\"\nvariables = {{ case = \"{name}\" }}\n[[cases.checks]]\nkind = \"command\"\nname = \"{name} check\"\ncommand = [\"python3\", \"{name}.py\"]\ntimeout = {timeout}\n"
        ));
    }
    let path = dir.join("graded.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_script_that_prints_garbage_fails_or_hangs_makes_its_cell_an_error_naming_the_check() {
    let scripts = [
        ("garbage", "print('looks fine to me')\n"),
        ("nopass", "print('{\"score\": 1}')\n"),
        ("crash", "import sys\nsys.stderr.write('cannot read the answer')\nsys.exit(4)\n"),
        ("hang", "import time\ntime.sleep(60)\nprint('{\"pass\": true}')\n"),
        ("good", "import json, sys\nq = json.load(sys.stdin)\nprint(json.dumps({'pass': q['answer'] == {'ok': True}, 'reason': q['case']}))\n"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_with_scripts(dir.path(), &scripts, 1.0);
    let (_runtime, server) = server(&[("Answer", r#"{"ok": true}"#)]);
    let output = eval(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
    let cells = cells(&output);
    assert_eq!(cells.len(), 5, "{}", stderr(&output));
    let reason_of = |name: &str| {
        let (_, verdict, reason, check) = cells.iter().find(|c| c.0 == name).unwrap().clone();
        (verdict, reason, check)
    };
    for (name, says) in [
        ("garbage", "printed \"looks fine to me\", not a verdict"),
        ("nopass", "the verdict has no `pass`"),
        ("crash", "python3 crash.py exited with 4: cannot read the answer"),
        ("hang", "python3 hang.py took longer than its timeout of 1 s and was stopped"),
    ] {
        let (verdict, reason, check) = reason_of(name);
        assert_eq!(verdict, Verdict::Error, "{name}: {reason}");
        assert!(reason.contains(&format!("{name} check")) && reason.contains(says), "{name}: {reason}");
        assert_eq!((check["passed"].clone(), check["not_evaluated"].clone()), (Value::Bool(false), Value::Bool(true)));
    }
    let (verdict, reason, check) = reason_of("good");
    assert_eq!(verdict, Verdict::Pass, "{reason}");
    assert_eq!(check["graded"]["reason"], "good");
}

#[test]
fn a_command_check_gets_no_api_key_in_its_environment() {
    let script = "import json, os\nkeys = sorted(k for k in os.environ if k.endswith('API_KEY'))\nprint(json.dumps({'pass': not keys, 'reason': ' '.join(keys) or 'no keys'}))\n";
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_with_scripts(dir.path(), &[("keys", script)], 10.0);
    let (_runtime, server) = server(&[("Answer", r#"{"ok": true}"#)]);
    let output = tunebench(dir.path())
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--json", "--no-cache"])
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("SOME_SERVICE_API_KEY", "secret")
        .env("GRADER_VISIBLE", "yes")
        .output()
        .unwrap();
    let cells = cells(&output);
    assert_eq!(cells.len(), 1, "{}", stderr(&output));
    assert_eq!(cells[0].1, Verdict::Pass, "{}", cells[0].2);
    assert_eq!(cells[0].3["graded"]["reason"], "no keys");
}

#[test]
fn a_command_that_does_not_exist_is_an_input_error_naming_the_file_and_line_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let missing = |command: &str| {
        format!("id = \"graded\"\nresponse_type = \"json\"\ntemplate = \"Answer as JSON\"\n\n[[checks]]\nkind = \"command\"\ncommand = {command}\n")
    };
    let prompt = dir.path().join("graded.toml");
    let (_runtime, server) = server(&[("Answer", r#"{"ok": true}"#)]);
    for (command, says) in [
        (r#"["python3", "checks/missing.py"]"#, "argument \"checks/missing.py\": \"checks/missing.py\" is not found"),
        (r#"["./checks/missing.py"]"#, "program \"./checks/missing.py\" is not found"),
        (r#"["no-such-grader-program"]"#, "program \"no-such-grader-program\" is not found on PATH"),
    ] {
        std::fs::write(&prompt, missing(command)).unwrap();
        let output = eval(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let said = stderr(&output);
        assert!(said.contains("graded.toml:5") && said.contains("`command`") && said.contains(says), "{said}");
    }
    assert!(server.received().is_empty(), "no model was called");

    let outside = "id = \"graded\"\nresponse_type = \"json\"\ntemplate = \"Answer as JSON\"\n\n[[checks]]\nkind = \"command\"\ncommand = [\"python3\", \"../escape.py\"]\n";
    std::fs::write(&prompt, outside).unwrap();
    let output = eval(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("argument \"../escape.py\" reaches outside the prompt's folder"),
        "{}",
        stderr(&output)
    );
}

/// SIGTERM to an eval whose `command` check started a program of its own: tunebench ends the check's
/// whole process group on its way out, so nothing it started keeps running under init.
#[test]
fn sigterm_ends_a_check_and_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let script = format!(
        "import subprocess, time\np = subprocess.Popen(['sleep', '300'])\nopen({:?}, 'w').write(str(p.pid))\ntime.sleep(300)\n",
        pid_file.display().to_string()
    );
    let prompt = prompt_with_scripts(dir.path(), &[("hang", script.as_str())], 600.0);
    let (_runtime, server) = server(&[("Answer", r#"{"ok": true}"#)]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env("TUNEBENCH_CACHE_DIR", dir.path().join("cache"))
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--no-cache"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let grandchild: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse().ok()) {
            break pid;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the check never started its program");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: a plain kill(2) of the process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    // The program the check started is gone (or a zombie waiting for init to reap it).
    let gone = || {
        std::fs::read_to_string(format!("/proc/{grandchild}/status"))
            .map_or(true, |s| s.lines().any(|l| l.starts_with("State:") && l.contains('Z')))
    };
    let waited = std::time::Instant::now();
    while !gone() && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(gone(), "sleep {grandchild}, started by the check, still runs after tunebench ended");
}
