//! The `json` parser under each profile: edge cases, chunking independence, deep nesting.

use super::*;
use crate::output::{JsonErrorKind, JsonReport};
use serde_json::json;

fn parse(profile: Profile, text: &str) -> JsonReport {
    let mut parser = JsonParser::new(profile, None);
    parser.feed(text);
    match parser.report() {
        Report::Json(report) => report,
        other => panic!("not a json report: {other:?}"),
    }
}

fn repairs(report: &JsonReport) -> Vec<String> {
    report.repairs.iter().map(|r| format!("{}: {}", r.at, r.what)).collect()
}

#[test]
fn lenient_reads_what_models_write() {
    let cases = [
        ("\u{feff}{\"a\": 1}", json!({"a": 1})),
        ("Here you go:\n```json\n[1, 2]\n```\nEnjoy!", json!([1, 2])),
        ("```jsonl\n{\"a\": 1}\n```", json!({"a": 1})),
        ("```JSON\n{\"a\": 1}", json!({"a": 1})),
        ("```json {\"a\": 1}```", json!({"a": 1})),
        ("Example: [1]\n```json\n[2]\n```", json!([2])),
        ("[note] then {\"a\": [1, 2,],}", json!({"a": [1, 2]})),
        ("42", json!(42)),
        ("  \"text\"  ", json!("text")),
        ("42 items: [1, 2]", json!([1, 2])),
        ("the answer is {\"x\": true} ok", json!({"x": true})),
        ("{\"a\": 1} {\"b\": 2}", json!({"a": 1})),
    ];
    for (text, value) in cases {
        let report = parse(Profile::Lenient, text);
        assert_eq!(report.value, Some(value), "{text:?}: {report:?}");
        assert!(report.ok, "{text:?}");
    }
}

#[test]
fn lenient_reports_each_repair() {
    let report = parse(Profile::Lenient, "\u{feff}Sure:\n```json\n{\"items\": [{\"a\": \"hel");
    assert_eq!(report.value, Some(json!({"items": [{"a": "hel"}]})));
    assert_eq!(
        repairs(&report),
        [
            "0: stripped BOM",
            "9: stripped fence",
            "38: closed string",
            "38: closed object",
            "38: closed array",
            "38: closed object",
        ]
    );
    let report = parse(Profile::Lenient, "Result: [1, 2,] done");
    assert_eq!(
        repairs(&report),
        ["0: skipped text before the value", "13: removed trailing comma", "16: ignored text after the value"]
    );
    let report = parse(Profile::Lenient, "{\"a\": true, \"b\": tr");
    assert_eq!(report.value, Some(json!({"a": true})));
    assert_eq!(repairs(&report), ["10: dropped incomplete tail `, \"b\": tr`", "19: closed object"]);
}

#[test]
fn lenient_errors_have_kind_line_and_column() {
    let report = parse(Profile::Lenient, "no json here");
    let error = report.error.expect("error");
    assert_eq!((error.kind, error.line), (JsonErrorKind::NoJsonFound, None));
    let report = parse(Profile::Lenient, "line one\n{a: 1}");
    let error = report.error.expect("error");
    assert_eq!((error.kind, error.line, error.column), (JsonErrorKind::InvalidJson, Some(2), Some(2)));
    let report = parse(Profile::Lenient, "tr");
    assert_eq!(report.error.map(|e| e.kind), Some(JsonErrorKind::InvalidJson));
}

#[test]
fn strict_takes_one_value_and_nothing_else() {
    assert_eq!(parse(Profile::Strict, " [1, {\"a\": null}]\r\n").value, Some(json!([1, {"a": null}])));
    assert_eq!(parse(Profile::Strict, "-0.5e2").value, Some(json!(-50.0)));
    for (text, kind, line, column) in [
        ("", JsonErrorKind::NoJsonFound, None, None),
        ("[1,]", JsonErrorKind::InvalidJson, Some(1), Some(4)),
        ("[1] x", JsonErrorKind::InvalidJson, Some(1), Some(5)),
        ("\u{feff}[1]", JsonErrorKind::InvalidJson, Some(1), Some(1)),
        ("```json\n[1]\n```", JsonErrorKind::InvalidJson, Some(1), Some(1)),
        ("[1,\n 2", JsonErrorKind::InvalidJson, Some(2), Some(3)),
    ] {
        let report = parse(Profile::Strict, text);
        let error = report.error.unwrap_or_else(|| panic!("{text:?} parsed"));
        assert_eq!((error.kind, error.line, error.column), (kind, line, column), "{text:?}");
    }
}

#[test]
fn trustgraph_and_ptc_profiles_are_the_peers_functions() {
    let report = parse(Profile::Trustgraph, "Result: {\"a\": 1}");
    let error = report.error.expect("error");
    assert!(error.message.starts_with("JSON parse fail"), "{error:?}");
    assert_eq!(parse(Profile::Trustgraph, "```json\n{\"a\": NaN}\n```").value, Some(json!({"a": null})));
    assert_eq!(parse(Profile::Ptc, "x ```\n[1]\n```").value, Some(json!([1])));
    let report = parse(Profile::Ptc, "{\"a\": [1");
    assert_eq!(report.error.map(|e| e.kind), Some(JsonErrorKind::NoJsonFound));
}

#[test]
fn ten_thousand_nested_brackets_give_an_error_under_every_profile() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let open = "[".repeat(10_000);
    for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc] {
        for text in [&deep, &open] {
            let report = parse(profile, text);
            assert!(!report.ok && report.value.is_none(), "{profile:?}");
        }
    }
}

#[test]
fn any_chunking_gives_the_same_report() {
    let texts = [
        "Sure!\n```json\n{\"items\": [{\"a\": \"x\\u00e9\"}, 2.5, [true, null]], \"n\": -1}\n```\nBye",
        "[\"a\", {\"b\": [1, 2,]}, 3",
        "12",
        "{\"a\": 1} tail",
    ];
    for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc] {
        for text in texts {
            let whole = parse(profile, text);
            let mut parser = JsonParser::new(profile, None);
            for (at, c) in text.char_indices() {
                parser.feed(&text[at..at + c.len_utf8()]);
            }
            assert_eq!(parser.report(), Report::Json(whole), "{profile:?} {text:?}");
        }
    }
}

#[test]
fn settled_value_is_the_value_without_repair() {
    let mut parser = JsonParser::new(Profile::Lenient, None);
    parser.feed("[1, 2");
    assert_eq!((parser.settled(), parser.settled_value()), (None, None));
    parser.feed("]");
    assert_eq!(parser.settled_value(), Some(json!([1, 2])));
    let mut parser = JsonParser::new(Profile::Trustgraph, None);
    parser.feed("  [1]  ");
    assert_eq!(parser.settled_value(), Some(json!([1])));
    parser.feed("x");
    assert_eq!(parser.settled(), None);
}
