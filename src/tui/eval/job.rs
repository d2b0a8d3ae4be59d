//! The eval screen's effects: the saved prompt planned by `eval::plan`, run by `eval::pipeline` on
//! the job bridge (every cell scored by the core as it ends), recorded in the eval store as
//! `tunebench eval` records it, its deltas from `eval::diff`; one row scored again after approve; the
//! store's evals of the prompt listed, and one read back. Everything comes back as `Msg::Eval`
//! (the listing as `Msg::EvalsListed`).

use std::path::PathBuf;

use crate::eval::pipeline::HistoryKept;
use crate::eval::session::{self, Baseline, Ended, EvalJob, SessionEvent, Store};
use crate::eval::{diff, store, EvalEvent, EvalOptions, Expectations};
use crate::run::{CacheMode, SetupOptions};
use crate::tui::jobs::{Bridge, Job};
use crate::tui::msg::{EvalDone, EvalNews, EvalRequest, Msg, OpenedEval, RescoreRequest};

/// Starts the eval on the job bridge (the core's eval session); what goes wrong comes back as the
/// eval's end.
pub fn start(bridge: Bridge, request: EvalRequest) -> Result<(), String> {
    let store = match bridge.data_dir {
        Some(dir) => Store::In(dir.join(store::EVALS_DIR)),
        None => Store::Off,
    };
    // The baseline is `last`, as everywhere: the newest earlier eval of the prompt on this model;
    // an eval the user opened from the history when they run it again; without a store, the screen's
    // run before (none: the first run has no baseline).
    let baseline = match (&store, request.baseline) {
        (_, Some(chosen)) if request.chosen => Some(Baseline::Record(chosen)),
        (Store::Off, Some(before)) => Some(Baseline::Record(before)),
        (Store::Off, None) => None,
        _ => Some(Baseline::LastIfAny),
    };
    let job = EvalJob {
        options: EvalOptions {
            prompts: vec![request.path.clone()],
            repeat: 1,
            setup: SetupOptions {
                target: request.target.clone(),
                // A re-run asks the model only for the cases whose rendered request changed.
                cache: CacheMode::Use,
                ..SetupOptions::default()
            },
            ..EvalOptions::default()
        },
        baseline,
        history: bridge.record_history,
        // The workbench fetches the default model itself, in the background, when it starts.
        fetch_model: false,
        store,
        ..EvalJob::default()
    };
    bridge.log.line(&format!("eval {}", request.path.display()));
    let (tx, id) = (bridge.tx.clone(), request.id);
    // As for compare: the session's future runs on a blocking thread of the runtime.
    bridge.jobs.spawn_blocking(Job::Eval, move |handle, stopped| {
        handle.block_on(async move {
            let events = tx.clone();
            // The runs the pipeline keeps in the history (it keeps every run that started), as they end.
            let mut runs = Vec::new();
            let ran = session::run(
                &job,
                |event| match event {
                    SessionEvent::Planned { plan, baseline, .. } => {
                        let column = plan.columns.first().map(|c| c.column.model_label()).unwrap_or_default();
                        let baseline_column = baseline.and_then(|b| diff::counterpart(&b.columns, &plan.columns(), 0));
                        let planned = EvalNews::Planned {
                            rows: plan.rows.clone(),
                            column,
                            baseline: baseline.cloned().map(Box::new),
                            baseline_column,
                        };
                        let _ = events.send(Msg::Eval { id, news: planned });
                    }
                    SessionEvent::Notice(notice) => {
                        let _ = events.send(Msg::Note(notice.to_string()));
                    }
                    SessionEvent::Eval(event) => {
                        if let EvalEvent::CellScored { run, .. } = &event {
                            if job.history && !run.never_started() {
                                runs.push((**run).clone());
                            }
                        }
                        let _ = events.send(Msg::Eval { id, news: EvalNews::Event(Box::new(event)) });
                    }
                },
                stopped.wait(),
            )
            .await;
            runs.reverse();
            let done = match ran {
                Ok(Ended::Ran(finished)) => {
                    let finished = *finished;
                    // A history that could not be written lists none of them.
                    if let HistoryKept::NotWritten(_) = &finished.history {
                        runs.clear();
                        let _ = tx.send(Msg::Note(finished.history.to_string()));
                    }
                    Ok(Box::new(EvalDone {
                        baseline: finished.record.delta.clone(),
                        record: finished.record,
                        saved: finished.saved,
                        runs,
                    }))
                }
                Ok(Ended::NothingFailed { eval }) => Err(format!("no case failed or errored in eval {eval}")),
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(Msg::Eval { id, news: EvalNews::Done(done) });
        })
    });
    Ok(())
}

/// Scores `request`'s run again against its case's expectations in the prompt as approved, on the
/// job bridge: the core's scoring with the case's graded checks (`command`, `judge`) graded again (a
/// grader that cannot run makes the cell `error`, never a stale pass); back as `EvalNews::Rescored`.
pub fn rescore(bridge: Bridge, request: RescoreRequest) {
    let (tx, handle) = (bridge.tx.clone(), bridge.jobs.handle().clone());
    // The grading future is not `Send` (as the eval's pipeline): it runs on a thread of its own.
    std::thread::spawn(move || {
        let msg = handle.block_on(rescored(&request));
        let _ = tx.send(msg);
    });
}

async fn rescored(request: &RescoreRequest) -> Msg {
    let base_dir = crate::run::setup::base_dir(&request.path);
    let case = request.cell.case.as_deref();
    let expectations = match Expectations::for_case(&request.prompt, &base_dir, case) {
        Ok(expectations) => expectations,
        Err(e) => return Msg::Note(format!("not scored again: {e}")),
    };
    // The case's variables as the run rendered them (as the eval's pipeline hands its graders).
    let mut variables = request.prompt.variables_for(case).unwrap_or_default();
    variables.extend(request.run.variables.clone());
    let mut scored = request.cell.clone();
    scored.score = crate::eval::graded::rescore(&expectations, &request.run, &variables, CacheMode::Use).await;
    Msg::Eval { id: request.id, news: EvalNews::Rescored { row: request.row, scored } }
}

/// An approved answer written into its dataset row (the core's [`crate::eval::approve_in_dataset`]),
/// then the row scored again against the prompt read back (as [`rescore`]); else a note saying why nothing was written.
pub fn approve_in_dataset(bridge: Bridge, request: crate::tui::msg::DatasetApproval) -> Vec<Msg> {
    let case = request.approval.case.clone();
    match crate::eval::approve_in_dataset(&request.path, &request.approval, request.insist, request.was.as_deref()) {
        Ok(prompt) => {
            let file = prompt.dataset.as_ref().map(|d| d.path.display().to_string()).unwrap_or_default();
            let note = Msg::Note(format!("approved: case {case:?} now expects {} in {file}", request.approval.count()));
            let rescore_request = RescoreRequest {
                id: request.id,
                row: request.row,
                prompt,
                path: request.path,
                cell: request.cell,
                run: request.run,
            };
            rescore(bridge, rescore_request);
            vec![note]
        }
        Err(e) => vec![Msg::Note(format!("not approved: {e}"))],
    }
}

/// Lists the evals of the prompt file `path` (newest first) on a thread; no data directory: none.
pub fn list(bridge: Bridge, path: PathBuf) {
    let (tx, dir) = (bridge.tx.clone(), bridge.data_dir.map(|d| d.join(store::EVALS_DIR)));
    std::thread::spawn(move || {
        let Some(dir) = dir else {
            let _ = tx.send(Msg::EvalsListed(Ok(Vec::new())));
            return;
        };
        let absolute = std::fs::canonicalize(&path).unwrap_or(path);
        let set = crate::eval::record::prompt_set(std::iter::once(absolute.as_path()));
        let listed = store::list_in(&dir)
            .map(|(listed, _)| listed.into_iter().filter(|l| l.prompt_set == set).collect())
            .map_err(|e| e.to_string());
        let _ = tx.send(Msg::EvalsListed(listed));
    });
}

/// Reads the eval record `file` (and `against`) on a thread, back as `EvalNews::Opened`.
pub fn open(bridge: Bridge, id: u64, file: PathBuf, against: Option<PathBuf>) {
    let tx = bridge.tx.clone();
    std::thread::spawn(move || {
        let opened = store::load_file(&file).and_then(|record| {
            let against = against.as_deref().map(store::load_file).transpose()?;
            Ok(Box::new(OpenedEval { record, against }))
        });
        let _ = tx.send(Msg::Eval { id, news: EvalNews::Opened(opened.map_err(|e| e.to_string())) });
    });
}
