//! Pairing and item scores on hand-made answers, the figures worked out in comments.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::eval::values::{at, Comparison};
use crate::prompt::expect::resolve::PairKey;

fn drug_key() -> PairKey {
    PairKey::Fields(vec!["/drug".into()])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn expected_drugs() -> Vec<Value> {
    vec![
        json!({"drug": "aspirin", "dose": 300}),
        json!({"drug": "ibuprofen", "dose": 400}),
        json!({"drug": "paracetamol", "dose": 500}),
        json!({"drug": "naproxen", "dose": 250}),
    ]
}

#[test]
fn the_worked_example_of_eval_md() {
    // Keyed on `drug`: expected {aspirin, ibuprofen, paracetamol, naproxen}; answer {Aspirin,
    // ibuprofen, codeine}. Paired: aspirin (case folded) and ibuprofen.
    // P = 2/3, R = 2/4, F1 = 2·(2/3)·(1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7 ≈ 0.571.
    // Fields compared on paired items: `dose` only (the key is not compared): aspirin agrees,
    // ibuprofen's 200 ≠ 400, so field accuracy = 1/2.
    let expected = expected_drugs();
    let answer = vec![
        json!({"drug": "Aspirin", "dose": 300}),
        json!({"drug": "ibuprofen", "dose": 200}),
        json!({"drug": "codeine", "dose": 30}),
    ];
    let refs: Vec<&Value> = expected.iter().collect();
    let (scores, differences) = score_items(&refs, &answer, &drug_key(), &EvalSettings::default());
    assert_eq!((scores.answer_items, scores.expected_items, scores.paired), (3, 4, 2));
    assert!(close(scores.precision, 2.0 / 3.0));
    assert!(close(scores.recall, 0.5));
    assert!(close(scores.f1, 4.0 / 7.0));
    assert_eq!(format!("{:.3}", scores.f1), "0.571");
    assert!(close(scores.field_accuracy, 0.5));
    assert_eq!(scores.key, "/drug");
    assert_eq!(
        differences,
        [
            Difference::Field {
                key: "ibuprofen".into(),
                field: "/dose".into(),
                expected: json!(400),
                got: json!(200),
                score: None,
                note: None,
            },
            Difference::Missing { key: "paracetamol".into(), expected: expected[2].clone() },
            Difference::Missing { key: "naproxen".into(), expected: expected[3].clone() },
            Difference::Extra { key: "codeine".into(), got: answer[2].clone() },
        ]
    );
}

#[test]
fn empty_against_empty_scores_one_and_either_side_empty_scores_zero() {
    let settings = EvalSettings::default();
    let (both, _) = score_items(&[], &[], &drug_key(), &settings);
    // Nothing said, nothing missed: P = R = 1, F1 = 1.
    assert_eq!((both.precision, both.recall, both.f1, both.field_accuracy), (1.0, 1.0, 1.0, 1.0));
    let expected = expected_drugs();
    let refs: Vec<&Value> = expected.iter().collect();
    // Silence against four expected: P = 1 (nothing wrong said), R = 0/4, F1 = 0.
    let (silent, differences) = score_items(&refs, &[], &drug_key(), &settings);
    assert_eq!((silent.precision, silent.recall, silent.f1), (1.0, 0.0, 0.0));
    assert_eq!(differences.len(), 4);
    // One item when none was expected: P = 0/1, R = 1, F1 = 0.
    let (chatty, _) = score_items(&[], &[json!({"drug": "x"})], &drug_key(), &settings);
    assert_eq!((chatty.precision, chatty.recall, chatty.f1), (0.0, 1.0, 0.0));
    assert!(chatty.f1.is_sign_positive(), "an F1 of 0 prints 0.00, never -0.00");
}

#[test]
fn tolerance_exact_and_the_fields_that_count() {
    let expected = [json!({"drug": "Aspirin", "dose": 300.0, "route": "oral", "note": "with food"})];
    let refs: Vec<&Value> = expected.iter().collect();
    let answer = [json!({"drug": "aspirin ", "dose": 300.4, "route": "Oral", "note": "after meals"})];
    // Default: strings folded, tolerance 0: dose 300.4 ≠ 300 and note differs; route agrees.
    // Fields compared: dose, route, note (the key `drug` is not) → 1/3.
    let (scores, differences) = score_items(&refs, &answer, &drug_key(), &EvalSettings::default());
    assert_eq!(scores.paired, 1);
    assert!(close(scores.field_accuracy, 1.0 / 3.0), "{scores:?}");
    assert_eq!(differences.len(), 2);
    // tolerance 0.5: dose agrees → 2/3.
    let tolerant = EvalSettings { tolerance: Some(0.5), ..EvalSettings::default() };
    assert!(close(score_items(&refs, &answer, &drug_key(), &tolerant).0.field_accuracy, 2.0 / 3.0));
    // ignore_fields = ["note"] with the tolerance: dose and route compared, both agree → 1.
    let ignoring = EvalSettings { ignore_fields: vec!["note".into()], ..tolerant.clone() };
    assert_eq!(score_items(&refs, &answer, &drug_key(), &ignoring).0.field_accuracy, 1.0);
    // compare_fields = ["/note"]: only the note, which differs → 0.
    let only_note = EvalSettings { compare_fields: Some(vec!["/note".into()]), ..EvalSettings::default() };
    let (scores, differences) = score_items(&refs, &answer, &drug_key(), &only_note);
    assert_eq!(scores.field_accuracy, 0.0);
    assert_eq!(
        differences,
        [Difference::Field {
            key: "Aspirin".into(),
            field: "/note".into(),
            expected: json!("with food"),
            got: json!("after meals"),
            score: None,
            note: None,
        }]
    );
    // exact: "aspirin " no longer pairs with "Aspirin": P = 0, R = 0, F1 = 0.
    let exact = EvalSettings { exact: Some(true), ..EvalSettings::default() };
    let (scores, differences) = score_items(&refs, &answer, &drug_key(), &exact);
    assert_eq!((scores.paired, scores.f1), (0, 0.0));
    assert!(matches!(&differences[..], [Difference::Missing { .. }, Difference::Extra { .. }]));
}

#[test]
fn a_missing_field_disagrees_and_an_extra_one_is_not_compared() {
    let expected = [json!({"drug": "aspirin", "dose": 300})];
    let refs: Vec<&Value> = expected.iter().collect();
    // No dose in the answer: got null; `form` is the answer's own, not compared. Accuracy 0/1.
    let answer = [json!({"drug": "aspirin", "form": "tablet"})];
    let (scores, differences) = score_items(&refs, &answer, &drug_key(), &EvalSettings::default());
    assert_eq!(scores.field_accuracy, 0.0);
    assert_eq!(
        differences,
        [Difference::Field {
            key: "aspirin".into(),
            field: "/dose".into(),
            expected: json!(300),
            got: Value::Null,
            score: None,
            note: None,
        }]
    );
}

#[test]
fn items_sharing_a_key_pair_with_the_one_that_agrees_most() {
    // Two relationships of one subject, keyed on the subject: each expected item takes the answer
    // item that agrees on the most fields, whatever the order: every field agrees.
    let key = PairKey::Fields(vec!["/subject".into()]);
    let expected = [
        json!({"subject": "Curie", "predicate": "born in", "object": "Warsaw"}),
        json!({"subject": "Curie", "predicate": "moved to", "object": "Paris"}),
    ];
    let refs: Vec<&Value> = expected.iter().collect();
    let answer = [
        json!({"subject": "Curie", "predicate": "moved to", "object": "Paris"}),
        json!({"subject": "curie", "predicate": "born in", "object": "Warsaw"}),
    ];
    let (scores, differences) = score_items(&refs, &answer, &key, &EvalSettings::default());
    assert_eq!((scores.paired, scores.f1, scores.field_accuracy), (2, 1.0, 1.0));
    assert_eq!(differences, []);
}

#[test]
fn a_union_pairs_on_its_type_and_each_branch_field() {
    let key = PairKey::Union(vec![(json!("definition"), "/entity".into()), (json!("relationship"), "/subject".into())]);
    let expected = [
        json!({"type": "definition", "entity": "DNA", "definition": "a molecule"}),
        json!({"type": "relationship", "subject": "DNA", "predicate": "located in", "object": "nucleus"}),
    ];
    let refs: Vec<&Value> = expected.iter().collect();
    // The relationship's subject is "DNA" too, but its type differs: no cross pairing.
    let answer = [json!({"type": "relationship", "subject": "dna", "predicate": "located in", "object": "Nucleus"})];
    let (scores, differences) = score_items(&refs, &answer, &key, &EvalSettings::default());
    // P = 1/1, R = 1/2, F1 = 2·1·0.5/1.5 = 2/3; fields of the pair: predicate, object agree → 1.
    assert_eq!(scores.paired, 1);
    assert!(close(scores.f1, 2.0 / 3.0));
    assert_eq!(scores.field_accuracy, 1.0);
    assert_eq!(scores.key, "/type + /entity (definition) | /type + /subject (relationship)");
    assert_eq!(differences, [Difference::Missing { key: "definition / DNA".into(), expected: expected[0].clone() }]);
}

#[test]
fn items_sharing_a_key_pair_the_same_whichever_order_they_come_in() {
    // Greedy in order, the first expected item took the answer item that agreed on x, and left the
    // second (which agrees on x and y) the one that agrees on nothing: 1 of 4 fields. The best
    // pairing agrees on 2 of 4, in either order.
    let key = PairKey::Fields(vec!["/k".into()]);
    let expected = [json!({"k": "r", "x": 1, "y": 1}), json!({"k": "r", "x": 1, "y": 2})];
    let answer = [json!({"k": "r", "x": 1, "y": 2}), json!({"k": "r", "x": 9, "y": 9})];
    let settings = EvalSettings::default();
    for expected in [vec![&expected[0], &expected[1]], vec![&expected[1], &expected[0]]] {
        for answer in [answer.to_vec(), vec![answer[1].clone(), answer[0].clone()]] {
            let (scores, differences) = score_items(&expected, &answer, &key, &settings);
            assert_eq!((scores.paired, scores.field_accuracy), (2, 0.5), "{expected:?} {answer:?}");
            assert_eq!(differences.len(), 2, "{differences:?}");
        }
    }
}

/// The differences as a sorted list of their JSON (a multiset, whatever order they were listed in).
fn sorted(differences: &[Difference]) -> Vec<String> {
    let mut texts: Vec<String> = differences.iter().map(|d| serde_json::to_string(d).unwrap()).collect();
    texts.sort();
    texts
}

/// An item of a few keys and fields from small sets, so keys are shared and fields partly agree.
fn item() -> impl Strategy<Value = Value> {
    let field = || proptest::option::of(0..3u8);
    (0..2u8, field(), field(), field(), any::<bool>()).prop_map(|(k, x, y, z, upper)| {
        let mut item = serde_json::Map::new();
        item.insert("k".into(), json!(if k == 0 { "a" } else { "b" }));
        for (name, value) in [("x", x), ("y", y)] {
            if let Some(value) = value {
                item.insert(name.into(), json!(value));
            }
        }
        if let Some(z) = z {
            // Strings that agree when case-folded, and text that differs.
            let text = ["one", "two", "three"][usize::from(z)];
            item.insert("z".into(), json!(if upper { text.to_uppercase() } else { text.to_string() }));
        }
        Value::Object(item)
    })
}

/// The most fields any pairing of `expected` with `answer` (one key) agrees on: every permutation.
fn best_agreement(expected: &[Value], answer: &[Value]) -> usize {
    let comparison = Comparison::default();
    let agree = |e: &Value, a: &Value| {
        ["/x", "/y", "/z"].iter().filter(|f| e.pointer(f).is_some() && comparison.agree(at(e, f), at(a, f))).count()
    };
    fn best(expected: &[Value], answer: &mut Vec<Value>, agree: &dyn Fn(&Value, &Value) -> usize) -> usize {
        let Some((first, rest)) = expected.split_first() else { return 0 };
        let mut most = best(rest, answer, agree); // `first` unpaired (more expected than answer items)
        for i in 0..answer.len() {
            let taken = answer.remove(i);
            most = most.max(agree(first, &taken) + best(rest, answer, agree));
            answer.insert(i, taken);
        }
        most
    }
    best(expected, &mut answer.to_vec(), &agree)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pairing_does_not_depend_on_the_order_of_answer_or_expected_items(
        (expected, shuffled_expected) in proptest::collection::vec(item(), 0..7)
            .prop_flat_map(|items| (Just(items.clone()), Just(items).prop_shuffle())),
        (answer, shuffled_answer) in proptest::collection::vec(item(), 0..7)
            .prop_flat_map(|items| (Just(items.clone()), Just(items).prop_shuffle())),
    ) {
        let key = PairKey::Fields(vec!["/k".into()]);
        let settings = EvalSettings::default();
        let (scores, differences) = score_items(&expected.iter().collect::<Vec<_>>(), &answer, &key, &settings);
        let (again, again_differences) =
            score_items(&shuffled_expected.iter().collect::<Vec<_>>(), &shuffled_answer, &key, &settings);
        prop_assert_eq!(&scores, &again);
        prop_assert_eq!(sorted(&differences), sorted(&again_differences));
        // And the pairing is the best there is: per key, the most agreeing fields of any pairing.
        let best: usize = ["a", "b"]
            .iter()
            .map(|k| {
                let of = |items: &[Value]| items.iter().filter(|i| i["k"] == *k).cloned().collect::<Vec<_>>();
                best_agreement(&of(&expected), &of(&answer))
            })
            .sum();
        let fields = |item: &Value| item.as_object().map_or(0, |m| m.keys().filter(|k| *k != "k").count());
        let unpaired: usize = differences
            .iter()
            .filter_map(|d| match d {
                Difference::Missing { expected, .. } => Some(fields(expected)),
                _ => None,
            })
            .sum();
        let compared = expected.iter().map(fields).sum::<usize>() - unpaired;
        let disagreeing = differences.iter().filter(|d| matches!(d, Difference::Field { .. })).count();
        prop_assert_eq!(compared - disagreeing, best);
    }

    #[test]
    fn a_large_group_pairs_the_same_whichever_order_it_comes_in(
        (expected, shuffled_expected) in proptest::collection::vec(item(), 70..90)
            .prop_flat_map(|items| (Just(items.clone()), Just(items).prop_shuffle())),
        (answer, shuffled_answer) in proptest::collection::vec(item(), 70..90)
            .prop_flat_map(|items| (Just(items.clone()), Just(items).prop_shuffle())),
    ) {
        // Every item on one key: a group beyond the exact solver's size, paired greedily.
        let key = PairKey::Fields(vec!["/none".into()]);
        let settings = EvalSettings::default();
        let (scores, differences) = score_items(&expected.iter().collect::<Vec<_>>(), &answer, &key, &settings);
        let (again, again_differences) =
            score_items(&shuffled_expected.iter().collect::<Vec<_>>(), &shuffled_answer, &key, &settings);
        prop_assert_eq!(scores.paired, expected.len().min(answer.len()));
        prop_assert_eq!(&scores, &again);
        prop_assert_eq!(sorted(&differences), sorted(&again_differences));
    }
}
