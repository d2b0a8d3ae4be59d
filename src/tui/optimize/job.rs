//! The optimize screen's effect: `optimize::run` on the job bridge over the prompt file with the
//! editors' system prompt and template laid over it (nothing is written to the prompt file), its
//! events back as `Msg::Optimize`, its cancel the bridge's; the record, stopped or not, stored in the
//! data directory's optimizations as `tunebench optimize` stores it.

use crate::optimize::{store, OptimizeOptions};
use crate::run::{CacheMode, SetupOptions};
use crate::tui::jobs::{Bridge, Job};
use crate::tui::msg::{Msg, OptimizeDone, OptimizeNews, OptimizeRequest};

/// The core's options for `request` (its evals looked for, for the split's strata, where the
/// workbench keeps them).
pub fn options(request: &OptimizeRequest, data_dir: Option<&std::path::Path>) -> OptimizeOptions {
    // A run asks the model only for what the response cache does not hold (as the eval screen).
    let setup = SetupOptions { target: request.target.clone(), cache: CacheMode::Use, ..SetupOptions::default() };
    let mut options = OptimizeOptions::new(request.path.clone(), setup);
    options.held_out = request.held_out;
    options.seed = request.seed;
    options.budget = request.budget;
    options.max_proposals = request.max_proposals;
    options.edited = Some(request.edited.clone());
    options.evals_dir = data_dir.map(|d| d.join(crate::eval::store::EVALS_DIR));
    options
}

/// Starts the optimization on the job bridge.
pub fn start(bridge: Bridge, request: OptimizeRequest) {
    let options = options(&request, bridge.data_dir);
    let save = match bridge.data_dir {
        Some(dir) => Ok(Some(dir.join(store::OPTIMIZATIONS_DIR))),
        None => Err("the data directory is off in this session".to_string()),
    };
    bridge.log.line(&format!(
        "optimize {} (split {}, seed {}, budget {}, {} proposals)",
        request.path.display(),
        request.held_out,
        request.seed,
        request.budget,
        request.max_proposals
    ));
    let (tx, id) = (bridge.tx.clone(), request.id);
    // The optimizer's future is not `Send` (the eval pipeline's): it blocks on a thread of the runtime.
    bridge.jobs.spawn_blocking(Job::Optimize, move |handle, stopped| {
        handle.block_on(async move {
            let events = tx.clone();
            let sink = move |event| {
                let _ = events.send(Msg::Optimize { id, news: OptimizeNews::Event(Box::new(event)) });
            };
            let ran = crate::optimize::run_and_keep(&options, save, sink, stopped.wait()).await;
            let done = ran
                .map_err(|e| e.to_string())
                .map(|kept| Box::new(OptimizeDone { record: kept.record, saved: kept.saved }));
            let _ = tx.send(Msg::Optimize { id, news: OptimizeNews::Done(done) });
        })
    });
}
