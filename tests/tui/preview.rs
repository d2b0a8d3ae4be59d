//! The request preview (alt-v) and the curl copy (alt-y) are what ctrl-r sends: for each provider, a
//! sample prompt's preview is held against what an in-process server received when the workbench's
//! own run path (update's `Effect::StartRun` executed by the runner) sent it.

use std::path::Path;
use std::sync::mpsc::channel;
use std::time::Duration;

use serde_json::Value;
use tunebench::provider::wire_server::{reply_from_recording, Received, WireServer};
use tunebench::provider::{HeaderValue, Outgoing, StructuredMode};
use tunebench::run::RunEvent;
use tunebench::tui::msg::{Action, Effect, Msg, Start};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::State;
use tunebench::tui::update::update;
use tunebench::tui::workbench::panes::preview;
use tunebench::tui::workbench::request::{self, Sent};

use super::support::without_local_model;

const KEY: &str = "sk-preview-test-secret";

/// The test's environment: every provider's key, no base URL (the prompt names the server).
fn env(name: &str) -> Option<String> {
    name.ends_with("_API_KEY").then(|| KEY.to_string())
}

/// Headers the HTTP client adds on its own.
const TRANSPORT: &[&str] = &["host", "content-length", "accept", "accept-encoding", "connection"];

struct Case {
    prompt: &'static str,
    provider: &'static str,
    model: Option<&'static str>,
    structured: Option<&'static str>,
    /// The server's path under its URL given as the base URL (`/v1` for OpenAI-style servers).
    base_path: &'static str,
    recording: &'static str,
}

/// The sample's workbench on `case`'s provider, pointed at `server`, reading [`env`].
fn state(case: &Case, server: &WireServer) -> State {
    without_local_model();
    let mut state = state_for(Path::new(case.prompt)).expect("the sample loads");
    state.choice.provider = tunebench::provider::kind::ProviderKind::parse(case.provider).expect("a provider");
    state.choice.model = case.model.map(Into::into);
    state.choice.structured = case.structured.map(|s| StructuredMode::parse(s).expect("a structured mode"));
    state.saved.provider.base_url = Some(format!("{}{}", server.url(), case.base_path));
    state.env = env;
    state
}

/// ctrl-r as the workbench runs it: update's effect executed by the runner, up to the run's end.
fn run(state: &mut State) {
    let (tx, rx) = channel();
    let mut runner = Runner::new(tx, None).expect("runner");
    runner.record_history = false;
    runner.env = env;
    for effect in update(state, Msg::Action(Action::Run)) {
        if let Effect::Start(Start::Run(_)) = effect {
            let follow = runner.execute(effect);
            assert!(follow.is_empty(), "the run did not start: {follow:?}");
        }
    }
    loop {
        match rx.recv_timeout(Duration::from_secs(30)).expect("the run ended in time") {
            Msg::Run { event, .. } if matches!(*event, RunEvent::RunEnded { .. }) => return,
            Msg::RunFailed { message, .. } => panic!("the run failed: {message}"),
            _ => {}
        }
    }
}

/// The body of the curl command's `--data-raw '...'`, unquoted.
fn curl_body(curl: &str) -> Value {
    let quoted = curl.split_once("--data-raw '").expect("a body").1;
    let body = quoted.trim_end().strip_suffix('\'').expect("quoted").replace("'\\''", "'");
    serde_json::from_str(&body).expect("the curl body is JSON")
}

fn assert_same_request(outgoing: &Outgoing, got: &Received, server: &WireServer) {
    assert_eq!(got.json(), outgoing.body, "the body received is the body previewed");
    assert_eq!(got.body, outgoing.body_text(), "byte for byte");
    assert_eq!(got.method, outgoing.method.as_str());
    assert_eq!(format!("{}{}", server.url(), got.path), outgoing.url);
    for header in &outgoing.headers {
        let expected = match &header.value {
            HeaderValue::Text(text) => text.clone(),
            HeaderValue::Key { prefix, .. } => format!("{prefix}{KEY}"),
        };
        assert_eq!(got.header(header.name), Some(expected.as_str()), "header {}", header.name);
    }
    let mut sent: Vec<&str> =
        got.headers.iter().map(|(name, _)| name.as_str()).filter(|name| !TRANSPORT.contains(name)).collect();
    let mut previewed: Vec<&str> = outgoing.headers.iter().map(|h| h.name).collect();
    sent.sort_unstable();
    previewed.sort_unstable();
    assert_eq!(sent, previewed, "no header is sent that the preview does not show");
}

/// Previews `case`, runs it, and holds the preview, the curl copy and the pane's text to what was sent.
fn check(case: Case) -> Value {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let recording = std::fs::read_to_string(format!("tests/fixtures/wire/{}", case.recording)).expect("fixture");
    let reply = reply_from_recording(&recording, 100.0).expect("recording");
    let server = runtime.block_on(WireServer::start(vec![reply])).expect("bind 127.0.0.1");
    let mut state = state(&case, &server);
    let Ok(Sent::Http { outgoing, .. }) = request::sent(&state) else {
        panic!("{}: no HTTP request: {:?}", case.provider, request::sent(&state))
    };
    let curl = preview::curl(&state).expect("a curl command");
    let shown: Vec<String> = preview::lines(&state).into_iter().map(|(_, text)| text).collect();
    run(&mut state);
    let received = server.received();
    let got = received.first().expect("the server got the request");
    assert_same_request(&outgoing, got, &server);

    assert_eq!(curl_body(&curl), got.json(), "the curl copy sends the same body");
    assert!(curl.starts_with(&format!("curl -sN '{}' \\\n", outgoing.url)), "{curl}");
    let key_header = outgoing.headers.iter().find(|h| matches!(h.value, HeaderValue::Key { .. })).expect("a key");
    let HeaderValue::Key { var, .. } = key_header.value else { unreachable!() };
    assert!(curl.contains(&format!("${{{var}}}\"")), "{curl}");
    assert_eq!(shown[0], format!("POST {}", outgoing.url));
    assert!(shown.iter().any(|l| l.starts_with(key_header.name) && l.ends_with(&format!("${var}"))), "{shown:?}");
    assert!(!curl.contains(KEY) && !shown.iter().any(|l| l.contains(KEY)), "the key's value is never shown");
    got.json()
}

#[test]
fn openai_jsonl_preview_is_what_is_sent_with_the_line_schema_in_the_system_prompt() {
    let body = check(Case {
        prompt: "sample-prompts/extract-definitions.toml",
        provider: "openai",
        model: Some("m"),
        structured: Some("json-schema"),
        base_path: "/v1",
        recording: "run/definitions_stream.txt",
    });
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Every line must validate against this JSON Schema"), "{system}");
    assert!(body.get("response_format").is_none(), "{body}");
    assert_eq!((body["stream"].clone(), body["max_tokens"].clone()), (Value::Bool(true), 1024.into()));
}

#[test]
fn openai_json_schema_preview_carries_the_response_format() {
    let body = check(Case {
        prompt: "sample-prompts/extract-definitions-json.toml",
        provider: "openai",
        model: None,
        structured: Some("json-schema"),
        base_path: "/v1",
        recording: "compare/definitions_json_stream.txt",
    });
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[test]
fn vllm_jsonl_preview_carries_the_line_grammar() {
    let body = check(Case {
        prompt: "sample-prompts/extract-definitions.toml",
        provider: "vllm",
        model: Some("m"),
        structured: Some("json-schema"),
        base_path: "/v1",
        recording: "run/definitions_stream.txt",
    });
    assert!(body["structured_outputs"]["grammar"].as_str().is_some_and(|g| g.contains("%json")), "{body}");
}

#[test]
fn anthropic_preview_is_what_is_sent_with_the_schema_in_the_system_prompt() {
    let body = check(Case {
        prompt: "sample-prompts/extract-definitions-json.toml",
        provider: "anthropic",
        model: Some("claude"),
        structured: Some("json-schema"),
        base_path: "",
        recording: "anthropic/messages_stream.txt",
    });
    assert!(body["system"].as_str().is_some_and(|s| s.contains("must validate against this JSON Schema")), "{body}");
}

#[test]
fn ollama_preview_is_what_is_sent_with_the_schema_as_format() {
    let body = check(Case {
        prompt: "sample-prompts/extract-definitions-json.toml",
        provider: "ollama",
        model: Some("llama3.2"),
        structured: Some("json-schema"),
        base_path: "",
        recording: "ollama/chat_structured_stream.txt",
    });
    assert!(body["format"].is_object(), "{body}");
    assert_eq!(body["options"]["num_predict"], 1024);
}

#[test]
fn in_process_providers_preview_their_messages_and_copy_no_curl() {
    without_local_model();
    let mut state = state_for(Path::new("sample-prompts/extract-definitions.toml")).expect("the sample loads");
    state.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    state.choice.structured = Some(tunebench::provider::StructuredMode::Constrained);
    let Ok(Sent::InProcess { provider, request, mode }) = request::sent(&state) else { panic!("in process") };
    assert_eq!(
        (provider.name(), request.structured, mode.used),
        ("local", StructuredMode::Constrained, StructuredMode::Constrained)
    );
    assert!(request.jsonl && request.messages[0].content.contains("JSON Lines"), "{request:?}");
    let error = preview::curl(&state).expect_err("no curl for the local model");
    assert!(error.contains("no HTTP request"), "{error}");
    let shown = preview::lines(&state);
    assert!(shown[0].1.starts_with("local: runs in this process"), "{shown:?}");
}

/// The request `tunebench run` sends for `prompt` on `provider` and model `m` (the CLI's flags), as
/// an in-process server received it.
fn sent_by_the_cli(prompt: &str, provider: &str, recording: &str) -> Value {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let recording = std::fs::read_to_string(format!("tests/fixtures/wire/{recording}")).expect("fixture");
    let reply = reply_from_recording(&recording, 100.0).expect("recording");
    let server = runtime.block_on(WireServer::start(vec![reply])).expect("bind 127.0.0.1");
    let data = tempfile::tempdir().expect("a scratch folder");
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .env("TUNEBENCH_DATA_DIR", data.path())
        .env("TUNEBENCH_CACHE_DIR", data.path().join("cache"))
        .env("OPENAI_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .args(["run", prompt, "--provider", provider, "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.url())])
        .output()
        .expect("tunebench runs");
    let received = server.received();
    let got = received.first().unwrap_or_else(|| panic!("the CLI sent nothing: {output:?}"));
    got.json()
}

/// For the same prompt, provider and model, the workbench and `tunebench run` send byte-identical
/// bodies, also after the workbench ran the local model (whose default mode, constrained, must not
/// follow the user to a server) and a model typed for the server was carried through a switch.
#[test]
fn the_workbench_and_the_cli_send_the_same_request_for_the_same_choice() {
    let cli = sent_by_the_cli("sample-prompts/extract-definitions.toml", "openai", "run/definitions_stream.txt");
    without_local_model();
    let mut state = state_for(Path::new("sample-prompts/extract-definitions.toml")).expect("the sample loads");
    state.env = env;
    state.saved.provider.base_url = Some("http://127.0.0.1:9/v1".into());
    tunebench::tui::workbench::fetch::use_local_model(&mut state);
    assert_eq!(tunebench::tui::panes::status::mode_text(&state), "asked constrained (default on local)");
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Openai {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    assert_eq!(tunebench::tui::panes::status::mode_text(&state), "asked none", "a server's default is none");
    state.choice.model = Some("m".into());
    let Ok(Sent::Http { outgoing, mode }) = request::sent(&state) else { panic!("{:?}", request::sent(&state)) };
    assert_eq!(mode.requested, StructuredMode::None);
    assert_eq!(outgoing.body, cli, "the workbench's body is the CLI's");
    assert_eq!(outgoing.body_text(), serde_json::to_string(&cli).expect("JSON"), "byte for byte");
}
