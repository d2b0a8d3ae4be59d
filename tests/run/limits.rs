//! The client's own limits against servers that do not keep theirs (issue 16): an endless stream
//! that ignores `max_tokens`, an endless stream with no `max_tokens`, and a server that trickles a
//! byte now and then so no read timeout trips. Each run ends by itself, keeps what came, and says why.

use std::time::Duration;

use serde_json::json;
use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::wire_server::{chunk_frame, Reply, Step};
use tunebench::provider::FinishReason;

use crate::support::*;

fn chunk(content: &str) -> String {
    let event = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
    format!("data: {event}\n\n")
}

/// A stream that sends one valid JSONL line, then `line` again and again, forever (every `every`).
fn endless(line: &str, every: Duration) -> Reply {
    let first = "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n";
    Reply::chunked("text/event-stream")
        .chunk(chunk(first))
        .then(Step::Repeat { bytes: chunk_frame(chunk(line).as_bytes()), every })
}

fn settings(more: ProviderSettings) -> ProviderSettings {
    ProviderSettings { name: Some("openai".into()), ..more }
}

#[tokio::test]
async fn an_endless_answer_is_cut_at_max_tokens_as_we_count_them() {
    let server =
        serve(vec![endless("{\"topic\": \"more\", \"definition\": \"again and again\"}\n", Duration::ZERO)]).await;
    let plan = plan_with(
        &sample("extract-topics"),
        None,
        &settings(ProviderSettings { max_tokens: Some(50), max_repeats: Some(0), ..Default::default() }),
        None,
    );
    let (record, events) = run(openai(&server).as_ref(), &plan).await;
    let turn = &record.turns[0];
    assert_eq!(turn.finish_reason, Some(FinishReason::Length));
    assert!(record.truncated);
    // 50 + 12 + 16 = 78 tokens allowed: a few hundred bytes, not megabytes.
    assert!(turn.output.len() < 1000, "{} bytes kept", turn.output.len());
    assert!(turn.output.starts_with("{\"topic\": \"inflation\""));
    let cut = turn.cut_by_client.as_deref().unwrap_or_default();
    assert!(cut.contains("max_tokens 50") && cut.contains("78 allowed"), "{cut}");
    assert!(record.warnings.iter().any(|w| w.starts_with("cut off by the client")), "{:?}", record.warnings);
    assert_eq!(streamed(&events), turn.output, "every kept delta was shown");
    // The connection was closed: the server saw the client go.
    assert!(server.wait_for_client_closes(1, Duration::from_secs(10)).await);
}

#[tokio::test]
async fn an_endless_answer_under_a_generous_max_tokens_stops_at_the_answer_cap() {
    let server = serve(vec![endless(&"{\"topic\": \"x\", \"definition\": \"y\"}\n".repeat(20), Duration::ZERO)]).await;
    let limits = ProviderSettings {
        max_answer_bytes: Some(64 * 1024),
        max_tokens: Some(u32::MAX / 2),
        max_repeats: Some(0),
        ..Default::default()
    };
    let plan = plan_with(&sample("extract-topics"), None, &settings(limits), None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    let turn = &record.turns[0];
    assert!(turn.output.len() <= 64 * 1024 && turn.output.len() > 60 * 1024, "{} bytes", turn.output.len());
    assert_eq!(turn.finish_reason, Some(FinishReason::Length));
    let cut = turn.cut_by_client.as_deref().unwrap_or_default();
    assert!(cut.contains("passed 65536 bytes") && cut.contains("--max-answer-bytes"), "{cut}");
    // Whole lines judged; the repeated ones are reported and not counted as items.
    let tunebench::output::Report::Jsonl(report) = &turn.parse else { panic!() };
    assert!(report.summary.skipped > 1000, "{:?}", report.summary);
    assert_eq!(record.result.as_array().map(Vec::len), Some(2), "{}", record.result);
}

#[tokio::test]
async fn a_trickling_server_meets_the_run_deadline_and_the_partial_answer_stays() {
    // One small piece every 100 ms: never a stall for a 5 s read timeout, never an end.
    let server =
        serve(vec![endless("{\"topic\": \"drip\", \"definition\": \"drop\"}\n", Duration::from_millis(100))]).await;
    let limits = ProviderSettings { timeout: Some(1.0), max_repeats: Some(0), ..Default::default() };
    let plan = plan_with(&sample("extract-topics"), None, &settings(limits), Some(3));
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    assert!(record.cancelled && !record.ok);
    assert_eq!(record.turns.len(), 1, "no retry after the deadline");
    assert!(record.duration_ms < 5000, "{} ms", record.duration_ms);
    assert!(
        record.warnings.iter().any(|w| w.contains("deadline of 1 s") && w.contains("--timeout")),
        "{:?}",
        record.warnings
    );
    let output = &record.turns[0].output;
    assert!(output.starts_with("{\"topic\": \"inflation\"") && output.contains("drip"), "{output}");
    assert!(record.result.as_array().is_some_and(|items| items.len() >= 2), "{}", record.result);
}

#[test]
fn bad_limits_are_input_errors_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, says) in [
        ("--timeout", "0", "--timeout 0 is not a number of seconds above 0"),
        ("--timeout", "-1", "--timeout -1 is not a number of seconds above 0"),
        ("--max-answer-bytes", "0", "max_answer_bytes is 0"),
        ("--max-items", "0", "max_items is 0"),
        ("--repeat-penalty", "0", "repeat_penalty 0 (from --repeat-penalty) is not a number above 0"),
        ("--repeat-penalty", "NaN", "repeat_penalty NaN (from --repeat-penalty) is not a number above 0"),
    ] {
        let output = tunebench(dir.path())
            .args([
                "run",
                sample("extract-topics").to_str().unwrap(),
                "--provider",
                "openai",
                &format!("{flag}={value}"),
            ])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_cli_run_keeps_the_partial_answer_in_the_history() {
    let server =
        serve(vec![endless("{\"topic\": \"drip\", \"definition\": \"drop\"}\n", Duration::from_millis(20))]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .arg("run")
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "--max-repeats", "0", "--base-url", &format!("{}/v1", server.url())])
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The answer streams to stdout: wait until a few trickled lines were shown, then press ctrl-c.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let pid = child.id() as i32;
    let shown = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut shown = String::new();
        while shown.matches("drip").count() < 3 && stdout.read_line(&mut shown).is_ok_and(|n| n > 0) {}
        // SAFETY: sends a signal to our own child process, whose id we hold.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        shown
    });
    let shown = tokio::time::timeout(Duration::from_secs(30), shown).await.expect("the answer streamed").unwrap();
    assert!(shown.matches("drip").count() >= 3, "{shown}");
    let output = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled by SIGINT"), "{stderr}");
    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap();
    assert_eq!(history.records.len(), 1);
    let record = &history.records[0];
    assert!(record.cancelled);
    let output = &record.turns[0].output;
    assert!(output.starts_with("{\"topic\": \"inflation\"") && output.matches("drip").count() >= 3, "{output}");
}

/// A pipe whose buffer is already full: the first write to it blocks until someone reads.
#[cfg(unix)]
fn full_pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let (reader, mut writer) = std::io::pipe().unwrap();
    let fd = writer.as_raw_fd();
    // SAFETY: flags of a descriptor we own, set and then restored.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }, 0);
    loop {
        match writer.write(&[b'#'; 4096]) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("filling the pipe: {e}"),
        }
    }
    // The child's writes must block, not fail: the flag belongs to the pipe, which it shares.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) }, 0);
    (reader, writer)
}

/// A run whose answer goes to a pipe nobody reads is stuck in a write, in the middle of its runs,
/// never reaching an await point again: SIGTERM still ends it, with 143.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_run_stuck_writing_its_answer() {
    let server =
        serve(vec![endless("{\"topic\": \"drip\", \"definition\": \"drop\"}\n", Duration::from_millis(20))]).await;
    let dir = tempfile::tempdir().unwrap();
    let (_reader, writer) = full_pipe();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .arg("run")
        .arg(sample("extract-topics"))
        .args(["--provider", "openai", "--max-repeats", "0", "--base-url", &format!("{}/v1", server.url())])
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env_remove("OPENAI_API_KEY")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run is under way once the server has its request.
    for _ in 0..300 {
        if !server.received().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(server.received().len(), 1, "the run never asked the server");
    // SAFETY: sends a signal to our own child process, whose id we hold.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    // Liveness, not speed: it must end, whenever within half a minute.
    let mut status = None;
    for _ in 0..300 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("still running 30 s after SIGTERM, stuck writing to a full pipe");
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
}
