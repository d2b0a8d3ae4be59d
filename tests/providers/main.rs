//! Provider tests against real HTTP servers on 127.0.0.1 replaying recorded wire traffic
//! (`tests/fixtures/wire/`) and scripted faults.

mod anthropic;
mod faults;
mod ollama;
mod openai;
mod replay;
mod secrets;
mod support;
mod vllm;
