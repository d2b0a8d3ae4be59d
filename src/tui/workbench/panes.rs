//! The editing screen's own panes, one file each, rendering from `&State` and `&Theme`.

pub mod editors;
pub mod history;
pub mod preview;
pub mod value_editor;
pub mod variables;
