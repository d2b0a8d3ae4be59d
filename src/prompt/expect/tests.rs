//! Unit tests of expectations in prompt files: reading, errors at file:line, saving round-trips.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::prompt::file::{PromptError, PromptFile};

pub(crate) const FULL: &str = r#"
id = "drugs"
response_type = "jsonl"
template = "List the drugs in {{text}}"
schema = '''{"type": "object", "properties": {"drug": {"type": "string"}, "dose": {"type": "number"}, "route": {"type": "string"}}, "required": ["drug"]}'''

[eval]
match = "drug"
pass_f1 = 0.8
pass_fields = 0.5
ignore_fields = ["route"]
tolerance = 0.01

[[checks]]
kind = "regex"
path = "/drug"
pattern = "^[a-z]"

[[checks]]
kind = "finish_not_length"

[[cases]]
name = "pain"
variables = { text = "the ward notes" }

[cases.expected]
items = [
  { drug = "aspirin", dose = 300 },
  { drug = "ibuprofen", dose = 400.5 },
]

[[cases.checks]]
kind = "items"
min = 1
max = 5

[[cases.checks]]
kind = "one_of"
name = "route is known"
path = "/route"
values = ["oral", "iv"]

[[cases]]
name = "object"
[cases.expected]
match = ["drug", "/dose"]
value = { drug = "x", nested = { a = [1, 2] } }
"#;

pub(crate) fn parse(text: &str) -> Result<PromptFile, PromptError> {
    PromptFile::from_toml_str(text, Path::new("dir/p.toml"))
}

#[test]
fn reads_expected_items_checks_and_settings_with_their_lines() {
    let p = parse(FULL).unwrap();
    assert_eq!(p.eval.match_on, Some(Fields(vec!["drug".into()])));
    assert_eq!((p.eval.pass_f1(), p.eval.pass_fields(), p.eval.tolerance()), (0.8, 0.5, 0.01));
    assert_eq!(p.eval.ignore_fields, ["route"]);
    assert_eq!(p.checks.len(), 2);
    assert_eq!(p.checks[0].kind, CheckKind::Regex);
    assert_eq!(p.checks[0].label(), "regex /drug");
    assert_eq!(p.checks[0].at.0.as_ref().unwrap().to_string(), "dir/p.toml:14");
    let case = &p.cases[0];
    let expected = case.expected.as_ref().unwrap();
    assert_eq!(expected.items.as_ref().unwrap()[1], json!({"drug": "ibuprofen", "dose": 400.5}));
    assert_eq!(expected.item_place(1).unwrap().line, 29);
    assert_eq!(case.checks[1].label(), "route is known");
    assert_eq!(case.checks[1].at.0.as_ref().unwrap().line, 37);
    let object = p.cases[1].expected.as_ref().unwrap();
    assert_eq!(object.match_on, Some(Fields(vec!["drug".into(), "/dose".into()])));
    assert_eq!(object.value, Some(json!({"drug": "x", "nested": {"a": [1, 2]}})));
}

#[test]
fn saving_round_trips_expectations_and_checks() {
    let p = parse(FULL).unwrap();
    let text = p.to_toml_string().unwrap();
    let back = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, p, "{text}");
    assert_eq!(back.to_toml_string().unwrap(), text);
    // Integers stay integers, floats floats.
    assert!(text.contains("min = 1\n"), "{text}");
    assert!(text.contains("dose = 300"), "{text}");
    println!("{text}");
}

/// The error of `text` read as a prompt file: (line, column, message).
fn load_error(text: &str) -> (usize, usize, String) {
    match parse(text).unwrap_err() {
        PromptError::Invalid { path, line, column, message } => {
            assert_eq!(path, Path::new("dir/p.toml"));
            (line, column, message)
        }
        other => panic!("{other:?}"),
    }
}

const HEAD: &str = "template = 'x'\nresponse_type = 'jsonl'\n";

#[test]
fn a_bad_check_is_refused_at_its_field() {
    let (line, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'regexp'\npath = '/a'\n"));
    assert_eq!(line, 4);
    assert!(message.starts_with("unknown check kind \"regexp\"; the kinds are: equals, one_of,"), "{message}");
    let (line, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'regex'\npath = '/a'\npattern = 'a(b'\n"));
    assert_eq!(line, 6);
    assert!(message.starts_with("`pattern` \"a(b\" is not a regular expression:"), "{message}");
    let (line, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'regex'\npath = '/a'\nvalue = 'a'\n"));
    assert_eq!((line, message.as_str()), (6, "a `regex` check has no field `value`; it takes: path, pattern, each"));
    let (line, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'range'\npath = '/a'\n"));
    assert_eq!((line, message.as_str()), (3, "a `range` check needs `min` or `max`"));
    let (line, _, message) = load_error(&format!("{HEAD}\n[[checks]]\nkind = 'exists'\npath = 'entity'\n"));
    assert_eq!(
        (line, message.as_str()),
        (6, "`path` of a `exists` check: \"entity\" is not a JSON Pointer (write \"/entity\")")
    );
    let (_, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'length'\nmin = 5\nmax = 2\n"));
    assert_eq!(message, "a `length` check has `min` 5 above `max` 2");
    let (_, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'items'\nmin = -1\n"));
    assert_eq!(message, "`min` of a `items` check is a whole number, 0 or more, not -1");
    let (line, _, message) = load_error(&format!("{HEAD}[[checks]]\npath = '/a'\n"));
    assert_eq!(line, 3);
    assert!(message.starts_with("a check needs a `kind`"), "{message}");
}

#[test]
fn a_bound_that_is_not_a_finite_number_says_so_at_its_field() {
    // TOML has inf and nan; JSON has neither (they would read as null, "not null" said nothing).
    let (line, column, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'range'\npath = '/a'\nmin = -inf\n"));
    assert_eq!((line, column), (6, 7));
    assert_eq!(message, "`min` of a `range` check is -inf: a finite number is needed");
    let (line, _, message) =
        load_error(&format!("{HEAD}[[cases]]\nname = 'a'\n[[cases.checks]]\nkind = 'range'\nmin = 0\nmax = nan\n"));
    assert_eq!((line, message.as_str()), (8, "`max` of a `range` check is nan: a finite number is needed"));
    let (_, _, message) = load_error(&format!("{HEAD}[[checks]]\nkind = 'length'\nmax = +inf\n"));
    assert_eq!(message, "`max` of a `length` check is inf: a whole number, 0 or more, is needed");
    let (line, _, message) =
        load_error(&format!("{HEAD}[[checks]]\nkind = 'one_of'\npath = '/a'\nvalues = [1, nan]\n"));
    assert_eq!((line, message.as_str()), (6, "`values` of a `one_of` check holds nan: a finite number is needed"));
    // The prompt file's error names the file and line.
    let error = parse(&format!("{HEAD}[[checks]]\nkind = 'range'\nmin = -inf\n")).unwrap_err().to_string();
    assert!(error.starts_with("dir/p.toml:5:7: `min` of a `range` check is -inf"), "{error}");
}

#[test]
fn bad_expectations_and_settings_are_refused_where_they_are() {
    let (line, _, message) =
        load_error(&format!("{HEAD}[[cases]]\nname = 'a'\n[cases.expected]\nitems = []\nvalue = {{a = 1}}\n"));
    assert_eq!((line, message.as_str()), (5, "`[cases.expected]` has both `items` and `value`; it takes one of them"));
    let (_, _, message) = load_error(&format!("{HEAD}[[cases]]\nname = 'a'\n[cases.expected]\nmatch = 'a'\n"));
    assert_eq!(message, "`[cases.expected]` needs one of `items`, `value` or `expected_file`");
    let (line, _, message) = load_error(&format!("{HEAD}[eval]\npass_f1 = 0.5\npass_fields = 2.0\n"));
    assert_eq!((line, message.as_str()), (5, "`pass_fields` is a share from 0.0 to 1.0, not 2"));
    let (line, _, message) = load_error(&format!("{HEAD}[eval]\ncompare_fields = ['a']\nignore_fields = ['b']\n"));
    assert_eq!(
        (line, message.as_str()),
        (5, "`[eval]` has both `compare_fields` and `ignore_fields`; it takes one of them")
    );
    let (_, _, message) = load_error(&format!("{HEAD}[eval]\ntolerance = -1.0\n"));
    assert_eq!(message, "`tolerance` is a number 0 or more, not -1");
    let (_, _, message) = load_error(&format!("{HEAD}[eval]\nmatch = '/a~2'\n"));
    assert!(message.starts_with("`match`: \"/a~2\" is not a JSON Pointer"), "{message}");
    // Unknown keys are named by the TOML reader, as elsewhere in the file.
    let err = parse(&format!("{HEAD}[eval]\npass = 1.0\n")).unwrap_err();
    assert!(err.to_string().contains("unknown field `pass`"), "{err}");
}

const DRUGS: &str = r#"id = "drugs"
response_type = "jsonl"
template = "x"
schema = '''{"type": "object", "properties": {"drug": {"type": "string"}, "dose": {"type": "number"}}, "required": ["drug"]}'''

[[cases]]
name = "pain"
[cases.expected]
items = [
  {drug = "aspirin", dose = 300},
  {drug = "ibuprofen", dose = "400 mg"},
]
"#;

/// The error resolving every case's expectations of `text`: (line, message).
fn resolve_error(text: &str) -> (usize, String) {
    let prompt = parse(text).unwrap();
    match resolve::validate_expectations(&prompt, Path::new("dir")).unwrap_err() {
        PromptError::Invalid { line, message, .. } => (line, message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_expected_item_the_schema_rejects_is_an_error_at_its_line() {
    let (line, message) = resolve_error(DRUGS);
    assert_eq!(line, 11);
    assert!(message.starts_with("case \"pain\": expected item 2 does not match the schema: /dose: "), "{message}");
    let fixed = DRUGS.replace("\"400 mg\"", "400");
    resolve::validate_expectations(&parse(&fixed).unwrap(), Path::new("dir")).unwrap();
}

#[test]
fn a_pointer_to_a_field_no_branch_declares_is_an_error() {
    let fixed = DRUGS.replace("\"400 mg\"", "400");
    let (line, message) = resolve_error(&format!("{fixed}[[cases.checks]]\nkind = 'exists'\npath = '/dosage'\n"));
    assert_eq!(line, 13);
    assert_eq!(
        message,
        "case \"pain\": check `exists /dosage`: the schema declares no field \"dosage\" (its fields are: drug, dose)"
    );
    let (_, message) =
        resolve_error(&format!("{fixed}[[cases.checks]]\nkind = 'exists'\npath = '/dose'\neach = false\n"));
    assert!(message.contains("with `each = false` the path starts at an item's index"), "{message}");
    let ok = format!("{fixed}[[cases.checks]]\nkind = 'exists'\npath = '/0/dose'\neach = false\n");
    resolve::validate_expectations(&parse(&ok).unwrap(), Path::new("dir")).unwrap();
    let (line, message) = resolve_error(&fixed.replace("[[cases]]", "[eval]\nignore_fields = ['route']\n\n[[cases]]"));
    assert_eq!((line, message.as_str()), (6, "`[eval]` ignore_fields names \"route\": the schema declares no field \"route\" (its fields are: drug, dose)"));
    let (_, message) = resolve_error(&fixed.replace("items = [", "match = 'name'\nitems = ["));
    assert!(message.starts_with("case \"pain\": `match` names \"name\""), "{message}");
}

#[test]
fn the_answer_shape_decides_between_items_and_value() {
    let value_on_lines = DRUGS.replace(
        "items = [\n  {drug = \"aspirin\", dose = 300},\n  {drug = \"ibuprofen\", dose = \"400 mg\"},\n]",
        "value = {drug = \"aspirin\"}",
    );
    let (_, message) = resolve_error(&value_on_lines);
    assert_eq!(message, "case \"pain\": a jsonl answer is a list of items: write `items = [...]`, not `value`");
    let object = r#"template = "x"
response_type = "json"
schema = '''{"type": "object", "properties": {"label": {"type": "string"}}}'''
[[cases]]
name = "a"
[cases.expected]
items = [{label = "x"}]
"#;
    let (_, message) = resolve_error(object);
    assert_eq!(message, "case \"a\": the schema describes one value, not a list: write `value = {...}`, not `items`");
    let text = "template = 'x'\n[[cases]]\nname = 'a'\n[cases.expected]\nvalue = 3\n";
    let (_, message) = resolve_error(text);
    assert_eq!(message, "case \"a\": a text answer's expected `value` is a string, not 3");
}

#[test]
fn an_expected_file_is_read_beside_the_prompt_with_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("gold")).unwrap();
    std::fs::write(dir.path().join("gold/pain.jsonl"), "{\"drug\": \"aspirin\", \"dose\": 300}\n\n{\"drug\": 7}\n")
        .unwrap();
    let text = DRUGS.replace(
        "items = [\n  {drug = \"aspirin\", dose = 300},\n  {drug = \"ibuprofen\", dose = \"400 mg\"},\n]",
        "expected_file = \"gold/pain.jsonl\"",
    );
    let prompt = PromptFile::from_toml_str(&text, &dir.path().join("p.toml")).unwrap();
    match resolve::validate_expectations(&prompt, dir.path()).unwrap_err() {
        PromptError::Invalid { path, line, message, .. } => {
            assert_eq!((path, line), (dir.path().join("gold/pain.jsonl"), 3));
            assert!(message.starts_with("case \"pain\": expected item 2 does not match the schema"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(
        dir.path().join("gold/pain.jsonl"),
        "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"naproxen\"}\n",
    )
    .unwrap();
    let resolver = resolve::Resolver::new(&prompt, dir.path()).unwrap();
    let resolved = resolver.case(Some("pain")).unwrap();
    assert_eq!(
        resolved.expected,
        Some(resolve::ExpectedAnswer::Items(vec![
            json!({"drug": "aspirin", "dose": 300}),
            json!({"drug": "naproxen"})
        ]))
    );
    // The schema's first required string field is the default key.
    assert_eq!(resolved.key, resolve::PairKey::Fields(vec!["/drug".into()]));
    std::fs::write(dir.path().join("gold/pain.jsonl"), "{\"drug\": \"aspirin\"\n").unwrap();
    match resolver.case(Some("pain")).unwrap_err() {
        PromptError::Invalid { line, message, .. } => {
            assert_eq!(line, 1);
            assert!(message.starts_with("an expected item is not JSON"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(dir.path().join("gold/pain.jsonl")).unwrap();
    assert!(matches!(resolver.case(Some("pain")), Err(PromptError::Read { .. })));
}

#[test]
fn a_prompt_built_in_memory_names_itself_when_there_is_no_line() {
    let mut prompt = parse(&DRUGS.replace("\"400 mg\"", "400")).unwrap();
    let mut check = CheckSpec::new(CheckKind::Absent);
    check.path = Some("/nope".into());
    prompt.checks.push(check);
    let err = resolve::validate_expectations(&prompt, Path::new("dir")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "prompt `drugs`: check `absent /nope`: the schema declares no field \"nope\" (its fields are: drug, dose)"
    );
}

#[test]
fn the_default_key_is_the_union_type_and_each_branch_first_required_string() {
    let text = r#"template = "x"
response_type = "jsonl"
schema = '''{"oneOf": [
  {"type": "object", "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}}, "required": ["type", "entity"]},
  {"type": "object", "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"}, "object": {"type": "string"}}, "required": ["type", "subject", "object"]}
]}'''
[[cases]]
name = "a"
[cases.expected]
items = [{type = "definition", entity = "DNA"}]
"#;
    let prompt = parse(text).unwrap();
    let resolved = resolve::Resolver::new(&prompt, Path::new("dir")).unwrap().case(Some("a")).unwrap();
    assert_eq!(resolved.key.describe(), "/type + /entity (definition) | /type + /subject (relationship)");
    // A json twin (one array of the same items) has the same default key.
    let mut twin = prompt.clone();
    twin.response_type = crate::output::ResponseType::Json;
    twin.schema = Some(json!({"type": "array", "items": prompt.schema.clone().unwrap()}));
    let twin_key = resolve::Resolver::new(&twin, Path::new("dir")).unwrap().case(Some("a")).unwrap().key;
    assert_eq!(twin_key, resolved.key);
}

#[test]
fn approving_an_answer_keeps_match_and_leaves_nulls_out() {
    let mut prompt = parse(FULL).unwrap();
    prompt.approve("pain", &json!([{"drug": "a", "dose": null}, {"drug": "b"}]), Vec::new()).unwrap();
    assert_eq!(
        prompt.cases[0].expected.as_ref().unwrap().items,
        Some(vec![json!({"drug": "a"}), json!({"drug": "b"})])
    );
    let err = prompt.approve("pain", &json!([{"drug": "a"}, null]), Vec::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "prompt `drugs`: case \"pain\": the answer has null at /1, which TOML cannot hold; not approved"
    );
    assert!(prompt.approve("pain", &json!({"drug": "a"}), Vec::new()).is_err(), "a jsonl answer is a list");
    assert!(matches!(prompt.approve("nope", &json!([]), Vec::new()), Err(PromptError::UnknownCase { .. })));
    // A json answer that is one object becomes `value`; the case's `match` stays.
    prompt.response_type = crate::output::ResponseType::Json;
    let left_out = vec!["the answer hit the token limit: what would have followed is missing".to_string()];
    prompt.approve("object", &json!({"drug": "y", "dose": null, "nested": {"a": null}}), left_out.clone()).unwrap();
    let expected = prompt.cases[1].expected.as_ref().unwrap();
    assert_eq!(expected.value, Some(json!({"drug": "y", "nested": {}})));
    assert_eq!(expected.left_out, left_out, "what approving left out is kept beside the answer");
    assert_eq!(expected.match_on, Some(Fields(vec!["drug".into(), "/dose".into()])));
    let back = parse(&prompt.to_toml_string().unwrap()).unwrap();
    assert_eq!(back, prompt);
}

#[test]
fn a_check_reads_back_from_json_as_from_toml() {
    let check: CheckSpec =
        serde_json::from_value(json!({"kind": "range", "path": "/score", "min": 0, "max": 1})).unwrap();
    assert_eq!((check.kind, check.label()), (CheckKind::Range, "range /score".to_string()));
    let err = serde_json::from_value::<CheckSpec>(json!({"kind": "nope"})).unwrap_err();
    assert!(err.to_string().starts_with("unknown check kind \"nope\""), "{err}");
}

#[test]
fn field_comparators_and_fuzzy_pairing_read_and_save_back() {
    let text = format!(
        "{HEAD}[eval]\nmatch = 'description'\nmatch_similarity = 0.7\n\n[eval.fields.'/note']\ncompare = 'similarity'\nthreshold = 0.8\n\n[eval.fields.price]\ncompare = 'number'\ntolerance = 0.01\n\n[eval.fields.'/tags']\ncompare = 'set'\n"
    );
    let p = parse(&text).unwrap();
    assert_eq!(p.eval.match_similarity, Some(0.7));
    assert_eq!(
        p.eval.fields,
        std::collections::BTreeMap::from([
            ("/note".to_string(), Comparator::Similarity { threshold: 0.8 }),
            ("/price".to_string(), Comparator::Number { tolerance: Some(0.01) }),
            ("/tags".to_string(), Comparator::Set { threshold: None }),
        ])
    );
    let saved = p.to_toml_string().unwrap();
    assert!(saved.contains("[eval.fields.\"/note\"]\ncompare = \"similarity\"\nthreshold = 0.8\n"), "{saved}");
    assert_eq!(parse(&saved).unwrap_or_else(|e| panic!("{e}\n{saved}")), p, "{saved}");
}

#[test]
fn a_bad_comparator_is_refused_at_its_line_naming_the_field() {
    let (line, _, message) = load_error(&format!("{HEAD}[eval.fields.'/note']\ncompare = 'fuzzy'\n"));
    assert_eq!(
        (line, message.as_str()),
        (
            4,
            "`[eval.fields.\"/note\"]`: unknown comparator \"fuzzy\" for field \"/note\"; the comparators are: exact, normalized, similarity, number, set, similar, judge, command"
        )
    );
    let (line, _, message) =
        load_error(&format!("{HEAD}[eval.fields.'/note']\ncompare = 'similarity'\nthreshold = 1.5\n"));
    assert_eq!(
        (line, message.as_str()),
        (5, "`[eval.fields.\"/note\"]`: `threshold` is a share from 0.0 to 1.0, not 1.5")
    );
    let (line, _, message) = load_error(&format!("{HEAD}[eval.fields.'/note']\ncompare = 'similarity'\n"));
    assert_eq!(line, 3);
    assert!(
        message.ends_with("the `similarity` comparator needs a `threshold` from 0.0 to 1.0 (e.g. 0.8)"),
        "{message}"
    );
    let (line, _, message) = load_error(&format!("{HEAD}[eval.fields.'/note']\ncompare = 'exact'\nthreshold = 0.5\n"));
    assert_eq!(
        (line, message.as_str()),
        (5, "`[eval.fields.\"/note\"]`: the `exact` comparator has no `threshold`; it takes nothing but `compare`")
    );
    let (line, _, message) = load_error(&format!("{HEAD}[eval.fields.'/a~2']\ncompare = 'exact'\n"));
    assert_eq!(line, 3);
    assert!(message.starts_with("`[eval.fields]`: \"/a~2\" is not a JSON Pointer"), "{message}");
    let (line, _, message) = load_error(&format!("{HEAD}[eval]\nmatch_similarity = 0.0\n"));
    assert_eq!((line, message.as_str()), (4, "`match_similarity` is a share above 0.0, up to 1.0, not 0"));
    let (line, _, message) =
        load_error(&format!("{HEAD}[eval]\nignore_fields = ['note']\n[eval.fields.note]\ncompare = 'normalized'\n"));
    assert_eq!(
        (line, message.as_str()),
        (4, "`ignore_fields` names \"/note\", which `[eval.fields]` gives a comparator; drop one of them")
    );
    // The error names the file and line.
    let error = parse(&format!("{HEAD}[eval.fields.'/note']\ncompare = 'fuzzy'\n")).unwrap_err().to_string();
    assert!(error.starts_with("dir/p.toml:4:"), "{error}");
}

#[test]
fn a_field_spelled_null_reads_as_null_and_writes_back_the_same() {
    let text = FULL.replace(
        "{ drug = \"aspirin\", dose = 300 }",
        "{ drug = \"aspirin\", dose = { null = true }, tags = [{ null = true }] }",
    );
    let prompt = parse(&text).unwrap();
    let items = prompt.cases[0].expected.as_ref().unwrap().items.clone().unwrap();
    assert_eq!(items[0], json!({"drug": "aspirin", "dose": null, "tags": [null]}));
    let written = prompt.to_toml_string().unwrap();
    assert!(written.contains("null = true"), "{written}");
    assert_eq!(parse(&written).unwrap(), prompt, "read back the same");
    // An item that is the spelling itself is refused where it is written.
    let text = FULL.replace("{ drug = \"aspirin\", dose = 300 }", "{ null = true }");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("p.toml:28") && err.contains("not null itself"), "{err}");
}
