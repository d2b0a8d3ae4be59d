//! Real runs: constrained json and jsonl answers validate, forced tokens are inserted, tokens stream
//! one event each (on every model: SmolLM2, the tiny qwen3, the real Gemma 3), the same seed gives the
//! same answer, the prompt prefix is reused, and dropping the stream stops generation.

use futures_util::StreamExt;
use serde_json::{json, Value};
use tunebench::provider::{Event, FinishReason, Provider, Request, StructuredMode};

use super::support::{generate, generate_with, jsonl_request, local, on_every_model, on_models, union_schema, Model};
use tunebench::provider::local::Local;

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema).expect("the test schema compiles")
}

on_every_model!(a_constrained_json_run_parses_and_validates);

fn a_constrained_json_run_parses_and_validates(_: Model, local: &Local) {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "languages": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 3}
        },
        "required": ["name", "age", "languages"],
        "additionalProperties": false
    });
    let request = Request::new("")
        .user("Describe a software engineer called Ada as JSON with her name, age and languages.")
        // Every part of the schema is bounded, so even random weights (the tiny qwen3) end within this.
        .max_tokens(400)
        .structured(StructuredMode::Constrained, Some(schema.clone()));
    let (generated, events) = generate_with(local, &request);
    assert_eq!(generated.finish, Some(FinishReason::Stop), "{:?}", generated.text);
    let value: Value = serde_json::from_str(&generated.text).unwrap_or_else(|e| panic!("{e}: {}", generated.text));
    let errors: Vec<String> = validator(&schema).iter_errors(&value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?} in {}", generated.text);
    assert!(generated.forced_tokens > 0, "the schema's fixed keys are forced, not sampled");
    let tokens: Vec<u32> =
        events.iter().filter_map(|e| if let Event::Token { id, .. } = e { Some(*id) } else { None }).collect();
    assert_eq!(tokens, generated.tokens, "one Token event per generated token");
    assert!(matches!(events.last(), Some(Event::Finish(FinishReason::Stop))));
    assert!(matches!(events.first(), Some(Event::Mode(m)) if m.used == StructuredMode::Constrained));
}

#[test]
fn json_schema_mode_validates_without_forcing_and_json_object_gives_an_object() {
    let schema = json!({"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"]});
    let request = Request::new("")
        .user("Is the sky blue? Answer as JSON.")
        .max_tokens(60)
        .structured(StructuredMode::JsonSchema, Some(schema.clone()));
    let (generated, _) = generate(&request);
    let value: Value =
        serde_json::from_str(generated.text.trim()).unwrap_or_else(|e| panic!("{e}: {}", generated.text));
    assert!(validator(&schema).is_valid(&value), "{value}");
    assert_eq!(generated.forced_tokens, 0);
    let object = Request::new("").user("Give me any JSON.").max_tokens(80).structured(StructuredMode::JsonObject, None);
    let (generated, _) = generate(&object);
    if generated.finish == Some(FinishReason::Stop) {
        let value: Value =
            serde_json::from_str(generated.text.trim()).unwrap_or_else(|e| panic!("{e}: {}", generated.text));
        assert!(value.is_object(), "{value}");
    } else {
        assert!(generated.text.starts_with('{'), "{}", generated.text);
    }
}

// Only on the default model: the schema leaves the strings unbounded, and neither the tiny qwen3
// (random weights) nor the real Gemma 3 270M (a base model: it copies the passage into the first
// string, again and again) ever ends one. Their constrained decoding is shown by the bounded schema
// above, and by the jsonl runs of `probs` and `fidelity`.
on_models!(every_line_of_a_constrained_jsonl_run_validates_against_the_union; smollm2 => SmolLM2);

fn every_line_of_a_constrained_jsonl_run_validates_against_the_union(_: Model, local: &Local) {
    let (generated, _) = generate_with(local, &jsonl_request(400));
    let validator = validator(&union_schema());
    let complete: Vec<&str> = match generated.finish {
        Some(FinishReason::Length) => {
            // The last line may be cut off by max_tokens: every line before it must be whole and valid.
            let mut lines: Vec<&str> = generated.text.split('\n').collect();
            lines.pop();
            lines
        }
        _ => generated.text.lines().collect(),
    };
    assert!(!complete.is_empty(), "no complete line in {:?}", generated.text);
    let mut branches = std::collections::BTreeSet::new();
    for (n, line) in complete.iter().enumerate() {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}: {line}", n + 1));
        assert!(validator.is_valid(&value), "line {} is not valid: {line}", n + 1);
        assert!(!line.contains(": ") && !line.contains(", \""), "compact JSON on line {}: {line}", n + 1);
        branches.insert(value["type"].as_str().unwrap_or_default().to_string());
    }
    assert!(generated.forced_tokens > 0);
    eprintln!("{} lines, branches {branches:?}", complete.len());
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let request = |seed: u64| {
        let mut request = Request::new("").user("Write a short poem about rivers.").max_tokens(24).temperature(0.9);
        request.seed = Some(seed);
        request
    };
    let (a, _) = generate(&request(7));
    let (b, _) = generate(&request(7));
    assert_eq!(a.tokens, b.tokens);
    let others: Vec<Vec<u32>> = (8..11).map(|seed| generate(&request(seed)).0.tokens).collect();
    assert!(others.iter().any(|tokens| *tokens != a.tokens), "other seeds sample other answers");
}

#[test]
fn a_retry_reuses_the_cached_prompt_prefix() {
    let first = Request::new("").system("You are terse. ".repeat(40)).user("Say hi.").max_tokens(4);
    // Both turns under one lock, so no other test's run replaces the cache in between.
    let (one, two) = local().with_engine(|engine| {
        let one = engine.generate(&first, &mut |_| true).unwrap();
        let second = first.clone().assistant(one.text.clone()).user("Again, in French.");
        let two = engine.generate(&second, &mut |_| true).unwrap();
        (one, two)
    });
    // The whole first prompt is reused (bar a boundary token the answer's text may merge with), not
    // only whole blocks of it.
    let reused = format!("reused {} of {} prompt tokens", two.reused_tokens, two.prompt_tokens);
    assert!(two.reused_tokens + 1 >= one.prompt_tokens, "{reused}; the first prompt has {}", one.prompt_tokens);
    assert!(two.reused_tokens < two.prompt_tokens, "{reused}");
}

#[test]
fn dropping_the_stream_stops_generation() {
    // Its own copy of the model, so no other test's run changes the cache this test reads.
    let model = super::support::model_file();
    let provider = tunebench::provider::local::Local::open(Some(&model)).expect("the default model loads");
    let provider = &provider;
    let request = Request::new("")
        .user("Write a long, detailed story about a lighthouse keeper who finds a message in a bottle.")
        .max_tokens(2000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut stream = provider.stream(&request);
        let mut tokens = 0;
        while let Some(event) = stream.next().await {
            if let Event::Token { .. } = event {
                tokens += 1;
                if tokens == 5 {
                    break;
                }
            }
        }
        assert_eq!(tokens, 5);
        drop(stream);
    });
    // Waits for the generation thread to let go of the model: it stopped at the next token, not after 2000.
    let cached = provider.with_engine(|engine| engine.cached_tokens());
    let prompt =
        provider.with_engine(|engine| engine.tokenizer().encode(&engine.prompt_text(&request).unwrap()).unwrap().len());
    assert!(cached <= prompt + 8, "{cached} positions cached for a {prompt}-token prompt: generation went on");
    // The model answers the next request as usual.
    let after =
        provider.with_engine(|engine| engine.generate(&Request::new("").user("Say yes.").max_tokens(3), &mut |_| true));
    assert_eq!(after.map(|a| a.tokens.len()), Ok(3));
}
