//! Our forward pass against candle's on the same weights (the reference): the same prompt gives the
//! same next token and logits that agree, at every prompt length tried; and a batch gives the same
//! numbers as one token at a time, on one thread or several.

use std::fs::File;
use std::io::BufReader;

use candle_core::quantized::gguf_file::Content;
use tunebench::engine::model::{self, argmax, Backend, Transformer};
use tunebench::engine::tokenizer::TextTokenizer;

fn load(backend: Backend) -> (Box<dyn Transformer>, TextTokenizer) {
    load_on(backend, 1)
}

fn load_on(backend: Backend, threads: usize) -> (Box<dyn Transformer>, TextTokenizer) {
    let path = super::support::model_file();
    let mut reader = BufReader::new(File::open(&path).expect("the model opens"));
    let content = Content::read(&mut reader).expect("the model is a GGUF file");
    let tokenizer = TextTokenizer::from_gguf(&content).expect("the tokenizer loads");
    (model::load(&content, &mut reader, backend, 512, threads, None).expect("the model loads"), tokenizer)
}

/// Cosine similarity of two logit vectors.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn our_forward_pass_agrees_with_candles() {
    let (mut ours, tokenizer) = load(Backend::Native);
    let (mut reference, _) = load(Backend::CandleAsStored);
    let text = "The mitochondria is the powerhouse of the cell. Ribosomes translate messenger RNA into proteins, \
                and the nucleus holds the genome. In 1953, Watson and Crick described the double helix of DNA.";
    let tokens = tokenizer.encode_plain(text).expect("the text encodes");
    assert!(tokens.len() > 30, "{} tokens", tokens.len());
    // The prompt in uneven batches, the logits compared after each.
    let mut at = 0;
    for batch in [7, 1, 13, 1, 1, 9] {
        let chunk = &tokens[at..at + batch];
        at += batch;
        let (a, b) = (ours.forward(chunk).expect("ours runs"), reference.forward(chunk).expect("candle runs"));
        assert_eq!(a.len(), b.len());
        let similarity = cosine(&a, &b);
        eprintln!("after {at} tokens: cosine {similarity:.6}");
        assert!(similarity > 0.995, "after {at} tokens: cosine {similarity}");
        assert_eq!(argmax(&a), argmax(&b), "after {at} tokens: the next token differs");
    }
}

#[test]
fn a_batch_gives_the_same_logits_as_one_token_at_a_time() {
    let (mut batched, tokenizer) = load(Backend::Native);
    let (mut single, _) = load(Backend::Native);
    let tokens = tokenizer.encode_plain("One two three four five six seven eight nine ten.").expect("encodes");
    let last = batched.forward(&tokens).expect("runs");
    let mut one = Vec::new();
    for token in &tokens {
        one = single.forward(&[*token]).expect("runs");
    }
    assert_eq!(last, one, "the same bits whatever the batch");
    // A cache cut back and run again gives the same numbers too.
    batched.truncate_cache(3);
    let again = batched.forward(&tokens[3..]).expect("runs");
    assert_eq!(again, last);
}

#[test]
fn every_thread_count_gives_the_same_logits() {
    let (mut one, tokenizer) = load_on(Backend::Native, 1);
    let (mut two, _) = load_on(Backend::Native, 2);
    let (mut three, _) = load_on(Backend::Native, 3);
    let tokens = tokenizer
        .encode_plain("Ribosomes translate messenger RNA into proteins in every living cell.")
        .expect("encodes");
    let want = one.forward(&tokens).expect("runs");
    assert_eq!(two.forward(&tokens).expect("runs"), want, "two threads, the prompt in one batch");
    for (i, token) in tokens.iter().enumerate() {
        let got = three.forward(&[*token]).expect("runs");
        if i + 1 == tokens.len() {
            assert_eq!(got, want, "three threads, one token at a time");
        }
    }
    // Two threads, one token at a time: each token's attention split by key tile and dimension.
    let (mut lone, _) = load_on(Backend::Native, 2);
    let last = tokens.iter().map(|token| lone.forward(&[*token]).expect("runs")).last();
    assert_eq!(last.as_ref(), Some(&want), "two threads, one token at a time");
    // The next token on each, after a thread count change.
    two.set_threads(1).expect("one thread");
    assert_eq!(two.forward(&tokens[..1]).expect("runs"), one.forward(&tokens[..1]).expect("runs"));
}
