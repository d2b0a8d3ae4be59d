//! The inference engine: a small GGUF instruct model run in-process on the CPU, in its own words
//! (tokens, [`Ask`], [`Step`], [`Generated`], [`EngineError`]); it knows nothing of providers, runs or
//! screens, and `provider::local` adapts it to the provider's requests and events.
//!
//! - [`generate`]: loading and the generation loop (prompt caching, forced tokens, sampling, UTF-8 hold-back).
//! - [`arch`]: the model families, one file each (llama, qwen2, qwen3, gemma3): `general.architecture`
//!   picks one, which reads its keys and names its tensors through a schema (everything a file lacks
//!   named before any weight is read) into a plan: the shape and each layer's operations.
//! - [`model`]: our forward pass, running any family's plan from shared operations (projections with
//!   biases, RMS and head norms, adjacent or NeoX rotary pairs per base and factors, attention with an
//!   optional sliding window, SiLU or GELU-tanh gated feed-forward); weights at their own size (Q4_0,
//!   Q4_1, Q8_0 in [`quant`]'s blocks; Q4_K, Q5_K, Q6_K, Q5_0 in [`kquant`]'s forms; Q5_1 widened to
//!   8 bits; floats as f32 rows), multiplied by [`kernels`] (the K-quant kernels in `avx2_k`, `avx512_k`). [`reference`]: a
//!   llama on candle's quantized matmuls (the speed baseline); llama.cpp's logits, in the family
//!   fixtures, are every family's reference.
//! - [`gguf`]: a GGUF file's header read with every size checked against the file (every loader opens it there).
//! - [`runs_here`]: what a GGUF is (family, parameters, quantisation, size) and whether this build runs
//!   it, from its header alone.
//! - [`weights`]: the interleaved weights stored on disk, so a later start maps them and reads them in
//!   place ([`held`]: a matrix's blocks, the engine's own or a mapped file's);
//!   [`huge_pages`]: 2 MiB pages for the weights, off in a process that loads no model.
//! - [`thinking`]: a thinking model's thought before its answer (budget, closing text, shown text).
//! - [`tokenizer`], [`chat`], [`sampler`], [`constraint`]: the pieces the loop uses; [`closed`]: objects
//!   held to the keys their schema lists; [`decodable`]: whether the decoder accepts a schema, asked
//!   before any model is loaded; [`grammar`]: the JSONL line grammar (also what a vLLM server is sent,
//!   so it is built without the feature `local`).
//! - [`attention`] (its AVX2 and AVX-512 kernels in `attention_avx2`, `attention_avx512`), [`attention_split`], [`math`], [`threads`]: the forward pass's arithmetic and its pool.
//! - [`kernels`]: the CPU dispatch, one table per path, apart from the model code.

pub mod grammar;

#[cfg(feature = "local")]
pub mod arch;
#[cfg(feature = "local")]
pub mod attention;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod attention_avx2;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod attention_avx512;
#[cfg(feature = "local")]
pub mod attention_split;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod avx2;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod avx2_k;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod avx512;
#[cfg(all(feature = "local", target_arch = "x86_64"))]
pub mod avx512_k;
#[cfg(feature = "local")]
pub mod chat;
#[cfg(feature = "local")]
pub mod closed;
#[cfg(feature = "local")]
pub mod constraint;
#[cfg(feature = "local")]
pub mod decodable;
#[cfg(feature = "local")]
pub mod generate;
#[cfg(feature = "local")]
pub mod gguf;
#[cfg(feature = "local")]
pub mod held;
pub mod huge_pages;
#[cfg(feature = "local")]
pub mod kernels;
#[cfg(feature = "local")]
pub mod kquant;
#[cfg(feature = "local")]
pub mod kquant_portable;
#[cfg(feature = "local")]
pub mod math;
#[cfg(feature = "local")]
pub mod model;
#[cfg(feature = "local")]
pub mod quant;
#[cfg(feature = "local")]
pub mod reference;
#[cfg(feature = "local")]
pub mod runs_here;
#[cfg(feature = "local")]
pub mod sampler;
pub mod thinking;
#[cfg(feature = "local")]
pub mod threads;
#[cfg(feature = "local")]
pub mod tokenizer;
#[cfg(feature = "local")]
pub mod weights;

#[cfg(feature = "local")]
pub use generate::{Ask, Engine, Finish, Generated, LoadOptions, Produced, Step, DEFAULT_MAX_TOKENS};
#[cfg(feature = "local")]
pub use model::Backend;

/// What can go wrong in the engine; every message names the file or value at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The model file is missing, unreadable or not a model this build runs.
    #[error("{0}")]
    Model(String),
    /// The grammar engine refused the schema or failed mid-answer.
    #[error("constrained decoding: {0}")]
    Constraint(String),
    /// Prompt and answer do not fit in the model's context.
    #[error("the prompt and answer need {needed} positions, more than the {context} of the model's context")]
    Context { needed: usize, context: usize },
}
