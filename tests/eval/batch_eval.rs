//! `eval --batch` against an in-process server speaking OpenAI's Batch API and chat completions
//! alike: the whole round (submit, status in_progress then completed, fetch, import) scores the
//! same as the same eval run live on the same answers; `--no-wait` then `--batch-resume`; a failed
//! batch; a provider without batches; the prompt's `key_env`; ctrl-c while waiting.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tunebench::eval::score::Verdict;
use tunebench::provider::wire_server::{Received, Reply, WireServer};

use crate::support::*;

const KEY: &str = "sk-team-key-42";

/// How the fake batch ends.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    /// `in_progress` on the first look, `completed` after.
    Completes,
    /// `failed` (validation), no output file.
    Fails,
    /// `in_progress` for ever.
    Never,
}

/// OpenAI's chat completions (streamed, live evals) and Batch API (upload, create, poll, output
/// file) on one server; every answer chosen by the case's marker text, as [`server`] does.
struct Service {
    ending: Ending,
    uploaded: Mutex<String>,
    polls: AtomicUsize,
}

fn json_reply(status: u16, body: &Value) -> Reply {
    Reply::status(status, "application/json", &body.to_string())
}

fn answer_for(text: &str) -> &'static str {
    if text.contains("ALPHA-TEXT") {
        ALPHA_RIGHT
    } else {
        BETA_WRONG
    }
}

impl Service {
    fn new(ending: Ending) -> Arc<Self> {
        Arc::new(Self { ending, uploaded: Mutex::new(String::new()), polls: AtomicUsize::new(0) })
    }

    fn answer(&self, request: &Received) -> Reply {
        if request.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return json_reply(401, &json!({"error": {"message": "Incorrect API key provided"}}));
        }
        let uploaded = self.uploaded.lock().unwrap().clone();
        let lines: Vec<Value> = uploaded.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let batch = |status: &str, done: usize| {
            let completed = status == "completed";
            let errors = (status == "failed")
                .then(|| json!({"data": [{"line": 1, "message": "model m-unknown does not exist"}]}));
            json!({"id": "batch_abc", "object": "batch", "status": status, "input_file_id": "file-in",
                   "output_file_id": completed.then_some("file-out"), "errors": errors,
                   "request_counts": {"total": lines.len(), "completed": done, "failed": 0}})
        };
        match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/v1/chat/completions") => sse_answer(answer_for(&request.body), "stop"),
            ("POST", "/v1/files") => {
                *self.uploaded.lock().unwrap() = uploaded_file(request);
                json_reply(200, &json!({"id": "file-in", "object": "file", "purpose": "batch"}))
            }
            ("POST", "/v1/batches") => json_reply(200, &batch("validating", 0)),
            ("GET", "/v1/batches/batch_abc") => {
                let poll = self.polls.fetch_add(1, Ordering::SeqCst);
                match self.ending {
                    Ending::Completes if poll > 0 => json_reply(200, &batch("completed", lines.len())),
                    Ending::Fails => json_reply(200, &batch("failed", 0)),
                    _ => json_reply(200, &batch("in_progress", 0)),
                }
            }
            ("GET", "/v1/files/file-out/content") => {
                let results: Vec<String> = lines
                    .iter()
                    .map(|line| {
                        let content = answer_for(&line["body"].to_string());
                        json!({"id": "batch_req", "custom_id": line["custom_id"], "error": null,
                               "response": {"status_code": 200, "body": {
                                   "object": "chat.completion", "model": line["body"]["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}}}})
                        .to_string()
                    })
                    .collect();
                Reply::status(200, "application/octet-stream", &(results.join("\n") + "\n"))
            }
            _ => json_reply(404, &json!({"error": {"message": format!("no route {}", request.path)}})),
        }
    }
}

/// The file part of a multipart upload.
fn uploaded_file(request: &Received) -> String {
    let boundary = request.header("content-type").and_then(|t| t.split("boundary=").nth(1)).expect("a boundary");
    let part = request.body.split(&format!("--{boundary}")).find(|part| part.contains("name=\"file\"")).unwrap();
    let (_, content) = part.split_once("\r\n\r\n").unwrap();
    content.strip_suffix("\r\n").unwrap_or(content).to_string()
}

fn start(service: &Arc<Service>) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let shared = Arc::clone(service);
    let server = runtime.block_on(WireServer::start_handler(move |request| shared.answer(request))).unwrap();
    (runtime, server)
}

/// `tunebench eval PROMPT --provider openai --base-url URL --model m1 ARGS...`, the key in OPENAI_API_KEY.
fn eval_on(dir: &Path, prompt: &Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(dir)
        .env("OPENAI_API_KEY", KEY)
        .arg("eval")
        .arg(prompt)
        .args(["--provider", "openai", "--base-url", &base_url(server), "--model", "m1"])
        .args(args)
        .output()
        .unwrap()
}

/// Each cell as the record scores it: case, verdict and the whole score.
fn scores(record: &tunebench::eval::EvalRecord) -> Vec<(Option<String>, Value)> {
    record.cells.iter().map(|c| (c.case.clone(), serde_json::to_value(&c.score).unwrap())).collect()
}

fn batch_requests(server: &WireServer) -> Vec<String> {
    server
        .received()
        .iter()
        .filter(|r| !r.path.ends_with("/chat/completions"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn a_batch_eval_scores_as_the_same_eval_run_live() {
    let service = Service::new(Ending::Completes);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);

    let live = eval_on(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
    assert_eq!(live.status.code(), Some(1), "beta fails: {}", stderr(&live));
    let live = record(&live);

    let (junit, json) = (dir.path().join("batch.xml"), dir.path().join("batch.json"));
    let batched = eval_on(
        dir.path(),
        &prompt,
        &server,
        &["--batch", "-o", junit.to_str().unwrap(), "-o", json.to_str().unwrap()],
    );
    assert_eq!(batched.status.code(), Some(1), "beta fails as it does live: {}", stderr(&batched));
    let text = stderr(&batched);
    assert!(text.contains("submitted 2 requests as openai batch batch_abc"), "{text}");
    assert!(text.contains("batch batch_abc: in_progress (0 of 2 requests done)"), "{text}");
    assert!(text.contains("batch batch_abc: completed (2 of 2 requests done)"), "{text}");
    assert!(String::from_utf8_lossy(&batched.stdout).contains("1/2 passed"), "the matrix is printed");
    let batched: tunebench::eval::EvalRecord = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    assert_eq!(scores(&batched), scores(&live), "the batch's cells are scored as the live eval's");
    assert_eq!(batched.cells.iter().map(|c| c.score.verdict).collect::<Vec<_>>(), vec![Verdict::Pass, Verdict::Fail]);
    assert_eq!(batched.batch.as_deref(), Some(batched.cells[0].run.batch.as_deref().unwrap()[2..8].as_ref()));
    assert_eq!((batched.columns[0].prompt.as_str(), batched.columns[0].model.as_str()), ("definitions", "m1"));
    assert_eq!(
        batch_requests(&server),
        vec![
            "POST /v1/files",
            "POST /v1/batches",
            "GET /v1/batches/batch_abc",
            "GET /v1/batches/batch_abc",
            "GET /v1/files/file-out/content"
        ]
    );
    // Saved as any eval is: `eval list` shows it, and the JUnit report was written.
    let listed = tunebench(dir.path()).args(["eval", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(listed.to_string().contains(&batched.id), "{listed}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failures = doc.descendants().filter(|n| n.has_tag_name("failure")).count();
    assert_eq!(failures, 1, "{xml}");
}

#[test]
fn no_wait_prints_the_id_and_resume_scores_it() {
    let service = Service::new(Ending::Completes);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);

    let submitted = eval_on(dir.path(), &prompt, &server, &["--batch", "--no-wait"]);
    assert_eq!(submitted.status.code(), Some(0), "{}", stderr(&submitted));
    assert_eq!(String::from_utf8_lossy(&submitted.stdout), "batch_abc\n");
    assert!(stderr(&submitted).contains("resume with: tunebench eval --batch-resume batch_abc"));
    assert_eq!(batch_requests(&server), vec!["POST /v1/files", "POST /v1/batches"], "nothing waited for");

    // Resumed from another place: no prompt, no provider flags; the endpoints are remembered.
    let resumed = tunebench(dir.path())
        .env("OPENAI_API_KEY", KEY)
        .args(["eval", "--batch-resume", "batch_abc", "--json"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(1), "beta fails: {}", stderr(&resumed));
    let record = record(&resumed);
    assert_eq!(record.cells.iter().map(|c| c.score.verdict).collect::<Vec<_>>(), vec![Verdict::Pass, Verdict::Fail]);
    assert_eq!(record.cells[1].case.as_deref(), Some(BETA));

    let unknown = tunebench(dir.path()).args(["eval", "--batch-resume", "batch_zzz"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("--batch-resume \"batch_zzz\": no batch of that id"), "{}", stderr(&unknown));
}

#[test]
fn a_failed_batch_is_a_clear_error() {
    let service = Service::new(Ending::Fails);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output = eval_on(dir.path(), &prompt, &server, &["--batch"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("openai batch batch_abc ended failed with no results")
            && text.contains("line 1: model m-unknown does not exist"),
        "{text}"
    );
}

#[test]
fn a_provider_without_batches_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let output =
        tunebench(dir.path()).arg("eval").arg(&prompt).args(["--provider", "ollama", "--batch"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("provider ollama has no batch engine"), "{}", stderr(&output));
}

#[test]
fn the_prompts_key_env_holds_the_batch_key() {
    let service = Service::new(Ending::Completes);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let text = PROMPT.replace("[variables]", "[provider]\nkey_env = \"TEAM_OPENAI_KEY\"\n\n[variables]");
    let prompt = prompt_in(dir.path(), &text);
    let output = tunebench(dir.path())
        .env("TEAM_OPENAI_KEY", KEY)
        .env("OPENAI_API_KEY", "sk-the-wrong-one")
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--model", "m1", "--batch", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "beta fails, every request was let in: {}", stderr(&output));
    assert_eq!(record(&output).cells.len(), 2);
    assert!(server.received().iter().all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}"))));
    // `batch status` reads the key from the variable the submitted batch's prompt names.
    let status = tunebench(dir.path())
        .env("TEAM_OPENAI_KEY", KEY)
        .env("OPENAI_API_KEY", "sk-the-wrong-one")
        .args(["batch", "status", "batch_abc"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_waiting_and_names_the_batch_to_resume() {
    let service = Service::new(Ending::Never);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env("OPENAI_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .arg("eval")
        .arg(&prompt)
        .args(["--provider", "openai", "--base-url", &base_url(&server), "--model", "m1", "--batch"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: at most 30 s for the first look at the batch.
    for _ in 0..300 {
        if service.polls.load(Ordering::SeqCst) > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(service.polls.load(Ordering::SeqCst) > 0, "the batch was never looked at");
    let sent = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(stderr(&output).contains("Resume with: tunebench eval --batch-resume batch_abc"), "{}", stderr(&output));
    assert!(!batch_requests(&server).iter().any(|r| r.contains("file-out")), "no results were fetched");
}

/// `--baseline last` means one thing on every path: with no earlier eval of the prompt, `eval --batch`
/// is bad input before anything is submitted; after a live eval, the batch eval is compared with it,
/// and `--from-batch` with the newest eval that is not the batch's own.
#[test]
fn baseline_last_is_the_same_eval_live_batched_and_from_the_batch() {
    let service = Service::new(Ending::Completes);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);

    let refused = eval_on(dir.path(), &prompt, &server, &["--batch", "--baseline", "last"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--baseline last: no earlier eval of these prompt files"),
        "{}",
        stderr(&refused)
    );
    assert!(server.received().is_empty(), "nothing was sent before the baseline was found");

    let live = eval_on(dir.path(), &prompt, &server, &["--json", "--no-cache"]);
    let live = record(&live);
    let batched = eval_on(dir.path(), &prompt, &server, &["--batch", "--baseline", "last", "--json"]);
    assert_eq!(batched.status.code(), Some(1), "{}", stderr(&batched));
    let batched = record(&batched);
    let delta = batched.delta.as_ref().expect("compared with the live eval");
    assert_eq!(delta.baseline, live.id, "{delta:?}");

    let tag = batched.batch.clone().unwrap();
    let shown =
        tunebench(dir.path()).args(["eval", "--from-batch", &tag, "--baseline", "last", "--json"]).output().unwrap();
    let shown = record(&shown);
    assert_eq!(shown.id, batched.id);
    assert_eq!(shown.delta.as_ref().map(|d| d.baseline.clone()), Some(live.id), "never the batch's own eval");
}

/// `eval --batch --cases rows.jsonl -o rows.jsonl`: the report would replace the dataset; refused
/// before anything is submitted, the dataset untouched.
#[test]
fn a_batch_report_never_replaces_its_dataset() {
    let service = Service::new(Ending::Completes);
    let (_runtime, server) = start(&service);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let rows = dir.path().join("rows.jsonl");
    let text = "{\"name\": \"alpha\", \"text\": \"ALPHA-TEXT\"}\n";
    std::fs::write(&rows, text).unwrap();
    let rows_arg = rows.to_str().unwrap();
    let refused = eval_on(dir.path(), &prompt, &server, &["--batch", "--cases", rows_arg, "-o", rows_arg]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(&rows).unwrap(), text);
    assert!(server.received().is_empty(), "nothing was submitted");
}
