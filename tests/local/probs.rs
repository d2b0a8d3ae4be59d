//! What the model was unsure of: every generated token comes with its probability and the runner-up,
//! the grammar's forced tokens marked forced; under greedy decoding the token taken is the most
//! likely one, so its probability is at least its runner-up's. On every model (SmolLM2, the tiny qwen3,
//! the real Gemma 3).

use tunebench::provider::{Event, TokenProb};

use super::support::{generate_with, jsonl_request, on_every_model, Model};
use tunebench::provider::local::Local;

on_every_model!(each_token_has_its_probability_and_forced_tokens_are_marked);

fn each_token_has_its_probability_and_forced_tokens_are_marked(_: Model, local: &Local) {
    let (generated, events) = generate_with(local, &jsonl_request(120));
    // Each Token event is followed by the Probs of that token.
    let mut probs: Vec<TokenProb> = Vec::new();
    for pair in events.windows(2) {
        if let [Event::Token { id, .. }, next] = pair {
            let Event::Probs(p) = next else { panic!("token {id} without its probability: {next:?}") };
            assert_eq!(p.len(), 1);
            probs.extend(p.iter().cloned());
        }
    }
    assert_eq!(probs.len(), generated.tokens.len());
    let forced = probs.iter().filter(|p| p.forced).count();
    assert_eq!(forced, generated.forced_tokens, "the schema's fixed text is forced");
    assert!(forced > 0 && forced < probs.len(), "{forced} of {}", probs.len());
    for prob in &probs {
        if prob.forced {
            assert!(prob.p.is_none() && prob.alt.is_none(), "{prob:?}");
            continue;
        }
        let p = prob.p.expect("a chosen token has a probability");
        assert!(p > 0.0 && p <= 1.0, "{prob:?}");
        if let Some(alt) = &prob.alt {
            assert!(alt.p <= p, "greedy takes the most likely token: {prob:?}");
            assert!(p + alt.p <= 1.0 + 1e-5, "{prob:?}");
        }
    }
    // Not every chosen token was a sure thing (the colours have something to show).
    assert!(probs.iter().filter_map(|p| p.p).any(|p| p < 0.9), "{probs:?}");
}
