//! Pairing by key similarity: the invoice line, an assignment better than greedy, exact keys
//! first, the threshold, and no dependence on order.

use serde_json::{json, Value};

use super::super::score_items;
use crate::eval::score::Difference;
use crate::prompt::expect::resolve::PairKey;
use crate::prompt::expect::EvalSettings;

fn description() -> PairKey {
    PairKey::Fields(vec!["/description".into()])
}

fn fuzzy(threshold: f64) -> EvalSettings {
    EvalSettings { match_similarity: Some(threshold), ..EvalSettings::default() }
}

fn line(description: &str, quantity: u32) -> Value {
    json!({"description": description, "quantity": quantity})
}

#[test]
fn one_espresso_machine_is_a_fuzzy_pair_with_partial_credit() {
    let expected = [line("Espresso machine", 1)];
    let refs: Vec<&Value> = expected.iter().collect();
    let answer = [line("One Espresso machine", 1)];
    // By default the keys differ: one missing, one extra, F1 0.
    let (scores, differences) = score_items(&refs, &answer, &description(), &EvalSettings::default());
    assert_eq!((scores.paired, scores.fuzzy, scores.f1), (0, 0, 0.0));
    assert_eq!(differences.len(), 2);
    // match_similarity 0.7: paired at 1 − 4/20 = 0.80, which counts 0.8 in precision and recall.
    let (scores, differences) = score_items(&refs, &answer, &description(), &fuzzy(0.7));
    assert_eq!((scores.paired, scores.fuzzy), (1, 1));
    for figure in [scores.precision, scores.recall, scores.f1] {
        assert!((figure - 0.8).abs() < 1e-9, "{scores:?}");
    }
    assert_eq!(scores.field_accuracy, 1.0, "the quantity agrees");
    let [Difference::Fuzzy { key, got_key, similarity }] = differences.as_slice() else {
        panic!("one fuzzy pair: {differences:?}")
    };
    assert_eq!((key.as_str(), got_key.as_str()), ("Espresso machine", "One Espresso machine"));
    assert!((similarity - 0.8).abs() < 1e-9);
    // Above the pair's similarity, nothing pairs.
    let (scores, _) = score_items(&refs, &answer, &description(), &fuzzy(0.85));
    assert_eq!(scores.paired, 0);
}

#[test]
fn the_pairs_are_the_best_assignment_not_the_closest_first() {
    // milk jug ~ milk mug 0.875 is the closest pair, but taking it leaves silk rug ~ milk jar at 0.50,
    // under 0.7. The best assignment pairs milk jug ~ milk jar (0.75) and silk rug ~ milk mug (0.75).
    let expected = [line("milk jug", 1), line("silk rug", 2)];
    let answer = [line("milk mug", 2), line("milk jar", 1)];
    for expected in [vec![&expected[0], &expected[1]], vec![&expected[1], &expected[0]]] {
        for answer in [answer.to_vec(), vec![answer[1].clone(), answer[0].clone()]] {
            let (scores, differences) = score_items(&expected, &answer, &description(), &fuzzy(0.7));
            assert_eq!((scores.paired, scores.fuzzy), (2, 2), "{differences:?}");
            assert!((scores.f1 - 0.75).abs() < 1e-9, "{scores:?}");
            let mut pairs: Vec<(String, String)> = differences
                .iter()
                .filter_map(|d| match d {
                    Difference::Fuzzy { key, got_key, .. } => Some((key.clone(), got_key.clone())),
                    _ => None,
                })
                .collect();
            pairs.sort();
            assert_eq!(
                pairs,
                [("milk jug".to_string(), "milk jar".to_string()), ("silk rug".to_string(), "milk mug".to_string())]
            );
            assert_eq!(scores.field_accuracy, 1.0, "each pair's quantity agrees");
        }
    }
}

#[test]
fn equal_keys_pair_first_and_only_the_rest_pair_by_similarity() {
    let expected = [line("Milk frother", 1), line("Espresso machine", 1)];
    let refs: Vec<&Value> = expected.iter().collect();
    // "milk frothers" is closer to "Milk frother" than "One Espresso machine" is to anything, but the
    // equal key pairs first; the frothers are left with nothing alike enough.
    let answer = [line("milk frothers", 1), line("Milk frother", 1), line("One Espresso machine", 1)];
    let (scores, differences) = score_items(&refs, &answer, &description(), &fuzzy(0.75));
    assert_eq!((scores.paired, scores.fuzzy), (2, 1));
    // Credit 1 + 0.8 of 3 answer items and 2 expected: P = 0.6, R = 0.9.
    assert!((scores.precision - 0.6).abs() < 1e-9 && (scores.recall - 0.9).abs() < 1e-9, "{scores:?}");
    assert!(differences.contains(&Difference::Extra { key: "milk frothers".into(), got: answer[0].clone() }));
}
