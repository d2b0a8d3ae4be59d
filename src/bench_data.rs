//! The synthetic answers and the schema the speed figures are measured on (`tunebench bench` and the
//! timing tests): TrustGraph's definition + relationship union, a long union JSONL answer, and a
//! pretty-printed JSON array answer.

use serde_json::{json, Value};

/// TrustGraph's definition + relationship union (the agent-kg-extract schema).
pub fn union_schema() -> Value {
    json!({"oneOf": [
        {"type": "object",
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}},
         "required": ["type", "entity", "definition"], "additionalProperties": false},
        {"type": "object",
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"},
                        "predicate": {"type": "string"}, "object": {"type": "string"},
                        "object-entity": {"type": "boolean"}},
         "required": ["type", "subject", "predicate", "object", "object-entity"], "additionalProperties": false}
    ]})
}

/// A `lines`-line union answer: definitions and relationships alternating, one in fifty failing the schema.
pub fn union_jsonl(lines: usize) -> String {
    let mut out = String::with_capacity(lines * 110);
    for i in 0..lines {
        let line = match i % 50 {
            49 => json!({"type": "relationship", "subject": format!("entity {i}"), "predicate": "part_of",
                         "object": "cell", "object-entity": "yes"}),
            n if n % 2 == 0 => json!({"type": "definition", "entity": format!("entity {i}"),
                                      "definition": format!("A molecule numbered {i} that carries genetic instructions")}),
            _ => json!({"type": "relationship", "subject": format!("entity {i}"), "predicate": "located_in",
                        "object": format!("compartment {}", i % 7), "object-entity": true}),
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// A pretty-printed JSON array answer of `items` definitions, as a model writes one.
pub fn array_answer(items: usize) -> String {
    let values: Vec<Value> = (0..items)
        .map(|i| json!({"entity": format!("entity {i}"), "definition": format!("Definition number {i}, with \"quotes\" and a comma, then more words")}))
        .collect();
    serde_json::to_string_pretty(&values).unwrap_or_default()
}
