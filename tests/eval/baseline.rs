//! Baselines and recorded evals: `--baseline last` marks each cell improved, regressed or the same,
//! `--fail-on-regression` exits 1 on any regression, `eval list` lists the evals newest first and
//! `eval diff A B` compares two of them case by case and shows the prompt's edit.

use serde_json::Value;
use tunebench::eval::diff::Change;
use tunebench::provider::wire_server::WireServer;

use crate::support::*;

fn change_of(record: &tunebench::eval::EvalRecord, case: &str) -> Change {
    let delta = record.delta.as_ref().expect("a delta against the baseline");
    delta.cells.iter().find(|c| c.case.as_deref() == Some(case)).unwrap().change
}

#[test]
fn a_baseline_marks_improvements_and_regressions_and_diff_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, wrong) = server(ALPHA_RIGHT, BETA_WRONG);
    let first = eval(dir.path(), &prompt, &wrong, &["--json"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let first = record(&first);

    // The prompt is edited, and now beta is answered right.
    prompt_in(dir.path(), &PROMPT.replace("Define every entity", "Define each entity"));
    let (_runtime, right) = server(ALPHA_RIGHT, BETA_RIGHT);
    let second = eval(dir.path(), &prompt, &right, &["--json", "--baseline", "last"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let second = record(&second);
    let delta = second.delta.as_ref().unwrap();
    assert_eq!((delta.baseline.as_str(), delta.improved, delta.regressed), (first.id.as_str(), 1, 0));
    assert_eq!((change_of(&second, "alpha"), change_of(&second, BETA)), (Change::Same, Change::Improved));
    assert_eq!((delta.columns[0].pass_rate_before, delta.columns[0].pass_rate_after), (Some(0.5), Some(1.0)));

    // Beta goes wrong again: a regression, exit 1 (it fails) with or without --fail-on-regression.
    let third = eval(dir.path(), &prompt, &wrong, &["--baseline", "last", "--fail-on-regression"]);
    assert_eq!(third.status.code(), Some(1), "{}", stderr(&third));
    let text = String::from_utf8(third.stdout).unwrap();
    assert!(text.contains(&format!("against eval {}: 0 improved, 1 regressed, 1 same", second.id)), "{text}");
    assert!(text.contains(&format!("regressed: {BETA} × definitions")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("beta") && l.contains("fail 0.67 ▼")), "{text}");

    // A baseline from a record file works as well as an id.
    let file = dir.path().join("evals").join(format!("{}.json", first.id));
    let from_file = eval(dir.path(), &prompt, &right, &["--json", "--baseline", file.to_str().unwrap()]);
    assert_eq!(record(&from_file).delta.unwrap().baseline, first.id);

    // eval list: newest first.
    let listed = tunebench(dir.path()).args(["eval", "list", "--json"]).output().unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[3]["id"], first.id.as_str());
    assert_eq!(listed[2]["id"], second.id.as_str());

    // eval diff A B: beta improved, its failure's reason gone, the template's edit shown.
    let diff = tunebench(dir.path()).args(["eval", "diff", &first.id, &second.id, "--json"]).output().unwrap();
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let diff: Value = serde_json::from_slice(&diff.stdout).unwrap();
    let cases = diff["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "only beta changed: {diff}");
    assert_eq!((cases[0]["case"].as_str(), cases[0]["change"].as_str()), (Some(BETA), Some("improved")));
    assert_eq!(cases[0]["before"]["verdict"], "fail");
    assert_eq!(cases[0]["after"]["verdict"], "pass");
    let edit = diff["prompts"][0]["diff"].as_str().unwrap();
    assert!(
        edit.contains("-template = \"Define every entity") && edit.contains("+template = \"Define each entity"),
        "{edit}"
    );
    let human = tunebench(dir.path()).args(["eval", "diff", &first.id, &second.id]).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains(&format!("{BETA} × definitions: improved: fail 0.67 → pass 1.00")), "{human}");
    assert!(
        human.contains("B against A: 1 improved, 0 regressed\n") && human.contains("  fixed: missing Gamma"),
        "{human}"
    );
    let regressed =
        tunebench(dir.path()).args(["eval", "diff", &second.id, "last", "--fail-on-regression"]).output().unwrap();
    assert_eq!(
        regressed.status.code(),
        Some(0),
        "the last eval (from the file baseline) passes: {}",
        stderr(&regressed)
    );
    let bad = tunebench(dir.path()).args(["eval", "diff", "nope", "last"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("\"nope\": no eval of that id"), "{}", stderr(&bad));
}

#[test]
fn a_regression_above_the_threshold_fails_only_with_fail_on_regression() {
    // Beta passes at F1 2/3 (precision 1, recall 1/2) once the threshold is 0.5: still a pass, but
    // worse than the F1 1.0 before.
    let lenient = PROMPT.replace("match = \"entity\"", "match = \"entity\"\npass_f1 = 0.5");
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &lenient);
    let (_runtime, right) = server(ALPHA_RIGHT, BETA_RIGHT);
    let first = eval(dir.path(), &prompt, &right, &["--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let first = record(&first).id;
    let half = "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n";
    let (_runtime, worse) = server(ALPHA_RIGHT, half);
    let output = eval(dir.path(), &prompt, &worse, &["--json", "--baseline", "last"]);
    assert_eq!(output.status.code(), Some(0), "every cell still passes: {}", stderr(&output));
    let record = record(&output);
    let beta = record.cells.iter().find(|c| c.case.as_deref() == Some(BETA)).unwrap();
    assert!((beta.score.f1().unwrap() - 2.0 / 3.0).abs() < 1e-9, "{:?}", beta.score);
    assert_eq!(change_of(&record, BETA), Change::Regressed);
    let output = eval(dir.path(), &prompt, &worse, &["--baseline", &first, "--fail-on-regression"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}

/// `tunebench eval PROMPT --model openai:MODEL` on `server`, with `args`.
fn eval_on(dir: &std::path::Path, model: &str, server: &WireServer, args: &[&str]) -> std::process::Output {
    let prompt = dir.join("definitions.toml");
    let mut all = vec!["--json", "--model", model];
    all.extend_from_slice(args);
    eval(dir, &prompt, server, &all)
}

#[test]
fn a_baseline_is_an_eval_on_the_same_model_and_diff_names_the_models() {
    let dir = tempfile::tempdir().unwrap();
    prompt_in(dir.path(), PROMPT);
    let (_runtime, right) = server(ALPHA_RIGHT, BETA_RIGHT);
    let (_runtime, wrong) = server(ALPHA_RIGHT, BETA_WRONG);
    let on_a = eval_on(dir.path(), "openai:model-a", &right, &[]);
    assert_eq!(on_a.status.code(), Some(0), "{}", stderr(&on_a));
    let on_a = record(&on_a);

    // No eval on model-b yet: `--baseline last` is bad input naming the model, not model-a's eval.
    let none = eval_on(dir.path(), "openai:model-b", &wrong, &["--baseline", "last"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(stderr(&none).contains("no earlier eval of these prompt files on openai:model-b"), "{}", stderr(&none));
    let on_b = eval_on(dir.path(), "openai:model-b", &wrong, &[]);
    assert_eq!(on_b.status.code(), Some(1), "beta fails on model-b: {}", stderr(&on_b));
    let on_b = record(&on_b);

    // model-a again: its baseline is the last eval on model-a, not the newer one on model-b.
    let again = eval_on(dir.path(), "openai:model-a", &right, &["--baseline", "last"]);
    let delta = record(&again).delta.unwrap();
    assert_eq!((delta.baseline.as_str(), delta.improved, delta.regressed), (on_a.id.as_str(), 0, 0));

    // model-b against model-a's eval by id: no column is the other's, so new and gone, never regressed.
    let against_a = eval_on(dir.path(), "openai:model-b", &wrong, &["--baseline", &on_a.id]);
    let delta = record(&against_a).delta.unwrap();
    assert_eq!((delta.improved, delta.regressed), (0, 0), "{delta:?}");
    let changes: Vec<Change> = delta.cells.iter().map(|c| c.change).collect();
    assert_eq!(changes, [Change::New, Change::New, Change::Gone, Change::Gone]);

    // eval diff names the model of each eval and of each column.
    let diff = tunebench(dir.path()).args(["eval", "diff", &on_a.id, &on_b.id]).output().unwrap();
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let text = String::from_utf8(diff.stdout).unwrap();
    let a_line = text.lines().find(|l| l.starts_with("A: eval")).unwrap_or_default();
    let b_line = text.lines().find(|l| l.starts_with("B: eval")).unwrap_or_default();
    assert!(a_line.contains("on openai:model-a") && b_line.contains("on openai:model-b"), "{text}");
    assert!(text.contains("B against A: 0 improved, 0 regressed"), "{text}");
    assert!(
        text.contains("new: no such column in the baseline") && text.contains("gone: no such column now"),
        "{text}"
    );
}

#[test]
fn a_check_moved_in_its_file_is_the_same_check_in_eval_diff() {
    let check = "[[checks]]\nkind = \"regex\"\npath = \"/entity\"\npattern = \"^[A-Z]\"\n\n[[cases]]\nname = \"alpha\"";
    let with_check = PROMPT.replacen("[[cases]]\nname = \"alpha\"", check, 1);
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), &with_check);
    let (_runtime, wrong) = server(ALPHA_RIGHT, BETA_WRONG);
    let first = record(&eval(dir.path(), &prompt, &wrong, &["--json"]));
    assert!(first.cells.iter().all(|c| c.score.checks.len() == 1 && c.score.checks[0].passed), "{first:?}");
    // The check moves three lines down (comments above it); nothing else changes.
    prompt_in(dir.path(), &with_check.replacen("[[checks]]", "# one\n# two\n# three\n[[checks]]", 1));
    let second = record(&eval(dir.path(), &prompt, &wrong, &["--json"]));
    let at = |record: &tunebench::eval::EvalRecord| record.cells[0].score.checks[0].at.clone();
    assert_ne!(at(&first), at(&second), "the check is written on another line");
    let diff = tunebench(dir.path()).args(["eval", "diff", &first.id, &second.id, "--json"]).output().unwrap();
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let diff: Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(diff["cases"], serde_json::json!([]), "no case changed: {diff}");
}
