//! Eval tests: `tunebench eval` driven as a binary against the in-process wire server (the matrix,
//! the record read back, JUnit and CSV read back by real parsers, exit codes), baselines and `eval
//! diff`, `--watch` on a file change, and imported batches scored as evals.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod baseline;
mod batch;
mod cache;
mod cli;
mod support;
mod watch;
