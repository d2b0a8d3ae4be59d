//! Eval tests: `tunebench eval` driven as a binary against the in-process wire server (the matrix,
//! the record read back, JUnit and CSV read back by real parsers, exit codes), baselines and `eval
//! diff`, `--watch` on a file change, imported batches scored as evals, hostile files (a prompt's
//! files outside its folder, pipes and devices, reports over inputs, edited cache entries), and the
//! reports `-o` writes (the HTML one rendered in a headless Chromium); embedding similarity (`similar`
//! checks and comparators on recorded embeddings) and judge and command field comparators.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod baseline;
mod batch;
mod batch_eval;
mod bench_optimize;
mod cache;
mod cli;
mod close_enough;
mod constraint_tax;
mod datasets;
mod embedder;
mod graders;
mod hostile;
mod item_judge;
mod judges;
mod oracle_server;
mod promptfoo;
mod promptfoo_oracle;
mod reports;
mod similar;
mod support;
mod watch;
