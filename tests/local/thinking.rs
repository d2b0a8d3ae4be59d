//! The thinking mode on the tiny qwen3 file (random weights) given Qwen3's real chat template
//! (`tests/fixtures/chat_templates/qwen3.jinja`, written into a copy of `qwen3-F32.gguf`): a budget of
//! 8 tokens gives exactly 8 thinking tokens, then the engine's `\n</think>\n\n`, then an answer held to
//! the schema from its first token, with none of the thought in it; a cancel while thinking stops at
//! once; a file whose template has no thinking mode is refused, naming the file and its architecture.

use std::path::PathBuf;
use std::sync::OnceLock;

use candle_core::quantized::gguf_file::Value as GgufValue;
use serde_json::{json, Value};
use tunebench::engine::thinking::ThoughtEnd;
use tunebench::provider::local::{Engine, Generated, LoadOptions};
use tunebench::provider::{Event, Request, StructuredMode};

use super::support::gguf_with;

fn families() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families")
}

/// `qwen3-F32.gguf` with Qwen3's chat template (written once per test binary, in the temp dir).
pub fn qwen3_thinking_file() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let template = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat_templates/qwen3.jinja"),
        )
        .unwrap();
        let path = std::env::temp_dir().join(format!("tunebench-qwen3-think-{}.gguf", std::process::id()));
        gguf_with("qwen3-F32.gguf", "tokenizer.chat_template", GgufValue::String(template), &path);
        path
    })
    .clone()
}

fn load(path: &std::path::Path) -> Engine {
    let options = LoadOptions { context: 512, threads: 1, ..LoadOptions::default() };
    Engine::load(path, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

fn request(thinking: Option<u32>) -> Request {
    let mut request = Request::new("")
        .user("Is the sky blue? Answer as JSON.")
        .max_tokens(32)
        .structured(StructuredMode::Constrained, Some(schema()));
    request.thinking = thinking;
    request
}

fn generate(engine: &mut Engine, request: &Request) -> (Generated, Vec<Event>) {
    let mut events = Vec::new();
    let out = engine
        .generate(request, &mut |event| {
            events.push(event);
            true
        })
        .unwrap_or_else(|e| panic!("generation failed: {e}"));
    (out, events)
}

#[test]
fn a_budget_of_8_thinks_8_tokens_then_closes_the_thought_and_answers_under_the_schema() {
    let mut engine = load(&qwen3_thinking_file());
    assert!(engine.thinks());
    let (out, events) = generate(&mut engine, &request(Some(8)));
    let thought = out.thought.clone().expect("a thought");
    assert_eq!(thought.tokens.len(), 8, "{thought:?}");
    assert_eq!(thought.end, ThoughtEnd::Budget);
    // The engine's closing text, `</think>` one control token of it.
    assert_eq!(engine.tokenizer().decode(&thought.closing), "\n</think>\n\n");
    let close = engine.tokenizer().token_id("</think>").unwrap();
    assert!(thought.closing.contains(&close), "{:?}", thought.closing);
    // The events: the mode, 8 thinking tokens, then the answer's tokens alone.
    let thinking: Vec<usize> =
        events.iter().enumerate().filter(|(_, e)| matches!(e, Event::Thinking { .. })).map(|(i, _)| i).collect();
    assert_eq!(thinking, (1..=8).collect::<Vec<_>>(), "{events:?}");
    let first_answer = events.iter().position(|e| matches!(e, Event::Token { .. })).unwrap();
    assert!(first_answer > 8);
    let answer: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Token { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answer, out.text);
    // The answer parses under the schema, with none of the thought in it.
    let value: Value = serde_json::from_str(&out.text).unwrap_or_else(|e| panic!("{:?}: {e}", out.text));
    assert!(value["ok"].is_boolean(), "{value}");
    assert_eq!(value.as_object().unwrap().len(), 1, "{value}");
    let shown = thought.text();
    assert!(shown.trim().is_empty() || !out.text.contains(shown.trim()), "{shown:?} in {:?}", out.text);
    assert!(!out.text.contains("think"), "{:?}", out.text);
    // The thought was rendered with thinking on: the prompt opens the assistant's turn with no empty
    // think block, as jinja2 renders Qwen3's template (tests/local/chat_template.rs checks that text).
    let mut request = request(Some(8));
    let prompt = engine.prompt_text(&request).unwrap();
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt:?}");
    request.thinking = None;
    assert!(engine.prompt_text(&request).unwrap().ends_with("<think>\n\n</think>\n\n"));
}

#[test]
fn without_a_budget_nothing_thinks_and_the_answer_is_as_before() {
    let mut engine = load(&qwen3_thinking_file());
    let (out, events) = generate(&mut engine, &request(None));
    assert!(out.thought.is_none());
    assert!(!events.iter().any(|e| matches!(e, Event::Thinking { .. })));
    assert!(serde_json::from_str::<Value>(&out.text).unwrap()["ok"].is_boolean(), "{:?}", out.text);
    // The same file without a template (ChatML) answers the same request alike: thinking off changes nothing.
    let mut plain = load(&families().join("qwen3-F32.gguf"));
    let (chatml, _) = generate(&mut plain, &request(None));
    assert!(serde_json::from_str::<Value>(&chatml.text).unwrap()["ok"].is_boolean(), "{:?}", chatml.text);
}

#[test]
fn a_cancel_while_thinking_stops_at_once() {
    let mut engine = load(&qwen3_thinking_file());
    let mut seen = 0;
    let out = engine
        .generate(&request(Some(64)), &mut |event| {
            assert!(!matches!(event, Event::Token { .. }), "the answer started after the cancel");
            if matches!(event, Event::Thinking { .. }) {
                seen += 1;
                return seen < 3;
            }
            true
        })
        .unwrap();
    assert_eq!(seen, 3);
    assert_eq!(out.finish, None);
    assert!(out.tokens.is_empty());
}

#[test]
fn a_template_without_thinking_is_refused_naming_the_file_and_its_architecture() {
    let path = families().join("qwen3-F32.gguf");
    let mut engine = load(&path);
    assert!(!engine.thinks());
    let error = engine.generate(&request(Some(8)), &mut |_| true).unwrap_err().to_string();
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(error.contains("architecture \"qwen3\""), "{error}");
    assert!(error.contains("no thinking mode"), "{error}");
    // A warm refuses it alike, before running anything.
    assert!(engine.warm(&request(Some(8))).unwrap_err().to_string().contains("no thinking mode"));
}

const PROMPT: &str = r#"id = "sky"
response_type = "json"
template = "Is the sky blue? Answer as JSON."
schema = '{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}'
[provider]
max_tokens = 32
"#;

/// `tunebench run --think=8 --json` on `model`, in a fresh data and cache directory.
fn run_cli(model: &std::path::Path, args: &[&str]) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("tunebench-think-cli-{}-{}", std::process::id(), args.join("_").len()));
    std::fs::create_dir_all(&dir).unwrap();
    let prompt = dir.join("sky.toml");
    std::fs::write(&prompt, PROMPT).unwrap();
    let output = assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", &dir)
        .env("TUNEBENCH_CACHE_DIR", &dir)
        .env("TUNEBENCH_THREADS", "1")
        .arg("run")
        .arg(&prompt)
        .args(["--provider", "local", "--model"])
        .arg(model)
        .args(args)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    output
}

#[test]
fn run_json_keeps_the_thought_apart_from_the_answer() {
    let output = run_cli(&qwen3_thinking_file(), &["--think=8", "--json", "--no-history"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    let turn = &record["turns"][0];
    assert_eq!(turn["thinking"]["tokens"], 8, "{turn}");
    let thought = turn["thinking"]["text"].as_str().unwrap();
    assert!(!thought.contains("</think>"), "{thought:?}");
    assert!(record["ok"].as_bool().unwrap(), "{record}");
    assert!(record["result"]["ok"].is_boolean(), "{record}");
    let answer = turn["output"].as_str().unwrap();
    assert!(!answer.contains("think") && (thought.trim().is_empty() || !answer.contains(thought.trim())), "{answer:?}");
    // The usage counts the answer's tokens alone.
    assert!(turn["usage"]["output_tokens"].as_u64().unwrap() <= 32, "{turn}");

    // Without --think the record has no thinking at all.
    let plain = run_cli(&qwen3_thinking_file(), &["--json", "--no-history"]);
    let record: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(record["turns"][0].get("thinking").is_none(), "{record}");

    // A model whose template does not think is refused, naming the file.
    let plain_file = families().join("qwen3-F32.gguf");
    let refused = run_cli(&plain_file, &["--think=8", "--no-history"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains(&plain_file.display().to_string()) && stderr.contains("no thinking mode"), "{stderr}");
}
