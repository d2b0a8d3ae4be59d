//! The editing screen's run on the job bridge: the run job of the core (`run::job::RunJob`: the run,
//! its record kept in the history by the one rule) on the workbench's request, its events back as
//! `Msg::Run`, its score against the case's expectations as `Msg::RunScored`, and its record as
//! `Msg::RunRecorded` (the history pane shows it without reading the history file again).

use std::time::Instant;

use crate::eval::Expectations;
use crate::run::job::{History, RunJob};
use crate::run::LiveSweep;
use crate::tui::jobs::{Bridge, Job};
use crate::tui::msg::{Msg, RunRequest};

/// The history file the workbench keeps its runs in: its data directory's, else the platform's.
pub fn history(bridge: &Bridge) -> History {
    match (bridge.record_history, bridge.data_dir) {
        (false, _) => History::Off,
        (true, Some(dir)) => History::File(dir.join(crate::run::history::HISTORY_FILE)),
        (true, None) => History::DataDir,
    }
}

/// Starts the run of `request` (a run still going is stopped first, nothing of it kept); an error
/// says why it cannot start.
pub fn start(bridge: Bridge, request: RunRequest) -> anyhow::Result<()> {
    let setup = crate::tui::workbench::request::setup(&request, bridge.pace)?;
    let job = RunJob {
        cases: vec![request.case.clone()],
        batch: false,
        concurrency: Some(1),
        history: history(&bridge),
        transcripts: None,
        setup,
    };
    // The workbench reads the providers' variables its own way, and feeds its truncation chart from
    // the run's own sweep (the item check compiled once with the setup).
    let mut jobs = job.setup.jobs_with(&job.cases, false, &bridge.env)?;
    for each in &mut jobs {
        each.plan.live_sweep = Some(LiveSweep { item_check: job.setup.item_check.clone() });
    }
    if let Some(first) = jobs.first() {
        bridge.log.line(&format!(
            "run {} of {} with {} {}",
            request.run,
            request.path.display(),
            first.provider.name(),
            first.plan.request.model
        ));
    }
    let (tx, run) = (bridge.tx.clone(), request.run);
    // A case's run is scored against its expected answer and checks when it ends.
    let scoring = request.case.clone().map(|case| (request.prompt, request.path, case));
    // As for the eval: the run job's future is not `Send` (a closure lifetime in the engine's batch),
    // so it runs on a blocking thread of the runtime; a cancel stops it, and it keeps its record.
    bridge.jobs.spawn_blocking(Job::Run, move |handle, stopped| {
        handle.block_on(async move {
            let started = Instant::now();
            let events = tx.clone();
            let send = move |_: usize, event: crate::run::RunEvent| {
                let at_ms = started.elapsed().as_millis() as u64;
                let _ = events.send(Msg::Run { run, event: Box::new(event), at_ms });
            };
            let mut ran = job.run_jobs(&jobs, send, stopped.wait()).await;
            let Some(record) = ran.records.pop() else { return };
            if let Some((prompt, path, case)) = scoring.filter(|_| !record.cancelled) {
                if let Some(score) = score_run(&prompt, &path, &case, &record).await {
                    let _ = tx.send(Msg::RunScored { run, score });
                }
            }
            // A run stopped before its answer began is not kept, and there is nothing to say.
            let kept = match (ran.kept.pop().flatten(), ran.warnings.pop()) {
                (Some(path), _) => Some(Ok(path)),
                (None, Some(warning)) => Some(Err(warning)),
                (None, None) => None,
            };
            if let Some(kept) = kept {
                let _ = tx.send(Msg::RunRecorded { kept, record: Box::new(record) });
            }
        })
    });
    Ok(())
}

/// A workbench run of `case` scored against the case's expected answer and checks in `prompt` (the
/// prompt as it was run), its graded checks (`command`, `judge`, `similar`) graded as the eval grades
/// them; `None` when the case expects nothing.
async fn score_run(
    prompt: &crate::prompt::file::PromptFile,
    path: &std::path::Path,
    case: &str,
    record: &crate::run::RunRecord,
) -> Option<Result<Box<crate::eval::score::CaseScore>, String>> {
    let base_dir = crate::run::setup::base_dir(path);
    match Expectations::for_case(prompt, &base_dir, Some(case)) {
        Ok(expectations) if expectations.is_empty() => None,
        Ok(expectations) => {
            // The case's variables as the run rendered them (as the eval's pipeline hands its graders).
            let mut variables = prompt.variables_for(Some(case)).unwrap_or_default();
            variables.extend(record.variables.clone());
            let cache = crate::run::CacheMode::Use;
            Some(Ok(Box::new(crate::eval::graded::rescore(&expectations, record, &variables, cache).await)))
        }
        Err(e) => Some(Err(format!("not scored: {e}"))),
    }
}
