//! The workbench's tests: `update` transitions, pane snapshots (TestBackend + insta), and the real
//! binary driven in a pseudo-terminal.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod alloc_count;
mod case_rows;
mod compare;
mod e2e;
mod eval;
mod eval_approve;
mod eval_baseline;
mod eval_data;
mod eval_history;
mod eval_review;
mod first_start;
mod model_picker;
mod optimize;
mod outside;
mod preview;
mod snapshots;
mod support;
mod update;
mod update_cases;
mod update_editing;
mod update_inputs;
mod update_runs;
