//! Unit tests of prompt file loading, schema resolution, variables and saving.

use std::path::Path;

use serde_json::json;

use super::*;

const MINIMAL: &str = r#"
id = "t"
response_type = "jsonl"
template = "Text: {{text}}"
schema = '''{"type": "object", "required": ["a"]}'''

[variables]
text = "default"
extra = 1

[[cases]]
name = "other"
expect = "one line"
variables = { text = "case text" }
"#;

fn parse(text: &str) -> Result<PromptFile, PromptError> {
    PromptFile::from_toml_str(text, Path::new("dir/p.toml"))
}

#[test]
fn loads_fields_and_defaults() {
    let p = parse(MINIMAL).unwrap();
    assert_eq!(p.id, "t");
    assert_eq!(p.response_type, ResponseType::Jsonl);
    assert_eq!(p.schema, Some(json!({"type": "object", "required": ["a"]})));
    assert_eq!(p.cases[0].expect.as_deref(), Some("one line"));
    let p = parse("template = 'x'").unwrap();
    assert_eq!((p.id.as_str(), p.response_type), ("p", ResponseType::Text));
}

#[test]
fn schema_as_toml_table_is_the_same_json() {
    let p = parse("template = 'x'\n[schema]\ntype = 'object'\nrequired = ['a']\n").unwrap();
    assert_eq!(p.schema, Some(json!({"type": "object", "required": ["a"]})));
}

#[test]
fn bad_toml_names_file_line_and_column() {
    let err = parse("id = 'x'\ntemplate = 'unclosed\n").unwrap_err();
    match &err {
        PromptError::Toml { path, line, column, .. } => {
            assert_eq!(path, Path::new("dir/p.toml"));
            assert_eq!(*line, 2);
            assert!(*column > 1);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().starts_with("dir/p.toml:2:"), "{err}");
}

#[test]
fn unknown_keys_are_named_wherever_they_are() {
    let err = parse("template = 'x'\ntemprature = 1\n").unwrap_err();
    assert!(matches!(&err, PromptError::Toml { line: 2, message, .. } if message.contains("`temprature`")), "{err}");
    let err = parse("template = 'x'\n[provider]\nmodle = 'm'\n").unwrap_err();
    assert!(matches!(&err, PromptError::Toml { line: 3, message, .. } if message.contains("`modle`")), "{err}");
    let err = parse("template = 'x'\n[[cases]]\nname = 'a'\nvars = {}\n").unwrap_err();
    assert!(matches!(&err, PromptError::Toml { message, .. } if message.contains("`vars`")), "{err}");
    let err = parse("template = 'x'\nresponse_type = 'yaml'\n").unwrap_err();
    assert!(err.to_string().contains("yaml"), "{err}");
}

#[test]
fn two_schema_sources_are_refused_at_the_second() {
    let err = parse("template = 'x'\nschema = '{}'\n\nsignature = '{a :int}'\n").unwrap_err();
    assert!(
        matches!(&err, PromptError::Invalid { line: 4, message, .. } if message.contains("`schema` and `signature`")),
        "{err}"
    );
}

#[test]
fn schema_text_errors_point_into_the_file() {
    let err = parse("template = 'x'\nschema = '''\n{\n  \"type\": \"object\",\n}\n'''\n").unwrap_err();
    match err {
        PromptError::Invalid { line, message, .. } => {
            assert_eq!(line, 5, "{message}");
            assert!(message.contains("not JSON"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn duplicate_case_names_are_refused() {
    let err = parse("template = 'x'\n[[cases]]\nname = 'a'\n[[cases]]\nname = 'a'\n").unwrap_err();
    assert!(matches!(&err, PromptError::Invalid { line: 4, .. }), "{err}");
}

#[test]
fn variables_for_merges_case_over_defaults_and_names_unknown_cases() {
    let p = parse(MINIMAL).unwrap();
    assert_eq!(p.variables_for(None).unwrap()["text"], json!("default"));
    let merged = p.variables_for(Some("other")).unwrap();
    assert_eq!((merged["text"].clone(), merged["extra"].clone()), (json!("case text"), json!(1)));
    let err = p.variables_for(Some("nope")).unwrap_err();
    assert!(matches!(&err, PromptError::UnknownCase { name, known, .. } if name == "nope" && known == &["other"]));
    assert!(err.to_string().contains("\"nope\"") && err.to_string().contains("other"), "{err}");
}

#[test]
fn render_layers_terms_defaults_case_and_overrides() {
    let mut p = parse(MINIMAL).unwrap();
    p.system = Some("{{lang}}: {{text}}".into());
    p.terms.insert("lang".into(), json!("en"));
    p.terms.insert("text".into(), json!("term"));
    let out = p.render(Some("other"), &Variables::new()).unwrap();
    assert_eq!(out.system.as_deref(), Some("en: case text"));
    let overrides: Variables = [("text".to_string(), json!("cli"))].into_iter().collect();
    assert_eq!(p.render(None, &overrides).unwrap().user, "Text: cli");
    p.template = "{{ missing }}".into();
    let err = p.render(None, &Variables::new()).unwrap_err();
    assert!(err.to_string().contains("`missing`"), "{err}");
}

#[test]
fn resolve_schema_from_signature_and_file() {
    let p = parse("template = 'x'\nsignature = '(text :string) -> {sentiment :string, score :float}'\n").unwrap();
    let resolved = p.resolve_schema(Path::new(".")).unwrap().unwrap();
    assert_eq!(resolved["properties"]["score"], json!({"type": "number"}));
    assert!(matches!(resolved.origin, SchemaOrigin::Signature(_)));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), "{\n  \"type\": \"array\",\n  oops\n}").unwrap();
    let p = parse("template = 'x'\nschema_file = 's.json'\n").unwrap();
    let err = p.resolve_schema(dir.path()).unwrap_err();
    assert!(matches!(&err, PromptError::SchemaFile { line: 3, .. }), "{err}");
    std::fs::write(dir.path().join("s.json"), "{\"type\": \"array\"}").unwrap();
    let resolved = p.resolve_schema(dir.path()).unwrap().unwrap();
    assert_eq!(resolved.schema, json!({"type": "array"}));
    let bad = parse("template = 'x'\nsignature = '(a :list) -> :int'\n").unwrap();
    assert!(matches!(bad.resolve_schema(Path::new(".")), Err(PromptError::Signature { .. })));
}

#[test]
fn save_round_trips_and_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    let mut p = parse(MINIMAL).unwrap();
    p.template = "line 1\r\nquote ''' and \"\"\" and \\ and \t tab\n".into();
    p.schema = Some(json!({"type": "object", "properties": {"a": {"default": null}}}));
    p.provider.stop = vec!["\n\n".into()];
    p.save(&path).unwrap();
    assert_eq!(PromptFile::load(&path).unwrap(), p);
    // A file there that is not a prompt is not written over; a prompt file is edited in place.
    std::fs::write(&path, "old").unwrap();
    let err = p.save(&path).unwrap_err();
    assert!(err.to_string().contains("not a prompt file"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    std::fs::write(&path, format!("# kept\n{MINIMAL}")).unwrap();
    p.save(&path).unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("# kept\n"));
    let leftovers: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("p.toml")]);
    assert_eq!(PromptFile::load(&path).unwrap(), p);
}

#[test]
fn null_variables_cannot_be_saved_and_say_where() {
    let mut p = parse(MINIMAL).unwrap();
    p.variables.insert("v".into(), json!({"list": [1, null]}));
    let err = p.to_toml_string().unwrap_err();
    assert!(err.to_string().contains("v.list[1]"), "{err}");
}

#[test]
fn load_names_missing_and_non_utf8_files() {
    let dir = tempfile::tempdir().unwrap();
    let err = PromptFile::load(dir.path().join("none.toml")).unwrap_err();
    assert!(err.to_string().contains("none.toml"), "{err}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, b"template = 'a\xffb'").unwrap();
    let err = PromptFile::load(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.toml:1:14: not UTF-8"), "{err}");
}

#[test]
fn saved_schemas_are_indented_like_a_person_would() {
    let mut p = parse("template = 'x'").unwrap();
    let long = "a".repeat(90);
    p.schema = Some(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"description": long}}}));
    let text = p.to_toml_string().unwrap();
    assert!(text.contains("    \"a\": {\"type\": \"string\"},\n"), "{text}");
    assert_eq!(parse(&text).unwrap().schema, p.schema);
}
