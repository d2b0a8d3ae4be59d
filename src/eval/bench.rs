//! (feature `testing`) `tunebench bench`'s eval figures, each against a baseline measured in the same
//! run: scoring N imported answers (baseline: reading the same answers with serde_json), and a fully
//! answered re-run of a C-case eval printed as its matrix (every answer served from memory by a
//! provider wrapper, as the response cache serves recorded ones; baseline: the run engine alone on
//! the same jobs, no scoring, no record).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::pipeline::{self, Pipeline};
use super::plan::{EvalOptions, EvalPlan};
use super::record::EvalRecord;
use super::score::{score_record, Expectations};
use crate::provider::{Event, EventStream, FinishReason, Provider, Request, Usage};
use crate::run::{engine, Job, SetupOptions};

/// The figures, in milliseconds (medians of `runs`).
#[derive(Clone, Debug, Serialize)]
pub struct EvalFigures {
    pub answers: usize,
    pub scoring_ms: f64,
    /// serde_json reading the same answers' text.
    pub scoring_baseline_ms: f64,
    pub scoring_ratio: f64,
    pub cases: usize,
    /// Plan (prompt file read, expectations), every cell run and scored, the matrix rendered.
    pub rerun_ms: f64,
    /// The run engine alone on the same jobs.
    pub rerun_baseline_ms: f64,
    pub rerun_ratio: f64,
}

/// Answers from memory, chosen by the case's marker in the request (what a warm cache does).
struct Answered {
    answers: Arc<Vec<(String, String)>>,
}

impl Provider for Answered {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: &Request) -> EventStream {
        let text = request.messages.last().map_or("", |m| m.content.as_str());
        let answer = self.answers.iter().find(|(marker, _)| text.contains(marker.as_str())).map(|(_, a)| a.clone());
        let usage = Usage { input_tokens: 40, output_tokens: 60, estimated: false, cached_input_tokens: 0 };
        let events =
            vec![Event::Delta(answer.unwrap_or_default()), Event::Usage(usage), Event::Finish(FinishReason::Stop)];
        Box::pin(futures_util::stream::iter(events))
    }
}

/// The answer of case `i`: five definitions, one of them wrong on even cases (so cells fail and
/// differences are listed, as in a real eval).
pub fn answer(i: usize) -> String {
    (0..5)
        .map(|k| {
            let definition = if k == 4 && i.is_multiple_of(2) { "Something else." } else { "A thing." };
            format!("{{\"entity\": \"entity {i} {k}\", \"definition\": \"{definition}\"}}\n")
        })
        .collect()
}

/// A jsonl prompt with `cases` cases, each expecting five items, with a `max_tokens` as real prompts
/// set (the client counts an answer against it; a cached answer is not counted again).
pub fn prompt_text(cases: usize) -> String {
    let mut text = String::from(
        "id = \"bench\"\nresponse_type = \"jsonl\"\ntemplate = \"Define: {{text}}\"\n\
         schema = '''{\"type\": \"object\", \"properties\": {\"entity\": {\"type\": \"string\"}, \"definition\": {\"type\": \"string\"}}, \"required\": [\"entity\", \"definition\"]}'''\n\
         [provider]\nname = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_tokens = 512\n[eval]\nmatch = \"entity\"\n",
    );
    for i in 0..cases {
        text.push_str(&format!(
            "[[cases]]\nname = \"case-{i}\"\nvariables = {{ text = \"MARK-{i}-END\" }}\n[cases.expected]\nitems = ["
        ));
        for k in 0..5 {
            text.push_str(&format!("{{ entity = \"entity {i} {k}\", definition = \"A thing.\" }}, "));
        }
        text.push_str("]\n");
    }
    text
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Measures both figures; `render` is the front end's matrix (the CLI's human report). `dir` holds the
/// generated prompt file.
pub fn measure(
    dir: &Path,
    answers: usize,
    cases: usize,
    runs: usize,
    render: &dyn Fn(&EvalRecord) -> String,
) -> anyhow::Result<EvalFigures> {
    let path = dir.join("bench-eval.toml");
    std::fs::write(&path, prompt_text(cases))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let memory: Arc<Vec<(String, String)>> =
        Arc::new((0..cases).map(|i| (format!("MARK-{i}-END"), answer(i))).collect());
    let wrap = {
        let memory = Arc::clone(&memory);
        move |_: &super::plan::PlannedColumn, _: Arc<dyn Provider>| -> Arc<dyn Provider> {
            Arc::new(Answered { answers: Arc::clone(&memory) })
        }
    };
    let options = EvalOptions {
        prompts: vec![path.clone()],
        repeat: 1,
        setup: SetupOptions::default(),
        ..EvalOptions::default()
    };

    // Scoring: `answers` imported records (made once, untimed), scored against their cases.
    let plan = EvalPlan::new(&options)?;
    let column = plan.columns.first().ok_or_else(|| anyhow::anyhow!("no column"))?;
    let mut records = Vec::with_capacity(answers);
    let mut expectations: Vec<&Expectations> = Vec::with_capacity(answers);
    let provider = Answered { answers: Arc::clone(&memory) };
    let resolver = column.cases.resolver()?;
    let mut by_row: Vec<(crate::run::plan::RunPlan, Expectations)> = Vec::new();
    for row in 0..cases.max(1).min(plan.rows.len()) {
        let case = column.case(row)?;
        by_row.push((column.run_plan(case.as_ref())?, column.cases.expectations(&resolver, case.as_ref())?));
    }
    for i in 0..answers {
        let (plan_of, expected) = by_row.get(i % cases.max(1)).ok_or_else(|| anyhow::anyhow!("no case"))?;
        records.push(runtime.block_on(engine::run(&provider, plan_of, |_| {})));
        expectations.push(expected);
    }
    let texts: Vec<String> =
        records.iter().map(|r| r.turns.last().map_or(String::new(), |t| t.output.clone())).collect();
    let (mut scoring, mut reading) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let passed = records
            .iter()
            .zip(&expectations)
            .filter(|(r, e)| score_record(e, r).verdict == super::score::Verdict::Pass)
            .count();
        scoring.push(started.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(passed);
        let started = Instant::now();
        let mut items = 0;
        for text in &texts {
            items += text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).count();
        }
        reading.push(started.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(items);
    }

    // The re-run: plan, every cell answered from memory and scored, the matrix rendered.
    let (mut rerun, mut engine_only) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let plan = EvalPlan::new(&options)?;
        let pipeline = Pipeline { plan: &plan, concurrency: 8, record_history: false, wrap: Some(&wrap) };
        let ran = runtime.block_on(pipeline::run(pipeline, |_| {}, std::future::pending()))?;
        std::hint::black_box(render(&ran.record));
        rerun.push(started.elapsed().as_secs_f64() * 1000.0);

        let jobs: Vec<Job> = plan
            .cells
            .iter()
            .filter_map(|cell| {
                let column = plan.columns.get(cell.column)?;
                let case = column.case(cell.row).ok()?;
                let provider: Arc<dyn Provider> = Arc::new(Answered { answers: Arc::clone(&memory) });
                Some(Job { provider, plan: column.run_plan(case.as_ref()).ok()? })
            })
            .collect();
        let started = Instant::now();
        std::hint::black_box(runtime.block_on(engine::run_batch(&jobs, 8, |_, _| {})));
        engine_only.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let (scoring_ms, scoring_baseline_ms) = (median(scoring), median(reading));
    let (rerun_ms, rerun_baseline_ms) = (median(rerun), median(engine_only));
    Ok(EvalFigures {
        answers,
        scoring_ms,
        scoring_baseline_ms,
        scoring_ratio: scoring_ms / scoring_baseline_ms.max(1e-9),
        cases,
        rerun_ms,
        rerun_baseline_ms,
        rerun_ratio: rerun_ms / rerun_baseline_ms.max(1e-9),
    })
}
