//! Evals in the history: each finished eval is kept in the data directory's eval store and listed in
//! the history pane above the runs; the next eval has it as its baseline (a column of the matrix);
//! enter opens an eval read-only (its cells' answers found in the run history), `d` shows the core's
//! eval diff, `m` marks the eval to compare with; `t` in a case shows its answer's truncation view.
//! Snapshots of the baseline column, the diff and the truncation view at 80×24 and 120×40.

use std::sync::mpsc;
use std::time::Duration;

use ratatui_textarea::Key;
use tunebench::eval::diff::Change;
use tunebench::eval::score::Verdict;
use tunebench::run::RunRecord;
use tunebench::tui::eval::state::{EvalOverlay, EvalPhase};
use tunebench::tui::msg::{Effect, EvalNews, Msg, Start};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Screen, State};
use tunebench::tui::update::update;
use tunebench::tui::workbench::state::Pane;

use super::eval::{draw, drive_on, folder, verdict};
use super::support::*;

/// Executes `effect` on `runner` and feeds its messages back until one satisfies `until`.
fn pump(
    state: &mut State,
    runner: &mut Runner,
    rx: &mpsc::Receiver<Msg>,
    effect: Effect,
    until: impl Fn(&Msg) -> bool,
) {
    let mut done = false;
    for msg in runner.execute(effect) {
        done |= until(&msg);
        update(state, msg);
    }
    while !done {
        let msg = rx.recv_timeout(Duration::from_secs(60)).expect("the runner reports within a minute");
        done = until(&msg);
        update(state, msg);
    }
}

fn runs_of(state: &State) -> Vec<RunRecord> {
    state.eval.cells.iter().filter_map(|c| c.run.as_deref().cloned()).collect()
}

#[test]
fn evals_are_kept_listed_opened_diffed_and_a_case_answer_truncated() {
    without_local_model();
    let dir = folder();
    let data = tempfile::tempdir().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, Some(data.path().to_path_buf())).unwrap();
    runner.record_history = false;
    let mut state = state_for(&dir.path().join("definitions.toml")).unwrap();

    // First eval: recorded in the store; no baseline yet.
    let effects = update(&mut state, alt('e'));
    drive_on(&mut state, effects, &mut runner, &rx);
    assert_eq!(state.eval.phase, EvalPhase::Done, "{:?}", state.note);
    assert!(state.note.as_deref().unwrap_or_default().contains("recorded in"), "{:?}", state.note);
    assert!(state.eval.baseline_record.is_none());
    let mut runs = runs_of(&state);
    // Approve beta, then a second eval: its baseline is the first, shown as a column.
    update(&mut state, special(Key::Down));
    update(&mut state, key('a'));
    let effects = update(&mut state, key('y'));
    drive_on(&mut state, effects, &mut runner, &rx);
    let effects = update(&mut state, ctrl('r'));
    drive_on(&mut state, effects, &mut runner, &rx);
    runs.extend(runs_of(&state));
    let first = state.eval.baseline_record.as_ref().map(|b| b.id.clone()).expect("the first eval is the baseline");
    let matrix = draw(&state, 120, 40);
    let shown_id: String = first.chars().take(15).collect();
    assert!(matrix.contains("baseline") && matrix.contains(&format!("vs baseline {shown_id}: 1 improved")), "{matrix}");
    let second = state.eval.record.as_ref().unwrap().id.clone();
    stable(&mut state, dir.path());
    insta::assert_snapshot!("eval_baseline_120x40", draw(&state, 120, 40));
    insta::assert_snapshot!("eval_baseline_80x24", draw(&state, 80, 24));

    // The history lists both evals above the runs (as the runner sends them after an eval).
    let list = Effect::ListEvals { path: state.path.clone() };
    pump(&mut state, &mut runner, &rx, list, |m| matches!(m, Msg::EvalsListed(_)));
    runs.sort_by_key(|r| std::cmp::Reverse(r.started_at_ms));
    update(&mut state, Msg::HistoryLoaded(Ok(runs)));
    assert_eq!(state.workbench.evals.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), [second.clone(), first.clone()]);
    update(&mut state, special(Key::Esc));
    assert!(state.screen != Screen::Eval);
    update(&mut state, alt('8'));
    assert_eq!(state.workbench.focus, Pane::History);
    let history = draw(&state, 120, 40);
    assert!(history.contains("◆ eval 2/2 pass") && history.contains("◆ eval 1/2 pass"), "{history}");

    // Enter on the newest: opened read-only, compared with the one before it.
    let effects = update(&mut state, special(Key::Enter));
    let [Effect::OpenEval { id, against: Some(_), .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let id = *id;
    pump(&mut state, &mut runner, &rx, effects[0].clone(), move |m| matches!(m, Msg::Eval { id: i, .. } if *i == id));
    assert!(state.screen == Screen::Eval && state.eval.opened.as_deref() == Some(second.as_str()), "{:?}", state.note);
    assert_eq!(verdict(&state, 1), Some(Verdict::Pass));
    assert_eq!(state.eval.baseline.as_ref().map(|d| d.improved), Some(1));
    assert!(update(&mut state, key('a')).is_empty());
    assert!(state.note.as_deref().unwrap_or_default().contains("read-only"), "{:?}", state.note);
    update(&mut state, key('r'));
    assert!(state.note.as_deref().unwrap_or_default().contains("read-only"), "{:?}", state.note);

    // d: the eval diff, cell by cell, with the prompt's edit (the approved expectation).
    update(&mut state, key('d'));
    let EvalOverlay::Diff(compared) = &state.eval.overlay else { panic!("{:?}", state.eval.overlay) };
    assert_eq!((compared.improved, compared.regressed), (1, 0));
    let shown = draw(&state, 120, 40);
    assert!(shown.contains("improved  beta fail") && shown.contains("→ pass"), "{shown}");
    assert!(shown.contains("prompt definitions edited"), "{shown}");
    stable(&mut state, dir.path());
    insta::assert_snapshot!("eval_diff_120x40", draw(&state, 120, 40));
    insta::assert_snapshot!("eval_diff_80x24", draw(&state, 80, 24));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.eval.overlay, EvalOverlay::None);

    // The opened eval's case has its answer (from the run history); t shows its truncation view.
    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.eval.overlay, EvalOverlay::Case);
    assert!(draw(&state, 120, 40).contains("The second letter."));
    let effects = update(&mut state, key('t'));
    assert_eq!(state.eval.overlay, EvalOverlay::Truncation);
    let [Effect::SweepCell { id, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let id = *id;
    pump(
        &mut state,
        &mut runner,
        &rx,
        effects[0].clone(),
        move |m| matches!(m, Msg::Eval { id: i, news: EvalNews::Swept { .. } } if *i == id),
    );
    let sweep = state.eval.sweep.clone().unwrap();
    assert!(sweep.chart.sweep.is_some() && sweep.chart.error.is_none(), "{:?}", sweep.chart.error);
    let shown = draw(&state, 120, 40);
    assert!(shown.contains("truncation of the answer") && shown.contains("json-repair"), "{shown}");
    insta::assert_snapshot!("eval_truncation_120x40", shown);
    insta::assert_snapshot!("eval_truncation_80x24", draw(&state, 80, 24));
    update(&mut state, special(Key::Home));
    assert_eq!(state.eval.sweep.as_ref().map(|s| s.chart.cut), Some(0));
    update(&mut state, special(Key::Right));
    assert_eq!(state.eval.sweep.as_ref().map(|s| s.chart.cut), Some(1));
    assert!(update(&mut state, key('t')).is_empty(), "t again goes back");
    assert_eq!(state.eval.overlay, EvalOverlay::Case);
    assert!(update(&mut state, key('t')).is_empty(), "the same answer is not swept twice");
    update(&mut state, special(Key::Esc));
    update(&mut state, special(Key::Esc));

    // m marks the newest eval; enter on the older one compares it with the marked one: regressed.
    update(&mut state, special(Key::Esc));
    assert!(state.screen != Screen::Eval);
    update(&mut state, special(Key::Home));
    update(&mut state, key('m'));
    assert_eq!(state.workbench.eval_marked.as_deref(), Some(second.as_str()));
    assert!(draw(&state, 120, 40).contains("● eval"));
    update(&mut state, special(Key::Down));
    let effects = update(&mut state, special(Key::Enter));
    let [Effect::OpenEval { id, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let id = *id;
    pump(&mut state, &mut runner, &rx, effects[0].clone(), move |m| matches!(m, Msg::Eval { id: i, .. } if *i == id));
    assert_eq!(state.eval.opened.as_deref(), Some(first.as_str()));
    assert_eq!(state.eval.baseline.as_ref().map(|d| d.regressed), Some(1), "against the marked (newer) eval");

    // ctrl-r runs the opened eval again: live, against it, no longer read-only.
    let effects = update(&mut state, ctrl('r'));
    let [Effect::Start(Start::Eval(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(request.baseline.as_ref().map(|p| p.id.clone()), Some(first.clone()));
    assert!(state.eval.opened.is_none() && state.eval.running());
    drive_on(&mut state, effects, &mut runner, &rx);
    assert_eq!(state.eval.row_change(1), Some(Change::Improved), "beta passes now, it failed in the opened eval");
}

/// Eval ids (times) and the temporary folder vary from run to run: the shown ones are named by role.
fn stable(state: &mut State, dir: &std::path::Path) {
    let folders = [dir.to_path_buf(), std::fs::canonicalize(dir).unwrap()];
    // The status note names the evals and where they were recorded.
    state.note = Some("(note)".into());
    if let Some(delta) = state.eval.baseline.as_mut() {
        delta.baseline = "<baseline>".into();
    }
    if let EvalOverlay::Diff(compared) = &mut state.eval.overlay {
        compared.a = "<A>".into();
        compared.b = "<B>".into();
        for edit in &mut compared.prompts {
            for folder in &folders {
                edit.diff = edit.diff.replace(&folder.display().to_string(), "<dir>");
            }
        }
    }
}

#[test]
fn what_cannot_be_shown_says_why() {
    without_local_model();
    let dir = folder();
    let mut state = state_for(&dir.path().join("definitions.toml")).unwrap();
    // m outside the history, or on a run: nothing marked.
    update(&mut state, key('m'));
    assert!(state.workbench.eval_marked.is_none());
    // An eval record that does not read: the note names the error, the screen stays closed.
    state.eval.id = 3;
    update(&mut state, Msg::Eval { id: 3, news: EvalNews::Opened(Err("x.json: not an eval record".into())) });
    assert!(state.screen != Screen::Eval);
    assert!(state.note.as_deref().unwrap_or_default().contains("not an eval record"), "{:?}", state.note);
    // A listing that failed is said; the history keeps its runs.
    update(&mut state, Msg::EvalsListed(Err("evals: permission denied".into())));
    assert!(state.note.as_deref().unwrap_or_default().contains("permission denied"));
    // On the eval screen before any eval ended: no diff, no truncation, no review.
    update(&mut state, alt('e'));
    assert!(state.eval.running());
    assert!(update(&mut state, key('d')).is_empty());
    assert!(state.note.as_deref().unwrap_or_default().contains("needs a finished eval"), "{:?}", state.note);
    assert!(update(&mut state, key('t')).is_empty());
    assert!(state.note.as_deref().unwrap_or_default().contains("open a case first"), "{:?}", state.note);
    assert!(update(&mut state, key('r')).is_empty());
    assert!(state.note.as_deref().unwrap_or_default().contains("wait until"), "{:?}", state.note);
    // Sweep news of another row or an older eval is dropped.
    update(&mut state, Msg::Eval { id: 99, news: EvalNews::Swept { row: 0, sweep: Err("old".into()) } });
    assert!(state.eval.sweep.is_none());
}
