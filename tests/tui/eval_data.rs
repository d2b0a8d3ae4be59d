//! The eval screen holds each datum once: an eval's runs come back in its message and are listed in the
//! history pane (no re-read of the history file), a case scored again re-sums the one record.

use tunebench::run::RunRecord;
use tunebench::tui::eval::state::EvalPhase;
use tunebench::tui::msg::{Effect, EvalDone, EvalNews, Msg};
use tunebench::tui::update::update;

use super::eval::{evaluated, folder};

#[test]
fn an_eval_lists_its_runs_in_the_history_pane_without_reading_the_history_file() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    let runs: Vec<RunRecord> = state.eval.cells.iter().filter_map(|c| c.run.as_deref().cloned()).collect();
    assert_eq!(runs.len(), 2, "both cases ran");
    let record = state.eval.record.as_deref().unwrap().clone();
    let listed = state.history.len();
    // ctrl-r on the eval screen runs it again; its end brings the runs the history kept.
    let effects = tunebench::tui::eval::update::rerun(&mut state);
    assert!(matches!(effects.as_slice(), [Effect::StartEval(r)] if r.id == 2), "{effects:?}");
    let done = EvalDone { record, baseline: None, saved: Err("the eval store is off".into()), runs: runs.clone() };
    let effects = update(&mut state, Msg::Eval { id: 2, news: EvalNews::Done(Ok(Box::new(done))) });
    assert_eq!(state.eval.phase, EvalPhase::Done);
    assert!(!effects.iter().any(|e| matches!(e, Effect::LoadHistory { .. })), "no history re-read: {effects:?}");
    assert!(effects.iter().any(|e| matches!(e, Effect::ListEvals { .. })), "the eval store is listed again");
    assert_eq!(state.history.len(), listed + 2, "the eval's two runs are listed");
    assert_eq!(state.history[..2], runs[..], "newest first, as they came");
}
