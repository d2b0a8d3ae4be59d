//! Compare tests: the figures of two hand-worked transcripts, twin derivation on every sample pair,
//! paired runs against the in-process wire server (at once, and one at a time), and `tunebench
//! compare` driven as a binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod cli;
mod figures;
mod paired;
mod support;
mod twins;
