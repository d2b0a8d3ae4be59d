//! Cells scored end to end: answers played through the run engine by the replay provider (a closed
//! port for "no answer"), scored against expectations read from prompt files; figures in comments.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::eval::replayed::{record, unreachable, Ending};

/// The drugs of EVAL.md's worked example, as a jsonl prompt.
const DRUGS: &str = r#"
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
items = [
  {drug = "aspirin", dose = 300},
  {drug = "ibuprofen", dose = 400},
  {drug = "paracetamol", dose = 500},
  {drug = "naproxen", dose = 250},
]
"#;

fn prompt(text: &str) -> PromptFile {
    PromptFile::from_toml_str(text, Path::new("dir/drugs.toml")).unwrap()
}

/// The json twin of [`DRUGS`]: one array, the same cases and expectations.
fn drugs_json() -> PromptFile {
    let mut twin = prompt(DRUGS);
    twin.response_type = crate::output::ResponseType::Json;
    twin.schema = Some(json!({"type": "array", "items": twin.schema.take().unwrap()}));
    twin
}

fn expectations(prompt: &PromptFile, case: &str) -> Expectations {
    Expectations::for_case(prompt, Path::new("dir"), Some(case)).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

const WORKED_LINES: &str =
    "{\"drug\": \"Aspirin\", \"dose\": 300}\n{\"drug\": \"ibuprofen\", \"dose\": 200}\n{\"drug\": \"codeine\", \"dose\": 30}\n";
const WORKED_ARRAY: &str =
    "[{\"drug\": \"Aspirin\", \"dose\": 300}, {\"drug\": \"ibuprofen\", \"dose\": 200}, {\"drug\": \"codeine\", \"dose\": 30}]";

#[test]
fn the_worked_example_fails_with_its_figures_and_differences() {
    // P = 2/3, R = 2/4, F1 = 4/7 ≈ 0.571 < pass_f1 1.0; fields: ibuprofen's dose 200 ≠ 400 → 1/2.
    let lines = prompt(DRUGS);
    let score = score_record(
        &expectations(&lines, "ward"),
        &record(&lines, Some("ward"), WORKED_LINES, Ending::Finish("stop")),
    );
    assert_eq!(score.verdict, Verdict::Fail);
    let items = score.items.as_ref().unwrap();
    assert!(close(items.f1, 4.0 / 7.0) && close(items.field_accuracy, 0.5), "{items:?}");
    assert_eq!(items.key, "/drug");
    assert_eq!(score.reason, "F1 0.57 < pass_f1 1; fields 0.50 < pass_fields 1");
    assert_eq!(score.differences.len(), 4);
    assert_eq!(score.f1(), Some(items.f1));
}

#[test]
fn the_json_twin_scores_the_same_against_the_same_expected_items() {
    let lines = prompt(DRUGS);
    let array = drugs_json();
    let by_lines = score_record(
        &expectations(&lines, "ward"),
        &record(&lines, Some("ward"), WORKED_LINES, Ending::Finish("stop")),
    );
    let by_array = score_record(
        &expectations(&array, "ward"),
        &record(&array, Some("ward"), WORKED_ARRAY, Ending::Finish("stop")),
    );
    assert_eq!(by_array, by_lines);
}

#[test]
fn a_right_answer_in_any_order_and_case_passes() {
    let lines = prompt(DRUGS);
    let answer = "{\"drug\": \"Naproxen\", \"dose\": 250}\n{\"drug\": \"paracetamol\", \"dose\": 500.0}\n\
                  {\"drug\": \"IBUPROFEN \", \"dose\": 400}\n{\"drug\": \"aspirin\", \"dose\": 300}\n";
    let score =
        score_record(&expectations(&lines, "ward"), &record(&lines, Some("ward"), answer, Ending::Finish("stop")));
    assert_eq!(score.verdict, Verdict::Pass, "{score:?}");
    assert_eq!(score.reason, "F1 1.00, fields 1.00");
    assert_eq!(score.differences, []);
}

#[test]
fn lenient_thresholds_pass_what_the_defaults_fail() {
    // The worked example's F1 0.571 and fields 0.5 meet pass_f1 = 0.5 and pass_fields = 0.5.
    let lenient = DRUGS.replace("match = \"drug\"", "match = \"drug\"\npass_f1 = 0.5\npass_fields = 0.5");
    let lines = prompt(&lenient);
    let score = score_record(
        &expectations(&lines, "ward"),
        &record(&lines, Some("ward"), WORKED_LINES, Ending::Finish("stop")),
    );
    assert_eq!(score.verdict, Verdict::Pass, "{score:?}");
    assert_eq!(score.differences.len(), 4, "the differences are listed even when the case passes");
}

#[test]
fn a_truncated_answer_is_its_own_verdict_with_what_each_strategy_recovers() {
    // The answer stopped at the token limit inside the third record, right after `"dose": 50`.
    let cut = "[{\"drug\": \"aspirin\", \"dose\": 300}, {\"drug\": \"ibuprofen\", \"dose\": 400}, {\"drug\": \"paracetamol\", \"dose\": 50";
    let array = drugs_json();
    let score =
        score_record(&expectations(&array, "ward"), &record(&array, Some("ward"), cut, Ending::Finish("length")));
    assert_eq!(score.verdict, Verdict::Truncated, "{score:?}");
    let [repair, jsonl] = &score.recovered[..] else { panic!("{:?}", score.recovered) };
    // json-repair closes the number and the object: 3 items, all paired (P = 1, R = 3/4,
    // F1 = 2·0.75/1.75 = 6/7 ≈ 0.857), but paracetamol's dose is the cut 50, not 500: fields 2/3.
    assert_eq!((repair.strategy.as_str(), repair.items), ("json-repair", 3));
    let scores = repair.scores.as_ref().unwrap();
    assert!(close(scores.f1, 6.0 / 7.0) && close(scores.field_accuracy, 2.0 / 3.0), "{scores:?}");
    assert_eq!(jsonl.strategy, "jsonl");
    eprintln!("JSONL {jsonl:?}");
    assert_eq!(
        score.reason,
        format!(
            "hit the token limit; json-repair keeps 3 items (F1 0.86), jsonl {} (F1 {:.2})",
            jsonl.items,
            jsonl.scores.as_ref().unwrap().f1
        )
    );

    // The jsonl prompt cut at the same place: complete lines only for jsonl (2 items: P = 1,
    // R = 2/4, F1 = 2·0.5/1.5 = 2/3); the lenient parse of the cut record gives the scored result.
    let lines = prompt(DRUGS);
    let cut = "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"ibuprofen\", \"dose\": 400}\n{\"drug\": \"paracetamol\", \"dose\": 50";
    let score =
        score_record(&expectations(&lines, "ward"), &record(&lines, Some("ward"), cut, Ending::Finish("length")));
    assert_eq!(score.verdict, Verdict::Truncated);
    let jsonl = score.recovered.iter().find(|r| r.strategy == "jsonl").unwrap();
    assert_eq!(jsonl.items, 2);
    assert!(close(jsonl.scores.as_ref().unwrap().f1, 2.0 / 3.0));
}

#[test]
fn no_answer_at_all_is_an_error_never_a_fail() {
    let lines = prompt(DRUGS);
    let score = score_record(&expectations(&lines, "ward"), &unreachable(&lines, Some("ward")));
    assert_eq!(score.verdict, Verdict::Error, "{score:?}");
    assert!(score.reason.starts_with("no answer: "), "{}", score.reason);
    assert_eq!((score.items.as_ref(), score.checks.len()), (None, 0));
    // A stream that failed before any text: the provider's error.
    let score = score_record(&expectations(&lines, "ward"), &record(&lines, Some("ward"), "", Ending::Error));
    assert_eq!(score.verdict, Verdict::Error, "{score:?}");
    assert!(score.reason.contains("503"), "{}", score.reason);
}

#[test]
fn an_invalid_answer_fails_and_says_why() {
    let lines = prompt(DRUGS);
    // Four right items and one line that breaks the schema (dose is a string).
    let answer = "{\"drug\": \"aspirin\", \"dose\": 300}\n{\"drug\": \"ibuprofen\", \"dose\": 400}\n\
                  {\"drug\": \"paracetamol\", \"dose\": 500}\n{\"drug\": \"naproxen\", \"dose\": 250}\n{\"drug\": \"x\", \"dose\": \"lots\"}\n";
    let score =
        score_record(&expectations(&lines, "ward"), &record(&lines, Some("ward"), answer, Ending::Finish("stop")));
    assert_eq!(score.verdict, Verdict::Fail);
    assert_eq!(score.reason, "the answer is not valid: 1 lines not matching the schema");
    assert_eq!(score.items.unwrap().f1, 1.0, "the invalid line is not an item");
}

const SENTIMENT: &str = r#"
id = "sentiment"
response_type = "json"
template = "Classify: {{text}}"
schema = '''{"type": "object", "properties": {"sentiment": {"type": "string"}, "score": {"type": "number"}}, "required": ["sentiment", "score"]}'''

[variables]
text = "meh"

[eval]
tolerance = 0.2

[[cases]]
name = "sarcasm"
[cases.expected]
value = {sentiment = "negative", score = 0.9}
"#;

#[test]
fn an_expected_value_is_one_item_compared_field_by_field() {
    let p = prompt(SENTIMENT);
    let e = expectations(&p, "sarcasm");
    assert_eq!(e.key, PairKey::Answer);
    // "Negative" folds to "negative"; 0.75 is within 0.2 of 0.9: both fields agree.
    let score = score_record(
        &e,
        &record(&p, Some("sarcasm"), "{\"sentiment\": \"Negative\", \"score\": 0.75}", Ending::Finish("stop")),
    );
    assert_eq!(score.verdict, Verdict::Pass, "{score:?}");
    assert_eq!(score.items.as_ref().map(|s| (s.paired, s.field_accuracy)), Some((1, 1.0)));
    // The wrong label: still one value paired (P = R = F1 = 1), the sentiment field differs (1/2).
    let score = score_record(
        &e,
        &record(&p, Some("sarcasm"), "{\"sentiment\": \"positive\", \"score\": 0.95}", Ending::Finish("stop")),
    );
    assert_eq!(score.verdict, Verdict::Fail);
    assert_eq!(score.items.as_ref().map(|s| (s.f1, s.field_accuracy)), Some((1.0, 0.5)));
    assert_eq!(
        score.differences,
        [Difference::Field {
            key: "the answer".into(),
            field: "/sentiment".into(),
            expected: json!("negative"),
            got: json!("positive"),
            score: None,
            note: None,
        }]
    );
}

#[test]
fn a_text_answer_compares_its_text() {
    let text = r#"
id = "capital"
template = "The capital of {{country}}?"
[variables]
country = "France"
[[cases]]
name = "france"
[cases.expected]
value = "Paris"
"#;
    let p = prompt(text);
    let e = expectations(&p, "france");
    assert_eq!(
        score_record(&e, &record(&p, Some("france"), "  paris\n", Ending::Finish("stop"))).verdict,
        Verdict::Pass
    );
    assert_eq!(score_record(&e, &record(&p, Some("france"), "Lyon", Ending::Finish("stop"))).verdict, Verdict::Fail);
}

#[test]
fn approving_an_answer_makes_it_the_expected_one() {
    let mut p = prompt(DRUGS);
    let answered = record(&p, Some("ward"), WORKED_LINES, Ending::Finish("stop"));
    crate::eval::approve(&mut p, &crate::eval::Approval::of(&answered).unwrap(), false).unwrap();
    let expected = p.cases[0].expected.as_ref().unwrap();
    assert_eq!(expected.items.as_ref().unwrap().len(), 3);
    let back = PromptFile::from_toml_str(&p.to_toml_string().unwrap(), Path::new("dir/drugs.toml")).unwrap();
    assert_eq!(back, p);
    // The same answer now passes.
    let score = score_record(&expectations(&back, "ward"), &answered);
    assert_eq!(score.verdict, Verdict::Pass, "{score:?}");
}

/// A required, nullable field expected null (TOML spells it `{ null = true }`): an answer that gives
/// it a value differs; one that gives null agrees.
#[test]
fn a_field_expected_null_is_compared() {
    let nullable = prompt(
        r#"id = "doses"
response_type = "jsonl"
template = "List the drugs in: {{text}}"
schema = '''{"type": "object", "properties": {"drug": {"type": "string"}, "dose": {"type": ["number", "null"]}}, "required": ["drug", "dose"]}'''

[variables]
text = "the notes"

[eval]
match = "drug"

[[cases]]
name = "ward"
[cases.expected]
items = [{ drug = "aspirin", dose = { null = true } }]
"#,
    );
    let verdict = |answer: &str| {
        let run = record(&nullable, Some("ward"), answer, Ending::Finish("stop"));
        score_record(&expectations(&nullable, "ward"), &run).verdict
    };
    assert_eq!(verdict("{\"drug\": \"aspirin\", \"dose\": 300}\n"), Verdict::Fail);
    assert_eq!(verdict("{\"drug\": \"aspirin\", \"dose\": null}\n"), Verdict::Pass);
}

/// A prompt whose expected answer is one object: its F1 (1.00 whenever the object pairs) is not a
/// figure of it, so a failed case shows none and the eval's mean F1 is not "1.00".
#[test]
fn one_expected_object_has_no_f1() {
    let person = prompt(
        r#"id = "person"
response_type = "json"
template = "Who is in: {{text}}"
schema = '''{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "number"}}, "required": ["name", "age"]}'''

[variables]
text = "the notes"

[[cases]]
name = "ada"
[cases.expected]
value = { name = "Ada", age = 36 }
"#,
    );
    let wrong = record(&person, Some("ada"), "{\"name\": \"Ada\", \"age\": 37}", Ending::Finish("stop"));
    let score = score_record(&expectations(&person, "ada"), &wrong);
    assert_eq!(score.verdict, Verdict::Fail, "{score:?}");
    assert_eq!(score.f1(), None, "{score:?}");
    assert!(score.items.as_ref().is_some_and(|s| s.one_value && s.field_accuracy < 1.0), "{score:?}");
    let right = record(&person, Some("ada"), "{\"name\": \"Ada\", \"age\": 36}", Ending::Finish("stop"));
    let score = score_record(&expectations(&person, "ada"), &right);
    assert_eq!((score.verdict, score.reason.as_str(), score.f1()), (Verdict::Pass, "fields 1.00", None));
}
