//! Unit tests of TrustGraph import and export.

use serde_json::json;

use super::*;

/// A configuration in canonical form (what export writes), exercising every part.
fn canonical() -> String {
    let config = json!({"prompt": {
        "system": "You are a helpful assistant.\nAnswer in {{language}}.",
        "terms": {"language": "English", "max": 3},
        "template-index": ["extract-definitions", "question", "schema-selection"],
        "template.extract-definitions": {
            "prompt": "Extract definitions from:\n\n{{text}}\n\nOne JSON object per line: {\"entity\": \"…\"}",
            "response-type": "jsonl",
            "schema": {"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}},
                       "required": ["entity", "definition"]}
        },
        "template.question": {"prompt": "{{question}}", "response-type": "text"},
        "template.schema-selection": {
            "prompt": "Pick schemas for: {{question}}\n{% for s in schemas %}- {{ s.name }}\n{% endfor %}",
            "response-type": "json",
            "schema": {"type": "array", "items": {"type": "string"}, "description": "relevant schema names", "x": 1.5}
        }
    }});
    let mut text = serde_json::to_string_pretty(&config).unwrap();
    text.push('\n');
    text
}

#[test]
fn import_then_export_is_byte_exact() {
    let text = canonical();
    let config = import(&text).unwrap();
    assert_eq!(config.prompts.len(), 3);
    assert!(config.notes.is_empty(), "{:?}", config.notes);
    assert_eq!(export(&config.prompts).unwrap().json, text);
}

#[test]
fn import_maps_every_field() {
    let config = import(&canonical()).unwrap();
    assert_eq!(config.system.as_deref(), Some("You are a helpful assistant.\nAnswer in {{language}}."));
    assert_eq!(config.terms["language"], json!("English"));
    let p = &config.prompts[0];
    assert_eq!((p.id.as_str(), p.response_type), ("extract-definitions", ResponseType::Jsonl));
    assert_eq!(p.schema.as_ref().unwrap()["required"], json!(["entity", "definition"]));
    assert_eq!(p.system, config.system);
    assert_eq!(p.terms, config.terms);
    assert_eq!(config.prompts[1].schema, None);
    let rendered =
        config.prompts[1].render(None, &[("question".to_string(), json!("Why?"))].into_iter().collect()).unwrap();
    assert_eq!(rendered.system.as_deref(), Some("You are a helpful assistant.\nAnswer in English."));
}

#[test]
fn config_service_encoded_form_imports_the_same() {
    let canonical = import(&canonical()).unwrap();
    let plain: Value = serde_json::from_str(&canonical_section()).unwrap();
    let encoded: Map<String, Value> =
        plain.as_object().unwrap().iter().map(|(k, v)| (k.clone(), Value::String(v.to_string()))).collect();
    let config = import(&Value::Object(encoded).to_string()).unwrap();
    assert_eq!(config.prompts, canonical.prompts);
    assert_eq!(config.system, canonical.system);
}

fn canonical_section() -> String {
    let root: Value = serde_json::from_str(&canonical()).unwrap();
    root["prompt"].to_string()
}

#[test]
fn unwrapped_section_and_trustgraph_defaults() {
    let text = r#"{"template-index": ["q"], "template.q": {"id": "q", "prompt": "{{question}}"}, "template.unused": {"prompt": "x"}}"#;
    let config = import(text).unwrap();
    let p = &config.prompts[0];
    assert_eq!((p.response_type, p.system.as_ref()), (ResponseType::Text, None));
    assert_eq!(config.notes.len(), 1, "{:?}", config.notes);
    assert!(config.notes[0].contains("template.unused"));
}

#[test]
fn object_schema_is_taken_with_a_note_and_other_keys_noted() {
    let text = r#"{"prompt": {"template-index": ["a"], "template.a": {"prompt": "p", "response-type": "jsonl",
        "object-schema": {"type": "object"}, "colour": "red"}}, "agent": {}}"#;
    let config = import(text).unwrap();
    assert_eq!(config.prompts[0].schema, Some(json!({"type": "object"})));
    let notes = config.notes.join("\n");
    assert!(notes.contains("object-schema") && notes.contains("`colour`") && notes.contains("agent"), "{notes}");
}

#[test]
fn bad_configurations_name_the_place() {
    let cases = [
        ("[1]", "the top level"),
        (r#"{"prompt": {}}"#, "/prompt/template-index"),
        (r#"{"template-index": ["a"]}"#, "/template.a"),
        (
            r#"{"template-index": ["a"], "template.a": {"prompt": "x", "response-type": "yaml"}}"#,
            "/template.a/response-type",
        ),
        (r#"{"template-index": ["a"], "template.a": {"response-type": "text"}}"#, "/template.a/prompt"),
        (r#"{"template-index": ["../evil"], "template.../evil": {"prompt": "x"}}"#, "/template-index/0"),
        (r#"{"template-index": ["a", "a"], "template.a": {"prompt": "x"}}"#, "/template-index/1"),
        (r#"{"template-index": "[\"a\"", "template.a": "{}"}"#, "/template-index"),
    ];
    for (text, at) in cases {
        match import(text) {
            Err(TrustGraphError::Invalid { at: found, .. }) => assert_eq!(found, at, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    assert!(matches!(import("{\n  \"a\": ,\n}"), Err(TrustGraphError::Json { line: 2, .. })));
    let err =
        import(r#"{"template-index": ["a"], "template.a": {"prompt": "x", "response-type": "yaml"}}"#).unwrap_err();
    assert!(err.to_string().contains("\"yaml\""), "{err}");
}

#[test]
fn export_refuses_disagreeing_globals_and_converts_signatures() {
    let mut config = import(&canonical()).unwrap();
    config.prompts[1].system = Some("Another system".into());
    let err = export(&config.prompts).unwrap_err();
    assert!(
        matches!(&err, TrustGraphError::Disagree { first, second, .. } if first == "extract-definitions" && second == "question")
    );

    let mut p = import(&canonical()).unwrap().prompts.remove(1);
    p.signature = Some("(text :string) -> {sentiment :string}".into());
    p.variables.insert("text".into(), json!("hi"));
    let exported = export(std::slice::from_ref(&p)).unwrap();
    let value: Value = serde_json::from_str(&exported.json).unwrap();
    assert_eq!(value["prompt"]["template.question"]["schema"]["required"], json!(["sentiment"]));
    let notes = exported.notes.join("\n");
    assert!(notes.contains("signature") && notes.contains("variables (1 of 1)"), "{notes}");

    let dup = vec![p.clone(), p];
    assert!(matches!(export(&dup), Err(TrustGraphError::DuplicateId { .. })));
}
