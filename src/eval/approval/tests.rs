//! Approving real run records (answers played through the run engine): a whole answer is written as
//! it is; a line with a schema error, a line the token limit cut, an array element with a schema
//! error or cut off, and a cut text are refused with their place and reason, and written without
//! them (marked in `left_out`) only when the user insists.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::eval::replayed::{record, Ending};

const LINES: &str = r#"
id = "drugs"
response_type = "jsonl"
template = "List the drugs in: {{text}}"
schema = '''{"type": "object", "properties": {"drug": {"type": "string"}, "dose": {"type": "number"}}, "required": ["drug", "dose"], "additionalProperties": false}'''

[variables]
text = "the ward notes"

[eval]
match = "drug"

[[cases]]
name = "ward"
[cases.expected]
items = [{drug = "aspirin", dose = 300}]
"#;

fn prompt(text: &str) -> PromptFile {
    PromptFile::from_toml_str(text, Path::new("dir/drugs.toml")).unwrap()
}

fn array_prompt() -> PromptFile {
    let mut array = prompt(LINES);
    array.response_type = crate::output::ResponseType::Json;
    array.schema = Some(json!({"type": "array", "items": array.schema.take().unwrap()}));
    array
}

fn expected(prompt: &PromptFile) -> &crate::prompt::expect::Expected {
    prompt.cases[0].expected.as_ref().unwrap()
}

#[test]
fn a_whole_answer_is_written_as_it_is() {
    let mut lines = prompt(LINES);
    let answer = "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"ibuprofen\", \"dose\": 400}\n";
    let approval = Approval::of(&record(&lines, Some("ward"), answer, Ending::Finish("stop"))).unwrap();
    assert!(approval.is_whole() && approval.refusal().is_none(), "{approval:?}");
    assert_eq!((approval.count(), approval.lines().len()), ("2 items".to_string(), 2));
    approve(&mut lines, &approval, false).unwrap();
    assert_eq!(expected(&lines).items.as_ref().map(Vec::len), Some(2));
    assert!(expected(&lines).left_out.is_empty());
}

#[test]
fn a_line_with_a_schema_error_is_refused_and_left_out_when_insisted() {
    let mut lines = prompt(LINES);
    let answer =
        "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"ibuprofen\"}\n{\"drug\": \"codeine\", \"dose\": 30}\n";
    let approval = Approval::of(&record(&lines, Some("ward"), answer, Ending::Finish("stop"))).unwrap();
    assert_eq!(approval.count(), "2 items");
    assert_eq!(approval.left_out.len(), 1, "{approval:?}");
    assert!(approval.left_out[0].starts_with("line 2: does not match the schema"), "{:?}", approval.left_out);
    let refused = approve(&mut lines, &approval, false).unwrap_err().to_string();
    assert!(refused.contains("not approved") && refused.contains("line 2"), "{refused}");
    assert_eq!(expected(&lines).items.as_ref().map(Vec::len), Some(1), "the refused approval wrote nothing");
    approve(&mut lines, &approval, true).unwrap();
    let written = expected(&lines);
    assert_eq!(
        written.items,
        Some(vec![json!({"drug": "aspirin", "dose": 300}), json!({"drug": "codeine", "dose": 30})]),
        "the valid items, in order"
    );
    assert_eq!(written.left_out, approval.left_out);
    // The mark reads back from the file.
    let back = PromptFile::from_toml_str(&lines.to_toml_string().unwrap(), Path::new("dir/drugs.toml")).unwrap();
    assert_eq!(expected(&back).left_out, approval.left_out);
}

#[test]
fn a_last_line_cut_by_the_token_limit_is_refused() {
    let mut lines = prompt(LINES);
    let answer = "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"ibupro";
    let approval = Approval::of(&record(&lines, Some("ward"), answer, Ending::Finish("length"))).unwrap();
    assert_eq!(approval.count(), "1 item");
    assert_eq!(
        approval.left_out,
        [
            "line 2: cut off by the token limit mid-record",
            "the answer hit the token limit: what would have followed is missing"
        ]
    );
    assert!(approve(&mut lines, &approval, false).is_err());
    // Cut at a line's end: every line is whole, but what followed is missing; refused all the same.
    let whole_lines = "{\"drug\": \"aspirin\", \"dose\": 300}\n";
    let approval = Approval::of(&record(&lines, Some("ward"), whole_lines, Ending::Finish("length"))).unwrap();
    assert_eq!((approval.count(), approval.left_out.len()), ("1 item".to_string(), 1));
    assert!(approval.refusal().unwrap().contains("token limit"));
}

#[test]
fn a_json_array_keeps_its_valid_complete_elements() {
    let mut array = array_prompt();
    // Element 2 has no dose (a schema error): refused, then written without it.
    let answer =
        "[{\"drug\": \"aspirin\", \"dose\": 300}, {\"drug\": \"ibuprofen\"}, {\"drug\": \"codeine\", \"dose\": 30}]";
    let approval = Approval::of(&record(&array, Some("ward"), answer, Ending::Finish("stop"))).unwrap();
    assert_eq!(approval.count(), "2 items");
    assert_eq!(approval.left_out.len(), 1, "{approval:?}");
    assert!(approval.left_out[0].starts_with("item 2: does not match the schema (/1"), "{:?}", approval.left_out);
    approve(&mut array, &approval, true).unwrap();
    assert_eq!(expected(&array).items.as_ref().map(Vec::len), Some(2));

    // Cut by the token limit inside element 2: the repaired element is not written.
    let cut = "[{\"drug\": \"aspirin\", \"dose\": 300}, {\"drug\": \"ibupro";
    let approval = Approval::of(&record(&array, Some("ward"), cut, Ending::Finish("length"))).unwrap();
    assert_eq!(approval.answer, Approved::Items(vec![json!({"drug": "aspirin", "dose": 300})]), "{approval:?}");
    assert!(approval.left_out.iter().any(|p| p == "item 2: cut off by the token limit"), "{:?}", approval.left_out);
}

#[test]
fn nothing_valid_is_never_written_and_a_cut_text_only_when_insisted() {
    let mut lines = prompt(LINES);
    let answer = "{\"drug\": \"ibuprofen\"}\n{\"drug\": codeine}\n";
    let approval = Approval::of(&record(&lines, Some("ward"), answer, Ending::Finish("stop"))).unwrap();
    assert_eq!(approval.count(), "0 items");
    assert_eq!(approval.left_out.len(), 2, "{approval:?}");
    assert!(approval.left_out[1].starts_with("line 2: not JSON"), "{:?}", approval.left_out);
    assert!(!approval.has_answer());
    let refused = approve(&mut lines, &approval, true).unwrap_err().to_string();
    assert!(refused.contains("nothing to approve"), "insisting never writes an empty answer: {refused}");
    assert_eq!(expected(&lines).items.as_ref().map(Vec::len), Some(1));

    let mut text = prompt(LINES);
    text.response_type = crate::output::ResponseType::Text;
    text.schema = None;
    let approval =
        Approval::of(&record(&text, Some("ward"), "Aspirin 300 mg, ibupro", Ending::Finish("length"))).unwrap();
    assert_eq!(approval.answer, Approved::Value(json!("Aspirin 300 mg, ibupro")));
    assert!(approve(&mut text, &approval, false).is_err());
    approve(&mut text, &approval, true).unwrap();
    assert_eq!(expected(&text).value, Some(json!("Aspirin 300 mg, ibupro")));

    let no_case = record(&lines, None, "{\"drug\": \"a\", \"dose\": 1}\n", Ending::Finish("stop"));
    assert!(Approval::of(&no_case).unwrap_err().contains("only a case's answer"));
    let empty = Approval { case: "ward".into(), ..Approval::default() };
    assert!(approve(&mut lines, &empty, true).unwrap_err().to_string().contains("nothing to approve"));
}
