//! Each comparator on hand-made values, the figures worked out in comments.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn rules_with(pointer: &str, comparator: Comparator) -> BTreeMap<String, Comparator> {
    BTreeMap::from([(pointer.to_string(), comparator)])
}

fn compare(rules: &BTreeMap<String, Comparator>, pointer: &str, expected: Value, got: Value) -> FieldScore {
    FieldRules { comparison: Comparison::default(), rules, graded: None }.compare(pointer, &expected, &got)
}

#[test]
fn a_field_without_a_comparator_compares_as_it_did() {
    let none = BTreeMap::new();
    assert_eq!(compare(&none, "/name", json!(" Aspirin "), json!("aspirin")).score, 1.0);
    let differs = compare(&none, "/name", json!("Aspirin."), json!("aspirin"));
    assert_eq!((differs.score, differs.agrees, differs.note), (0.0, false, None));
}

#[test]
fn exact_and_normalized_fold_strings_as_they_say() {
    let exact = rules_with("/name", Comparator::Exact);
    assert!(!compare(&exact, "/name", json!(" Aspirin "), json!("aspirin")).agrees);
    assert!(compare(&exact, "/name", json!(2), json!(2.0)).agrees);
    let normalized = rules_with("/name", Comparator::Normalized);
    // Full-width letters (NFKC), case, punctuation and runs of spaces fold away.
    assert!(compare(&normalized, "/name", json!("ＡＢＣ  Corp., Inc."), json!("abc corp inc")).agrees);
    assert!(compare(&normalized, "/name", json!(["St. Louis"]), json!(["st louis"])).agrees);
    assert!(!compare(&normalized, "/name", json!("St. Louis"), json!("St. Paul")).agrees);
    assert_eq!(fold("  Hello,\tWORLD!! "), "hello world");
}

#[test]
fn similarity_scores_its_ratio_below_the_threshold_and_says_so() {
    // "espresso machine" (16) against "one espresso machine" (20): 4 insertions, 1 − 4/20 = 0.80.
    assert!((similarity("Espresso machine", "One Espresso machine") - 0.8).abs() < 1e-9);
    let strict = rules_with("/item", Comparator::Similarity { threshold: 0.9 });
    let short = compare(&strict, "/item", json!("Espresso machine"), json!("One Espresso machine"));
    assert!(!short.agrees);
    assert!((short.score - 0.8).abs() < 1e-9);
    assert_eq!(short.note.as_deref(), Some("similarity 0.80 < 0.90"));
    let loose = rules_with("/item", Comparator::Similarity { threshold: 0.8 });
    let met = compare(&loose, "/item", json!("Espresso machine"), json!("One Espresso machine"));
    assert_eq!((met.score, met.agrees, met.note), (1.0, true, None));
    // A missing field scores nothing.
    assert_eq!(compare(&loose, "/item", json!("Espresso machine"), Value::Null).score, 0.0);
}

#[test]
fn number_takes_its_own_tolerance_and_numbers_written_as_strings() {
    let cents = rules_with("/price", Comparator::Number { tolerance: Some(0.01) });
    assert!(compare(&cents, "/price", json!(12.5), json!("12.509")).agrees);
    assert!(!compare(&cents, "/price", json!(12.5), json!(12.52)).agrees);
    assert!(!compare(&cents, "/price", json!(12.5), json!("twelve")).agrees);
    // No tolerance of its own: `[eval] tolerance` (here 0).
    let plain = rules_with("/price", Comparator::Number { tolerance: None });
    assert!(!compare(&plain, "/price", json!(12.5), json!(12.509)).agrees);
}

#[test]
fn set_ignores_order_and_scores_the_share_both_sides_have() {
    let set = rules_with("/tags", Comparator::Set { threshold: None });
    assert!(compare(&set, "/tags", json!(["a", "b"]), json!(["B", "a", "a"])).agrees);
    // {a, b, c} against {a, b, d}: 2 shared of 4 in all = 0.50.
    let half = compare(&set, "/tags", json!(["a", "b", "c"]), json!(["a", "b", "d"]));
    assert_eq!((half.score, half.agrees), (0.5, false));
    assert_eq!(half.note.as_deref(), Some("as sets 0.50 < 1.00 (2 of 4 elements on both sides)"));
    let lenient = rules_with("/tags", Comparator::Set { threshold: Some(0.5) });
    assert!(compare(&lenient, "/tags", json!(["a", "b", "c"]), json!(["a", "b", "d"])).agrees);
}

#[test]
fn a_comparator_inside_an_object_applies_there_and_the_rest_compares_as_before() {
    let rules = rules_with("/address/city", Comparator::Similarity { threshold: 0.9 });
    let near = compare(
        &rules,
        "/address",
        json!({"city": "Saint Louis", "zip": "63101"}),
        json!({"city": "Saint Louis.", "zip": "63101"}),
    );
    assert!(near.agrees, "{near:?}");
    // "saint louis" against "saint paul" (11): 4 edits, 1 − 4/11 ≈ 0.64; zip agrees: score (0.64 + 1) / 2.
    let far = compare(
        &rules,
        "/address",
        json!({"city": "Saint Louis", "zip": "63101"}),
        json!({"city": "Saint Paul", "zip": "63101"}),
    );
    assert!(!far.agrees);
    assert!((far.score - (1.0 - 4.0 / 11.0 + 1.0) / 2.0).abs() < 1e-9, "{far:?}");
    assert_eq!(far.note.as_deref(), Some("/address/city: similarity 0.64 < 0.90"));
    let wrong_zip = compare(
        &rules,
        "/address",
        json!({"city": "Saint Louis", "zip": "63101"}),
        json!({"city": "Saint Louis", "zip": "1"}),
    );
    assert_eq!((wrong_zip.agrees, wrong_zip.score), (false, 0.5));
}
