//! ctrl-c and `SIGTERM` during a headless command, whatever it is doing. A watcher thread of its own
//! ([`watch_signals`], started before a command does anything) receives `SIGINT` and `SIGTERM`, so
//! a signal is seen even while the command is stuck in blocking work (a read or a write that never
//! returns).
//!
//! - While a command's runs listen ([`interrupted`]), the first signal stops them as the workbench's
//!   cancel does (partial answers kept, records marked cancelled and written to the history) and the
//!   command exits 130.
//! - The process ends at once with 128 + the signal's number (130 for `SIGINT`, 143 for `SIGTERM`)
//!   when no runs listen or a second signal comes; and so it does when the runs have not taken the
//!   first signal within [`TAKE_WITHIN`] (the command is stuck between two await points), or the
//!   command has not ended [`END_WITHIN`] after it (stuck on its way out: a report written to a pipe
//!   nobody reads). Standard output goes out a whole line at a time and records a whole record at a
//!   time, so nothing half written is left; nothing is flushed on the way out (a flush to a pipe
//!   nobody reads would hang the exit).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::run::Stop;

/// Set once a listener took a signal: the command exits 130 when it ends.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
/// Listeners polled and not yet dropped.
static LISTENING: AtomicUsize = AtomicUsize::new(0);

/// The exit code of a command whose runs a signal stopped.
pub const EXIT_SIGNALLED: u8 = 130;

/// How long the runs have to take a signal before the process ends anyway. A listener polled at
/// an await point takes it within a scheduling tick; only a command stuck in blocking code waits
/// this long.
pub const TAKE_WITHIN: Duration = Duration::from_secs(2);
/// How long after a signal the command may take to stop its runs and write what it keeps.
pub const END_WITHIN: Duration = Duration::from_secs(10);

#[cfg(unix)]
mod watcher {
    use std::sync::atomic::Ordering;
    use std::sync::OnceLock;

    use signal_hook::consts::{SIGINT, SIGTERM};
    use tokio::sync::watch;

    use super::{END_WITHIN, LISTENING, SIGNALLED, TAKE_WITHIN};

    /// The signal the watcher saw first, for the listeners.
    static NEWS: OnceLock<watch::Sender<Option<&'static str>>> = OnceLock::new();

    fn name(signal: i32) -> &'static str {
        if signal == SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        }
    }

    /// Ends the process now, as a shell reports a process ended by `signal`: the grading programs'
    /// groups first, then `_exit` (signal-hook's safe wrapper), which runs no handler that could wait
    /// on a lock the stuck thread holds.
    fn end_now(signal: i32) -> ! {
        crate::eval::grade::command::end_every_group();
        signal_hook::low_level::exit(128 + signal)
    }

    pub fn start() -> std::io::Result<()> {
        if NEWS.get().is_some() {
            return Ok(());
        }
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let (sender, _) = watch::channel(None);
        let _ = NEWS.set(sender);
        std::thread::Builder::new().name("tunebench-signals".into()).spawn(move || {
            let mut first = true;
            for signal in signals.forever() {
                if !first || LISTENING.load(Ordering::SeqCst) == 0 {
                    end_now(signal);
                }
                first = false;
                if let Some(news) = NEWS.get() {
                    news.send_replace(Some(name(signal)));
                }
                let _ = std::thread::Builder::new().name("tunebench-deadline".into()).spawn(move || {
                    std::thread::sleep(TAKE_WITHIN);
                    if !SIGNALLED.load(Ordering::SeqCst) {
                        end_now(signal);
                    }
                    std::thread::sleep(END_WITHIN.saturating_sub(TAKE_WITHIN));
                    end_now(signal);
                });
            }
        })?;
        Ok(())
    }

    /// The first signal, once the watcher sees it (`None`: no watcher).
    pub async fn first_signal() -> Option<&'static str> {
        let mut news = NEWS.get()?.subscribe();
        loop {
            if let Some(name) = *news.borrow_and_update() {
                return Some(name);
            }
            news.changed().await.ok()?;
        }
    }
}

/// Starts the watcher thread (once; later calls do nothing). Without it, [`interrupted`] never
/// completes and signals keep their default effect.
pub fn watch_signals() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        watcher::start()
    }
    #[cfg(not(unix))]
    {
        Ok(())
    }
}

/// Counts a listener from its first poll to its drop.
struct Listening;

impl Listening {
    fn new() -> Self {
        LISTENING.fetch_add(1, Ordering::SeqCst);
        Listening
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        LISTENING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Completes with the first `SIGINT` or `SIGTERM` (from its first poll, the runs listen: see the
/// module's doc); never completes when no watcher was started.
pub async fn interrupted() -> Stop {
    let _listening = Listening::new();
    #[cfg(unix)]
    let name = watcher::first_signal().await;
    #[cfg(not(unix))]
    let name = tokio::signal::ctrl_c().await.ok().map(|()| "ctrl-c");
    let Some(name) = name else {
        return std::future::pending().await;
    };
    SIGNALLED.store(true, Ordering::SeqCst);
    Stop::Signal(name)
}

/// `code`, or 130 when a signal stopped the runs.
pub fn exit_code(code: ExitCode) -> ExitCode {
    if SIGNALLED.load(Ordering::SeqCst) {
        ExitCode::from(EXIT_SIGNALLED)
    } else {
        code
    }
}
