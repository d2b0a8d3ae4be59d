//! Every check kind passing on one answer and failing on another, on records played through the
//! run engine; the messages say the path, what was expected and what came.

use std::path::Path;

use super::*;
use crate::eval::replayed::{record, Ending};
use crate::eval::score::{score_record, Expectations, Verdict};
use crate::prompt::file::PromptFile;

const PROMPT: &str = r#"
id = "stars"
response_type = "jsonl"
template = "Define the stars in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "score": {"type": "number"}, "lang": {"type": "string"}, "note": {"type": "string"}}, "required": ["entity"]}'''

[variables]
text = "a text about stars"

[[checks]]
kind = "equals"
path = "/lang"
value = "EN"

[[checks]]
kind = "one_of"
path = "/entity"
values = ["neutron star", "pulsar", "magnetar"]

[[checks]]
kind = "contains"
path = "/definition"
value = "STAR"

[[checks]]
kind = "contains"
path = "/tags"
value = "star"

[[checks]]
kind = "regex"
path = "/entity"
pattern = "^[a-z ]+$"

[[checks]]
kind = "range"
path = "/score"
min = 0
max = 1

[[checks]]
kind = "length"
path = "/definition"
min = 10
max = 200

[[checks]]
kind = "items"
min = 1
max = 3

[[checks]]
kind = "exists"
path = "/definition"

[[checks]]
kind = "absent"
path = "/note"

[[checks]]
kind = "unique"
path = "/entity"

[[checks]]
kind = "no_repeated_lines"

[[checks]]
kind = "finish_not_length"

[[checks]]
kind = "max_tokens_out"
max = 100

[[checks]]
kind = "max_ttft_ms"
max = 1000

[[checks]]
kind = "equals"
name = "the first item is the neutron star"
path = "/0/entity"
each = false
value = "neutron star"
"#;

const GOOD: &str = r#"{"entity": "neutron star", "definition": "The collapsed core of a massive star.", "tags": ["star", "remnant"], "score": 0.9, "lang": "en"}
{"entity": "pulsar", "definition": "A rotating neutron star that beams radio waves.", "tags": ["star"], "score": 0.7, "lang": "en"}
"#;

const BAD: &str = r#"{"entity": "Magnetar star", "definition": "Hot.", "tags": ["magnet"], "score": 1.5, "lang": "fr", "note": "x"}
{"entity": "Magnetar star", "definition": "Hot.", "tags": ["magnet"], "score": 1.5, "lang": "fr", "note": "x"}
{"entity": "white dwarf", "tags": [], "score": 0.2, "lang": "fr"}
{"entity": "quasar", "definition": "A very bright active galactic nucleus, far away.", "tags": ["galaxy"], "score": 0.5, "lang": "fr"}
"#;

fn prompt() -> PromptFile {
    PromptFile::from_toml_str(PROMPT, Path::new("dir/stars.toml")).unwrap()
}

#[test]
fn every_check_kind_passes_on_a_good_answer() {
    let p = prompt();
    let e = Expectations::for_case(&p, Path::new("dir"), None).unwrap();
    // 2 lines, 271 bytes: 68 tokens out as the replay reports them (one per 4 bytes), under 100.
    assert_eq!(GOOD.len().div_ceil(4), 68);
    let score = score_record(&e, &record(&p, None, GOOD, Ending::Finish("stop")));
    let failed: Vec<_> = score.checks.iter().filter(|c| !c.passed).collect();
    assert_eq!(failed, Vec::<&CheckResult>::new());
    assert_eq!(score.checks.len(), 16);
    assert_eq!(score.verdict, Verdict::Pass);
    assert_eq!(score.reason, "16 checks passed");
    assert_eq!(score.checks[0].at, "dir/stars.toml:10", "the line of its [[checks]] header");
    assert_eq!(score.checks[15].check, "the first item is the neutron star");
}

#[test]
fn every_check_kind_fails_on_a_bad_answer_and_says_why() {
    let p = prompt();
    let e = Expectations::for_case(&p, Path::new("dir"), None).unwrap();
    let mut answered = record(&p, None, BAD, Ending::Finish("length"));
    // A slow first token, as a provider's run would have recorded it.
    answered.turns[0].ttft_ms = Some(2500);
    let score = score_record(&e, &answered);
    assert_eq!(score.verdict, Verdict::Truncated, "the token limit is its own verdict, checks or not");
    let messages: Vec<(&str, &str)> =
        score.checks.iter().map(|c| (c.check.as_str(), c.message.as_deref().unwrap_or("PASSED"))).collect();
    assert_eq!(
        messages,
        [
            ("equals /lang", "4 of 4 items fail: item 1 /lang: expected \"EN\", got \"fr\"; item 2 /lang: expected \"EN\", got \"fr\"; item 3 /lang: expected \"EN\", got \"fr\"; and 1 more"),
            ("one_of /entity", "4 of 4 items fail: item 1 /entity: expected one of \"neutron star\", \"pulsar\", \"magnetar\", got \"Magnetar star\"; item 2 /entity: expected one of \"neutron star\", \"pulsar\", \"magnetar\", got \"Magnetar star\"; item 3 /entity: expected one of \"neutron star\", \"pulsar\", \"magnetar\", got \"white dwarf\"; and 1 more"),
            ("contains /definition", "4 of 4 items fail: item 1 /definition: expected something containing \"STAR\", got \"Hot.\"; item 2 /definition: expected something containing \"STAR\", got \"Hot.\"; item 3 /definition: expected something containing \"STAR\", got nothing; and 1 more"),
            ("contains /tags", "4 of 4 items fail: item 1 /tags: expected something containing \"star\", got [\"magnet\"]; item 2 /tags: expected something containing \"star\", got [\"magnet\"]; item 3 /tags: expected something containing \"star\", got []; and 1 more"),
            ("regex /entity", "2 of 4 items fail: item 1 /entity: expected a string matching /^[a-z ]+$/, got \"Magnetar star\"; item 2 /entity: expected a string matching /^[a-z ]+$/, got \"Magnetar star\""),
            ("range /score", "2 of 4 items fail: item 1 /score: expected a number from 0 to 1, got 1.5; item 2 /score: expected a number from 0 to 1, got 1.5"),
            ("length /definition", "3 of 4 items fail: item 1 /definition: expected a length from 10 to 200, got 4: \"Hot.\"; item 2 /definition: expected a length from 10 to 200, got 4: \"Hot.\"; item 3 /definition: expected a string or an array, got nothing"),
            ("items", "expected from 1 to 3 items, got 4"),
            ("exists /definition", "1 of 4 items fail: item 3 /definition: expected a value, got nothing"),
            ("absent /note", "2 of 4 items fail: item 1 /note: expected nothing, got \"x\"; item 2 /note: expected nothing, got \"x\""),
            ("unique /entity", "items 1 and 2 share /entity \"Magnetar star\""),
            ("no_repeated_lines", "line 2 repeats line 1: \"{\\\"entity\\\": \\\"Magnetar star\\\", \\\"definition\\\": \\\"Hot.\\\", \\\"tags\\\": […\""),
            ("finish_not_length", "finish reason length: the answer hit the token limit"),
            ("max_tokens_out", "expected at most 100 tokens out, got 106"),
            ("max_ttft_ms", "expected a first token within 1000 ms, got 2500 ms"),
            ("the first item is the neutron star", "/0/entity: expected \"neutron star\", got \"Magnetar star\""),
        ]
    );
    // 4 lines, 423 bytes: 106 tokens out, over 100.
    assert_eq!(BAD.len().div_ceil(4), 106);
}

#[test]
fn an_answer_with_no_items_passes_checks_on_each_item_but_not_a_count() {
    let p = prompt();
    let e = Expectations::for_case(&p, Path::new("dir"), None).unwrap();
    let score = score_record(&e, &record(&p, None, "\n", Ending::Finish("stop")));
    let failed: Vec<&str> = score.checks.iter().filter(|c| !c.passed).map(|c| c.check.as_str()).collect();
    // Every `each` check holds for no items; the count, the first item and the time do not hold.
    assert_eq!(failed, ["items", "the first item is the neutron star"], "{:?}", score.checks);
    assert_eq!(score.verdict, Verdict::Fail);
    assert_eq!(
        score.reason,
        "2 checks failed: items (dir/stars.toml:47), the first item is the neutron star (dir/stars.toml:78)"
    );
}

#[test]
fn exact_checks_compare_strings_as_written() {
    let mut p = prompt();
    p.checks.truncate(1);
    p.checks[0].exact = Some(true);
    p.checks[0].value = Some(serde_json::json!("en"));
    let e = Expectations::for_case(&p, Path::new("dir"), None).unwrap();
    let upper = GOOD.replace("\"en\"", "\"EN\"");
    assert!(score_record(&e, &record(&p, None, GOOD, Ending::Finish("stop"))).checks[0].passed);
    assert!(!score_record(&e, &record(&p, None, &upper, Ending::Finish("stop"))).checks[0].passed);
}
