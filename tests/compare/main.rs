//! Compare tests: the figures of two hand-worked transcripts, twin derivation on every sample pair,
//! paired runs against the in-process wire server (at once, and one at a time), and `tunebench
//! compare` driven as a binary.

mod cli;
mod figures;
mod paired;
mod support;
mod twins;
