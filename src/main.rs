//! The `tunebench` binary: parse the command line and hand over to the headless commands, or open
//! the workbench (no subcommand: `tunebench` or `tunebench PROMPT.toml`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

#[cfg(not(feature = "tui"))]
use clap::CommandFactory;
use clap::Parser;
use tunebench::cli::{self, Cli};

/// mimalloc instead of the system allocator: parsing builds and frees millions of small values, and
/// glibc's malloc/free was a third of `tunebench bench`'s JSONL profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Huge pages only once a model loads: a long eval without one peaked 11–14 MB higher with them (they
    // are off before `main` already; this says so where the process starts).
    tunebench::engine::huge_pages::off_until_a_model_loads();
    // A file-size limit (`ulimit -f`) makes a write fail with an error we handle (a save removes its
    // temporary file, a history append takes its half line back) instead of killing the process.
    // signal-hook's safe registration: a handler that only sets a flag, so the signal ends nothing.
    #[cfg(unix)]
    let _ = signal_hook::flag::register(libc::SIGXFSZ, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let cli = Cli::parse();
    let Some(command) = &cli.command else {
        return workbench(cli.prompt, cli.no_fetch);
    };
    match cli::run(command) {
        Ok(code) => code,
        // The reader of standard output went away (`tunebench … | head`): nothing is left to say.
        Err(error) if cli::is_closed_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            cli::write_err(format_args!("tunebench: error: {error:#}\n"));
            ExitCode::from(2)
        }
    }
}

#[cfg(feature = "tui")]
fn workbench(prompt: Option<std::path::PathBuf>, no_fetch: bool) -> ExitCode {
    match tunebench::tui::start(prompt, no_fetch) {
        Ok(code) => code,
        Err(error) => {
            cli::write_err(format_args!("tunebench: error: {error:#}\n"));
            ExitCode::from(2)
        }
    }
}

/// Built without the `tui` feature: show what the headless commands do.
#[cfg(not(feature = "tui"))]
fn workbench(_prompt: Option<std::path::PathBuf>, _no_fetch: bool) -> ExitCode {
    let _ = Cli::command().print_help();
    cli::write_err(format_args!("tunebench: this build has no workbench (built without the `tui` feature)\n"));
    ExitCode::from(2)
}
