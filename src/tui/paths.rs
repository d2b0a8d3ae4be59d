//! Where the workbench keeps things: the data directory (history, recovery files, the log, the
//! sample prompt) and the config directory (keymap.toml, theme.toml), each with an env override.

use std::path::PathBuf;

use crate::run::history;

/// Overrides the config directory (tests point it at a temporary directory).
pub const CONFIG_DIR_VAR: &str = "TUNEBENCH_CONFIG_DIR";
/// Picks an embedded theme by name (dark, light, mono).
pub const THEME_VAR: &str = "TUNEBENCH_THEME";

/// The data directory (`TUNEBENCH_DATA_DIR`, else the platform's).
pub fn data_dir() -> Result<PathBuf, String> {
    history::data_dir().map_err(|e| e.to_string())
}

/// The config directory: `TUNEBENCH_CONFIG_DIR` if set, else the platform's (`~/.config/tunebench`).
pub fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_VAR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("", "", "tunebench").map(|dirs| dirs.config_dir().to_path_buf())
}
