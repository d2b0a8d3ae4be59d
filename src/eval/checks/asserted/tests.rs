//! promptfoo's assertion types judged as promptfoo's docs define them
//! (configuration/expected-outputs/deterministic; "Weighted assertions" in expected-outputs), each
//! one and its `not-` form, on answers played through the run engine.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::json;

use crate::eval::replayed::{record, Ending};
use crate::eval::score::{score_record, Expectations, Verdict};
use crate::prompt::expect::{AssertType, CheckKind, CheckSpec};
use crate::prompt::file::{Case, PromptFile};

const PROMPT: &str = "id = \"p\"\ntemplate = \"Say hello\"\n";

fn assert_check(kind: &str, value: serde_json::Value, threshold: Option<f64>, weight: Option<f64>) -> CheckSpec {
    let mut check = CheckSpec::new(CheckKind::Assert);
    check.assert = Some(AssertType::parse(kind).unwrap());
    check.value = (!value.is_null()).then_some(value);
    check.threshold = threshold;
    check.weight = weight;
    check
}

/// The verdict of `answer` (finished with `finish`) against one case holding `checks`.
fn judge(
    checks: Vec<CheckSpec>,
    pass_score: Option<f64>,
    answer: &str,
    finish: &'static str,
) -> (Verdict, String, Vec<bool>) {
    let mut prompt = PromptFile::from_toml_str(PROMPT, Path::new("p.toml")).unwrap();
    prompt.cases.push(Case { name: "c".into(), checks, pass_score, ..Case::default() });
    let expectations = Expectations::for_case(&prompt, Path::new(""), Some("c")).unwrap();
    let score = score_record(&expectations, &record(&prompt, Some("c"), answer, Ending::Finish(finish)));
    (score.verdict, score.reason, score.checks.iter().map(|c| c.passed).collect())
}

#[test]
fn every_type_and_its_not_form_hold_as_promptfoo_documents() {
    // (type, value, threshold, answer, holds)
    let table: Vec<(&str, serde_json::Value, Option<f64>, &str, bool)> = vec![
        ("equals", json!("Hello world"), None, "Hello world", true),
        ("equals", json!("Hello world"), None, "hello world", false),
        ("equals", json!({"key": "value"}), None, "{\"key\":  \"value\"}", true),
        ("equals", json!({"key": "value"}), None, "{\"key\": \"other\"}", false),
        ("equals", json!(42), None, "42", true),
        ("contains", json!("world"), None, "Hello world", true),
        ("contains", json!("World"), None, "Hello world", false),
        ("contains", json!(0), None, "error 404 0", true),
        ("icontains", json!("WORLD"), None, "Hello world", true),
        ("contains-all", json!(["Hello", "world"]), None, "Hello world", true),
        ("contains-all", json!(["Hello", "moon"]), None, "Hello world", false),
        ("contains-any", json!(["moon", "world"]), None, "Hello world", true),
        ("contains-any", json!(["moon", "sun"]), None, "Hello world", false),
        ("icontains-all", json!(["HELLO", "WORLD"]), None, "Hello world", true),
        ("icontains-any", json!("MOON,WORLD"), None, "Hello world", true),
        ("starts-with", json!("Hello"), None, "Hello world", true),
        ("starts-with", json!("world"), None, "Hello world", false),
        ("regex", json!("\\d{4}"), None, "in 1969", true),
        ("regex", json!("\\d{4}"), None, "in the sixties", false),
        ("is-json", serde_json::Value::Null, None, "{\"a\": 1}", true),
        ("is-json", serde_json::Value::Null, None, "Sure! {\"a\": 1}", false),
        ("is-json", json!({"type": "object", "required": ["latitude"]}), None, "{\"latitude\": 1}", true),
        ("is-json", json!({"type": "object", "required": ["latitude"]}), None, "{\"longitude\": 1}", false),
        ("contains-json", serde_json::Value::Null, None, "Sure! {\"a\": 1} there", true),
        ("contains-json", serde_json::Value::Null, None, "no json { here", false),
        ("contains-json", json!({"required": ["b"]}), None, "{\"a\": 1} and {\"b\": 2}", true),
        // kitten → sitting is 3 edits (the docs' example).
        ("levenshtein", json!("sitting"), Some(3.0), "kitten", true),
        ("levenshtein", json!("sitting"), Some(2.0), "kitten", false),
        // No threshold: promptfoo's default of 5 edits.
        ("levenshtein", json!("hello world"), None, "hallo wurld!!", true),
        ("levenshtein", json!("hello world"), None, "goodbye moon", false),
        ("finish-reason", json!("stop"), None, "Hello world", true),
        ("finish-reason", json!("length"), None, "Hello world", false),
    ];
    for (kind, value, threshold, answer, holds) in table {
        for negated in [false, true] {
            let name = if negated { format!("not-{kind}") } else { kind.to_string() };
            let (verdict, reason, passed) =
                judge(vec![assert_check(&name, value.clone(), threshold, None)], None, answer, "stop");
            let want = holds != negated;
            assert_eq!(passed, [want], "{name} {value} on {answer:?}: {reason}");
            assert_eq!(
                verdict,
                if want { Verdict::Pass } else { Verdict::Fail },
                "{name} {value} on {answer:?}: {reason}"
            );
        }
    }
}

#[test]
fn weights_and_a_threshold_decide_as_the_weighted_assertions_example() {
    // The docs' example: "Goodbye world" fails equals (weight 2), passes contains (weight 1): 0.33.
    let checks = || {
        vec![
            assert_check("equals", json!("Hello world"), None, Some(2.0)),
            assert_check("contains", json!("world"), None, Some(1.0)),
        ]
    };
    let (verdict, reason, _) = judge(checks(), None, "Goodbye world", "stop");
    assert_eq!(verdict, Verdict::Fail, "without a threshold every assertion must pass");
    assert!(reason.contains("1 assert failed: assert equals"), "{reason}");
    let (verdict, reason, _) = judge(checks(), Some(0.5), "Goodbye world", "stop");
    assert_eq!(verdict, Verdict::Fail, "0.33 is below 0.5");
    assert_eq!(reason, "assert score 0.33 < pass_score 0.5");
    assert_eq!(judge(checks(), Some(0.2), "Goodbye world", "stop").0, Verdict::Pass, "0.33 reaches 0.2");
    assert_eq!(judge(checks(), Some(0.0), "Goodbye moon", "stop").0, Verdict::Pass, "a threshold of 0 always passes");
    // A weight of 0 passes whatever it says.
    let zero = vec![
        assert_check("equals", json!("Hello world"), None, Some(0.0)),
        assert_check("contains", json!("world"), None, None),
    ];
    assert_eq!(judge(zero, None, "Goodbye world", "stop").0, Verdict::Pass);
}

#[test]
fn a_type_that_needs_code_or_a_model_is_not_evaluated_and_the_cell_is_an_error() {
    let checks = vec![
        assert_check("contains", json!("world"), None, None),
        assert_check("llm-rubric", json!("is friendly"), None, None),
        assert_check("cost", serde_json::Value::Null, Some(0.01), None),
    ];
    let (verdict, reason, passed) = judge(checks, None, "Hello world", "stop");
    assert_eq!(verdict, Verdict::Error);
    assert_eq!(passed, [true, false, false]);
    assert!(reason.starts_with("not evaluated: assert llm-rubric"), "{reason}");
    assert!(reason.contains("assert cost"), "{reason}");
}

#[test]
fn an_assert_check_reads_from_a_prompt_file_and_bad_ones_are_errors_at_their_line() {
    let good = "id = \"p\"\ntemplate = \"x\"\n[[cases]]\nname = \"c\"\npass_score = 0.5\n[[cases.checks]]\nkind = \"assert\"\ntype = \"not-icontains\"\nvalue = \"sorry\"\nweight = 2\n";
    let prompt = PromptFile::from_toml_str(good, Path::new("p.toml")).unwrap();
    let check = &prompt.cases[0].checks[0];
    assert_eq!((check.assert.as_ref().unwrap().to_string(), check.weight), ("not-icontains".to_string(), Some(2.0)));
    assert_eq!(prompt.cases[0].pass_score, Some(0.5));
    for (bad, says) in [
        ("type = \"contains-everything\"\nvalue = \"x\"", "unknown assertion type \"contains-everything\""),
        ("type = \"regex\"\nvalue = \"(\"", "not a regular expression"),
        ("type = \"contains\"", "needs a `value`"),
        ("type = \"latency\"", "needs a `threshold`"),
        ("type = \"contains-any\"\nvalue = {a = 1}", "a list of texts"),
    ] {
        let text = format!("id = \"p\"\ntemplate = \"x\"\n[[checks]]\nkind = \"assert\"\n{bad}\n");
        let error = PromptFile::from_toml_str(&text, Path::new("p.toml")).expect_err(bad).to_string();
        assert!(error.contains(says), "{bad}: {error}");
        assert!(error.contains("p.toml:"), "{bad}: {error}");
    }
}

proptest::proptest! {
    /// The banded distance is the full one whenever that is within the band, and `None` past it.
    #[test]
    fn the_banded_edit_distance_agrees_with_the_full_one(
        a in "[abcé]{0,24}",
        b in "[abcé]{0,24}",
        most in 0usize..30,
    ) {
        let full = strsim::levenshtein(&a, &b);
        let banded = super::levenshtein_within(&a, &b, most);
        proptest::prop_assert_eq!(banded, (full <= most).then_some(full), "{:?} {:?} within {}", a, b, most);
    }
}

#[test]
fn a_long_answer_is_judged_within_its_threshold_without_the_full_table() {
    // 400,000 characters against themselves with one change, and against a text far off: the band is
    // 5 wide, so this is as cheap as reading the texts.
    let long = "x".repeat(400_000);
    let changed = format!("{}y", &long[1..]);
    assert_eq!(super::levenshtein_within(&long, &changed, 5), Some(1));
    assert_eq!(super::levenshtein_within(&long, &"y".repeat(400_000), 5), None);
    assert_eq!(super::levenshtein_within(&long, "short", 5), None);
}
