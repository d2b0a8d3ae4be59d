//! The live sweep ([`Live`]) against the one-pass sweep of the whole answer: at every chunk cut the
//! items each strategy recovers are the sweep's, and the finished live sweep IS the sweep.

use std::sync::Arc;

use proptest::prelude::{any, prop, prop_assert_eq, proptest, ProptestConfig};
use tunebench::output::Profile;
use tunebench::schema::Check;
use tunebench::truncate::points::{Offsets, Points};
use tunebench::truncate::strategy::Strategy;
use tunebench::truncate::sweep::{sweep_points, Live};

use super::{array_answer, dress, item, jsonl_answer, raw_value, HasA, PROFILES};

/// The answer split into chunks ending at the char boundaries nearest `sizes` (cycled).
fn chunks<'a>(answer: &'a str, sizes: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while start < answer.len() {
        let size = sizes.get(at % sizes.len().max(1)).copied().unwrap_or(1).max(1);
        at += 1;
        let mut end = (start + size).min(answer.len());
        while !answer.is_char_boundary(end) {
            end += 1;
        }
        out.push(&answer[start..end]);
        start = end;
    }
    out
}

/// Asserts the live items at every cut and the finished figures equal the sweep's.
fn assert_live_matches(answer: &str, sizes: &[usize], profile: Profile, check: Option<Arc<dyn Check>>) {
    let pieces = chunks(answer, sizes);
    let mut live = Live::new(profile, check.clone());
    let mut items = vec![live.items()];
    let mut ends = Vec::new();
    for piece in &pieces {
        items.push(live.push(piece));
        ends.push(live.text().len());
    }
    assert_eq!(live.text(), answer);
    assert_eq!(live.cuts(), pieces.len() + 1);
    let offsets = Offsets::from(ends);
    let swept = sweep_points(answer, Points::Ends(&offsets), profile, check);
    for strategy in Strategy::ALL {
        for (cut, (figures, live_items)) in swept.figures(strategy).iter().zip(&items).enumerate() {
            assert_eq!(
                live_items.get(strategy),
                figures.items,
                "{strategy} {profile:?} cut {cut} of {answer:?} in {pieces:?}"
            );
        }
    }
    assert_eq!(live.finish(), swept, "{profile:?} {answer:?} in {pieces:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn live_items_are_the_sweeps_at_every_chunk_cut(
        items in prop::collection::vec(item(), 0..5),
        layouts in prop::collection::vec(0u8..3, 5),
        lines in any::<bool>(),
        dress in dress(),
        sizes in prop::collection::vec(1usize..9, 1..6),
    ) {
        let answer = if lines { jsonl_answer(&items, &layouts, &dress) } else { array_answer(&items, &dress) };
        for profile in PROFILES {
            assert_live_matches(&answer, &sizes, profile, None);
            assert_live_matches(&answer, &sizes, profile, Some(Arc::new(HasA)));
        }
    }

    #[test]
    fn live_items_are_the_sweeps_for_raw_json_text(
        values in prop::collection::vec(raw_value(), 0..5),
        lines in any::<bool>(),
        sizes in prop::collection::vec(1usize..5, 1..4),
    ) {
        let answer = if lines { values.join("\n") } else { format!("[{}]", values.join(",")) };
        for profile in PROFILES {
            assert_live_matches(&answer, &sizes, profile, Some(Arc::new(HasA)));
        }
        prop_assert_eq!(Live::new(Profile::Lenient, None).finish().cuts(), 1);
    }
}

#[test]
fn live_matches_at_every_byte_and_on_odd_answers() {
    for answer in [
        r#"[{"a":1},{"a":2},{"a":3}]"#,
        "{\"a\": 1}\n{\"b\": 2}\n{\"a\": \"x y\"",
        r#"{"items": [{"a": 1}, {"a": 2}, {"b": 3}], "items": [{"a": 3}]}"#,
        r#"{"items": [{"a": 1}, {"a": 2}], "x": 1, "items": 5} [{"a": 4}]"#,
        "```json\n[{\"a\": 1.50}, {\"a\": -1e309}, 85e413]\n```",
        "",
    ] {
        for profile in PROFILES {
            assert_live_matches(answer, &[1], profile, None);
            assert_live_matches(answer, &[1], profile, Some(Arc::new(HasA)));
            assert_live_matches(answer, &[3, 7], profile, Some(Arc::new(HasA)));
        }
    }
}
