//! Truncation: transcripts, cut positions (char, token, chunk) and one-pass sweeps of what survives.

pub mod cut;
pub mod points;
pub mod strategy;
pub mod sweep;
pub mod tokens;
pub mod transcript;
