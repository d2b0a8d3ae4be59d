//! promptfoo's `python` and `javascript` assertions graded as promptfoo's docs say
//! (configuration/expected-outputs/python, …/javascript): a file's `get_assert(output, context)` or an
//! inline expression or function body, returning a bool, a number (a score, against the threshold) or
//! `{"pass", "score", "reason"}`; and the verdicts a grading program may print.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

use super::command::verdict_of;
use crate::eval::replayed::{record, Ending};
use crate::eval::score::{score_graded, CaseScore, Expectations, Verdict};
use crate::prompt::expect::{AssertType, CheckKind, CheckSpec};
use crate::prompt::file::{Case, PromptFile};

const PROMPT: &str = "id = \"p\"\ntemplate = \"Say hello to {{name}}\"\n[variables]\nname = \"Ada\"\n";

fn assertion(kind: &str, value: &str, threshold: Option<f64>) -> CheckSpec {
    let mut check = CheckSpec::new(CheckKind::Assert);
    check.assert = Some(AssertType::parse(kind).unwrap());
    check.value = Some(Value::String(value.to_string()));
    check.threshold = threshold;
    check
}

/// `answer` scored against one case holding `check`, its files in `dir`.
fn graded(dir: &Path, check: CheckSpec, answer: &str) -> CaseScore {
    let mut prompt = PromptFile::from_toml_str(PROMPT, Path::new("p.toml")).unwrap();
    prompt.cases.push(Case { name: "c".into(), checks: vec![check], ..Case::default() });
    let expectations = Expectations::for_case(&prompt, dir, Some("c")).unwrap();
    let record = record(&prompt, Some("c"), answer, Ending::Finish("stop"));
    let vars = prompt.variables_for(Some("c")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let grades =
        runtime.block_on(crate::eval::graded::grade_cell(&expectations, &record, &vars, &super::Judges::none()));
    score_graded(&expectations, &record, &grades)
}

/// (passed, score) of the one check, or the error.
fn outcome(score: &CaseScore) -> Result<(bool, f64), String> {
    let check = &score.checks[0];
    match &check.graded {
        Some(detail) => Ok((check.passed, detail.score)),
        None => Err(check.message.clone().unwrap_or_default()),
    }
}

#[test]
fn python_files_and_inline_code_give_promptfoos_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("check.py"),
        "def get_assert(output, context):\n    return 'hello' in output.lower() and context['vars']['name'] in output\n\n\
         def scored(output, context):\n    return len(output) / 100\n\n\
         def detailed(output, context):\n    return {'pass': False, 'score': 0.25, 'reason': 'too short: ' + output}\n",
    )
    .unwrap();
    // (value, threshold, answer, (passed, score) or an error)
    type Case<'a> = (&'a str, Option<f64>, &'a str, Result<(bool, f64), ()>);
    let cases: Vec<Case> = vec![
        ("file://check.py", None, "Hello Ada", Ok((true, 1.0))),
        ("file://check.py", None, "Hello Bob", Ok((false, 0.0))),
        // A number is the score: it passes above 0, or at the threshold when there is one.
        ("file://check.py:scored", None, "Hello Ada", Ok((true, 0.09))),
        ("file://check.py:scored", Some(0.5), "Hello Ada", Ok((false, 0.09))),
        ("file://check.py:detailed", None, "Hi", Ok((false, 0.25))),
        // Inline: one line is an expression, several a function body.
        ("output.startswith('Hello')", None, "Hello Ada", Ok((true, 1.0))),
        ("output.startswith('Hello')", None, "Bye Ada", Ok((false, 0.0))),
        ("if 'Ada' in output:\n    return {'pass': True, 'score': 0.5}\nreturn 0", None, "Hi Ada", Ok((true, 0.5))),
        ("if 'Ada' in output:\n    return {'pass': True, 'score': 0.5}\nreturn 0", None, "Hi Bob", Ok((false, 0.0))),
        ("'a string is no verdict'", None, "Hi", Err(())),
    ];
    for (value, threshold, answer, want) in cases {
        let score = graded(dir.path(), assertion("python", value, threshold), answer);
        match (outcome(&score), want) {
            (Ok((passed, got)), Ok((pass, want))) => {
                assert_eq!(passed, pass, "{value} on {answer:?}: {:?}", score.checks[0]);
                assert!((got - want).abs() < 1e-9, "{value} on {answer:?}: score {got}, want {want}");
                let verdict = if pass { Verdict::Pass } else { Verdict::Fail };
                assert_eq!(score.verdict, verdict, "{}", score.reason);
            }
            (Err(why), Err(())) => {
                assert_eq!(score.verdict, Verdict::Error, "{}", score.reason);
                assert!(why.contains("promptfoo's checks return a bool, a number or"), "{why}");
            }
            (got, want) => panic!("{value} on {answer:?}: got {got:?}, want {want:?}"),
        }
    }
    let detailed = graded(dir.path(), assertion("python", "file://check.py:detailed", None), "Hi");
    assert_eq!(detailed.checks[0].graded.as_ref().unwrap().reason.as_deref(), Some("too short: Hi"));
}

#[test]
fn javascript_files_and_inline_code_run_through_node_when_it_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("check.js"),
        "module.exports = (output, context) => ({ pass: output.includes(context.vars.name), score: 0.75, reason: 'looked for ' + context.vars.name });\n",
    )
    .unwrap();
    if super::command::on_path("node").is_none() {
        let mut prompt = PromptFile::from_toml_str(PROMPT, Path::new("p.toml")).unwrap();
        prompt.cases.push(Case {
            name: "c".into(),
            checks: vec![assertion("javascript", "output.length > 3", None)],
            ..Case::default()
        });
        let error = Expectations::for_case(&prompt, dir.path(), Some("c")).unwrap_err().to_string();
        assert!(error.contains("run through Node.js (`node`), which is not installed"), "{error}");
        return;
    }
    for (value, answer, pass, score) in [
        ("file://check.js", "Hello Ada", true, 0.75),
        ("file://check.js", "Hello Bob", false, 0.75),
        ("output.length > 3", "Hello", true, 1.0),
        ("output.length > 30", "Hello", false, 0.0),
        ("const n = output.split(' ').length;\nreturn n / 4;", "a b", true, 0.5),
    ] {
        let scored = graded(dir.path(), assertion("javascript", value, None), answer);
        assert_eq!(outcome(&scored), Ok((pass, score)), "{value} on {answer:?}: {}", scored.reason);
    }
    let scored = graded(dir.path(), assertion("javascript", "file://check.js", None), "Hello Ada");
    assert_eq!(scored.checks[0].graded.as_ref().unwrap().reason.as_deref(), Some("looked for Ada"));
    // A failure with no reason of its own says what ran (the code cut short) on which variables.
    let scored = graded(dir.path(), assertion("javascript", "output.length > 30", None), "Hello");
    let message = scored.checks[0].message.clone().unwrap_or_default();
    assert_eq!(message, "score 0.00: `output.length > 30` on the case's variables name=\"Ada\"");
    let long = format!("output.length > 30 && {}", "output.includes('x') && ".repeat(20)) + "true";
    let scored = graded(dir.path(), assertion("javascript", &long, None), "Hello");
    let message = scored.checks[0].message.clone().unwrap_or_default();
    assert!(
        message.starts_with("score 0.00: `output.length > 30 && output.includes") && message.contains("…`"),
        "{message}"
    );
    assert!(message.len() < 160, "{message}");
}

#[test]
fn an_assertion_file_outside_the_folder_or_missing_is_refused_when_the_prompt_is_read() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["file://../check.py", "file://missing.py"] {
        let mut prompt = PromptFile::from_toml_str(PROMPT, Path::new("p.toml")).unwrap();
        prompt.cases.push(Case { name: "c".into(), checks: vec![assertion("python", value, None)], ..Case::default() });
        let error = Expectations::for_case(&prompt, dir.path(), Some("c")).unwrap_err().to_string();
        assert!(
            error.contains("assert python") && (error.contains("outside") || error.contains("not found")),
            "{error}"
        );
    }
}

#[test]
fn a_printed_verdict_is_read_strictly() {
    let ok = verdict_of("{\"pass\": true, \"score\": 0.5, \"reason\": \"half\"}\n").unwrap();
    assert_eq!((ok.pass, ok.score, ok.reason.as_deref()), (true, 0.5, Some("half")));
    assert_eq!(verdict_of("{\"pass\": false}").unwrap().score, 0.0);
    for (text, says) in [
        ("", "not a verdict"),
        ("true", "a verdict is a JSON object"),
        ("{\"pass\": \"yes\"}", "`pass` is true or false"),
        ("{\"pass\": true, \"score\": 1.5}", "`score` is a number from 0 to 1"),
        ("{\"pass\": true, \"reason\": 3}", "`reason` is text"),
        ("{\"pass\": true}\n{\"pass\": false}", "not a verdict"),
    ] {
        let error = verdict_of(text).unwrap_err();
        assert!(error.contains(says), "{text:?}: {error}");
    }
}
