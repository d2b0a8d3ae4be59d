//! Prompt files (TOML), template rendering, PtcRunner signatures and TrustGraph import/export.

pub mod expect;
pub mod file;
pub mod reading;
pub mod signature;
pub mod template;
pub mod trustgraph;
