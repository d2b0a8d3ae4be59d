//! Latest wins for background recomputation (gitui's `AsyncSingleJob`): one worker thread per kind
//! of job runs one job at a time, and the jobs asked for while it works wait in its queue, where the
//! newest replaces the older ones (an older lint or count is of no use once the text moved on).

use std::sync::mpsc::{channel, Sender};

/// A worker that runs the newest job it was given.
pub struct Latest<T: Send + 'static> {
    jobs: Sender<T>,
    worker: std::thread::JoinHandle<()>,
}

impl<T: Send + 'static> Latest<T> {
    /// A worker named `name` that runs `work` on each job it takes.
    pub fn new(name: &str, work: impl Fn(T) + Send + 'static) -> std::io::Result<Self> {
        let (jobs, queue) = channel::<T>();
        let worker = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            while let Ok(mut job) = queue.recv() {
                // Jobs that came while the last one ran: only the newest is worth doing.
                while let Ok(newer) = queue.try_recv() {
                    job = newer;
                }
                work(job);
            }
        })?;
        Ok(Self { jobs, worker })
    }

    /// Hands `job` to the worker (it replaces any job still waiting).
    pub fn ask(&self, job: T) {
        let _ = self.jobs.send(job);
    }

    /// Runs the job still waiting, if any, and ends the worker: what must be done before the
    /// workbench exits (its last recovery write or clear).
    pub fn finish(self) {
        drop(self.jobs);
        let _ = self.worker.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::sync::{Arc, Barrier};

    #[test]
    fn jobs_asked_while_one_runs_give_way_to_the_newest() {
        let started = Arc::new(Barrier::new(2));
        let (done, finished) = channel();
        let gate = Arc::clone(&started);
        let worker = Latest::new("test", move |job: u32| {
            if job == 0 {
                gate.wait(); // the first job runs until the others are queued
                gate.wait();
            }
            done.send(job).unwrap();
        })
        .unwrap();
        worker.ask(0);
        started.wait();
        for job in 1..=5 {
            worker.ask(job);
        }
        started.wait();
        assert_eq!(finished.recv().unwrap(), 0);
        assert_eq!(finished.recv().unwrap(), 5, "the waiting jobs 1..4 gave way to 5");
        drop(worker);
        assert!(finished.recv().is_err(), "nothing else ran, and the worker ended with its sender");
    }
}
