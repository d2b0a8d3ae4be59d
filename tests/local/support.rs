//! The model, loaded once per test binary, and helpers to run requests on it.

use std::sync::OnceLock;

use serde_json::Value;
use tunebench::provider::local::{fetch, Engine, Generated, Local};
use tunebench::provider::{Event, Request, StructuredMode};

/// The default model, loaded once (the tests share it and take turns).
pub fn local() -> &'static Local {
    static LOCAL: OnceLock<Local> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let path = fetch::installed_model()
            .unwrap_or_else(|e| panic!("{e} (the local-model tests need the real model; .ci/run fetches it)"));
        Local::open(Some(&path)).unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()))
    })
}

/// Runs `request` to the end; returns what was generated and every event.
pub fn generate(request: &Request) -> (Generated, Vec<Event>) {
    local().with_engine(|engine: &mut Engine| run(engine, request))
}

/// The same on `threads` threads (set back to the default after).
pub fn generate_on(threads: usize, request: &Request) -> (Generated, Vec<Event>) {
    local().with_engine(|engine: &mut Engine| {
        let default = engine.threads();
        engine.set_threads(threads).unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        let out = run(engine, request);
        engine.set_threads(default).unwrap_or_else(|e| panic!("{default} threads: {e}"));
        out
    })
}

fn run(engine: &mut Engine, request: &Request) -> (Generated, Vec<Event>) {
    {
        let mut events = Vec::new();
        let generated = engine
            .generate(request, &mut |event| {
                events.push(event);
                true
            })
            .unwrap_or_else(|e| panic!("generation failed: {e}"));
        (generated, events)
    }
}

/// The JSON Schema of the sample jsonl prompt `agent-kg-extract`: a `oneOf` union told apart by `type`.
pub fn union_schema() -> Value {
    serde_json::json!({"oneOf": [
        {"type": "object",
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}},
         "required": ["type", "entity", "definition"]},
        {"type": "object",
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"},
                        "predicate": {"type": "string"}, "object": {"type": "string"},
                        "object-entity": {"type": "boolean"}},
         "required": ["type", "subject", "predicate", "object", "object-entity"]}
    ]})
}

/// A jsonl extraction request, constrained line by line.
pub fn jsonl_request(max_tokens: u32) -> Request {
    let mut request = Request::new("")
        .system("You extract facts as JSON Lines: one compact JSON object per line.")
        .user(
            "Extract definitions and relationships from: DNA is the molecule that carries genetic instructions. \
             RNA polymerase copies DNA into messenger RNA. Ribosomes translate mRNA into proteins.",
        )
        .max_tokens(max_tokens)
        .structured(StructuredMode::Constrained, Some(union_schema()));
    request.jsonl = true;
    request
}
