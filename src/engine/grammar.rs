//! The JSONL grammar in Lark, llguidance's dialect: each line one compact JSON value valid against the
//! schema (`%json`). The local model constrains its decoding with it, and a vLLM server is sent it as
//! `structured_outputs.grammar` (its guidance backend reads the same dialect).

use serde_json::{json, Value};

/// `schema` with llguidance's options: compact JSON (`,` and `:` with no spaces, no newlines, so a
/// value fits on one line), `oneOf` read as `anyOf` (a discriminated union's branches exclude each
/// other by their `type` const anyway), and unknown keywords (`format`, ...) ignored, not refused.
pub fn with_options(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => Value::Object(map.clone()),
        Value::Bool(true) => json!({}),
        other => other.clone(),
    };
    if let Value::Object(map) = &mut schema {
        map.insert(
            "x-guidance".into(),
            json!({"whitespace_flexible": false, "item_separator": ",", "key_separator": ":",
                   "coerce_one_of": true, "lenient": true}),
        );
    }
    schema
}

/// The Lark grammar of a JSONL answer whose every line matches `schema`: one or more lines, each a
/// compact JSON value, a newline after each but the last (and after the last too, if the model
/// writes one).
pub fn jsonl_lark(schema: &Value) -> String {
    format!("start: line (\"\\n\" line)* \"\\n\"?\nline: %json {}\n", with_options(schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_the_schema_written_compactly() {
        let grammar = jsonl_lark(&json!({"type": "object", "required": ["a"]}));
        assert!(grammar.starts_with("start: line (\"\\n\" line)* \"\\n\"?\nline: %json {"), "{grammar}");
        assert!(
            grammar.contains("\"whitespace_flexible\":false") && grammar.contains("\"required\":[\"a\"]"),
            "{grammar}"
        );
        assert_eq!(with_options(&json!(true))["x-guidance"]["key_separator"], ":");
    }
}
