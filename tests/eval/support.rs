//! Helpers: a small jsonl prompt with expected answers, the wire server answering each case by the
//! text its request carries, and the binary with its own data directory.

use std::path::{Path, PathBuf};

use tunebench::provider::wire_server::{Reply, WireServer};

/// The test prompt: two cases, each with expected items paired on `entity`; the request of each
/// carries its case's marker text (`ALPHA-TEXT`, `BETA-TEXT`), which the server routes on.
pub const PROMPT: &str = r#"id = "definitions"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}'''

[variables]
text = "nothing"

[eval]
match = "entity"

[[cases]]
name = "alpha"
variables = { text = "ALPHA-TEXT" }
[cases.expected]
items = [{ entity = "Alpha", definition = "The first letter." }]

[[cases]]
name = 'beta <&"x">, y'
variables = { text = "BETA-TEXT" }
[cases.expected]
items = [
  { entity = "Beta", definition = "The second letter." },
  { entity = "Gamma", definition = "The third letter." },
]
"#;

/// The case whose name needs escaping everywhere (XML, CSV, terminal).
pub const BETA: &str = "beta <&\"x\">, y";

pub const ALPHA_RIGHT: &str = "{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}\n";
pub const BETA_RIGHT: &str = "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n{\"entity\": \"Gamma\", \"definition\": \"The third letter.\"}\n";
/// Line 2 has no definition: a schema error, so the item is not handed on (recall 1/2).
pub const BETA_WRONG: &str =
    "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n{\"entity\": \"Gamma\"}\n";

/// A streamed chat completion of `answer` in llama.cpp's framing (5 characters per chunk).
pub fn sse_answer(answer: &str, finish: &str) -> Reply {
    Reply::chat_stream(answer, finish, Some((30, 12)))
}

/// A server answering alpha's request with `alpha` and beta's with `beta`, on a runtime that keeps
/// it answering while the binary runs.
pub fn server(alpha: &str, beta: &str) -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = vec![
        ("ALPHA-TEXT".to_string(), sse_answer(alpha, "stop")),
        ("BETA-TEXT".to_string(), sse_answer(beta, "stop")),
    ];
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

/// `--base-url` of `server`.
pub fn base_url(server: &WireServer) -> String {
    format!("{}/v1", server.url())
}

/// Writes the test prompt (or `text`) into `dir`.
pub fn prompt_in(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("definitions.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The binary with its data directory in `data_dir`, its response cache in `data_dir/cache`, and no
/// OpenAI server or key from the environment.
pub fn tunebench(data_dir: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("tunebench").unwrap();
    command
        .env("TUNEBENCH_DATA_DIR", data_dir)
        .env("TUNEBENCH_CACHE_DIR", data_dir.join("cache"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY");
    command
}

/// `tunebench eval PROMPT --provider openai --base-url URL ARGS...` in `dir`.
pub fn eval(dir: &Path, prompt: &Path, server: &WireServer, args: &[&str]) -> std::process::Output {
    tunebench(dir)
        .arg("eval")
        .arg(prompt)
        .args(["--provider", "openai", "--base-url", &base_url(server)])
        .args(args)
        .output()
        .unwrap()
}

/// Standard error, for assertion messages.
pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A command's standard output as a typed eval record.
pub fn record(output: &std::process::Output) -> tunebench::eval::EvalRecord {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&output.stdout), stderr(output)))
}
