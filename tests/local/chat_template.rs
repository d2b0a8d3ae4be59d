//! The engine renders the real chat templates (Qwen2.5-Instruct, Qwen3, Llama 3.1/3.2 Instruct, Gemma 3
//! it, SmolLM2 Instruct; `tests/fixtures/chat_templates/`, their sources in its README) byte for byte
//! as Python's jinja2 renders them with Hugging Face's settings (`render.py` wrote `expected.json`):
//! system + user, user only, multi-turn with a thought in the history, and a conversation a template
//! refuses (`raise_exception`); Qwen3 with thinking off (the default) and on.

use std::path::Path;

use serde_json::Value;
use tunebench::engine::chat::{ChatTemplate, Turn};

#[test]
fn real_chat_templates_render_as_jinja2_does() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat_templates");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("expected.json")).unwrap()).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for case in expected["cases"].as_array().unwrap() {
        let name = case["template"].as_str().unwrap();
        let source = std::fs::read_to_string(folder.join(name)).unwrap();
        let template =
            ChatTemplate::new(Some(&source), case["bos_token"].as_str().unwrap(), case["eos_token"].as_str().unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        let turns: Vec<Turn<'_>> = case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Turn { role: m["role"].as_str().unwrap(), content: m["content"].as_str().unwrap() })
            .collect();
        let thinking = case["enable_thinking"].as_bool().unwrap();
        let what = format!("{name} / {} / thinking {thinking}", case["conversation"].as_str().unwrap());
        let ours = if thinking { template.render_with(&turns, true) } else { template.render(&turns) };
        match (ours, case.get("text").and_then(Value::as_str), case.get("error").and_then(Value::as_str)) {
            (Ok(ours), Some(theirs), _) if ours == theirs => {}
            (Ok(ours), Some(theirs), _) => wrong.push(format!("{what}:\nours   {ours:?}\njinja2 {theirs:?}")),
            (Err(e), _, Some(message)) if e.to_string().contains(message) => {}
            (ours, _, _) => wrong.push(format!("{what}: ours {ours:?}, jinja2 {case}")),
        }
        checked += 1;
    }
    assert_eq!(checked, 35, "six templates, five conversations, Qwen3 twice");
    assert!(wrong.is_empty(), "{} of {checked} differ:\n{}", wrong.len(), wrong.join("\n\n"));
}
