//! The `tunebench` binary: parse the command line and hand over to the headless commands.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use tunebench::cli::{self, Cli};

/// mimalloc instead of the system allocator: parsing builds and frees millions of small values, and
/// glibc's malloc/free was a third of `tunebench bench`'s JSONL profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = &cli.command else {
        // The workbench (TUI) is its own issue; until it lands, show what the headless commands do.
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    match cli::run(command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tunebench: error: {error:#}");
            ExitCode::from(2)
        }
    }
}
