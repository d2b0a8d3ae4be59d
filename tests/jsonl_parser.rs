//! Properties of the streamed `jsonl` parser under every profile: any chunking gives the report of the
//! whole text, verdicts once given never change, every cut equals a fresh parse of the prefix, the
//! `trustgraph` stream equals TrustGraph's batch `parse_jsonl`, and hostile input gives reports.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use tunebench::output::jsonl::{trustgraph_parse_jsonl, JsonlParser};
use tunebench::output::{JsonlReport, OutputParser, Profile, Report};
use tunebench::schema::{Check, SchemaIssue};

const PROFILES: [Profile; 4] = [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc];

/// Objects with `"type": "definition"` pass, other values fail with one issue.
struct DefinitionCheck;

impl Check for DefinitionCheck {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        match value.get("type") {
            Some(Value::String(kind)) if kind == "definition" => Ok(Some(kind.clone())),
            _ => Err(vec![SchemaIssue { path: "/type".into(), message: "not a definition".into() }]),
        }
    }
}

fn parser(profile: Profile, checked: bool) -> JsonlParser {
    JsonlParser::new(profile, checked.then(|| Arc::new(DefinitionCheck) as Arc<dyn Check>))
}

fn jsonl(report: Report) -> JsonlReport {
    match report {
        Report::Jsonl(report) => report,
        other => panic!("not a jsonl report: {other:?}"),
    }
}

/// The text fed whole, and fed cut at `cuts` (character positions, any order).
fn whole_and_chunked(profile: Profile, checked: bool, text: &str, cuts: &[usize]) -> (JsonlReport, JsonlReport) {
    let mut whole = parser(profile, checked);
    whole.feed(text);
    let bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
    let mut offsets: Vec<usize> = cuts.iter().map(|cut| bounds[cut % bounds.len()]).collect();
    offsets.sort_unstable();
    let mut chunked = parser(profile, checked);
    let mut from = 0;
    for to in offsets.into_iter().chain([text.len()]) {
        chunked.feed(&text[from..to]);
        from = to;
    }
    assert_eq!(whole.lines(), chunked.lines());
    assert_eq!(whole.items(), chunked.items());
    (jsonl(whole.report()), jsonl(chunked.report()))
}

/// Pieces real answers are made of, including every quirk the profiles treat specially.
fn fragment() -> impl Strategy<Value = String> {
    let fixed: Vec<&'static str> = vec![
        "```",
        "```json",
        "```jsonl",
        "~~~",
        "\n",
        "\n",
        "\n",
        "\r\n",
        " ",
        "\u{a0}",
        "\u{feff}",
        "\u{2028}",
        "{\"type\":\"definition\",\"entity\":\"DNA\"}",
        "{\"type\":\"other\"}",
        "{\"a\":[1,2,],}",
        "{\"a\":1} {\"b\":2}",
        "[{\"a\":1},{\"b\":2}]",
        "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}",
        "{\"n\":NaN}",
        "\"\\ud800\"",
        "-0",
        "42",
        "Here you go:",
        "Done!",
        "{",
        "}",
        "[",
        "]",
        ",",
        "\"",
        "\\",
        "{\"cut\": \"mid",
        "[Note]",
        "é",
        "😀",
    ];
    prop_oneof![
        4 => proptest::sample::select(fixed).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn answer() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 0..24).prop_map(|pieces| pieces.concat())
}

/// Lines with fences glued before and after, where TrustGraph's whole-text rules bite.
fn fenced_answer() -> impl Strategy<Value = String> {
    let before = proptest::sample::select(vec!["", "", " ", "```", "```json", "```jsonl", "```json ", "\u{a0}"]);
    let after = proptest::sample::select(vec!["", "", "```", " ```", "\u{a0}```", "```\u{a0}", "``"]);
    let between = proptest::sample::select(vec!["\n", "\n", "\r\n", "\n\n", "\n \n"]);
    proptest::collection::vec((before, fragment(), after, between), 0..8).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(before, body, after, between)| format!("{before}{body}{after}{between}"))
            .collect::<String>()
    })
}

/// A valid JSONL answer: records written compact or pretty-printed, CRLF or LF, maybe fenced.
fn valid_answer() -> impl Strategy<Value = (String, Vec<Value>)> {
    let scalar = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z é\"\\\\`{}]{0,6}".prop_map(Value::from),
        Just(Value::Null),
    ];
    let field = scalar.prop_recursive(2, 8, 3, |inner| proptest::collection::vec(inner, 0..3).prop_map(Value::from));
    let record = proptest::collection::btree_map("[a-z]{1,5}", field, 0..4)
        .prop_map(|members| Value::Object(members.into_iter().collect::<Map<String, Value>>()));
    let styled = (record, any::<bool>(), any::<bool>());
    (proptest::collection::vec(styled, 1..6), any::<bool>()).prop_map(|(records, fenced)| {
        let mut text = String::from(if fenced { "```jsonl\n" } else { "" });
        for (record, pretty, crlf) in &records {
            let written = if *pretty { serde_json::to_string_pretty(record) } else { serde_json::to_string(record) };
            text.push_str(&written.unwrap_or_default());
            text.push_str(if *crlf { "\r\n" } else { "\n" });
        }
        if fenced {
            text.push_str("```\n");
        }
        (text, records.into_iter().map(|(record, _, _)| record).collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_gives_the_report_of_the_whole(text in answer(), cuts in proptest::collection::vec(any::<usize>(), 0..12), checked: bool) {
        for profile in PROFILES {
            let (whole, chunked) = whole_and_chunked(profile, checked, &text, &cuts);
            prop_assert_eq!(whole, chunked);
        }
    }

    #[test]
    fn random_bytes_give_a_report_whatever_the_chunking(bytes in proptest::collection::vec(any::<u8>(), 0..400), cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let text = String::from_utf8_lossy(&bytes);
        for profile in PROFILES {
            let (whole, chunked) = whole_and_chunked(profile, false, &text, &cuts);
            prop_assert_eq!(whole, chunked);
        }
    }

    #[test]
    fn the_trustgraph_stream_hands_on_what_parse_jsonl_returns(text in prop_oneof![answer(), fenced_answer()], cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let (whole, chunked) = whole_and_chunked(Profile::Trustgraph, false, &text, &cuts);
        prop_assert_eq!(&whole.items, &trustgraph_parse_jsonl(&text));
        prop_assert_eq!(chunked.items, trustgraph_parse_jsonl(&text));
    }

    #[test]
    fn every_prefix_of_a_valid_answer_reads_and_verdicts_never_change((text, records) in valid_answer()) {
        for profile in PROFILES {
            let mut streamed = parser(profile, false);
            let mut seen_lines = Vec::new();
            let mut seen_items: Vec<Value> = Vec::new();
            for (at, character) in text.char_indices() {
                streamed.feed(character.encode_utf8(&mut [0; 4]));
                let cut = at + character.len_utf8();
                // The streamed state at this cut is the state of a fresh parse of the prefix.
                let mut fresh = parser(profile, false);
                fresh.feed(&text[..cut]);
                prop_assert_eq!(streamed.report(), fresh.report());
                // What was said stays said.
                prop_assert!(streamed.lines().starts_with(&seen_lines));
                prop_assert!(streamed.items().to_values().starts_with(&seen_items));
                seen_lines = streamed.lines().to_vec();
                seen_items = streamed.items().to_values();
            }
            let report = jsonl(streamed.report());
            if profile != Profile::Strict && profile != Profile::Trustgraph {
                prop_assert_eq!(&report.items, &records);
                prop_assert_eq!(report.summary.invalid_json + report.summary.schema_error, 0);
            }
        }
    }

    #[test]
    fn the_pending_tail_is_what_the_report_adds_at_every_prefix(text in prop_oneof![answer(), fenced_answer(), valid_answer().prop_map(|(text, _)| text)], asks in proptest::collection::vec(any::<bool>(), 1..16), checked: bool) {
        for profile in PROFILES {
            let mut streamed = parser(profile, checked);
            let mut asked: Option<(u64, Vec<Value>)> = None;
            for (index, (at, character)) in text.char_indices().enumerate() {
                streamed.feed(character.encode_utf8(&mut [0; 4]));
                // Asking at some cuts only: the version must also cover text fed between two looks.
                if !asks[index % asks.len()] {
                    continue;
                }
                let version = streamed.pending_version();
                let open = streamed.pending_is_open();
                let pending = streamed.pending_items();
                let mut items = streamed.items().to_values();
                items.extend(pending.iter().cloned());
                prop_assert_eq!(&jsonl(streamed.report()).items, &items, "{:?} at {}", profile, at);
                if let Some((before, before_items)) = &asked {
                    if *before == version {
                        prop_assert_eq!(before_items, &pending);
                    }
                }
                if open {
                    let ends_inside = text[..at + character.len_utf8()].rsplit('\n').next().is_some_and(|line| line.contains(['"', '{', '[']));
                    prop_assert!(ends_inside, "open without a quote or bracket on the line");
                }
                asked = Some((version, pending));
            }
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_big_answer_fed_whole_gives_the_report_of_small_chunks(base in prop_oneof![answer(), fenced_answer(), valid_answer().prop_map(|(text, _)| text)], offset in 0usize..64, checked: bool) {
        // Fed whole, the complete lines are judged on every core; in 4 KiB chunks, one after another.
        let base = format!("{base}\n");
        let lines_per_copy = base.matches('\n').count();
        let copies = (4500 / lines_per_copy).max(70_000 / base.len()) + 1;
        let text = format!("{}{}", "x\n".repeat(offset), base.repeat(copies));
        for profile in PROFILES {
            let mut whole = parser(profile, checked);
            whole.feed(&text);
            let mut chunked = parser(profile, checked);
            let mut from = 0;
            while from < text.len() {
                let mut to = (from + 4096).min(text.len());
                while !text.is_char_boundary(to) {
                    to += 1;
                }
                chunked.feed(&text[from..to]);
                from = to;
            }
            prop_assert_eq!(whole.lines(), chunked.lines());
            prop_assert_eq!(whole.items(), chunked.items());
            prop_assert_eq!(jsonl(whole.report()), jsonl(chunked.report()));
        }
    }
}

#[test]
fn a_valid_answer_gives_every_record_in_every_profile() {
    let text = "{\"a\":1}\r\n{\"b\":[2,3]}\n\n\"x\"\n";
    for profile in PROFILES {
        let report = jsonl(tunebench::output::parse(tunebench::output::ResponseType::Jsonl, profile, None, text));
        assert_eq!(report.items, vec![json!({"a": 1}), json!({"b": [2, 3]}), json!("x")], "{profile:?}");
        assert_eq!(report.lines.len(), 3);
    }
}

#[test]
fn a_long_line_fed_token_by_token_stays_linear() {
    // 2 MB on one line fed in 3-byte chunks, with the live view reading after every chunk: a rescan
    // of the buffer per chunk would be ~10^12 steps and never finish.
    let line = format!("{{\"text\": \"{}\"}}", "abc".repeat(700_000));
    let text = format!("{line}\n{line}");
    for profile in PROFILES {
        let mut parser = parser(profile, false);
        let mut seen = 0;
        for chunk in text.as_bytes().chunks(3) {
            parser.feed(std::str::from_utf8(chunk).unwrap_or_default());
            seen += parser.take_new_lines().len();
        }
        assert_eq!(seen, 1, "{profile:?}");
        assert_eq!(jsonl(parser.report()).items.len(), 2, "{profile:?}");
    }
}

#[test]
fn deep_nesting_fed_in_chunks_gives_a_verdict_not_an_overflow() {
    let text = format!("{}\n{}{}\n{{\"ok\":1}}", "[".repeat(10_000), "{\"a\":".repeat(10_000), "}".repeat(10_000));
    for profile in PROFILES {
        let mut parser = parser(profile, false);
        for chunk in text.as_bytes().chunks(64) {
            parser.feed(std::str::from_utf8(chunk).unwrap_or_default());
        }
        let report = jsonl(parser.report());
        assert_eq!(report.items.to_values().last(), Some(&json!({"ok": 1})), "{profile:?}");
        assert!(report.summary.invalid_json >= 1, "{profile:?}");
    }
}

/// A pretty-printed record that opens after a complete one on the same line, then joins lines, closes,
/// and is followed by more: at every prefix the pending tail is what the report adds (the open record is
/// judged once and kept while it stays open).
#[test]
fn an_open_pretty_printed_record_reads_its_first_values_until_it_closes() {
    let texts = [
        "{\"a\": 1} {\"b\": [\n  1,\n  \"x]\",\n\n  {\"c\": NaN}\n]}\n{\"d\": 2}\n[\n  {\"e\": 1},\n  {\"e\": 2}\n",
        // The record's value closes and another opens on one line (`}{`): found by the property test.
        "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}{\"type\":\"definition\"}\n",
        // ... and the line that does so completes while the next value stays open.
        "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}",
    ];
    for (text, profile) in texts.iter().flat_map(|text| PROFILES.map(|profile| (text, profile))) {
        for checked in [false, true] {
            let mut streamed = parser(profile, checked);
            for (at, character) in text.char_indices() {
                streamed.feed(character.encode_utf8(&mut [0; 4]));
                let mut items = streamed.items().to_values();
                items.extend(streamed.pending_items());
                assert_eq!(jsonl(streamed.report()).items, items, "{profile:?} at {at}");
            }
        }
    }
}
