//! Speed figures of the sweep against one full parse (no assertion, never run by default):
//! `cargo test --release --lib truncate::sweep::timing -- --ignored --nocapture`, and a loop to profile
//! one part under `perf` (`SWEEP_PROFILE=sweep|json|jsonl|feed|jsonl-feed|parse|union-parse SWEEP_KIND=array|jsonl|union SWEEP_ITEMS=n
//! SWEEP_REPS=n`).
//!
//! "One full parse" is what `tunebench bench` divides by: one lenient `JsonParser` parse and one
//! `JsonlParser` parse of the whole answer, each with its report.

use std::time::Instant;

use serde_json::json;

use super::epochs::Epochs;
use super::json::JsonTrack;
use super::jsonl::JsonlTrack;
use super::repair::RepairTrack;
use super::*;
use crate::bench_data::array_answer;
use crate::output::json::lenient::Lenient;
use crate::output::json::JsonParser;
use crate::output::jsonl::JsonlParser;
use crate::output::OutputParser;
use crate::truncate::tokens::o200k_token_ends;

/// Seconds of the median of `runs` timed calls of `run`, after one untimed call (also used by
/// compare's timing).
pub(crate) fn median_of<F: FnMut()>(runs: usize, mut run: F) -> f64 {
    run();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn token_cuts(answer: &str) -> Vec<(usize, usize)> {
    std::iter::once(0).chain(o200k_token_ends(answer)).enumerate().collect()
}

/// One lenient json parse and one jsonl parse of the whole answer, with their reports.
fn full_parse(answer: &str) {
    let mut parser = JsonParser::new(Profile::Lenient, None);
    parser.feed(answer);
    std::hint::black_box(parser.report());
    let mut parser = JsonlParser::new(Profile::Lenient, None);
    parser.feed(answer);
    std::hint::black_box(parser.report());
}

/// The `json` and `json-repair` strategies alone (one lenient parser, both read from it).
fn json_side(answer: &str, cuts: &[(usize, usize)]) -> usize {
    let points = Points::List(cuts);
    let mut repair = RepairTrack::new(None);
    let mut json = JsonTrack::new(Profile::Lenient, None);
    for &(_, offset) in cuts {
        repair.feed(answer.get(..offset).unwrap_or_default());
        json.record(repair.lenient(), offset);
        repair.record(answer, points, offset);
    }
    repair.feed(answer);
    repair.finish(answer, points);
    json.finish(repair.lenient(), answer.len());
    let mut epochs = Epochs::new(repair.lenient(), None);
    let reference = repair.full_items(&mut epochs);
    json.figures(&mut epochs, &reference).len()
        + repair.figures(answer, points, Profile::Lenient, &mut epochs, &reference).len()
}

/// The `jsonl` strategy alone.
fn jsonl_side(answer: &str, cuts: &[(usize, usize)]) -> usize {
    let mut jsonl = JsonlTrack::new(Profile::Lenient, None);
    let mut fed = 0;
    for &(_, offset) in cuts {
        jsonl.feed(answer.get(fed..offset).unwrap_or_default());
        fed = offset;
        jsonl.record();
    }
    jsonl.feed(answer.get(fed..).unwrap_or_default());
    jsonl.finish();
    let reference = jsonl.full_items();
    jsonl.figures(&reference).len()
}

/// The jsonl parser fed cut by cut and asked only for its pending version: the `jsonl` side's cost
/// apart from judging the tail.
fn jsonl_feed_only(answer: &str, cuts: &[(usize, usize)]) -> u64 {
    let mut parser = JsonlParser::new(Profile::Lenient, None);
    let mut fed = 0;
    let mut versions = 0;
    for &(_, offset) in cuts {
        parser.feed(answer.get(fed..offset).unwrap_or_default());
        fed = offset;
        versions += parser.pending_version();
    }
    versions
}

/// Feeding the lenient parser cut by cut (no state read).
fn feed_only(answer: &str, cuts: &[(usize, usize)]) {
    let mut lenient = Lenient::default();
    for &(_, offset) in cuts {
        lenient.feed(answer.get(..offset).unwrap_or_default());
    }
}

fn jsonl_answer(items: usize) -> String {
    (0..items)
        .map(|i| json!({"entity": format!("entity {i}"), "definition": format!("Definition number {i}, with \"quotes\" and a comma, then more words")}).to_string() + "\n")
        .collect()
}

#[test]
#[ignore]
fn sweep_against_one_parse() {
    let sizes: Vec<usize> = match std::env::var("SWEEP_ITEMS") {
        Ok(items) => items.split(',').filter_map(|n| n.parse().ok()).collect(),
        Err(_) => vec![100, 1000, 10_000],
    };
    for (kind, make) in [("json array", array_answer as fn(usize) -> String), ("jsonl", jsonl_answer)] {
        let mut last: Option<f64> = None;
        for &n in &sizes {
            let answer = make(n);
            let cuts = token_cuts(&answer);
            let runs = if answer.len() > 500_000 { 3 } else { 7 };
            let parse = median_of(runs, || full_parse(&answer));
            let all = median_of(runs, || {
                std::hint::black_box(sweep(&answer, &cuts, Profile::Lenient, None));
            });
            let json = median_of(runs, || {
                std::hint::black_box(json_side(&answer, &cuts));
            });
            let jsonl = median_of(runs, || {
                std::hint::black_box(jsonl_side(&answer, &cuts));
            });
            let fed = median_of(runs, || feed_only(&answer, &cuts));
            let jsonl_fed = median_of(runs, || {
                std::hint::black_box(jsonl_feed_only(&answer, &cuts));
            });
            println!(
                "{kind}, {n} items ({} bytes, {} tokens): one full parse {:.3} ms; sweep {:.3} ms = {:.2}x \
                 (json+json-repair {:.2}x, jsonl {:.2}x; feeding alone: lenient json {:.2}x, jsonl {:.2}x){}",
                answer.len(),
                cuts.len() - 1,
                parse * 1e3,
                all * 1e3,
                all / parse,
                json / parse,
                jsonl / parse,
                fed / parse,
                jsonl_fed / parse,
                last.map(|last| format!("; {:.1}x the previous size's sweep", all / last)).unwrap_or_default(),
            );
            last = Some(all);
        }
    }
}

/// A loop to profile one part of the sweep under `perf record`.
#[test]
#[ignore]
fn profile_loop() {
    let what = std::env::var("SWEEP_PROFILE").unwrap_or_default();
    let number = |name: &str, default: usize| std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    let make = match std::env::var("SWEEP_KIND").as_deref() {
        Ok("jsonl") => jsonl_answer,
        Ok("union") => crate::bench_data::union_jsonl,
        _ => array_answer,
    };
    let answer = make(number("SWEEP_ITEMS", 1000));
    let cuts = if what == "union-parse" { Vec::new() } else { token_cuts(&answer) };
    let reps = number("SWEEP_REPS", 50);
    let start = Instant::now();
    for _ in 0..reps {
        match what.as_str() {
            "feed" => feed_only(&answer, &cuts),
            "jsonl-feed" => {
                std::hint::black_box(jsonl_feed_only(&answer, &cuts));
            }
            "json" => {
                std::hint::black_box(json_side(&answer, &cuts));
            }
            "jsonl" => {
                std::hint::black_box(jsonl_side(&answer, &cuts));
            }
            "union-parse" => {
                let schema = crate::schema::CompiledSchema::compile(&crate::bench_data::union_schema());
                let check = schema.ok().map(|s| std::sync::Arc::new(s) as std::sync::Arc<dyn crate::schema::Check>);
                let mut parser = Box::new(JsonlParser::new(Profile::Lenient, check));
                parser.feed(&answer);
                std::hint::black_box(OutputParser::into_report(parser));
            }
            "sweep" => {
                std::hint::black_box(sweep(&answer, &cuts, Profile::Lenient, None));
            }
            _ => full_parse(&answer),
        }
    }
    println!("{what}: {:.3} ms per rep", start.elapsed().as_secs_f64() * 1e3 / reps as f64);
}
