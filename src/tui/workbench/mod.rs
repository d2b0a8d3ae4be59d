//! The editing screen (the workbench proper): the prompt's editors, variables and cases, the run as
//! it streams, the truncation view and the history. Its state in [`state`], its news in [`update`];
//! the rest of its update, pure, one concern a file: [`keys`], [`actions`], [`mouse`], [`navigate`],
//! [`run`], [`sweep`], [`fetch`], [`outside`], [`history`], [`cases`], [`lint`], [`tokens`]; what ctrl-r
//! sends in [`request`], the run's job in [`job`]; its own panes in [`panes`] (the ones other screens
//! share are in `tui::panes`).

pub mod actions;
pub mod cases;
pub mod fetch;
pub mod history;
pub mod job;
pub mod keys;
pub mod lint;
pub mod mouse;
pub mod navigate;
pub mod outside;
pub mod panes;
pub mod provider;
pub mod request;
pub mod run;
pub mod state;
pub mod sweep;
pub mod tokens;
pub mod update;
pub mod view;
