//! Helpers: a jsonl prompt of six cases whose answers the server routes by case and by the marker in
//! the candidate's system prompt, and a proposer scripted answer by answer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tunebench::provider::wire_server::{Received, Reply, WireServer};

/// Six cases; the baseline answers cases 1–3 right and 4–6 wrong. A comment line and odd spacing
/// that `--apply` must keep.
pub const PROMPT: &str = concat!(
    r#"# A prompt to optimize: keep this comment.
id = "labels"
response_type = "jsonl"
system = "Name the entity of the text."
template = "Text: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}'''

[eval]
match = "entity"

"#,
    include_str!("../fixtures/optimize/six_cases.toml")
);

pub const CASES: [&str; 6] = ["c1", "c2", "c3", "c4", "c5", "c6"];

/// Whether a candidate marked `marker` answers case `k` (1–6) right; `right_on` lists them.
#[derive(Clone)]
pub struct Route {
    pub marker: &'static str,
    pub right_on: Vec<usize>,
}

/// The server: proposer requests (their system prompt says "You improve prompts") answered from
/// `proposals` in order, candidates' requests by their marker (the first route whose marker the
/// request carries; the baseline otherwise: right on 1–3).
pub struct Scripted {
    pub runtime: tokio::runtime::Runtime,
    pub server: WireServer,
    pub proposer_requests: Arc<AtomicUsize>,
    pub candidate_requests: Arc<AtomicUsize>,
    pub proposer_contexts: Arc<Mutex<Vec<String>>>,
}

pub fn scripted(proposals: Vec<String>, routes: Vec<Route>) -> Scripted {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let proposer_requests = Arc::new(AtomicUsize::new(0));
    let candidate_requests = Arc::new(AtomicUsize::new(0));
    let proposer_contexts = Arc::new(Mutex::new(Vec::new()));
    let (asked, ran, contexts) = (proposer_requests.clone(), candidate_requests.clone(), proposer_contexts.clone());
    let handler = move |request: &Received| -> Reply {
        let body = request.body.clone();
        if body.contains("You improve prompts") {
            let n = asked.fetch_add(1, Ordering::SeqCst);
            contexts.lock().unwrap().push(body.clone());
            let answer = proposals.get(n).cloned().unwrap_or_else(|| "no more proposals".into());
            return Reply::chat_stream(&answer, "stop", Some((100, 20)));
        }
        ran.fetch_add(1, Ordering::SeqCst);
        let case = (1..=6).find(|k| body.contains(&format!("CASE-{k}"))).unwrap_or(0);
        let right_on =
            routes.iter().find(|r| body.contains(r.marker)).map_or_else(|| vec![1, 2, 3], |r| r.right_on.clone());
        let entity = if right_on.contains(&case) { format!("E-{case}") } else { format!("WRONG-{case}") };
        Reply::chat_stream(&format!("{{\"entity\": \"{entity}\"}}\n"), "stop", Some((30, 12)))
    };
    let server = runtime.block_on(WireServer::start_handler(handler)).unwrap();
    Scripted { runtime, server, proposer_requests, candidate_requests, proposer_contexts }
}

/// A proposal as the proposer writes it.
pub fn proposal(rationale: &str, system: &str) -> String {
    serde_json::json!({ "rationale": rationale, "system": system }).to_string()
}

pub fn prompt_in(dir: &Path) -> PathBuf {
    let path = dir.join("labels.toml");
    std::fs::write(&path, PROMPT).unwrap();
    path
}

/// `tunebench optimize PROMPT --provider openai --base-url URL ARGS...` with its own data directory.
pub fn optimize(dir: &Path, prompt: &Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    let url = format!("{}/v1", server.url());
    assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", dir)
        .env("TUNEBENCH_CACHE_DIR", dir.join("cache"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .arg("optimize")
        .arg(prompt)
        .args(["--provider", "openai", "--base-url", &url, "--model", "openai:test-model", "--concurrency", "1"])
        .args(args)
        .output()
        .unwrap()
}

pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&output.stdout), stderr(output)))
}

/// The split the optimizer draws for `seed` with no earlier eval (the same public function).
pub fn split(seed: u64) -> tunebench::optimize::split::Split {
    let cases: Vec<String> = CASES.iter().map(|c| c.to_string()).collect();
    tunebench::optimize::split::split(&cases, None, 0.5, seed).unwrap()
}

/// Case `name`'s number.
pub fn number(name: &str) -> usize {
    name.trim_start_matches('c').parse().unwrap()
}
