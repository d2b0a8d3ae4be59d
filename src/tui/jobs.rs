//! The job bridge: the workbench's background jobs (a run, an eval, a comparison) on one tokio
//! runtime, their news back as messages on the loop's channel, each stopped through one cancel map
//! keyed by the job's kind. A job is told to stop through [`Stopped`]; what it has by then it keeps.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::Sender;

use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::provider::replay::Pace;
use crate::run::Stop;
use crate::tui::log::Log;
pub use crate::tui::msg::Job;
use crate::tui::msg::Msg;
use crate::tui::workbench::request::Env;

/// Resolves when the job is cancelled (its cancel sent or dropped): the job then stops and keeps
/// what it has.
pub struct Stopped(oneshot::Receiver<()>);

impl Stopped {
    /// Waits for the cancel; the stop is the user's.
    pub async fn wait(self) -> Stop {
        let _ = self.0.await;
        Stop::User
    }
}

/// A job that runs: its cancel and its task.
struct Running {
    cancel: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// The runtime and the one cancel map.
pub struct Jobs {
    runtime: Runtime,
    running: HashMap<Job, Running>,
}

impl Jobs {
    /// A runtime of one worker thread (the jobs mostly wait on the network or a blocking thread).
    pub fn new() -> std::io::Result<Jobs> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        Ok(Jobs { runtime, running: HashMap::new() })
    }

    /// The runtime, for work that is not a job (a timer).
    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }

    /// Starts `work` as `job` on a blocking thread of the runtime (the core's jobs are futures that
    /// are not `Send`: `work` blocks on its own through the handle it is given); a job of that kind
    /// still going is told to stop first (and aborted when it has not begun).
    pub fn spawn_blocking<W>(&mut self, job: Job, work: W)
    where
        W: FnOnce(Handle, Stopped) + Send + 'static,
    {
        self.stop_before(job);
        let (cancel, stopped) = oneshot::channel();
        let handle = self.runtime.handle().clone();
        let task = self.runtime.spawn_blocking(move || work(handle, Stopped(stopped)));
        self.running.insert(job, Running { cancel, task });
    }

    /// Tells `job` to stop (it ends on its own, keeping what it has); whether one was going.
    pub fn cancel(&mut self, job: Job) -> bool {
        match self.running.remove(&job) {
            Some(running) => {
                let _ = running.cancel.send(());
                true
            }
            None => false,
        }
    }

    fn stop_before(&mut self, job: Job) {
        if let Some(old) = self.running.remove(&job) {
            old.task.abort();
            drop(old.cancel);
        }
    }
}

impl Drop for Jobs {
    /// Every job is told to stop: the runtime waits for its blocking threads when dropped.
    fn drop(&mut self) {
        self.running.clear();
    }
}

/// What a job's start reads of the runner, and the jobs it starts among: the runner lends it (the
/// screens' jobs never see the runner itself).
pub struct Bridge<'a> {
    pub jobs: &'a mut Jobs,
    /// The loop's channel: every job's news goes back on it.
    pub tx: &'a Sender<Msg>,
    pub log: &'a mut Log,
    pub data_dir: Option<&'a Path>,
    /// How a transcript file is replayed.
    pub pace: Pace,
    /// Reads the providers' variables.
    pub env: Env,
    /// Whether runs go to the history file.
    pub record_history: bool,
}
