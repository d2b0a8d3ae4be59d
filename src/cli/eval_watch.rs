//! `tunebench eval --watch`: the eval run, then run again whenever a prompt file, its schema file or a
//! case's expected file changes on disk (their contents polled a few times a second: no watcher
//! crate, and an editor's atomic save is seen like any other), each run printed with its changes
//! against the run before and its reports (`-o`) written again. A prompt that no longer reads is
//! reported and waited on. ctrl-c ends it.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::eval::{self as cmd, EvalRunArgs};
use super::eval_human as human;
use crate::eval::session::{Baseline, Ended, SessionEvent};
use crate::files::{self, Limit};

/// How often the watched files are read.
const POLL: Duration = Duration::from_millis(200);

/// A watched file is read within the largest cap of a prompt's files (an expected file's): a pipe, a
/// device or a huge file is "cannot be read", and the eval that reads it says why.
const WATCHED: Limit = Limit { kind: "a watched file", bytes: files::EXPECTED_FILE.bytes };

/// What a file holds now (`None`: it cannot be read).
fn fingerprint(files: &[PathBuf]) -> Vec<Option<u64>> {
    files
        .iter()
        .map(|path| {
            files::read(path, WATCHED).ok().map(|bytes| {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut hasher);
                hasher.finish()
            })
        })
        .collect()
}

pub fn watch(args: &EvalRunArgs) -> anyhow::Result<ExitCode> {
    let mut job = cmd::job(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let mut files: Vec<PathBuf> = args.prompts.iter().chain(&args.cases_file).cloned().collect();
    let mut code = ExitCode::SUCCESS;
    for round in 1.. {
        let before = fingerprint(&files);
        let mut watched = None;
        let mut planned = |event: &SessionEvent<'_>| {
            if let SessionEvent::Planned { plan, .. } = event {
                watched = Some(plan.watched_files());
            }
        };
        // The first round's bad input (a baseline, a report that would replace an input) ends the
        // watch; later a prompt that no longer reads is reported and waited on.
        super::sayln!("== eval run {round}");
        let ran = cmd::run_job_seeing(args, &job, &runtime, super::interrupt::interrupted(), &mut planned);
        if let Some(watched) = watched {
            files = watched;
            files.extend(args.cases_file.clone());
        }
        match ran {
            Ok(Ended::Ran(finished)) => {
                cmd::said(&finished);
                let record = finished.record;
                cmd::write_reports(args, &record)?;
                super::say!("{}", human::report(&record));
                code = cmd::exit_code(&record, record.delta.as_ref(), args.fail_on_regression);
                if record.cancelled {
                    return Ok(super::interrupt::exit_code(code));
                }
                // The next round is compared with this one.
                job.baseline = Some(Baseline::Record(Box::new(record)));
            }
            Ok(Ended::NothingFailed { .. }) => {}
            Err(error) if round == 1 => return Err(error),
            Err(error) => {
                super::sayln!("== eval run {round}: not run");
                super::note!("tunebench: error: {error}");
            }
        }
        let watched = if before.len() == files.len() { before } else { fingerprint(&files) };
        super::note!("watching {} files for changes (ctrl-c to stop)", files.len());
        let changed = runtime.block_on(async {
            let wait = async {
                loop {
                    tokio::time::sleep(POLL).await;
                    if fingerprint(&files) != watched {
                        // Let an editor finish writing.
                        tokio::time::sleep(POLL / 2).await;
                        return;
                    }
                }
            };
            tokio::select! {
                () = wait => true,
                _ = super::interrupt::interrupted() => false,
            }
        });
        if !changed {
            return Ok(super::interrupt::exit_code(code));
        }
    }
    Ok(code)
}
