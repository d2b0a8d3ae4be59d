//! The eval screen holds each datum once: an eval's runs come back in its message and are listed in the
//! history pane (no re-read of the history file); once the eval ended its record alone holds the cells'
//! scores, and a case scored again (approve) changes it and sums it up again; the re-score grades the
//! case's graded checks again; the drill-down shows what the core's score carries.

use tunebench::run::RunRecord;
use tunebench::tui::eval::state::EvalPhase;
use tunebench::tui::msg::{Effect, EvalDone, EvalNews, Msg, Start};
use tunebench::tui::update::update;

use tunebench::eval::score::Verdict;

use super::eval::{drive, evaluated, folder, verdict};
use super::support::key;

#[test]
fn an_eval_lists_its_runs_in_the_history_pane_without_reading_the_history_file() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    let runs: Vec<RunRecord> = state.eval.cells.iter().filter_map(|c| c.run.as_deref().cloned()).collect();
    assert_eq!(runs.len(), 2, "both cases ran");
    let record = state.eval.record.as_deref().unwrap().clone();
    let listed = state.workbench.history.len();
    // ctrl-r on the eval screen runs it again; its end brings the runs the history kept.
    let effects = tunebench::tui::eval::update::rerun(&mut state);
    assert!(matches!(effects.as_slice(), [Effect::Start(Start::Eval(r))] if r.id == 2), "{effects:?}");
    let done = EvalDone { record, baseline: None, saved: Err("the eval store is off".into()), runs: runs.clone() };
    let effects = update(&mut state, Msg::Eval { id: 2, news: EvalNews::Done(Ok(Box::new(done))) });
    assert_eq!(state.eval.phase, EvalPhase::Done);
    assert!(!effects.iter().any(|e| matches!(e, Effect::LoadHistory { .. })), "no history re-read: {effects:?}");
    assert!(effects.iter().any(|e| matches!(e, Effect::ListEvals { .. })), "the eval store is listed again");
    assert_eq!(state.workbench.history.len(), listed + 2, "the eval's two runs are listed");
    assert_eq!(state.workbench.history[..2], runs[..], "newest first, as they came");
}

/// Counts its runs in `graded.log` beside it and fails every answer with a reason.
const CHECK: &str = "import json, os, sys\nq = json.load(sys.stdin)\nhere = os.path.dirname(os.path.abspath(__file__))\nopen(os.path.join(here, 'graded.log'), 'a').write(q['case'] + '\\n')\nprint(json.dumps({'pass': False, 'score': 0.5, 'reason': 'the script says no'}))\n";

#[test]
fn approve_grades_the_cases_command_check_again() {
    let dir = folder();
    let prompt = dir.path().join("definitions.toml");
    let text = std::fs::read_to_string(&prompt).unwrap();
    let checked =
        "\n[[cases.checks]]\nkind = \"command\"\nname = \"beta check\"\ncommand = [\"python3\", \"check.py\"]\n";
    std::fs::write(&prompt, format!("{text}{checked}")).unwrap();
    std::fs::write(dir.path().join("check.py"), CHECK).unwrap();
    let mut state = evaluated(dir.path());
    let graded = || std::fs::read_to_string(dir.path().join("graded.log")).unwrap_or_default();
    assert_eq!(graded().lines().count(), 1, "the eval graded beta once");
    assert_eq!(verdict(&state, 1), Some(Verdict::Fail));

    // Approve beta's answer: its items now match, and its command check is graded again.
    state.eval.selected = 1;
    update(&mut state, key('a'));
    let effects = update(&mut state, key('y'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    drive(&mut state, effects);
    assert_eq!(graded().lines().count(), 2, "the re-score ran the check's program again");
    let score = state.eval.scored(1).map(|s| s.score.clone()).unwrap();
    assert_eq!(score.verdict, Verdict::Fail, "the check still fails: {}", score.reason);
    assert!(score.reason.contains("beta check"), "the failed check is named: {}", score.reason);
}

/// A scored cell as the core records it: a fuzzy pair, a field scored in part, a judge that passed
/// with its reason, a command check that failed with its message (and control characters to escape).
fn graded_cell() -> tunebench::eval::CellRecord {
    let score = serde_json::json!({
        "verdict": "fail",
        "items": null,
        "differences": [
            {"kind": "fuzzy", "key": "Espresso machine", "got_key": "One Espresso machine", "similarity": 0.83},
            {"kind": "field", "key": "Espresso machine", "field": "/definition", "expected": "Makes coffee.",
             "got": "Brews strong coffee.", "score": 0.82, "note": "similarity 0.82 < 0.90"},
            {"kind": "field", "key": "Grinder", "field": "/price", "expected": 40, "got": 44, "score": 0.5}
        ],
        "checks": [
            {"check": "judge definition", "at": "definitions.toml:31", "passed": true,
             "graded": {"pass": true, "score": 0.9, "reason": "the definition\u{1b}[31m says what it is"}},
            {"check": "command check.py", "at": "definitions.toml:40", "passed": false,
             "message": "score 0.50: the script says no"}
        ],
        "reason": "F1 0.50 < pass_f1 1.0; 1 check failed"
    });
    let score = serde_json::from_value(score).unwrap();
    tunebench::eval::CellRecord {
        row: 1,
        column: 0,
        repeat: 1,
        case: Some("beta".into()),
        score,
        run: Default::default(),
    }
}

#[test]
fn the_drill_down_shows_fuzzy_pairs_partial_scores_and_graders_reasons() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    let record = state.eval.record.as_deref_mut().unwrap();
    let beta = record.cells.iter_mut().find(|c| c.row == 1).unwrap();
    *beta = graded_cell();
    state.eval.selected = 1;
    update(&mut state, super::support::special(ratatui_textarea::Key::Enter));
    assert_eq!(state.eval.overlay, tunebench::tui::eval::state::EvalOverlay::Case);
    // Wide enough that no line wraps: each says all of it on one line.
    let wide = super::eval::draw(&state, 240, 40);
    for says in [
        "Espresso machine ~ One Espresso machine: paired by key similarity 0.83",
        "(similarity 0.82 < 0.90)",
        "Grinder /price: expected 40, got 44 (scored 0.50)",
        "✓ judge definition (definitions.toml:31): score 0.90: the definition",
        "✗ command check.py (definitions.toml:40): score 0.50: the script says no",
    ] {
        assert!(wide.contains(says), "{says:?} in:\n{wide}");
    }
    assert!(!wide.contains('\u{1b}'), "model text is escaped");
    insta::assert_snapshot!("eval_case_graded_120x40", super::eval::draw(&state, 120, 40));
}

#[test]
fn the_record_alone_holds_the_scores_and_an_approve_sums_it_up_again() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    assert!(state.eval.cells.iter().all(|c| c.scored.is_none()), "the record holds the scores, once");
    let pass_rate = |state: &tunebench::tui::state::State| state.eval.record.as_ref().unwrap().totals[0].pass_rate;
    assert_eq!(pass_rate(&state), 0.5, "alpha passes, beta fails");
    state.eval.selected = 1;
    update(&mut state, key('a'));
    let effects = update(&mut state, key('y'));
    drive(&mut state, effects);
    assert_eq!(verdict(&state, 1), Some(Verdict::Pass));
    let record = state.eval.record.as_deref().unwrap();
    assert_eq!(record.cells.iter().find(|c| c.row == 1).map(|c| c.score.verdict), Some(Verdict::Pass));
    assert_eq!(pass_rate(&state), 1.0, "the record's totals are summed up again");
    assert!(state.eval.cells.iter().all(|c| c.scored.is_none()), "no second copy of the score");
    assert_eq!(state.eval.as_ran.len(), 1, "beta's score as it ran is kept for a re-run's baseline");
}
