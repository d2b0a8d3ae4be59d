//! Speed figures of the sweep against one full parse (no assertion, never run by default):
//! `cargo test --release --lib truncate::sweep::timing -- --ignored --nocapture`.

use std::time::Instant;

use serde_json::{json, Value};

use super::repair::RepairTrack;
use super::*;
use crate::output::jsonl::JsonlParser;
use crate::truncate::tokens::o200k_token_ends;

fn item(i: usize) -> Value {
    json!({"type": "definition", "entity": format!("entity number {i}"),
           "definition": format!("A definition of entity {i}, written at some length so that the item is a realistic size for an extraction prompt's answer \u{e9}.")})
}

fn best_of<F: FnMut()>(mut run: F) -> f64 {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// The `json` and `json-repair` strategies alone (one lenient parser, both read from it).
fn json_side(answer: &str, cuts: &[(usize, usize)]) -> usize {
    let mut repair = RepairTrack::new(cuts.len());
    let mut json = JsonTrack { last: None, outcomes: Vec::new(), at_cut: Vec::new() };
    let mut fed = 0;
    let mut offsets = Vec::new();
    for &(_, offset) in cuts {
        repair.feed(answer.get(fed..offset).unwrap_or_default());
        fed = offset;
        offsets.push(offset);
        let outcome = json.read(repair.parser(), None);
        json.at_cut.push(outcome);
        repair.record();
    }
    let reference = repair.full_items(None);
    repair.figures(answer, &offsets, Profile::Lenient, None, &reference).len()
}

/// Pass 1 only: feeding the lenient parser cut by cut (no state read).
fn feed_only(answer: &str, cuts: &[(usize, usize)]) {
    let mut parser = JsonParser::new(Profile::Lenient, None);
    let mut fed = 0;
    for &(_, offset) in cuts {
        parser.feed(answer.get(fed..offset).unwrap_or_default());
        fed = offset;
    }
}

#[test]
#[ignore]
fn sweep_against_one_parse() {
    let quick = std::env::var_os("SWEEP_TIMING_QUICK").is_some();
    let sizes: &[(&str, usize)] = if quick { &[("100 KB", 500)] } else { &[("100 KB", 500), ("1 MB", 5000)] };
    for &(label, n) in sizes {
        let items: Vec<Value> = (0..n).map(item).collect();
        let array = serde_json::to_string_pretty(&Value::Array(items.clone())).unwrap_or_default();
        let lines: String = items.iter().map(|i| serde_json::to_string(i).unwrap_or_default() + "\n").collect();
        for (kind, answer) in [("json array", array), ("jsonl", lines)] {
            let tokens: Vec<(usize, usize)> = std::iter::once(0).chain(o200k_token_ends(&answer)).enumerate().collect();
            let chars: Vec<(usize, usize)> =
                std::iter::once(0).chain(answer.char_indices().map(|(at, c)| at + c.len_utf8())).enumerate().collect();
            let parse = best_of(|| {
                let mut parser = JsonParser::new(Profile::Lenient, None);
                parser.feed(&answer);
                parser.report();
            });
            let parse_jsonl = best_of(|| {
                let mut parser = JsonlParser::new(Profile::Lenient, None);
                parser.feed(&answer);
                parser.report();
            });
            let json_tokens = best_of(|| {
                json_side(&answer, &tokens);
            });
            let fed = best_of(|| feed_only(&answer, &tokens));
            println!("  feeding the lenient parser token by token: {:.2} ms", fed * 1e3);
            let json_chars = best_of(|| {
                json_side(&answer, &chars);
            });
            println!(
                "{label} {kind}: {} bytes, {} tokens; one parse: json {:.2} ms, jsonl {:.2} ms; \
                 json+json-repair sweep: every token {:.2} ms ({:.2}x), every char {:.2} ms ({:.2}x)",
                answer.len(),
                tokens.len() - 1,
                parse * 1e3,
                parse_jsonl * 1e3,
                json_tokens * 1e3,
                json_tokens / parse,
                json_chars * 1e3,
                json_chars / parse,
            );
            if n == 500 && !quick {
                let all = best_of(|| {
                    sweep(&answer, &tokens, Profile::Lenient, None);
                });
                println!(
                    "{label} {kind}: full sweep (with jsonl), every token: {:.2} ms ({:.1}x)",
                    all * 1e3,
                    all / parse
                );
            }
        }
    }
}
