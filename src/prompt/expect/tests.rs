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
