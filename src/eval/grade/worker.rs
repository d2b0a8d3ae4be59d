//! One long-lived `python3` and one `node` for the code checks of a process (promptfoo's `python` and
//! `javascript` assertions, the `transform`s), instead of a process started per check per cell: each
//! job is a JSON line on the worker's stdin, each answer a JSON line on its stdout (the user's own
//! prints go to its stderr, which is dropped). A worker runs one job at a time, in a clean
//! environment and a process group of its own (as `command` checks do); a job past its timeout, or a
//! worker that dies, ends the worker's group, and the next job starts a new one.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::command::{clean_environment, Group};

/// A worker: its program (`python3`, `node`), the script it runs, the folder it runs in.
pub struct Worker {
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    /// `node (javascript assertions)`: how messages name it.
    shown: String,
    live: Mutex<Option<Live>>,
}

/// A running worker.
struct Live {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    _group: Option<Group>,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What tells workers apart: the program, its arguments (the script) and the folder.
type WorkerKey = (PathBuf, String, PathBuf);

/// The workers of this process, by program, script and folder.
static WORKERS: OnceLock<Mutex<HashMap<WorkerKey, Arc<Worker>>>> = OnceLock::new();

/// The worker running `program` with `args` in `dir`, started at its first job.
pub fn shared(program: &Path, args: &[String], dir: &Path, shown: &str) -> Arc<Worker> {
    let key = (program.to_path_buf(), args.join("\u{0}"), dir.to_path_buf());
    let all = WORKERS.get_or_init(|| Mutex::new(HashMap::new()));
    let Ok(mut all) = all.lock() else {
        // A poisoned registry: a worker of its own for this caller.
        return Arc::new(Worker::new(program, args, dir, shown));
    };
    Arc::clone(all.entry(key).or_insert_with(|| Arc::new(Worker::new(program, args, dir, shown))))
}

impl Worker {
    fn new(program: &Path, args: &[String], dir: &Path, shown: &str) -> Worker {
        Worker {
            program: program.to_path_buf(),
            args: args.to_vec(),
            dir: dir.to_path_buf(),
            shown: shown.to_string(),
            live: Mutex::new(None),
        }
    }

    /// Sends `job` and waits up to `timeout` for its answer line (blocking: run it off the async
    /// threads). `Err` says why there is none; the worker is then ended and started again next time.
    pub fn ask(&self, job: &Value, timeout: Duration) -> Result<Value, String> {
        let mut live = self.live.lock().map_err(|_| format!("{} is unusable (a job panicked)", self.shown))?;
        if live.is_none() {
            *live = Some(self.start()?);
        }
        let Some(running) = live.as_mut() else { return Err(format!("{} did not start", self.shown)) };
        let mut line = serde_json::to_string(job).map_err(|e| e.to_string())?;
        line.push('\n');
        let sent = running.stdin.write_all(line.as_bytes()).and_then(|()| running.stdin.flush());
        let answer = match sent {
            Err(e) => Err(format!("{} stopped taking jobs: {e}", self.shown)),
            Ok(()) => match running.lines.recv_timeout(timeout) {
                Ok(answer) => Ok(answer),
                Err(RecvTimeoutError::Timeout) => Err(format!(
                    "{} took longer than its timeout of {} s and was stopped",
                    self.shown,
                    timeout.as_secs_f64()
                )),
                Err(RecvTimeoutError::Disconnected) => Err(format!("{} ended", self.shown)),
            },
        };
        let parsed = answer.and_then(|a| {
            serde_json::from_str::<Value>(&a)
                .map_err(|_| format!("{} answered {:?}, not JSON", self.shown, crate::eval::values::cut(&a, 120)))
        });
        if parsed.is_err() {
            // Whatever went wrong, the next job starts a fresh worker.
            *live = None;
        }
        parsed
    }

    fn start(&self) -> Result<Live, String> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        clean_environment(&mut command);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|e| format!("{} could not start: {e}", self.shown))?;
        let group = Some(Group::new(child.id()));
        let stdin = child.stdin.take().ok_or_else(|| format!("{} has no stdin", self.shown))?;
        let stdout = child.stdout.take().ok_or_else(|| format!("{} has no stdout", self.shown))?;
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("tunebench-worker".into())
            .spawn(move || {
                // Lines longer than the output cap end the worker (its answer is not read whole).
                let mut reader = BufReader::new(stdout);
                loop {
                    let mut line = String::new();
                    match std::io::Read::take(&mut reader, super::command::OUTPUT_CAP).read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if !line.ends_with('\n') => return,
                        Ok(_) => {
                            if sender.send(line).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(|e| format!("{}: {e}", self.shown))?;
        Ok(Live { child, stdin, lines, _group: group })
    }
}
