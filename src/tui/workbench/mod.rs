//! The editing screen (the workbench proper): the prompt's editors, variables and cases, the run as
//! it streams, the truncation view and the history. Its update, pure, one concern a file: [`keys`],
//! [`actions`], [`mouse`], [`navigate`], [`run`], [`sweep`], [`fetch`], [`outside`]; its own panes in
//! [`panes`] (the ones other screens share are in `tui::panes`).

pub mod actions;
pub mod fetch;
pub mod job;
pub mod keys;
pub mod mouse;
pub mod navigate;
pub mod outside;
pub mod panes;
pub mod provider;
pub mod run;
pub mod sweep;
pub mod view;
