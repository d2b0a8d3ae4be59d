//! The workbench's log: lines appended to `tunebench.log` in the data directory, never the screen.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The log file's name in the data directory.
pub const LOG_FILE: &str = "tunebench.log";

/// An append-only log file (silent when it cannot be opened: the screen is never the fallback).
#[derive(Debug, Default)]
pub struct Log {
    file: Option<File>,
    pub path: Option<PathBuf>,
}

impl Log {
    /// Opens (creating) the log in `data_dir`.
    pub fn open(data_dir: &Path) -> Log {
        let path = data_dir.join(LOG_FILE);
        let file = std::fs::create_dir_all(data_dir)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path))
            .ok();
        Log { file, path: Some(path) }
    }

    /// Appends one line, stamped with seconds since the Unix epoch.
    pub fn line(&mut self, text: &str) {
        if let Some(file) = &mut self.file {
            let secs = crate::run::record::now_ms() as f64 / 1000.0;
            let _ = writeln!(file, "{secs:.3} {}", text.replace('\n', " | "));
        }
    }
}
