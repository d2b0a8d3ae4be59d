//! Helpers: fixtures, servers, plans built from prompt files the way `tunebench run` builds them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tunebench::cli::input::ParseOptions;
use tunebench::prompt::file::{PromptFile, ProviderSettings};
use tunebench::prompt::template::Variables;
use tunebench::provider::http::HttpOptions;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::wire_server::{reply_from_recording, Reply, WireServer};
use tunebench::provider::Provider;
use tunebench::run::{Reading, RunEvent, RunPlan, RunRecord};

/// A fixture file under `tests/fixtures/wire/`.
pub fn fixture(path: &str) -> String {
    let full = format!("{}/tests/fixtures/wire/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The reply that serves a recording again.
pub fn recorded(path: &str) -> Reply {
    reply_from_recording(&fixture(path), 1.0).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `sample-prompts/<name>.toml`.
pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts").join(format!("{name}.toml"))
}

pub async fn serve(replies: Vec<Reply>) -> WireServer {
    WireServer::start(replies).await.expect("bind 127.0.0.1")
}

pub fn openai(server: &WireServer) -> Arc<dyn Provider> {
    let options = HttpOptions { read_timeout: Duration::from_secs(5), ..HttpOptions::default() };
    Arc::new(OpenAi::new(&format!("{}/v1", server.url()), None, options).expect("provider"))
}

/// The plan `tunebench run PROMPT [--case CASE] [--max-turns N]` makes, with `cli` as the flags.
pub fn plan_with(prompt_path: &Path, case: Option<&str>, cli: &ProviderSettings, max_turns: Option<u32>) -> RunPlan {
    let prompt = PromptFile::load(prompt_path).expect("prompt");
    let setup = ParseOptions {
        response_type: None,
        schema: None,
        signature: None,
        prompt: Some(prompt_path.to_path_buf()),
        profile: None,
        file: PathBuf::from("-"),
    }
    .setup()
    .expect("setup");
    let reading = Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check };
    let settings = tunebench::run::setup::settings(
        &prompt,
        &tunebench::run::SetupOptions {
            max_turns,
            ..tunebench::run::SetupOptions::from_flags(cli.clone()).expect("flags")
        },
    )
    .expect("settings");
    let base = prompt_path.parent().expect("dir");
    RunPlan::new(&prompt, base, case, &Variables::new(), &settings, reading).expect("plan")
}

pub fn plan(prompt_path: &Path, max_turns: Option<u32>) -> RunPlan {
    // The tests' servers speak the OpenAI protocol (with no provider named, the default is local).
    let openai = ProviderSettings { name: Some("openai".into()), ..ProviderSettings::default() };
    plan_with(prompt_path, None, &openai, max_turns)
}

/// Runs `plan` and keeps every event.
pub async fn run(provider: &dyn Provider, plan: &RunPlan) -> (RunRecord, Vec<RunEvent>) {
    let mut events = Vec::new();
    let run = tunebench::run::run(provider, plan, |event| events.push(event));
    let record = tokio::time::timeout(Duration::from_secs(30), run).await.expect("the run ended in time");
    (record, events)
}

/// A temporary prompt file with `text`.
pub fn prompt_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write prompt");
    path
}

/// Every delta of the events, joined.
pub fn streamed(events: &[RunEvent]) -> String {
    events.iter().filter_map(|e| if let RunEvent::Delta(d) = e { Some(d.as_str()) } else { None }).collect()
}

/// The binary with its data directory in `data_dir` and no OpenAI server or key from the environment.
pub fn tunebench(data_dir: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("tunebench").unwrap();
    command.env("TUNEBENCH_DATA_DIR", data_dir).env_remove("OPENAI_BASE_URL").env_remove("OPENAI_API_KEY");
    command
}

/// A command's standard output as JSON; a panic shows both streams when it is not.
pub fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    })
}
