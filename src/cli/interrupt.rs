//! ctrl-c during a command's runs: the first `SIGINT` or `SIGTERM` stops every run as the workbench's
//! cancel does (partial answers kept, records marked cancelled and written to the history); a second
//! one ends the process at once. The command then exits 130, as a shell reports a ctrl-c.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::run::Stop;

static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// The exit code of a command whose runs a signal stopped.
pub const EXIT_SIGNALLED: u8 = 130;

/// Completes with the first `SIGINT` or `SIGTERM` (listening starts when first polled, on a tokio
/// runtime); never completes where signals cannot be listened to.
pub async fn interrupted() -> Stop {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut interrupt), Ok(mut terminate)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return std::future::pending().await;
        };
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        SIGNALLED.store(true, Ordering::SeqCst);
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
            std::process::exit(i32::from(EXIT_SIGNALLED));
        });
        Stop::Signal(name)
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            return std::future::pending().await;
        }
        SIGNALLED.store(true, Ordering::SeqCst);
        Stop::Signal("ctrl-c")
    }
}

/// `code`, or 130 when a signal stopped the runs.
pub fn exit_code(code: ExitCode) -> ExitCode {
    if SIGNALLED.load(Ordering::SeqCst) {
        ExitCode::from(EXIT_SIGNALLED)
    } else {
        code
    }
}
