//! The model, loaded once per test binary (fetched first when the cache has none, as
//! `tunebench model fetch` does: same progress on stderr, same checks, one fetch at a time across
//! test binaries through the fetch's lock file), and helpers to run requests on it.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use tunebench::provider::local::{fetch, Engine, Generated, Local};
use tunebench::provider::{Event, Request, StructuredMode};

/// The default model, loaded once (the tests share it and take turns).
pub fn local() -> &'static Local {
    static LOCAL: OnceLock<Local> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let path = model_file();
        Local::open(Some(&path)).unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()))
    })
}

/// The default model's file, fetched first when the cache has none (pip's and the extraction's
/// progress on stderr, the size and SHA-256 checked, as `tunebench model fetch`).
pub fn model_file() -> PathBuf {
    if let Ok(path) = fetch::installed_model() {
        return path;
    }
    let fetched = fetch::fetch(&mut tunebench::cli::model::show_progress)
        .unwrap_or_else(|e| panic!("the local-model tests need the real model: {e}"));
    if !fetched.already_present {
        eprintln!("fetched {} ({} bytes, sha256 {})", fetched.path.display(), fetched.bytes, fetched.sha256);
    }
    fetched.path
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
