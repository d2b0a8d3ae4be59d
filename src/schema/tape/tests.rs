//! The tape against `serde_json`: what it reads, and that a schema checks a tape as it checks the value.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};

use super::*;
use crate::output::jsonl::random_json_text;
use crate::schema::{Check, CompiledSchema};

fn read(text: &str) -> Result<Value, String> {
    let mut tape = Tape::default();
    tape.read(text).map(|()| tape.to_value()).map_err(|e| e.to_string())
}

/// Schemas that reach every accessor of the tape: objects (lookups and member passes), arrays,
/// strings (length, pattern, const, enum), numbers (bounds, integer), booleans, null, unions with and
/// without a `type` to dispatch on, `uniqueItems`, `propertyNames` and local references.
fn schemas() -> Vec<Value> {
    vec![
        json!({"oneOf": [
            {"type": "object", "properties": {"type": {"const": "a"}, "n": {"type": "integer", "minimum": 0}},
             "required": ["type", "n"], "additionalProperties": false},
            {"type": "object", "properties": {"type": {"const": "b"}, "s": {"type": "string", "maxLength": 2}},
             "required": ["type"]}]}),
        json!({"type": "object",
               "properties": {"a": {"enum": [1, "x", null, [1], {"c": 1}]}, "b": {"type": ["array", "boolean"]},
                              "c": {"type": "array", "items": {"type": "number", "exclusiveMaximum": 5},
                                    "uniqueItems": true}},
               "propertyNames": {"pattern": "^[a-d]+$"}, "maxProperties": 4}),
        json!({"anyOf": [{"type": "object", "minProperties": 2}, {"type": "array", "minItems": 1}]}),
        json!({"$defs": {"leaf": {"type": ["string", "null", "boolean"]}},
               "type": "object", "additionalProperties": {"anyOf": [{"$ref": "#/$defs/leaf"}, {"type": "object"}]}}),
    ]
}

/// Records made of the names and values the schemas above test, so that each is valid about as often
/// as not (random JSON almost never is); the union's records (schema 0) start with its `type`.
fn record_text(which: usize) -> impl Strategy<Value = String> {
    let names = prop::sample::select(vec!["type", "n", "s", "a", "b", "c", "d", "ab", "e"]);
    let values = prop::sample::select(vec![
        "\"a\"",
        "\"b\"",
        "\"x\"",
        "\"xyz\"",
        "1",
        "-1",
        "1.0",
        "7",
        "2.5",
        "null",
        "true",
        "false",
        "[1]",
        "[1,1]",
        "[1,2.5]",
        "[1,7]",
        "[]",
        "{\"c\":1}",
        "{\"c\":1.0}",
        "{}",
        "{\"q\":{}}",
    ]);
    let tag = prop::sample::select(vec!["\"type\":\"a\",", "\"type\":\"b\",", "\"type\":\"c\","]);
    (tag, prop::collection::vec((names, values), 0..4)).prop_map(move |(tag, members)| {
        let members: Vec<String> = members.iter().map(|(name, value)| format!("\"{name}\":{value}")).collect();
        let tag = if which == 0 { tag } else { "" };
        format!("{{{tag}{}}}", members.join(",")).replace(",}", "}")
    })
}

proptest! {
    #[test]
    fn reads_what_serde_json_reads(text in random_json_text(), cut in any::<usize>()) {
        let expect = |text: &str| serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
        prop_assert_eq!(read(&text), expect(&text));
        let at = (0..=cut % (text.len() + 1)).rev().find(|at| text.is_char_boundary(*at)).unwrap_or(0);
        prop_assert_eq!(read(&text[..at]), expect(&text[..at]));
    }

    #[test]
    fn a_tape_checks_as_its_value_does(text in random_json_text(), which in 0..4usize, tag in "[ab]") {
        let schema = CompiledSchema::compile(&schemas()[which]).unwrap();
        // A union's `type` is often present, so the dispatch is taken as well as skipped.
        let text = match text.strip_prefix('{') {
            Some(rest) if which == 0 => format!("{{\"type\":\"{tag}\",{rest}").replace(",}", "}"),
            _ => text,
        };
        let mut tape = Tape::default();
        if tape.read(&text).is_ok() {
            let value = tape.to_value();
            prop_assert_eq!(schema.check_tape(&tape), schema.check(&value), "{}", text);
        }
    }

    #[test]
    fn a_record_checks_as_its_value_does((which, text) in (0..4usize).prop_flat_map(|which| (Just(which), record_text(which)))) {
        let schema = CompiledSchema::compile(&schemas()[which]).unwrap();
        let mut tape = Tape::default();
        tape.read(&text).unwrap();
        prop_assert_eq!(schema.check_tape(&tape), schema.check(&tape.to_value()), "{}", text);
    }
}

#[test]
fn repeated_keys_are_flagged_and_read_as_a_value_reads_them() {
    let mut tape = Tape::default();
    for (text, repeats) in [
        (r#"{"a":1,"b":2}"#, false),
        (r#"{"a":1,"b":{"a":2}}"#, false),
        (r#"{"a":1,"b":2,"a":3}"#, true),
        (r#"[{"x":[{"k":1,"k":2}]}]"#, true),
    ] {
        tape.read(text).unwrap();
        assert_eq!(tape.repeats_keys(), repeats, "{text}");
        assert_eq!(tape.to_value(), serde_json::from_str::<Value>(text).unwrap());
    }
    let many: Vec<String> = (0..40).map(|n| format!("\"k{}\":{n}", n % 39)).collect();
    tape.read(&format!("{{{}}}", many.join(","))).unwrap();
    assert!(tape.repeats_keys(), "found by sorting past the pairwise limit");
    tape.read(r#"{"type":"definition","n":1}"#).unwrap();
    assert!(!tape.repeats_keys(), "each read starts afresh");
    assert_eq!(tape.member_str("type"), Some("definition"));
    assert_eq!(tape.member_str("n"), None);
}

#[test]
fn deep_nesting_fails_as_serde_json_does_and_a_huge_tape_is_freed() {
    for deep in ["[".repeat(10_000), "{\"a\":".repeat(10_000)] {
        assert_eq!(read(&deep), serde_json::from_str::<Value>(&deep).map_err(|e| e.to_string()));
    }
    let mut tape = Tape::default();
    let long = format!("[{}1]", "1,".repeat(KEEP));
    tape.read(&long).unwrap();
    tape.release_if_large();
    assert_eq!(tape.entries.capacity(), 0);
    tape.read("{}").unwrap();
    tape.release_if_large();
    assert!(tape.is_object() && tape.entries.capacity() > 0, "a small tape is kept for the next record");
}

#[test]
fn the_records_are_valid_and_invalid_under_every_schema() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (which, schema) in schemas().iter().enumerate() {
        let schema = CompiledSchema::compile(schema).unwrap();
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..200 {
            let text = record_text(which).new_tree(&mut runner).unwrap().current();
            let mut tape = Tape::default();
            tape.read(&text).unwrap();
            if schema.check_tape(&tape).is_ok() {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
        assert!(valid >= 10 && invalid >= 10, "schema {which}: {valid} valid, {invalid} invalid of 200");
    }
}
