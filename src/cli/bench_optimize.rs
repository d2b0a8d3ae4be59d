//! (feature `testing`) `tunebench bench`'s optimizer line: what the optimizer costs around the eval.
//! An optimization (demonstrations and ablations, no proposer, every candidate also on the held-out
//! cases) of a C-case prompt against an in-process OpenAI-compatible server, timed with the response
//! cache warm (a first, untimed run fills it), beside the same cells run as plain evals in the same
//! run: each scored candidate's prompt written as a file and evaluated on the cases it ran, through
//! the same pipeline and cache. The ratio is the optimizer's overhead per candidate (split, mutations,
//! Pareto front, paired tests, record) over evaluating the candidates by hand.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::eval::bench::{answer, prompt_text};
use crate::eval::pipeline::{self, Pipeline};
use crate::eval::{EvalOptions, EvalPlan};
use crate::optimize::{Candidate, OptimizeOptions};
use crate::provider::kind::ProviderKind;
use crate::provider::wire_server::{Reply, WireServer};
use crate::run::{CacheMode, SetupOptions, Target};

/// The optimizer's figures (milliseconds of wall time, medians of runs).
#[derive(Debug, Serialize)]
pub struct OptimizeFigures {
    pub cases: usize,
    /// Candidates scored (the baseline included).
    pub candidates: usize,
    /// Cells scored, over every candidate (train and held-out).
    pub cells: usize,
    /// The optimization, every answer from the response cache.
    pub optimize_ms: f64,
    pub optimize_per_candidate_ms: f64,
    /// The same cells as one plain eval per candidate (its prompt file, its cases), cache warm.
    pub eval_ms: f64,
    pub eval_per_candidate_ms: f64,
    /// `optimize_ms / eval_ms`: 1 is no overhead.
    pub overhead: f64,
    /// Requests the server saw during the timed runs (0: every answer came from the cache).
    pub requests: usize,
}

/// The bench prompt with a system prompt of three instructions (one per line: three ablations).
fn prompt(cases: usize) -> String {
    let system = "system = \"\"\"Define each entity in one sentence.\nUse plain words.\nKeep each entity's name as written.\"\"\"\n";
    prompt_text(cases).replacen("response_type", &format!("{system}response_type"), 1)
}

/// The bench prompt with a candidate's system prompt and template.
fn candidate_prompt(cases: usize, candidate: &Candidate) -> anyhow::Result<String> {
    let mut document: toml_edit::DocumentMut = prompt(cases).parse()?;
    match &candidate.system {
        Some(system) => document["system"] = toml_edit::value(system.as_str()),
        None => {
            document.remove("system");
        }
    }
    document["template"] = toml_edit::value(candidate.template.as_str());
    Ok(document.to_string())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Measures the line on a `cases`-case prompt written in `dir`, `runs` timed runs of each side.
pub fn measure(dir: &Path, cases: usize, runs: usize) -> anyhow::Result<OptimizeFigures> {
    anyhow::ensure!(cases >= 4, "--optimize-cases {cases}: the optimizer's split needs at least 4 cases");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let routes =
        (0..cases).map(|i| (format!("MARK-{i}-END"), Reply::chat_stream(&answer(i), "stop", Some((40, 60))))).collect();
    let server = runtime.block_on(WireServer::start_routed(routes))?;
    let dir = dir.join("optimize");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("bench-optimize.toml");
    std::fs::write(&path, prompt(cases))?;
    let target = Target {
        provider: Some(ProviderKind::Openai),
        base_url: Some(format!("{}/v1", server.url())),
        ..Target::default()
    };
    let setup =
        SetupOptions { target, cache: CacheMode::Use, cache_dir: Some(dir.join("cache")), ..SetupOptions::default() };
    let mut options = OptimizeOptions::new(path, setup.clone());
    options.max_proposals = 0;
    options.rank_all = true;
    options.budget = cases * 100;
    options.evals_dir = Some(dir.join("evals"));
    let optimize = || runtime.block_on(crate::optimize::run(&options, |_| {}, std::future::pending()));

    // The first run fills the cache; its candidates are the cells the plain evals run again.
    let first = optimize()?;
    let scored: Vec<&Candidate> = std::iter::once(&first.baseline)
        .chain(&first.candidates)
        .filter(|c| c.rejected.is_none() && !c.cases.is_empty())
        .collect();
    let mut evals = Vec::with_capacity(scored.len());
    for (index, candidate) in scored.iter().enumerate() {
        let file = dir.join(format!("candidate-{index}.toml"));
        std::fs::write(&file, candidate_prompt(cases, candidate)?)?;
        let cases = candidate.cases.iter().map(|c| c.case.clone()).collect();
        evals.push(EvalOptions {
            prompts: vec![file],
            cases,
            repeat: 1,
            setup: setup.clone(),
            ..EvalOptions::default()
        });
    }
    let eval_all = || -> anyhow::Result<usize> {
        let mut cells = 0;
        for options in &evals {
            let plan = EvalPlan::new(options)?;
            let concurrency = plan.concurrency(None);
            let pipeline = Pipeline { plan: &plan, concurrency, record_history: false, wrap: None };
            let ran = runtime.block_on(pipeline::run(pipeline, |_| {}, std::future::pending()))?;
            cells += ran.record.cells.len();
        }
        Ok(cells)
    };
    // One untimed pass: any cell the optimizer's runs did not leave in the cache is asked now.
    let cells = eval_all()?;
    let optimized = first.budget.cells_scored;
    anyhow::ensure!(cells == optimized, "the plain evals scored {cells} cells, the optimization {optimized}");
    let before = server.received().len();
    let (mut optimizing, mut evaluating) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        std::hint::black_box(optimize()?);
        optimizing.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        std::hint::black_box(eval_all()?);
        evaluating.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let (optimize_ms, eval_ms) = (median(optimizing), median(evaluating));
    let candidates = scored.len().max(1);
    Ok(OptimizeFigures {
        cases,
        candidates: scored.len(),
        cells,
        optimize_ms,
        optimize_per_candidate_ms: optimize_ms / candidates as f64,
        eval_ms,
        eval_per_candidate_ms: eval_ms / candidates as f64,
        overhead: optimize_ms / eval_ms.max(1e-9),
        requests: server.received().len() - before,
    })
}

/// The line as the human report prints it.
pub fn human(f: &OptimizeFigures) -> String {
    format!(
        "  optimize a {}-case prompt, cache warm: {} candidates, {} cells  {:>8.1} ms ({:.1} ms per candidate)  (baseline, the same cells as {} plain evals: {:.1} ms, {:.1} ms per candidate → {:.2}×; {} requests)\n",
        f.cases,
        f.candidates,
        f.cells,
        f.optimize_ms,
        f.optimize_per_candidate_ms,
        f.candidates,
        f.eval_ms,
        f.eval_per_candidate_ms,
        f.overhead,
        f.requests,
    )
}
