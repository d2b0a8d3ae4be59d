//! `tunebench eval --watch`: the binary runs the eval, an edit of the prompt file runs it again, and
//! the second matrix comes with its changes against the first.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::*;

/// Reads lines from `lines` until one contains `wanted`; everything read, or a panic after a minute.
fn read_until(lines: &mpsc::Receiver<String>, wanted: &str, seen: &mut String) {
    loop {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(wanted) {
                    return;
                }
            }
            Err(e) => panic!("no line with {wanted:?} ({e}); so far:\n{seen}"),
        }
    }
}

#[test]
fn an_edit_runs_the_eval_again_and_prints_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    // Before the edit the prompt asks for beta's text in a way the server answers wrongly; the edit
    // (a new marker) gets the right answer.
    let before = PROMPT.replace("BETA-TEXT", "BETA-OLD");
    let prompt = prompt_in(dir.path(), &before);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = vec![
        ("ALPHA-TEXT".to_string(), sse_answer(ALPHA_RIGHT, "stop")),
        ("BETA-OLD".to_string(), sse_answer(BETA_WRONG, "stop")),
        ("BETA-TEXT".to_string(), sse_answer(BETA_RIGHT, "stop")),
    ];
    let server = runtime.block_on(tunebench::provider::wire_server::WireServer::start_routed(routes)).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env("TUNEBENCH_CACHE_DIR", dir.path().join("cache"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    read_until(&lines, "== eval run 1", &mut seen);
    read_until(&lines, "[1] 1/2 passed", &mut seen);
    let first = seen.clone();
    assert!(first.lines().any(|l| l.starts_with("beta") && l.contains("fail")), "{first}");

    std::fs::write(&prompt, PROMPT).unwrap();
    read_until(&lines, "== eval run 2", &mut seen);
    read_until(&lines, "against eval", &mut seen);
    let _ = child.kill();
    let _ = child.wait();
    let second = &seen[first.len()..];
    assert!(second.lines().any(|l| l.starts_with("beta") && l.contains("pass 1.00 ▲")), "{second}");
    assert!(second.contains("1 improved, 0 regressed"), "{second}");
    assert_eq!(server.received().len(), 4, "two runs of two cases");
}
