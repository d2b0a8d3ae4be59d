//! Unit tests of the JSONL parser: every lenient case, the strict rules, the streamed TrustGraph rules.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::output::{LineStatus, LineVerdict};
use crate::schema::SchemaIssue;

/// A test check: objects need a string `type` ("definition" or "relationship"), which is the branch.
struct TypeCheck;

impl Check for TypeCheck {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        match value.get("type").and_then(Value::as_str) {
            Some(branch @ ("definition" | "relationship")) => Ok(Some(branch.to_owned())),
            _ => Err(vec![SchemaIssue { path: "/type".into(), message: "unknown type".into() }]),
        }
    }
}

fn parse(profile: Profile, text: &str) -> JsonlReport {
    parse_checked(profile, None, text)
}

fn parse_checked(profile: Profile, check: Option<Arc<dyn Check>>, text: &str) -> JsonlReport {
    let mut parser = JsonlParser::new(profile, check);
    parser.feed(text);
    match parser.report() {
        Report::Jsonl(report) => report,
        other => panic!("not a jsonl report: {other:?}"),
    }
}

/// Each verdict as (line, end_line, status word, detail) for compact assertions.
fn brief(report: &JsonlReport) -> Vec<(usize, Option<usize>, &'static str, String)> {
    report.lines.iter().map(brief_one).collect()
}

fn brief_one(verdict: &LineVerdict) -> (usize, Option<usize>, &'static str, String) {
    let (word, detail) = match &verdict.status {
        LineStatus::Valid { branch } => ("valid", branch.clone().unwrap_or_default()),
        LineStatus::InvalidJson { error, column } => ("invalid_json", format!("{error} @{column}")),
        LineStatus::SchemaError { errors } => ("schema_error", errors[0].path.clone()),
        LineStatus::Skipped { reason } => ("skipped", reason.clone()),
    };
    (verdict.line, verdict.end_line, word, detail)
}

fn v(line: usize, word: &'static str, detail: &str) -> (usize, Option<usize>, &'static str, String) {
    (line, None, word, detail.to_owned())
}

#[test]
fn lenient_skips_fences_of_every_kind() {
    for (open, close) in [("```json", "```"), ("```jsonl", "```"), ("```", "```"), ("~~~", "~~~"), ("```json", "")] {
        let text = format!("{open}\n{{\"a\":1}}\n{{\"b\":2}}\n{close}");
        let report = parse(Profile::Lenient, &text);
        assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})], "{text:?}");
        let mut expected = vec![v(1, "skipped", "fence"), v(2, "valid", ""), v(3, "valid", "")];
        if !close.is_empty() {
            expected.push(v(4, "skipped", "fence"));
        }
        assert_eq!(brief(&report), expected, "{text:?}");
    }
}

#[test]
fn lenient_removes_fences_glued_to_records_and_says_so() {
    let report = parse(Profile::Lenient, "```json{\"a\":1}\n{\"b\":2}```");
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})]);
    assert_eq!(report.lines[0].repairs, vec!["removed opening fence `\u{60}\u{60}\u{60}json` glued to the record"]);
    assert_eq!(report.lines[1].repairs, vec!["removed closing fence glued to the end of the line"]);
}

#[test]
fn lenient_skips_prose_before_and_after() {
    let text = "Here are the results:\n\n{\"a\":1}\n[Note] one more:\n{\"b\":2}\nHope this helps!";
    let report = parse(Profile::Lenient, text);
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})]);
    assert_eq!(
        brief(&report),
        vec![
            v(1, "skipped", "prose"),
            v(3, "valid", ""),
            v(4, "skipped", "prose"),
            v(5, "valid", ""),
            v(6, "skipped", "prose")
        ]
    );
    assert_eq!(report.summary, Summary { valid: 2, invalid_json: 0, schema_error: 0, skipped: 3 });
}

#[test]
fn lenient_reads_crlf_and_a_bom() {
    let report = parse(Profile::Lenient, "\u{feff}{\"a\":1}\r\n{\"b\":2}\r\n");
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})]);
    assert_eq!(report.lines[0].repairs, vec!["removed byte order mark"]);
    assert!(report.lines[1].repairs.is_empty());
}

#[test]
fn lenient_repairs_trailing_commas_and_reports_where() {
    let report = parse(Profile::Lenient, "{\"a\":[1,2,],}\n{\"b\":2},");
    assert_eq!(report.items, vec![json!({"a": [1, 2]}), json!({"b": 2})]);
    assert_eq!(
        report.lines[0].repairs,
        vec!["removed trailing comma at column 10", "removed trailing comma at column 12"]
    );
    assert_eq!(report.lines[1].repairs, vec!["removed comma after the record at column 8"]);
}

#[test]
fn lenient_keeps_two_records_on_one_line() {
    for text in ["{\"a\":1} {\"b\":2}", "{\"a\":1}{\"b\":2}", "{\"a\":1}, {\"b\":2}"] {
        let report = parse(Profile::Lenient, text);
        assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})], "{text}");
        assert_eq!(brief(&report), vec![v(1, "valid", ""), v(1, "valid", "")]);
        assert_eq!(report.lines[1].repairs, vec!["record 2 of 2 on this line"]);
    }
    // The second record is cut off: the first is kept and the rest is reported where it breaks.
    let report = parse(Profile::Lenient, "{\"a\":1} {\"b\":\"x");
    assert_eq!(brief(&report), vec![v(1, "valid", ""), v(1, "invalid_json", "EOF while parsing a string @15")]);
}

#[test]
fn lenient_reads_a_pretty_printed_record_as_one_verdict() {
    let text = "{\"a\":0}\n{\n  \"entity\": \"DNA\",\n  \"tags\": [\n    \"x\"\n  ]\n}\n{\"b\":2}\n";
    let report = parse(Profile::Lenient, text);
    assert_eq!(report.items, vec![json!({"a": 0}), json!({"entity": "DNA", "tags": ["x"]}), json!({"b": 2})]);
    assert_eq!(brief(&report), vec![v(1, "valid", ""), (2, Some(7), "valid", String::new()), v(8, "valid", "")]);
}

#[test]
fn lenient_ends_a_broken_multi_line_record_where_it_breaks() {
    // A record cut off at a line's end, then complete records: they are not swallowed.
    let report = parse(Profile::Lenient, "{\"a\": 1, \"b\": [1,\n{\"c\":3}\n{\"d\":4}");
    assert_eq!(report.items, vec![json!({"c": 3}), json!({"d": 4})]);
    assert_eq!(brief(&report)[0], v(1, "invalid_json", "EOF while parsing a value @17"));
    // Prose inside an unfinished pretty-printed record ends it; the error names the line it is on.
    let report = parse(Profile::Lenient, "{\n  \"a\": 1,\nSorry, I was cut off.");
    assert_eq!(
        brief(&report),
        vec![(1, Some(2), "invalid_json", "EOF while parsing a value (line 2) @9".into()), v(3, "skipped", "prose")]
    );
}

#[test]
fn lenient_reports_a_truncated_last_line_without_guessing() {
    let text = "{\"entity\": \"cat\"}\n{\"entity\": \"dog\", \"defi";
    let report = parse(Profile::Lenient, text);
    assert_eq!(report.items, vec![json!({"entity": "cat"})]);
    assert_eq!(brief(&report)[1], v(2, "invalid_json", "EOF while parsing a string @23"));
    // Cut after a comma, outside a string: still one verdict for line 2, no repair.
    let report = parse(Profile::Lenient, "{\"a\":1}\n{\"entity\": \"dog\",");
    assert_eq!(brief(&report)[1], v(2, "invalid_json", "EOF while parsing a value @17"));
}

#[test]
fn lenient_reads_an_array_of_objects_as_its_elements() {
    let report = parse(Profile::Lenient, "[{\"a\":1},{\"b\":2}]\n[1,2]\n[]");
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2}), json!([1, 2]), json!([])]);
    assert_eq!(report.lines[1].repairs, vec!["element 2 of 2 of a JSON array, read as a record"]);
    // A check that accepts the array itself keeps it whole.
    struct ArrayCheck;
    impl Check for ArrayCheck {
        fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
            value
                .is_array()
                .then_some(None)
                .ok_or_else(|| vec![SchemaIssue { path: String::new(), message: "array".into() }])
        }
    }
    let report = parse_checked(Profile::Lenient, Some(Arc::new(ArrayCheck)), "[{\"a\":1},{\"b\":2}]");
    assert_eq!(report.items, vec![json!([{"a": 1}, {"b": 2}])]);
}

#[test]
fn lenient_counts_scalars_that_read_and_ignores_prose_after_a_record() {
    let report = parse(Profile::Lenient, "42\n\"x\"\n1. First\n{\"a\":1}  <- the first one");
    assert_eq!(report.items, vec![json!(42), json!("x"), json!({"a": 1})]);
    assert_eq!(brief(&report)[2], v(3, "skipped", "prose"));
    assert_eq!(report.lines[3].repairs, vec!["ignored text after the record at column 10"]);
}

#[test]
fn ptc_behaves_as_lenient_but_says_ptc() {
    let text = "```jsonl\n{\"a\":1,}\n```";
    let (ptc, lenient) = (parse(Profile::Ptc, text), parse(Profile::Lenient, text));
    assert_eq!(ptc.profile, Profile::Ptc);
    assert_eq!((ptc.items, ptc.lines), (lenient.items, lenient.lines));
}

#[test]
fn checks_each_record_and_names_its_branch() {
    let text = "{\"type\":\"definition\"}\n{\"type\":\"other\"}\n{\"type\":\"relationship\"}";
    for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph] {
        let report = parse_checked(profile, Some(Arc::new(TypeCheck)), text);
        assert_eq!(report.items, vec![json!({"type": "definition"}), json!({"type": "relationship"})]);
        assert_eq!(
            brief(&report),
            vec![v(1, "valid", "definition"), v(2, "schema_error", "/type"), v(3, "valid", "relationship")]
        );
    }
}

#[test]
fn strict_reads_each_line_as_it_stands() {
    let text = "{\"a\":1}\r\n\n  \t\n\u{a0}{\"b\":2}\n```json\n\u{feff}{}\n{\"a\":1,}\n{\"a\":NaN}\n[1] [2]";
    let report = parse(Profile::Strict, text);
    assert_eq!(report.items, vec![json!({"a": 1})]);
    assert_eq!(
        brief(&report),
        vec![
            v(1, "valid", ""),
            v(4, "invalid_json", "expected value @1"),
            v(5, "invalid_json", "expected value @1"),
            v(6, "invalid_json", "expected value @1"),
            v(7, "invalid_json", "trailing comma @8"),
            v(8, "invalid_json", "expected value @6"),
            v(9, "invalid_json", "trailing characters @5"),
        ]
    );
}

#[test]
fn trustgraph_judges_lines_as_python_does() {
    let text = "\u{a0}```jsonl\n{\"a\":1}\u{a0}\r\n\n{\"a\":1} {\"b\":2}\n\u{feff}{\"c\":3}\n{\"d\":NaN}\n```\nDone!";
    let report = parse(Profile::Trustgraph, text);
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"d": null})]);
    assert_eq!(
        brief(&report),
        vec![
            v(1, "invalid_json", "expected value @9"),
            v(2, "valid", ""),
            v(4, "invalid_json", "trailing characters @9"),
            v(5, "invalid_json", "expected value @1"),
            v(6, "valid", ""),
            v(7, "skipped", "fence"),
            v(8, "invalid_json", "expected value @1"),
        ]
    );
    assert_eq!(report.lines[4].repairs.len(), 1, "NaN read as null is noted");
    assert_eq!(report.items, trustgraph_parse_jsonl(text));
}

#[test]
fn trustgraph_holds_a_line_ending_in_a_fence_until_the_answer_says_it_is_last() {
    let mut parser = JsonlParser::new(Profile::Trustgraph, None);
    parser.feed("{\"a\":1}\n{\"b\":2}```\n\n");
    assert_eq!(parser.lines().len(), 1, "line 2 may be the last line: no verdict yet");
    let Report::Jsonl(report) = parser.report() else { panic!() };
    assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": 2})]);
    parser.feed("{\"c\":3}\n");
    assert_eq!(parser.items(), &[json!({"a": 1}), json!({"c": 3})]);
    assert_eq!(
        brief(&JsonlReport { lines: parser.lines().to_vec(), ..report })[1],
        v(2, "invalid_json", "trailing characters @8")
    );
}

#[test]
fn verdicts_appear_as_soon_as_a_line_completes_and_report_leaves_state_alone() {
    let mut parser = JsonlParser::new(Profile::Lenient, None);
    parser.feed("{\"a\":");
    assert!(parser.lines().is_empty());
    let before = parser.report();
    assert_eq!(parser.report(), before);
    parser.feed("1}");
    assert!(parser.lines().is_empty() && parser.items().is_empty());
    parser.feed("\n{\"b\"");
    assert_eq!(parser.take_new_lines().len(), 1);
    assert_eq!(parser.items(), &[json!({"a": 1})]);
    assert!(parser.take_new_lines().is_empty());
    parser.feed(":2}\n");
    assert_eq!(parser.take_new_lines()[0].line, 2);
    assert_eq!(parser.completed_lines(), 2);
    assert_eq!(parser.summary().valid, 2);
    assert_eq!(parser.report(), parser.into_report());
}

#[test]
fn deep_nesting_and_empty_input_give_reports_not_overflows() {
    let deep = "[".repeat(10_000);
    let deep_closed = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph] {
        for text in [deep.as_str(), deep_closed.as_str(), "", "\n\n", "\u{0}"] {
            let report = parse(profile, &format!("{text}\n{text}"));
            assert!(report.items.is_empty() || text.is_empty(), "{profile:?}");
        }
        let report = parse(profile, &deep_closed);
        assert_eq!(brief(&report), vec![v(1, "invalid_json", "recursion limit exceeded @128")], "{profile:?}");
    }
}
