//! Provider tests against real HTTP servers on 127.0.0.1 replaying recorded wire traffic
//! (`tests/fixtures/wire/`) and scripted faults.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

mod anthropic;
mod faults;
mod logprobs;
mod ollama;
mod openai;
mod replay;
mod secrets;
mod support;
mod vllm;
