//! Speed figures of a comparison against its baseline, the two sides' sweeps alone (no assertion,
//! never run by default): `cargo test --release --lib compare::timing -- --ignored --nocapture`
//! (`COMPARE_ITEMS=n` sets the items per answer, default 1000).
//!
//! A comparison is the two sweeps plus each side's item count, the agreement and the chart; this
//! prints what those add to the sweeps (≈ 1.0× when they cost nothing next to them).

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::bench_data::array_answer;
use crate::output::Profile;
use crate::provider::replay::{Pace, Replay};
use crate::run::{Job, RunPlan};
use crate::schema::CompiledSchema;
use crate::truncate::tokens::o200k_token_ends;
use crate::truncate::transcript::{Chunk, End, Header, Transcript};

use crate::truncate::sweep::timing::median_of;

/// `answer` as a transcript of one chunk per o200k token.
fn transcript(answer: &str) -> Transcript {
    let mut start = 0;
    let chunks = o200k_token_ends(answer)
        .into_iter()
        .enumerate()
        .map(|(i, end)| {
            let delta = answer.get(start..end).unwrap_or_default().to_string();
            start = end;
            Chunk { t_ms: i as u64, delta, token: None, probs: Vec::new() }
        })
        .collect();
    let end = End { t_ms: 0, finish_reason: Some("stop".into()), usage: None, error: None };
    Transcript { header: Header { transcript: 1, ..Header::default() }, chunks, end: Some(end) }
}

fn spec(label: &str, response_type: ResponseType, schema: serde_json::Value) -> SideSpec {
    let compiled = CompiledSchema::compile(&schema).expect("schema");
    let item: Arc<dyn Check> = match response_type {
        ResponseType::Json => Arc::new(compiled.item_schema().expect("array").expect("items")),
        _ => Arc::new(CompiledSchema::compile(&schema).expect("schema")),
    };
    let mut prompt = PromptFile::new(label, "x");
    prompt.response_type = response_type;
    prompt.schema = Some(schema);
    SideSpec {
        label: label.into(),
        prompt,
        path: PathBuf::from(format!("{label}.toml")),
        base_dir: PathBuf::from("."),
        reading: Reading { response_type, profile: Profile::Lenient, check: Some(Arc::new(compiled)) },
        item_check: Some(item),
    }
}

#[test]
#[ignore]
fn comparison_against_its_two_sweeps() {
    let items: usize = std::env::var("COMPARE_ITEMS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let line = json!({"type": "object", "required": ["entity", "definition"]});
    let specs = [
        spec("json", ResponseType::Json, json!({"type": "array", "items": line})),
        spec("jsonl", ResponseType::Jsonl, line),
    ];
    let array = array_answer(items);
    // The same items, one per line, the second half of the definitions changed.
    let lines: String = serde_json::from_str::<Vec<serde_json::Value>>(&array)
        .expect("array")
        .into_iter()
        .enumerate()
        .map(|(i, mut item)| {
            if i >= items / 2 {
                item["definition"] = json!(format!("another definition {i}"));
            }
            format!("{item}\n")
        })
        .collect();
    let settings = crate::run::setup::settings(&specs[0].prompt, &Default::default()).expect("settings");
    let job = |spec: &SideSpec, answer: &str| Job {
        provider: Arc::new(Replay::new(transcript(answer), Pace::Instant)),
        plan: RunPlan::new(&spec.prompt, &spec.base_dir, None, &Default::default(), &settings, spec.reading.clone())
            .expect("plan"),
    };
    let jobs = [[job(&specs[0], &array), job(&specs[1], &lines)]];
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let records = runtime.block_on(pair::run_pairs(&jobs, 2, |_, _| {})).pop().expect("records");
    let sweep_of = |at: usize, check: bool| {
        let answer = [&array, &lines][at];
        let cuts = Cuts::o200k(answer);
        let check = if check { specs[at].item_check.clone() } else { None };
        median_of(5, || {
            std::hint::black_box(sweep_points(answer, cuts.points(), Profile::Lenient, check.clone()));
        })
    };
    let (json_side, jsonl_side) = (sweep_of(0, true), sweep_of(1, true));
    let (json_unchecked, jsonl_unchecked) = (sweep_of(0, false), sweep_of(1, false));
    let sweeps = json_side + jsonl_side;
    println!(
        "sweeps with the item check: json side {:.2} ms, jsonl side {:.2} ms; without a check: {:.2} ms, {:.2} ms",
        json_side * 1e3,
        jsonl_side * 1e3,
        json_unchecked * 1e3,
        jsonl_unchecked * 1e3
    );
    let mut last = None;
    let compare = median_of(5, || {
        last = Some(Comparison::new(None, [&specs[0], &specs[1]], records.clone(), None));
    });
    let comparison = last.expect("a comparison");
    println!(
        "{items} items a side ({} + {} tokens): two sweeps alone {:.2} ms; comparison {:.2} ms = {:.2}x \
         (agreement: {} same, {} differ)",
        comparison.sides[0].tokens,
        comparison.sides[1].tokens,
        sweeps * 1e3,
        compare * 1e3,
        compare / sweeps,
        comparison.agreement.same,
        comparison.agreement.differ,
    );
}
