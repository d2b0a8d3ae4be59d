//! Greedy decoding is deterministic: a run with `max_tokens = N` is exactly the first N tokens of the
//! full run, and `tunebench truncate --unit chunk --at N` on the full run's transcript is that run's
//! answer, whatever the thread count (the cuts go round one, two and three threads: a generated token's
//! attention is split across threads by key tile and dimension when there are two or more). The first
//! holds on every model (SmolLM2, the tiny qwen3, the real Gemma 3).

use assert_cmd::Command;
use serde_json::Value;
use tunebench::provider::record::Recorder;
use tunebench::provider::FinishReason;

use super::support::{generate_on, generate_on_with, jsonl_request, on_every_model, Model};
use tunebench::provider::local::Local;

on_every_model!(a_cut_at_n_tokens_is_a_real_run_with_max_tokens_n);

fn a_cut_at_n_tokens_is_a_real_run_with_max_tokens_n(model: Model, local: &Local) {
    // Ten cuts on the default model and the tiny one; three on the real Gemma (slower, in a debug build).
    let (length, count) = if model == Model::Gemma3 { (48, 3) } else { (160, 10) };
    let full_request = jsonl_request(length);
    let (full, events) = generate_on_with(local, 1, &full_request);
    let len = full.tokens.len();
    let (two, _) = generate_on_with(local, 2, &full_request);
    assert_eq!(two.tokens, full.tokens, "the same tokens on two threads");
    assert!(len >= 20, "the full run is long enough to cut: {len} tokens");
    let mut recorder = Recorder::new("local", &full_request);
    events.iter().for_each(|event| recorder.observe(event));
    let transcript = recorder.into_transcript();
    assert!(transcript.has_token_ids());
    assert_eq!(transcript.chunks.len(), full.tokens.len(), "one transcript line per generated token");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("full.jsonl");
    std::fs::write(&file, transcript.to_jsonl()).unwrap();
    // Cuts spread over the answer, from the first token to the one before the last.
    let mut cuts: Vec<usize> = (0..count).map(|i| 1 + i * (len - 2) / (count - 1)).collect();
    cuts.dedup();
    assert_eq!(cuts.len(), count, "{cuts:?}");
    for (i, n) in cuts.into_iter().enumerate() {
        let threads = 1 + i % 3;
        let (cut, _) = generate_on_with(local, threads, &jsonl_request(n as u32));
        assert_eq!(cut.tokens, full.tokens[..n], "max_tokens = {n} on {threads} threads");
        assert_eq!(cut.finish, Some(FinishReason::Length), "max_tokens = {n}");
        let output = Command::cargo_bin("tunebench")
            .unwrap()
            .args(["truncate", "--type", "text", "--unit", "chunk", "--json", "--at", &n.to_string()])
            .arg(&file)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["text"].as_str(), Some(cut.text.as_str()), "truncate --at {n}");
    }
}

/// The guards keep the guarantee: with the repetition penalty on (its window is the tokens chosen
/// so far, the same in both runs), a run with `max_tokens = N` is still the full run's first N tokens,
/// probabilities included.
#[test]
fn a_cut_at_n_tokens_is_a_real_run_with_the_repetition_penalty_on() {
    let penalised = |max_tokens: u32| {
        let mut request = jsonl_request(max_tokens);
        request.repeat_penalty = Some(1.1);
        request
    };
    let (full, full_events) = generate_on(2, &penalised(160));
    let (plain, _) = generate_on(1, &jsonl_request(160));
    let len = full.tokens.len();
    assert!(len >= 20, "the full run is long enough to cut: {len} tokens");
    let probs = |events: &[tunebench::provider::Event]| -> Vec<tunebench::provider::TokenProb> {
        events
            .iter()
            .filter_map(|e| if let tunebench::provider::Event::Probs(p) = e { Some(p.clone()) } else { None })
            .flatten()
            .collect()
    };
    let full_probs = probs(&full_events);
    assert_eq!(full_probs.len(), len, "one probability per token");
    for n in [1, len / 3, len / 2, len - 1] {
        let (cut, events) = generate_on(1 + n % 2, &penalised(n as u32));
        assert_eq!(cut.tokens, full.tokens[..n], "max_tokens = {n}");
        assert_eq!(probs(&events), full_probs[..n], "max_tokens = {n}");
    }
    // The penalty changed the answer (else this test shows nothing about it).
    assert_ne!(full.tokens, plain.tokens, "the penalty of 1.1 changes this answer");
}
