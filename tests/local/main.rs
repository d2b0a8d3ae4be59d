//! The embedded model, for real: SmolLM2-135M-Instruct found through the same lookup the app uses
//! (the cache directory; `.ci/run` fetches it first with `tunebench model fetch`). Tokenizer round
//! trips, constrained json and jsonl runs that validate, greedy fidelity against `truncate`, seeded
//! sampling, cancellation mid-generation, and our forward pass against candle's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking
#![cfg(feature = "local")]

mod fidelity;
mod generation;
mod prompt_tokens;
mod reference;
mod support;
mod tokenizer;
