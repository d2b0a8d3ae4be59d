//! Whether the constrained decoder (llguidance) accepts a grammar, asked before any model is loaded:
//! the grammar is compiled as the engine compiles it, without the model's tokenizer. A schema it
//! refuses (a `pattern` with a look-around or a back-reference, bounds no value meets) is a schema
//! problem, named by the JSON Pointer of the part refused and why.

use llguidance::api::{GrammarInit, ParserLimits, TopLevelGrammar};
use llguidance::Logger;
use serde_json::{Map, Value};

use super::constraint::Grammar;
use super::grammar::with_options;
use crate::schema::LintIssue;

/// `Ok` when the decoder compiles `grammar`; else the part of its schema it refuses, and why.
pub fn check(grammar: &Grammar) -> Result<(), LintIssue> {
    let Err(error) = compiles(grammar.top_level()) else { return Ok(()) };
    let schema = grammar.schema();
    // The schema alone says why more plainly than the line grammar around it.
    let why = compiles_alone(schema, schema).err().unwrap_or(error);
    let (path, why) = locate(schema, schema, String::new(), why);
    Err(LintIssue {
        line: None,
        column: None,
        path: Some(if path.is_empty() { "/".into() } else { path }),
        message: format!("the local model's constrained decoder cannot compile it: {}", reason(&why)),
    })
}

/// Compiles `grammar` as the engine's parser factory does (the same limits; no tokenizer).
fn compiles(grammar: TopLevelGrammar) -> Result<(), String> {
    let mut logger = Logger::new(0, 0);
    GrammarInit::Serialized(grammar)
        .to_cgrammar(None, &mut logger, ParserLimits::default(), Vec::new())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Compiles the part `schema` of `root` on its own, with the root's definitions (its `$ref`s resolve).
fn compiles_alone(root: &Value, schema: &Value) -> Result<(), String> {
    let mut alone = schema.clone();
    if let (Value::Object(alone), Value::Object(root)) = (&mut alone, root) {
        for definitions in ["$defs", "definitions"] {
            if let (false, Some(value)) = (alone.contains_key(definitions), root.get(definitions)) {
                alone.insert(definitions.into(), value.clone());
            }
        }
    }
    compiles(TopLevelGrammar::from_json_schema(with_options(&alone)))
}

/// The JSON Pointer, under `at`, of the deepest part of `schema` the decoder refuses on its own, and
/// why (`why`: why `schema` is refused); its keyword when leaving that one out is what makes it
/// compile (`type` last: without it almost any schema compiles).
fn locate(root: &Value, schema: &Value, at: String, why: String) -> (String, String) {
    let Value::Object(map) = schema else { return (at, why) };
    for (path, part) in parts(map, &at) {
        if let Err(part_why) = compiles_alone(root, part) {
            return locate(root, part, path, part_why);
        }
    }
    let keywords = map.keys().filter(|k| *k != "type").chain(map.keys().filter(|k| *k == "type"));
    for keyword in keywords {
        let mut without = map.clone();
        without.remove(keyword);
        if compiles_alone(root, &Value::Object(without)).is_ok() {
            return (format!("{at}/{}", escape(keyword)), why);
        }
    }
    (at, why)
}

/// Keywords whose value is an object of schemas (definitions first: a `$ref` is refused where it points).
const SCHEMA_MAPS: &[&str] = &["$defs", "definitions", "properties", "patternProperties", "dependentSchemas"];
/// Keywords whose value is a list of schemas (`items` too, in older drafts).
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems", "items"];
/// Keywords whose value is one schema.
const SCHEMAS: &[&str] =
    &["items", "additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else"];

/// The schemas inside `map`, each with its JSON Pointer under `at`.
fn parts<'a>(map: &'a Map<String, Value>, at: &str) -> Vec<(String, &'a Value)> {
    let mut parts = Vec::new();
    for keyword in SCHEMA_MAPS {
        if let Some(Value::Object(schemas)) = map.get(*keyword) {
            parts.extend(schemas.iter().map(|(name, s)| (format!("{at}/{keyword}/{}", escape(name)), s)));
        }
    }
    for keyword in SCHEMA_LISTS {
        if let Some(Value::Array(schemas)) = map.get(*keyword) {
            parts.extend(schemas.iter().enumerate().map(|(i, s)| (format!("{at}/{keyword}/{i}"), s)));
        }
    }
    for keyword in SCHEMAS {
        if let Some(schema @ Value::Object(_)) = map.get(*keyword) {
            parts.push((format!("{at}/{keyword}"), schema));
        }
    }
    parts
}

/// A JSON Pointer token (RFC 6901: `~` and `/` escaped).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// llguidance's error in a line: a regex error quotes the pattern over three lines and says why on
/// its `error:` line; a `while processing` line (where a `$ref` led) is left out, the path says it.
fn reason(error: &str) -> String {
    let why = error.contains("regex parse error").then(|| error.lines().find_map(|l| l.trim().strip_prefix("error: ")));
    let first = || error.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or(error);
    why.flatten().unwrap_or_else(first).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(schema: Value, jsonl: bool) -> Option<LintIssue> {
        check(&Grammar::closed_schema(Some(&schema), jsonl)).err()
    }

    #[test]
    fn a_look_around_is_refused_at_its_pattern_for_json_and_jsonl() {
        let schema = json!({"type": "object",
            "properties": {"name": {"type": "string"}, "password": {"type": "string", "pattern": "^(?=.*[A-Z]).+$"}}});
        for jsonl in [false, true] {
            let issue = refused(schema.clone(), jsonl).expect("a look-ahead is refused");
            assert_eq!(issue.path.as_deref(), Some("/properties/password/pattern"), "{issue}");
            assert!(issue.message.contains("look-around"), "{issue}");
            assert!(!issue.message.contains('\n'), "one line: {issue}");
        }
    }

    #[test]
    fn a_refused_definition_is_named_where_it_is_written() {
        let schema = json!({"properties": {"a": {"$ref": "#/$defs/code"}, "b/c": {"type": "integer", "minimum": 5, "maximum": 2}},
                            "$defs": {"code": {"type": "string", "pattern": "(a)\\1"}}});
        let issue = refused(schema, false).unwrap();
        assert_eq!(issue.path.as_deref(), Some("/$defs/code/pattern"), "{issue}");
        assert!(issue.message.contains("backreferences"), "{issue}");
        // (An optional property no value meets is left out of the grammar; a required one is refused.)
        let bounds = json!({"type": "object", "properties": {"b/c": {"type": "integer", "minimum": 5, "maximum": 2}},
                            "required": ["b/c"]});
        let issue = refused(bounds, true).unwrap();
        assert!(issue.path.as_deref().unwrap().starts_with("/properties/b~1c/"), "{issue}");
        assert!(issue.message.contains("minimum (5) is greater than maximum (2)"), "{issue}");
    }

    #[test]
    fn what_the_decoder_compiles_passes() {
        let schema = json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"},
                            "format": {"type": "string", "format": "nonsense"}}});
        assert_eq!(refused(schema.clone(), false), None);
        assert_eq!(refused(schema, true), None);
        assert!(check(&Grammar::any_object(false)).is_ok());
    }
}
