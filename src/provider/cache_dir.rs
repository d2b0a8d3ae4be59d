//! The cache directory every cache of tunebench shares (the local model, the response cache):
//! `TUNEBENCH_CACHE_DIR` if set and not empty, else the platform's (`~/.cache/tunebench` on Linux).
//! Everything in it can be deleted at any time without loss.

use std::path::PathBuf;

/// The variable that overrides the cache directory.
pub const CACHE_DIR_VAR: &str = "TUNEBENCH_CACHE_DIR";

/// The cache directory; `None` when the platform has none and the variable is not set.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_DIR_VAR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("", "", "tunebench").map(|dirs| dirs.cache_dir().to_path_buf())
}
