//! The eval screen says one thing: the title's counts and the change column are both against the
//! baseline the title names: `last`, as everywhere (the newest earlier eval of the prompt on this
//! model), so a re-run shows what the last edit changed; an edit to the prompt marks the matrix stale until ctrl-r; and a single run of a
//! case in the workbench is scored against that case's expected answer, beside the line verdicts.

use std::sync::mpsc;
use std::time::Duration;

use ratatui_textarea::Key;
use tunebench::eval::diff::Change;
use tunebench::eval::score::Verdict;
use tunebench::tui::msg::{Action, Effect, Msg, Start};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Screen, State};
use tunebench::tui::update::update;

use super::eval::{draw, drive, drive_on, evaluated, folder, transcript};
use super::support::*;

const BETA_RIGHT: &str = "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n{\"entity\": \"Gamma\", \"definition\": \"The third letter.\"}\n";

fn title(state: &State) -> String {
    draw(state, 120, 40).lines().next().unwrap_or_default().to_string()
}

#[test]
fn the_title_and_the_change_column_count_against_the_same_baseline() {
    without_local_model();
    let dir = folder();
    let data = tempfile::tempdir().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, Some(data.path().to_path_buf())).unwrap();
    runner.record_history = false;
    let path = dir.path().join("definitions.toml");

    // The first eval is recorded: beta fails.
    let mut state = state_for(&path).unwrap();
    let effects = update(&mut state, alt('e'));
    drive_on(&mut state, effects, &mut runner, &rx);
    let first = state.eval.record.as_ref().unwrap().id.clone();
    let shown: String = first.chars().take(15).collect();

    // Beta is answered right now; the workbench opened again evaluates against the first eval.
    std::fs::write(dir.path().join("answers/definitions.beta.jsonl"), transcript(BETA_RIGHT)).unwrap();
    let mut state = state_for(&path).unwrap();
    let effects = update(&mut state, alt('e'));
    drive_on(&mut state, effects, &mut runner, &rx);
    assert_eq!(state.eval.baseline_record.as_ref().map(|b| b.id.clone()), Some(first.clone()));
    assert_eq!((state.eval.row_change(0), state.eval.row_change(1)), (Some(Change::Same), Some(Change::Improved)));
    assert!(title(&state).contains(&format!("vs baseline {shown}: 1 improved, 0 regressed")), "{}", title(&state));

    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains(&format!("against {first}: 1 improved, 0 regressed, 1 same")), "{note}");
    let second = state.eval.record.as_ref().unwrap().id.clone();

    // ctrl-r with nothing changed: `last` is now the second eval, and nothing changed against it; the
    // title names it, and the row says what the title counts.
    let effects = update(&mut state, ctrl('r'));
    drive_on(&mut state, effects, &mut runner, &rx);
    assert_eq!(state.eval.baseline_record.as_ref().map(|b| b.id.clone()), Some(second.clone()));
    assert_eq!((state.eval.row_change(0), state.eval.row_change(1)), (Some(Change::Same), Some(Change::Same)));
    let screen = draw(&state, 120, 40);
    let shown: String = second.chars().take(15).collect();
    assert!(title(&state).contains(&format!("vs baseline {shown}: 0 improved, 0 regressed")), "{screen}");
    let beta_row = screen.lines().find(|l| l.contains("beta")).unwrap_or_default();
    assert!(!beta_row.contains("improved"), "the row says what the title counts:\n{screen}");
    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains(&format!("against {second}: 0 improved, 0 regressed, 2 same")), "{note}");
}

#[test]
fn an_edit_marks_the_matrix_stale_until_ctrl_r() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    assert!(!title(&state).contains("stale"), "{}", title(&state));
    update(&mut state, special(Key::Esc));
    assert!(state.screen != Screen::Eval);
    update(&mut state, key('!'));
    assert!(state.dirty, "typed into the template");
    update(&mut state, alt('e'));
    assert!(state.screen == Screen::Eval);
    assert!(title(&state).contains("stale: the prompt was edited since"), "{}", title(&state));
    let effects = update(&mut state, ctrl('r'));
    assert!(matches!(effects.first(), Some(Effect::Save { .. })), "the edit is saved first: {effects:?}");
    drive(&mut state, effects);
    assert!(!title(&state).contains("stale"), "{}", title(&state));
}

/// Runs the workbench's ctrl-r on `case` through a real runner until the run is scored.
fn run_case(state: &mut State, case: &str) {
    while state.choice.case.as_deref() != Some(case) {
        update(state, Msg::Action(Action::NextCase));
    }
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, None).unwrap();
    runner.record_history = false;
    let effects = update(state, ctrl('r'));
    assert!(matches!(effects.first(), Some(Effect::Start(Start::Run(_)))), "{effects:?}");
    for effect in effects {
        for msg in runner.execute(effect) {
            update(state, msg);
        }
    }
    loop {
        let msg = rx.recv_timeout(Duration::from_secs(60)).expect("the run is scored within a minute");
        let scored = matches!(msg, Msg::RunScored { .. });
        update(state, msg);
        if scored {
            break;
        }
    }
}

#[test]
fn a_single_run_of_a_case_is_scored_against_its_expected_answer() {
    without_local_model();
    let dir = folder();
    let mut state = state_for(&dir.path().join("definitions.toml")).unwrap();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Replay);
    run_case(&mut state, "beta");
    // The workbench's replay plays the prompt's recorded answer (alpha's) whatever the case: a valid
    // line, and the wrong answer for beta.
    let score = state.workbench.run.scored.clone().expect("scored").expect("scored without error");
    assert_eq!(score.verdict, Verdict::Fail, "{}", score.reason);
    let screen = draw(&state, 160, 40);
    assert!(screen.contains("✓1") && screen.contains("case fail: F1 0.00"), "valid and wrong, both said:\n{screen}");
    assert!(state.note.clone().unwrap_or_default().contains("\"beta\": fail"), "{:?}", state.note);

    run_case(&mut state, "alpha");
    let score = state.workbench.run.scored.clone().unwrap().unwrap();
    assert_eq!(score.verdict, Verdict::Pass, "{}", score.reason);
    assert!(draw(&state, 160, 40).contains("case pass"));
}

/// A case with a graded check (`command`) is graded in the workbench too: a run whose fields already
/// fail is `fail`, one that is right and whose check passes is `pass`; never `error` because a check
/// is graded after the answer.
#[test]
fn a_single_run_grades_the_cases_command_check() {
    without_local_model();
    let dir = folder();
    let path = dir.path().join("definitions.toml");
    std::fs::write(
        dir.path().join("ok.py"),
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'pass': True}))\n",
    )
    .unwrap();
    let check = "[[cases.checks]]\nkind = \"command\"\ncommand = [\"python3\", \"ok.py\"]\n";
    let text =
        super::eval::PROMPT.replace("\n[[cases]]\nname = \"beta\"", &format!("{check}\n[[cases]]\nname = \"beta\""));
    std::fs::write(&path, format!("{text}{check}")).unwrap();
    let mut state = state_for(&path).unwrap();
    run_case(&mut state, "beta");
    let score = state.workbench.run.scored.clone().expect("scored").expect("scored without error");
    assert_eq!(score.verdict, Verdict::Fail, "{}", score.reason);
    run_case(&mut state, "alpha");
    let score = state.workbench.run.scored.clone().unwrap().unwrap();
    assert_eq!(score.verdict, Verdict::Pass, "{}", score.reason);
    assert!(score.checks.iter().any(|c| c.passed), "{score:?}");
}
