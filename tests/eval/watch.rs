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
    // Two runs of two cases, but alpha's request did not change: the second run takes it from the cache.
    assert_eq!(server.received().len(), 3, "two cases, then only the edited one");
}

/// `eval --watch` whose prompt became a FIFO nobody writes to: the bounded reader refuses it (never
/// blocks in open() or read()), says so, keeps watching, and ctrl-c still ends it with 130. (A command
/// stuck in a blocking write ends on a signal too: tests/run's full-pipe test.)
#[cfg(unix)]
#[test]
fn ctrl_c_ends_a_watch_whose_prompt_became_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env("TUNEBENCH_CACHE_DIR", dir.path().join("cache"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--watch"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    read_until(&lines, "watching", &mut seen);
    // The prompt becomes a FIFO: were it opened and read, the watch loop would wait for ever.
    std::fs::remove_file(&prompt).unwrap();
    let fifo = std::ffi::CString::new(prompt.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    read_until(&lines, "not a regular file", &mut seen);
    // SAFETY: sends a signal to our own child process, whose id we hold.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    // Liveness, not speed: it must end, whenever within half a minute.
    let mut status = None;
    for _ in 0..300 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("still running 30 s after ctrl-c, stuck reading the FIFO; stderr:\n{seen}");
    };
    assert_eq!(status.code(), Some(130), "{status:?}; stderr:\n{seen}");
}
