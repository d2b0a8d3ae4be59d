//! TrustGraph's `parse_jsonl` and `text` cases: the batch `parse_jsonl` (PromptManager and the agent
//! extractor's copy), `invoke`'s per-object schema filter through the streamed `trustgraph` profile, and
//! the verbatim text passthrough. Every streamed check runs whole and in small chunks.

use std::sync::Arc;

use serde_json::Value;
use tunebench::output::jsonl::{trustgraph_parse_jsonl, JsonlParser};
use tunebench::output::text::TextParser;
use tunebench::output::{OutputParser, Profile, Report};
use tunebench::schema::{Check, CompiledSchema};

/// `Some` for the cases this module owns: trustgraph `parse_jsonl` and `text`.
pub fn check(case: &Value) -> Option<Result<(), String>> {
    if case["project"] != "trustgraph" {
        return None;
    }
    match case["kind"].as_str()? {
        "parse_jsonl" => Some(parse_jsonl(case)),
        "text" => Some(text(case)),
        _ => None,
    }
}

/// Chunk sizes (in characters) each streamed check is fed with: whole, one at a time, and seven.
const CHUNKS: [usize; 3] = [usize::MAX, 1, 7];

fn parse_jsonl(case: &Value) -> Result<(), String> {
    let input = case["input"].as_str().ok_or("the case has no string `input`")?;
    let expected = case["expected"].as_array().ok_or("the case's `expected` is not a list")?;
    let entry = case["entry_point"].as_str().unwrap_or_default();
    let check = if entry.starts_with("PromptManager.invoke") {
        schema_check(&case["schema"])?
    } else if entry.starts_with("PromptManager.parse_jsonl") || entry.contains("Processor.parse_jsonl") {
        let batch = trustgraph_parse_jsonl(input);
        if &batch != expected {
            return Err(format!("trustgraph_parse_jsonl gave {}", Value::Array(batch)));
        }
        None
    } else {
        return Err(format!("unknown entry point {entry:?}"));
    };
    for size in CHUNKS {
        let mut parser = JsonlParser::new(Profile::Trustgraph, check.clone());
        feed_in_chunks(&mut parser, input, size);
        let Report::Jsonl(report) = parser.report() else { return Err("not a jsonl report".into()) };
        if &report.items != expected {
            return Err(format!("fed {}, the items were {}", pieces(size), Value::Array(report.items.into_values())));
        }
    }
    Ok(())
}

/// `invoke` validates only when the prompt's schema is truthy in Python (`{}` and `null` are not).
fn schema_check(schema: &Value) -> Result<Option<Arc<dyn Check>>, String> {
    let truthy = match schema {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64() != Some(0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(members) => !members.is_empty(),
    };
    if !truthy {
        return Ok(None);
    }
    let compiled = CompiledSchema::compile(schema).map_err(|error| error.to_string())?;
    Ok(Some(Arc::new(compiled) as Arc<dyn Check>))
}

fn text(case: &Value) -> Result<(), String> {
    let input = case["input"].as_str().ok_or("the case has no string `input`")?;
    for size in CHUNKS {
        let mut parser = TextParser::new(Profile::Trustgraph);
        feed_in_chunks(&mut parser, input, size);
        let Report::Text(report) = parser.report() else { return Err("not a text report".into()) };
        if Value::String(report.text.clone()) != case["expected"] {
            return Err(format!("fed {}, the text was {:?}", pieces(size), report.text));
        }
    }
    Ok(())
}

fn pieces(size: usize) -> String {
    if size == usize::MAX {
        "whole".to_owned()
    } else {
        format!("in chunks of {size} characters")
    }
}

fn feed_in_chunks(parser: &mut dyn OutputParser, text: &str, size: usize) {
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.char_indices().nth(size).map_or(rest.len(), |(at, _)| at);
        let (chunk, after) = rest.split_at(end);
        parser.feed(chunk);
        rest = after;
    }
}
