//! Tests of compiled schemas: issues with paths, union branch names, invalid schemas.

use serde_json::json;

use super::*;

fn union() -> Value {
    json!({"oneOf": [
        {"type": "object",
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}},
         "required": ["type", "entity", "definition"]},
        {"type": "object",
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"}, "predicate": {"type": "string"},
                        "object": {"type": "string"}, "object-entity": {"type": "boolean"}},
         "required": ["type", "subject", "predicate", "object", "object-entity"]}
    ]})
}

#[test]
fn names_the_union_branch_by_its_type_const() {
    let schema = CompiledSchema::compile(&union()).unwrap();
    let line =
        json!({"type": "relationship", "subject": "DNA", "predicate": "in", "object": "cell", "object-entity": true});
    assert_eq!(schema.check(&line), Ok(Some("relationship".into())));
}

#[test]
fn union_error_points_at_the_failing_field_of_the_named_branch() {
    let schema = CompiledSchema::compile(&union()).unwrap();
    let line =
        json!({"type": "relationship", "subject": "DNA", "predicate": "in", "object": "cell", "object-entity": "yes"});
    let issues = schema.check(&line).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].path, "/object-entity");
}

#[test]
fn unknown_discriminator_is_reported() {
    let schema = CompiledSchema::compile(&union()).unwrap();
    let issues = schema.check(&json!({"type": "topic", "topic": "x"})).unwrap_err();
    assert!(issues.iter().any(|i| i.path == "/type" && i.message.contains("\"definition\"")), "{issues:?}");
}

#[test]
fn branch_without_const_is_named_by_index() {
    let schema = CompiledSchema::compile(&json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})).unwrap();
    assert_eq!(schema.check(&json!(3)), Ok(Some("1".into())));
}

#[test]
fn every_failing_path_is_reported() {
    let schema = CompiledSchema::compile(&json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a", "b", "c"]
    }))
    .unwrap();
    let issues = schema.check(&json!({"a": 1, "b": "x"})).unwrap_err();
    let mut paths: Vec<_> = issues.iter().map(|i| i.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["", "/a", "/b"], "{issues:?}");
}

#[test]
fn invalid_schema_is_reported_with_its_path() {
    let err =
        CompiledSchema::compile(&json!({"type": "object", "properties": {"n": {"minimum": "zero"}}})).unwrap_err();
    assert_eq!(err.issues[0].path, "/properties/n/minimum", "{err}");
    let err = CompiledSchema::compile(&json!([1, 2])).unwrap_err();
    assert!(err.to_string().contains("an array"), "{err}");
}

#[test]
fn item_schema_of_array_and_of_ptc_wrapper() {
    let array = CompiledSchema::compile(&json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    let item = array.item_schema().unwrap().unwrap();
    assert!(item.check(&json!(1)).is_ok());
    assert!(item.check(&json!("x")).is_err());
    let wrapped = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}});
    let item = CompiledSchema::compile(&wrapped).unwrap().item_schema().unwrap().unwrap();
    assert!(item.check(&json!("x")).is_ok());
    assert!(CompiledSchema::compile(&json!({"type": "string"})).unwrap().item_schema().is_none());
}

#[test]
fn long_messages_are_cut_on_a_char_boundary() {
    let schema = CompiledSchema::compile(&json!({"type": "integer"})).unwrap();
    let issues = schema.check(&json!("é".repeat(1000))).unwrap_err();
    assert!(issues[0].message.len() <= MAX_MESSAGE + '…'.len_utf8());
}

#[test]
fn union_items_of_an_array_report_the_failing_field() {
    let schema = CompiledSchema::compile(&json!({"type": "array", "items": union()})).unwrap();
    let answer = json!([
        {"type": "definition", "entity": "DNA", "definition": "a molecule"},
        {"type": "relationship", "subject": "DNA", "predicate": "in", "object": "cell"}
    ]);
    let issues = schema.check(&answer).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].path, "/1");
    assert!(issues[0].message.contains("object-entity"), "{issues:?}");
    let wrapped = json!({"type": "object", "properties": {"items": {"type": "array", "items": union()}}});
    let schema = CompiledSchema::compile(&wrapped).unwrap();
    let issues = schema.check(&json!({"items": [{"type": "definition", "entity": 3, "definition": "x"}]})).unwrap_err();
    assert_eq!(issues[0].path, "/items/0/entity", "{issues:?}");
}

mod fast_path {
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use super::super::dispatch::Dispatch;
    use super::super::*;
    use super::union;

    /// Unions the fast path takes, and ones it must leave to the whole schema.
    fn schemas() -> Vec<(Value, bool)> {
        let strict = json!({"oneOf": [
            {"type": "object",
             "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}},
             "required": ["type", "entity", "definition"], "additionalProperties": false},
            {"type": "object",
             "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"}, "object-entity": {"type": "boolean"}},
             "required": ["type", "subject"], "additionalProperties": false}
        ]});
        let with_defs = json!({"$defs": {"name": {"type": "string", "minLength": 2}}, "anyOf": [
            {"properties": {"type": {"const": "a"}, "n": {"$ref": "#/$defs/name"}}},
            {"properties": {"type": {"const": "b"}, "m": {"type": "integer"}}, "required": ["m"]},
            {"properties": {"type": {"const": "c"}}}
        ]});
        let loose = json!({"oneOf": [
            {"properties": {"type": {"const": "a"}}},
            {"properties": {"type": {"const": "b"}, "x": {"type": "integer"}}}
        ]});
        vec![
            (union(), true),
            (strict, true),
            (with_defs, true),
            (loose, true),
            (json!({"type": "object", "oneOf": union()["oneOf"].clone()}), false),
            (json!({"$schema": "http://json-schema.org/draft-04/schema#", "oneOf": union()["oneOf"].clone()}), false),
            (
                json!({"oneOf": [{"properties": {"type": {"const": "a"}}}, {"properties": {"type": {"const": "a"}}}]}),
                false,
            ),
            (
                json!({"oneOf": [{"properties": {"type": {"const": "a"}}}, {"properties": {"x": {"type": "integer"}}}]}),
                false,
            ),
            (json!({"oneOf": [{"properties": {"type": {"const": "a"}}}, {"$ref": "#/oneOf/0"}]}), false),
        ]
    }

    #[test]
    fn the_fast_path_is_taken_only_where_it_is_certain() {
        for (schema, fast) in schemas() {
            assert_eq!(Dispatch::of(&schema).is_some(), fast, "{schema}");
        }
    }

    fn field() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("definition")),
            Just(json!("relationship")),
            Just(json!("a")),
            Just(json!("b")),
            Just(json!("c")),
            Just(json!("zz")),
            Just(json!("x")),
            Just(json!(1)),
            Just(json!(true)),
            Just(Value::Null),
            Just(json!(["a"])),
        ]
    }

    fn instance() -> impl Strategy<Value = Value> {
        let keys = proptest::sample::select(vec![
            "type",
            "entity",
            "definition",
            "subject",
            "predicate",
            "object",
            "object-entity",
            "n",
            "m",
            "x",
        ]);
        prop_oneof![
            4 => proptest::collection::vec((keys, field()), 0..7)
                .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())),
            1 => field(),
        ]
    }

    proptest! {
        #[test]
        fn the_fast_path_gives_the_whole_schemas_verdict(values in proptest::collection::vec(instance(), 1..24)) {
            for (schema, _) in schemas() {
                let compiled = CompiledSchema::compile(&schema).unwrap();
                for value in &values {
                    prop_assert_eq!(compiled.check(value), compiled.check_whole(value), "{} on {}", schema, value);
                }
            }
        }
    }
}
