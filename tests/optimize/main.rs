//! Optimize tests: `tunebench optimize` driven as a binary against the in-process wire server, the
//! candidates' answers routed by the marker their edit carries and the proposer scripted request by
//! request: a known-good edit found, ranked first on held-out and applied (the file otherwise byte for
//! byte the same); a bad edit worse on held-out and not best; a malformed proposal rejected with its
//! reason; the budget kept; bad input named (exit 2). The core driven in process for the cancel.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod cancel;
mod loop_proof;
mod support;
