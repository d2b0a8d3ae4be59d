//! `batch submit`, `status` and `fetch --import` against in-process servers that speak OpenAI's Batch
//! API (file upload, batch create, poll, output and error files) and Anthropic's Message Batches
//! (create, poll, results URL) as documented: what is sent is checked, keys never show.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{json, Value};
use tunebench::provider::wire_server::{Received, Reply, WireServer};

use crate::support::*;

const KEY: &str = "sk-batch-secret-123";

fn tunebench(data_dir: &Path) -> Command {
    let mut command = Command::cargo_bin("tunebench").unwrap();
    command
        .env("TUNEBENCH_DATA_DIR", data_dir)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY);
    command
}

fn run(command: &mut Command) -> (Option<i32>, Value, String) {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "the key leaked: {stdout}{stderr}");
    (output.status.code(), serde_json::from_str(&stdout).unwrap_or(Value::Null), stderr)
}

fn export(dir: &Path, provider: &str) {
    let output = tunebench(dir)
        .args(["batch", "export"])
        .arg(sample("extract-topics"))
        .args(["--provider", provider, "--cases", "--twins", "--model", "m1", "-o"])
        .arg(dir.join("batch.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

fn json_reply(status: u16, body: &Value) -> Reply {
    Reply::status(status, "application/json", &body.to_string())
}

/// A valid answer to an exported request: a JSON array for the json twin, else JSONL.
fn answer_to(request: &Value) -> String {
    let asks_lines = !request["custom_id"].as_str().unwrap().contains("-extract-topics-json-");
    let item = json!({"topic": "inflation", "definition": "Prices rising."});
    if asks_lines {
        format!("{item}\n")
    } else {
        json!([item]).to_string()
    }
}

/// The file part and the purpose of a multipart upload.
fn multipart(request: &Received) -> (String, String) {
    let boundary = request.header("content-type").and_then(|t| t.split("boundary=").nth(1)).expect("a boundary");
    let (mut file, mut purpose) = (String::new(), String::new());
    for part in request.body.split(&format!("--{boundary}")) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else { continue };
        let content = content.strip_suffix("\r\n").unwrap_or(content).to_string();
        if head.contains("name=\"file\"") {
            assert!(head.contains("filename=\"batch.jsonl\""), "{head}");
            file = content;
        } else if head.contains("name=\"purpose\"") {
            purpose = content;
        }
    }
    (file, purpose)
}

#[derive(Default)]
struct OpenAiBatches {
    uploaded: Mutex<String>,
    polls: AtomicUsize,
}

impl OpenAiBatches {
    fn answer(&self, request: &Received) -> Reply {
        if request.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return json_reply(
                401,
                &json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
            );
        }
        let uploaded = self.uploaded.lock().unwrap().clone();
        let requests: Vec<Value> = uploaded.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let batch = |status: &str, done: usize, failed: usize| {
            json!({"id": "batch_abc", "object": "batch", "endpoint": "/v1/chat/completions", "status": status,
                   "input_file_id": "file-in", "completion_window": "24h",
                   "output_file_id": (status == "completed").then_some("file-out"),
                   "error_file_id": (status == "completed").then_some("file-err"),
                   "request_counts": {"total": requests.len(), "completed": done, "failed": failed}})
        };
        match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/v1/files") => {
                let (file, purpose) = multipart(request);
                assert_eq!(purpose, "batch");
                *self.uploaded.lock().unwrap() = file;
                json_reply(
                    200,
                    &json!({"id": "file-in", "object": "file", "purpose": "batch", "filename": "batch.jsonl"}),
                )
            }
            ("POST", "/v1/batches") => {
                let body = request.json();
                assert_eq!(
                    body,
                    json!({"input_file_id": "file-in", "endpoint": "/v1/chat/completions", "completion_window": "24h"})
                );
                json_reply(200, &batch("validating", 0, 0))
            }
            ("GET", "/v1/batches/batch_abc") => match self.polls.fetch_add(1, Ordering::SeqCst) {
                0 => json_reply(200, &batch("in_progress", 1, 0)),
                _ => json_reply(200, &batch("completed", requests.len() - 1, 1)),
            },
            ("GET", "/v1/files/file-out/content") => {
                let lines: Vec<String> = requests[..requests.len() - 1]
                    .iter()
                    .map(|r| {
                        json!({"id": "batch_req_1", "custom_id": r["custom_id"], "error": null,
                               "response": {"status_code": 200, "request_id": "req_1", "body": {
                                   "object": "chat.completion", "created": 1_764_000_000, "model": r["body"]["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": answer_to(r)}}],
                                   "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}}}})
                        .to_string()
                    })
                    .collect();
                Reply::status(200, "application/octet-stream", &(lines.join("\n") + "\n"))
            }
            ("GET", "/v1/files/file-err/content") => {
                let last = requests.last().unwrap();
                let line = json!({"id": "batch_req_2", "custom_id": last["custom_id"], "error": null,
                                  "response": {"status_code": 400, "request_id": "req_2",
                                               "body": {"error": {"message": "max_tokens is too large", "type": "invalid_request_error"}}}});
                Reply::status(200, "application/octet-stream", &format!("{line}\n"))
            }
            _ => json_reply(404, &json!({"error": {"message": format!("no route {}", request.path)}})),
        }
    }
}

fn start(handler: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(WireServer::start_handler(handler)).unwrap();
    (runtime, server)
}

#[test]
fn openai_submit_poll_fetch_and_import() {
    let service = Arc::new(OpenAiBatches::default());
    let shared = Arc::clone(&service);
    let (_runtime, server) = start(move |request| shared.answer(request));
    let base = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), "openai");

    let (code, status, stderr) = run(tunebench(dir.path())
        .args(["batch", "submit"])
        .arg(dir.path().join("batch.jsonl"))
        .args(["--base-url", &base]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!((status["id"].as_str(), status["status"].as_str()), (Some("batch_abc"), Some("validating")), "{status}");
    assert_eq!(*service.uploaded.lock().unwrap(), std::fs::read_to_string(dir.path().join("batch.jsonl")).unwrap());

    let fetch = |dir: &Path| {
        run(tunebench(dir)
            .args(["batch", "fetch", "batch_abc", "--import", "--base-url", &base, "-o"])
            .arg(dir.join("results.jsonl")))
    };
    let (code, status, stderr) = fetch(dir.path());
    assert_eq!(code, Some(1), "not ended yet");
    assert!(stderr.contains("batch batch_abc is in_progress (1 of 4 requests done)"), "{stderr}");
    assert_eq!(status["ended"], false);
    assert!(!dir.path().join("results.jsonl").exists());

    let (code, _, stderr) = fetch(dir.path());
    assert_eq!(code, Some(1), "one request failed: {stderr}");
    assert!(stderr.contains("wrote 4 result lines"), "{stderr}");
    assert!(stderr.contains("imported 4 of 4 requests from 4 lines: 3 ok, 1 failed"), "{stderr}");
    assert!(stderr.contains("HTTP 400: invalid_request_error: max_tokens is too large"), "{stderr}");
    assert!(stderr.contains("warning: no answer: openai batch: request tb"), "{stderr}");
    assert!(!stderr.contains("repaired"), "answers of their own type need no repair: {stderr}");
    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records;
    assert_eq!(history.iter().filter(|r| r.ok).count(), 3);

    let (code, status, _) = run(tunebench(dir.path()).args(["batch", "status", "batch_abc", "--base-url", &base]));
    assert_eq!(code, Some(0));
    assert_eq!(
        status,
        json!({"id": "batch_abc", "engine": "openai", "status": "completed", "ended": true, "total": 4,
                               "done": 4, "failed": 1, "results": ["file-out", "file-err"]})
    );
}

#[test]
fn a_refused_key_and_an_unknown_batch_are_named() {
    let service = Arc::new(OpenAiBatches::default());
    let shared = Arc::clone(&service);
    let (_runtime, server) = start(move |request| shared.answer(request));
    let base = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run(tunebench(dir.path())
        .args(["batch", "status", "batch_abc", "--base-url", &base])
        .env("OPENAI_API_KEY", "sk-wrong"));
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("Incorrect API key") && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
    let (code, _, stderr) = run(tunebench(dir.path()).args(["batch", "status", "batch_zzz", "--base-url", &base]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("HTTP 404") && stderr.contains("/v1/batches/batch_zzz"), "{stderr}");
    let (code, _, stderr) = run(tunebench(dir.path()).args(["batch", "status", "job-1", "--base-url", &base]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("give --provider"), "{stderr}");
}

#[derive(Default)]
struct AnthropicBatches {
    url: Mutex<String>,
    requests: Mutex<Vec<Value>>,
}

impl AnthropicBatches {
    fn answer(&self, request: &Received) -> Reply {
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        let requests = self.requests.lock().unwrap().clone();
        let batch = |status: &str| {
            let results = (status == "ended")
                .then(|| format!("{}/v1/messages/batches/msgbatch_01/results", self.url.lock().unwrap()));
            let done = if status == "ended" { requests.len() } else { 0 };
            json!({"id": "msgbatch_01", "type": "message_batch", "processing_status": status, "results_url": results,
                   "request_counts": {"processing": requests.len() - done, "succeeded": done, "errored": 0, "canceled": 0, "expired": 0},
                   "created_at": "2026-11-24T10:00:00Z", "expires_at": "2026-11-25T10:00:00Z"})
        };
        match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/v1/messages/batches") => {
                let sent = request.json()["requests"].as_array().unwrap().clone();
                let mut created = batch("in_progress");
                created["request_counts"]["processing"] = json!(sent.len());
                *self.requests.lock().unwrap() = sent;
                json_reply(200, &created)
            }
            ("GET", "/v1/messages/batches/msgbatch_01") => json_reply(200, &batch("ended")),
            ("GET", "/v1/messages/batches/msgbatch_01/results") => {
                let lines: Vec<String> = requests
                    .iter()
                    .map(|r| {
                        json!({"custom_id": r["custom_id"], "result": {"type": "succeeded", "message": {
                            "id": "msg_1", "type": "message", "role": "assistant", "model": r["params"]["model"],
                            "content": [{"type": "text", "text": answer_to(r)}], "stop_reason": "end_turn",
                            "usage": {"input_tokens": 80, "output_tokens": 10}}}})
                        .to_string()
                    })
                    .collect();
                Reply::status(200, "application/binary", &(lines.join("\n") + "\n"))
            }
            _ => {
                json_reply(404, &json!({"type": "error", "error": {"type": "not_found_error", "message": "Not found"}}))
            }
        }
    }
}

#[test]
fn anthropic_submit_status_fetch_and_import() {
    let service = Arc::new(AnthropicBatches::default());
    let shared = Arc::clone(&service);
    let (_runtime, server) = start(move |request| shared.answer(request));
    *service.url.lock().unwrap() = server.url();
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), "anthropic");
    let exported: Vec<Value> = std::fs::read_to_string(dir.path().join("batch.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    let (code, status, stderr) = run(tunebench(dir.path())
        .args(["batch", "submit"])
        .arg(dir.path().join("batch.jsonl"))
        .args(["--base-url", &server.url()]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!((status["id"].as_str(), status["total"].as_u64()), (Some("msgbatch_01"), Some(4)), "{status}");
    assert_eq!(*service.requests.lock().unwrap(), exported, "the requests are the exported lines");

    let (code, status, _) =
        run(tunebench(dir.path()).args(["batch", "status", "msgbatch_01", "--base-url", &server.url()]));
    assert_eq!((code, status["ended"].clone(), status["done"].clone()), (Some(0), json!(true), json!(4)));

    let recorded = dir.path().join("transcripts");
    let (code, _, stderr) = run(tunebench(dir.path())
        .args(["batch", "fetch", "msgbatch_01", "--import", "--base-url", &server.url(), "-o"])
        .arg(dir.path().join("results.jsonl"))
        .arg("--record")
        .arg(&recorded));
    // Every request imported; the made-up answers then fail the sample prompt's expected answers (exit 1,
    // as `eval` ends when a cell fails).
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("imported 4 of 4 requests from 4 lines: 4 ok"), "{stderr}");
    assert!(stderr.contains("recorded 4 transcripts"), "{stderr}");

    // The batch's json and jsonl answers compared case by case, as compare does live runs.
    let (code, comparison, stderr) = run(tunebench(dir.path())
        .arg("compare")
        .arg(sample("extract-topics"))
        .args(["--all-cases", "--json", "--transcripts"])
        .arg(recorded.join("extract-topics-json.jsonl"))
        .arg(recorded.join("extract-topics.jsonl")));
    assert_eq!(code, Some(0), "{stderr}");
    let cases = comparison["cases"].as_array().unwrap_or_else(|| panic!("{comparison}"));
    assert_eq!(cases.len(), 2, "{comparison}");
    assert_eq!(cases[0]["agreement"]["rows"][0]["status"], "same", "{}", cases[0]["agreement"]);
}

#[test]
fn an_anthropic_results_url_on_another_origin_gets_no_key() {
    let service = Arc::new(AnthropicBatches::default());
    let shared = Arc::clone(&service);
    let (_runtime, server) = start(move |request| shared.answer(request));
    let (_elsewhere_runtime, elsewhere) = start(|_| Reply::status(200, "application/binary", "\n"));
    // The batch says its results are on another server.
    *service.url.lock().unwrap() = elsewhere.url();
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), "anthropic");
    let (code, _, stderr) = run(tunebench(dir.path())
        .args(["batch", "submit"])
        .arg(dir.path().join("batch.jsonl"))
        .args(["--base-url", &server.url()]));
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = run(tunebench(dir.path())
        .args(["batch", "fetch", "msgbatch_01", "--base-url", &server.url(), "-o"])
        .arg(dir.path().join("results.jsonl")));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not on the base URL's origin") && stderr.contains(&elsewhere.url()), "{stderr}");
    assert_eq!(elsewhere.received(), Vec::new(), "the other origin was sent the request");
}

/// A results download larger than `--max-results-bytes` stops there: nothing is kept and the error
/// names the limit and the flag; within the limit the results are streamed into the file.
#[test]
fn a_results_download_past_its_limit_is_refused_and_nothing_kept() {
    // 40 chunks of 1 KiB, streamed without a length (as an endless download would come).
    let line = format!("{}\n", "x".repeat(1023));
    let served = line.clone();
    let (_runtime, server) = start(move |request| match request.path.as_str() {
        "/v1/batches/batch_big" => json_reply(
            200,
            &json!({"id": "batch_big", "object": "batch", "status": "completed", "output_file_id": "file-out",
                    "request_counts": {"total": 40, "completed": 40, "failed": 0}}),
        ),
        "/v1/files/file-out/content" => {
            (0..40).fold(Reply::chunked("application/octet-stream"), |reply, _| reply.chunk(&served)).end()
        }
        _ => json_reply(404, &json!({"error": {"message": "no route"}})),
    });
    let base = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let (code, _, stderr) = run(tunebench(dir.path())
        .args([
            "batch",
            "fetch",
            "batch_big",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--max-results-bytes",
            "10000",
            "-o",
        ])
        .arg(&results));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("larger than 10000 bytes") && stderr.contains("--max-results-bytes"), "{stderr}");
    assert!(!results.exists(), "nothing kept");
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .count();
    assert_eq!(leftovers, 0, "no temporary file left");

    let (code, _, stderr) = run(tunebench(dir.path())
        .args([
            "batch",
            "fetch",
            "batch_big",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--max-results-bytes",
            "40960",
            "-o",
        ])
        .arg(&results));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("wrote 40 result lines"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&results).unwrap(), line.repeat(40));
}
