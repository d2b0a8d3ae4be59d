//! The one-pass truncation sweep against a from-scratch re-parse at EVERY cut (property tests over
//! generated JSON-array and JSONL answers, pretty and compact, with fences and prose), cuts walked
//! (every char, token ends) sweeping as the same cuts listed, hand-worked figures for a small answer,
//! and no panic on any prefix or random bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::sync::Arc;

use proptest::prelude::{any, prop, prop_assert_eq, prop_oneof, proptest, Just, ProptestConfig};
use proptest::strategy::Strategy as _;
use serde_json::{json, Value};
use tunebench::output::Profile;
use tunebench::schema::{Check, SchemaIssue};
use tunebench::truncate::points::{Offsets, Points};
use tunebench::truncate::strategy::{at_cut, reference, CutFigures, Strategy};
use tunebench::truncate::sweep::{sweep, sweep_points, Sweep};
use tunebench::truncate::tokens::o200k_token_ends;

#[path = "sweep/live.rs"]
mod live;

const PROFILES: [Profile; 4] = [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc];

/// A per-item check: objects that have an `"a"` key.
struct HasA;
impl Check for HasA {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        match value.get("a") {
            Some(_) => Ok(None),
            None => Err(vec![SchemaIssue { path: String::new(), message: "no a".into() }]),
        }
    }
}

fn every_char_cut(answer: &str) -> Vec<(usize, usize)> {
    let mut cuts: Vec<usize> = answer.char_indices().map(|(at, _)| at).collect();
    cuts.push(answer.len());
    cuts.into_iter().enumerate().collect()
}

/// Asserts the sweep equals `at_cut` at every cut, for every strategy.
fn assert_sweep_matches(answer: &str, cuts: &[(usize, usize)], profile: Profile, check: Option<Arc<dyn Check>>) {
    let swept = sweep(answer, cuts, profile, check.clone());
    let (strategy, items) = reference(answer, profile, check.as_ref());
    assert_eq!((swept.reference, swept.full_items), (strategy, items.len()), "reference of {answer:?} {profile:?}");
    for strategy in Strategy::ALL {
        for (&(_, cut), figures) in cuts.iter().zip(swept.figures(strategy)) {
            let expected = at_cut(answer, cut, strategy, profile, check.as_ref(), &items);
            assert_eq!(
                *figures,
                expected,
                "{strategy} {profile:?} cut {cut} of {answer:?}: prefix {:?}",
                answer.get(..cut)
            );
        }
    }
}

fn leaf() -> impl proptest::strategy::Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(|f| json!((f * 100.0).round() / 100.0)),
        "[a-z0-9 {}\\[\\]\":,\\\\é😀\n\t]{0,8}".prop_map(Value::String),
    ]
}

fn value() -> impl proptest::strategy::Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-c]{1,2}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

fn item() -> impl proptest::strategy::Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(("[a-c]", value()), 0..4).prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        1 => value(),
    ]
}

/// How the answer text is dressed: pretty or compact, wrapper, fences, prose.
#[derive(Clone, Debug)]
struct Dress {
    pretty: bool,
    wrapped: bool,
    fence: Option<&'static str>,
    before: &'static str,
    after: &'static str,
    newline_at_end: bool,
}

fn dress() -> impl proptest::strategy::Strategy<Value = Dress> {
    (
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop_oneof![Just(None), Just(Some("```json\n")), Just(Some("```jsonl\n")), Just(Some("```\n"))],
        prop_oneof![Just(""), Just("Here you go:\n"), Just("\u{feff}")],
        prop_oneof![Just(""), Just("\nHope this helps!"), Just("\n```")],
        any::<bool>(),
    )
        .prop_map(|(pretty, wrapped, fence, before, after, newline_at_end)| Dress {
            pretty,
            wrapped,
            fence,
            before,
            after,
            newline_at_end,
        })
}

/// JSON text no `Value` serialises to: repeated keys, numbers spelled `1.50`, `-0`, `1e2`, escapes and
/// surrogate pairs, a lone high surrogate, trailing commas.
fn raw_value() -> impl proptest::strategy::Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null"),
        Just("true"),
        Just("false"),
        Just("1.50"),
        Just("-0"),
        Just("0.0"),
        Just("1e2"),
        Just("12"),
        Just("-1.5E-3"),
        Just("\"x\""),
        Just("\"a\\u00e9\\ud83d\\ude00\\n\""),
        Just("\"\\ud83d\""),
        Just("\"\""),
    ]
    .prop_map(String::from);
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..4), any::<bool>()).prop_map(|(values, comma)| format!(
                "[{}{}]",
                values.join(", "),
                if comma && !values.is_empty() { "," } else { "" }
            )),
            prop::collection::vec(("[ab]", inner), 0..4).prop_map(|pairs| {
                let pairs: Vec<String> = pairs.iter().map(|(key, value)| format!("\"{key}\": {value}")).collect();
                format!("{{{}}}", pairs.join(", "))
            }),
        ]
    })
}

fn array_answer(items: &[Value], dress: &Dress) -> String {
    let value = if dress.wrapped { json!({ "items": items }) } else { Value::Array(items.to_vec()) };
    let body = if dress.pretty {
        serde_json::to_string_pretty(&value).unwrap_or_default()
    } else {
        serde_json::to_string(&value).unwrap_or_default()
    };
    dressed(body, dress)
}

/// One record per line, except: layout 1 pretty-prints the record over several lines, layout 2
/// puts it on the previous record's line.
fn jsonl_answer(items: &[Value], layouts: &[u8], dress: &Dress) -> String {
    let mut body = String::new();
    for (at, item) in items.iter().enumerate() {
        let layout = layouts.get(at).copied().unwrap_or(0);
        let text = match layout {
            1 => serde_json::to_string_pretty(item).unwrap_or_default(),
            _ => serde_json::to_string(item).unwrap_or_default(),
        };
        if at > 0 {
            body.push_str(if layout == 2 { " " } else { "\n" });
        }
        body.push_str(&text);
    }
    dressed(body, dress)
}

fn dressed(body: String, dress: &Dress) -> String {
    let mut text = String::from(dress.before);
    if let Some(fence) = dress.fence {
        text.push_str(fence);
    }
    text.push_str(&body);
    if dress.fence.is_some() {
        text.push_str("\n```");
    }
    text.push_str(dress.after);
    if dress.newline_at_end {
        text.push('\n');
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sweep_equals_reparse_for_json_array_answers(items in prop::collection::vec(item(), 0..5), dress in dress()) {
        let answer = array_answer(&items, &dress);
        let cuts = every_char_cut(&answer);
        for profile in PROFILES {
            assert_sweep_matches(&answer, &cuts, profile, None);
        }
        assert_sweep_matches(&answer, &cuts, Profile::Lenient, Some(Arc::new(HasA)));
    }

    #[test]
    fn sweep_equals_reparse_for_jsonl_answers(
        items in prop::collection::vec(item(), 0..5),
        layouts in prop::collection::vec(prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)], 5),
        dress in dress(),
    ) {
        let answer = jsonl_answer(&items, &layouts, &dress);
        let cuts = every_char_cut(&answer);
        for profile in PROFILES {
            assert_sweep_matches(&answer, &cuts, profile, None);
        }
        assert_sweep_matches(&answer, &cuts, Profile::Trustgraph, Some(Arc::new(HasA)));
    }

    #[test]
    fn sweep_equals_reparse_for_raw_json_text(
        items in prop::collection::vec(raw_value(), 0..5),
        pretty in any::<bool>(),
        lines in any::<bool>(),
        dress in dress(),
    ) {
        let separator = match (lines, pretty) {
            (true, _) => "\n",
            (false, true) => ",\n  ",
            (false, false) => ",",
        };
        let body = items.join(separator);
        let body = if lines { body } else { format!("[{body}]") };
        let answer = dressed(body, &dress);
        let cuts = every_char_cut(&answer);
        for profile in PROFILES {
            assert_sweep_matches(&answer, &cuts, profile, None);
        }
        assert_sweep_matches(&answer, &cuts, Profile::Lenient, Some(Arc::new(HasA)));
    }

    #[test]
    fn sweep_equals_reparse_at_sparse_cuts(items in prop::collection::vec(item(), 1..6), dress in dress(), step in 2usize..9) {
        let answer = array_answer(&items, &dress);
        let cuts: Vec<(usize, usize)> = every_char_cut(&answer).into_iter().step_by(step).collect();
        assert_sweep_matches(&answer, &cuts, Profile::Lenient, None);
        assert_sweep_matches(&answer, &cuts, Profile::Lenient, Some(Arc::new(HasA)));
    }

    #[test]
    fn walked_cuts_sweep_as_listed_ones(
        items in prop::collection::vec(item(), 0..5),
        dress in dress(),
        lines in any::<bool>(),
    ) {
        let answer = if lines { jsonl_answer(&items, &[], &dress) } else { array_answer(&items, &dress) };
        let listed = sweep(&answer, &every_char_cut(&answer), Profile::Lenient, Some(Arc::new(HasA)));
        prop_assert_eq!(sweep_points(&answer, Points::Chars, Profile::Lenient, Some(Arc::new(HasA))), listed);
        let ends = o200k_token_ends(&answer);
        let cuts: Vec<(usize, usize)> = std::iter::once(0).chain(ends.iter().copied()).enumerate().collect();
        let offsets = Offsets::from(ends);
        prop_assert_eq!(
            sweep_points(&answer, Points::Ends(&offsets), Profile::Trustgraph, None),
            sweep(&answer, &cuts, Profile::Trustgraph, None)
        );
    }

    #[test]
    fn any_text_sweeps_without_panic_and_matches(text in "[\\[\\]{}\",:0-9a-z\\\\ \n`\u{feff}é.eE+-]{0,40}") {
        let cuts = every_char_cut(&text);
        for profile in PROFILES {
            assert_sweep_matches(&text, &cuts, profile, None);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), cuts in prop::collection::vec(0usize..300, 0..20)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut cuts: Vec<(usize, usize)> = cuts.into_iter().map(|c| (c, c)).collect();
        cuts.sort_unstable();
        for profile in PROFILES {
            let swept = sweep(&text, &cuts, profile, Some(Arc::new(HasA)));
            prop_assert_eq!(swept.cuts(), cuts.len());
        }
    }
}

/// `[{"a":1},{"a":2},{"a":3}]` cut at each byte, worked by hand.
#[test]
fn three_item_array_at_every_byte() {
    let answer = r#"[{"a":1},{"a":2},{"a":3}]"#;
    let cuts: Vec<(usize, usize)> = (0..=answer.len()).map(|c| (c, c)).collect();
    let swept: Sweep = sweep(answer, &cuts, Profile::Lenient, None);
    assert_eq!((swept.full_items, swept.reference), (3, Strategy::Json));
    assert_eq!(swept.steps(Strategy::Json), [[0, 0, 0], [25, 3, 0]]);
    assert_eq!(swept.steps(Strategy::Jsonl), [[0, 0, 0], [25, 3, 0]]);
    assert_eq!(
        swept.steps(Strategy::JsonRepair),
        [[0, 0, 0], [2, 1, 1], [7, 1, 0], [10, 2, 1], [15, 2, 0], [18, 3, 1], [23, 3, 0]]
    );
    let expected: Vec<(usize, usize)> = [
        (0, 0),
        (0, 0),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 0),
        (1, 0),
        (1, 0),
        (2, 1),
        (2, 1),
        (2, 1),
        (2, 1),
        (2, 1),
        (2, 0),
        (2, 0),
        (2, 0),
        (3, 1),
        (3, 1),
        (3, 1),
        (3, 1),
        (3, 1),
        (3, 0),
        (3, 0),
        (3, 0),
    ]
    .to_vec();
    let got: Vec<(usize, usize)> = swept.figures(Strategy::JsonRepair).iter().map(|f| (f.items, f.corrupt)).collect();
    assert_eq!(got, expected);
    assert!((swept.resilience(Strategy::JsonRepair) - 33.0 / 3.0 / 26.0).abs() < 1e-12);
    assert!((swept.resilience(Strategy::Json) - 1.0 / 26.0).abs() < 1e-12);
}

/// A JSONL answer: `jsonl` recovers each line as it completes; `json` (TrustGraph) reads the first
/// line while it is the whole text; `json-repair` reads only the first line's object (the first
/// value), which is the reference's first item.
#[test]
fn jsonl_answer_by_hand() {
    let answer = "{\"a\":\"xy\"}\n{\"a\":2}\n";
    let cuts: Vec<(usize, usize)> = (0..=answer.len()).map(|c| (c, c)).collect();
    let swept = sweep(answer, &cuts, Profile::Trustgraph, None);
    assert_eq!((swept.full_items, swept.reference), (2, Strategy::Jsonl));
    assert_eq!(swept.steps(Strategy::Jsonl), [[0, 0, 0], [10, 1, 0], [18, 2, 0]]);
    assert_eq!(swept.steps(Strategy::Json), [[0, 0, 0], [10, 1, 0], [12, 0, 0]]);
    assert_eq!(swept.steps(Strategy::JsonRepair), [[0, 0, 0], [1, 1, 1], [8, 1, 0]]);
    assert_eq!(swept.figures(Strategy::Jsonl)[17], CutFigures { items: 1, corrupt: 0 });
}

#[test]
fn a_check_filters_items_and_shifts_positions() {
    let answer = r#"[{"b":0},{"a":1},{"a":2}]"#;
    let cuts: Vec<(usize, usize)> = (0..=answer.len()).map(|c| (c, c)).collect();
    let swept = sweep(answer, &cuts, Profile::Lenient, Some(Arc::new(HasA)));
    assert_eq!(swept.full_items, 2);
    assert_eq!(swept.steps(Strategy::JsonRepair), [[0, 0, 0], [15, 1, 0], [23, 2, 0]]);
}

#[test]
fn empty_answer_and_no_cuts() {
    let swept = sweep("", &[(0, 0)], Profile::Lenient, None);
    assert_eq!(swept.full_items, 0);
    assert_eq!(swept.resilience(Strategy::Json), 0.0);
    let swept = sweep("[1]", &[], Profile::Strict, None);
    assert!(swept.figures(Strategy::Json).is_empty() && swept.full_items == 1);
}

#[test]
fn deep_nesting_sweeps() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let cuts: Vec<(usize, usize)> = (0..=deep.len()).step_by(997).map(|c| (c, c)).collect();
    for profile in PROFILES {
        let swept = sweep(&deep, &cuts, profile, None);
        assert!(swept.figures(Strategy::JsonRepair).iter().all(|f| f.items <= 1));
    }
}

/// A root object that repeats `"items"`: the items read before the second key are moved back into
/// the object, and every cut (before and after) must still match a re-parse.
#[test]
fn a_repeated_items_key_matches_reparse() {
    for answer in [
        r#"{"items": [{"a": 1}, {"a": 2}, {"b": 3}], "items": [{"a": 3}]}"#,
        r#"{"items": [{"a": 1}, {"a": 2}], "x": 1, "items": 5} [{"a": 4}]"#,
    ] {
        let cuts = every_char_cut(answer);
        for profile in PROFILES {
            assert_sweep_matches(answer, &cuts, profile, None);
            assert_sweep_matches(answer, &cuts, profile, Some(Arc::new(HasA)));
        }
    }
}

/// Answers the fuzz target `json_repair` found where the sweep and a re-parse disagreed (each one is
/// also a named input in `fuzz/regressions/json_repair/`). A number that is whole but out of range
/// (`85e413`) is dropped by a repair as a complete one is an error, so no cut counts it as an item.
#[test]
fn fuzz_found_answers_match_reparse() {
    for answer in ["85e413", "[1, 85e413", "[1, 85e413]", "{\"items\": [{\"a\": 1e400", "[{\"a\": 1}, -1e309"] {
        let cuts = every_char_cut(answer);
        for profile in PROFILES {
            assert_sweep_matches(answer, &cuts, profile, None);
            assert_sweep_matches(answer, &cuts, profile, Some(Arc::new(HasA)));
        }
    }
}
