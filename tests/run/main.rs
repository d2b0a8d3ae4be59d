//! Run-engine tests: sample prompts run end to end against in-process servers replaying the wire
//! fixtures (`tests/fixtures/wire/`), replays of recorded runs, retries with feedback, truncation,
//! failed streams, batches, the history, the response cache, and `tunebench run` driven as a binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod batch;
mod batch_api;
mod batch_files;
mod cache;
mod cli;
mod engine;
mod escapes;
mod fault_matrix;
mod faults;
mod guards;
mod job;
mod limits;
mod support;
mod undecodable;
