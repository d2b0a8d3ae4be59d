//! (feature `testing`) `tunebench bench`'s eval section: scoring and a re-run in process (the core's
//! `eval::bench`), and what a user waits for at the terminal: `tunebench eval` as a process against
//! an in-process OpenAI-compatible server, the first run (every case asked) and the re-runs answered
//! by the response cache, beside the process's own start (`tunebench --version`) as the baseline;
//! and how a large eval scales (the core's `eval::bench_scale`: each step at N and 2N cases).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use super::bench::BenchArgs;
use crate::eval::bench::{answer, prompt_text, EvalFigures};
use crate::eval::bench_scale::ScaleFigures;
use crate::provider::wire_server::{Reply, WireServer};

/// The whole eval section.
#[derive(Debug, Serialize)]
pub struct EvalSection {
    #[serde(flatten)]
    pub in_process: EvalFigures,
    pub binary: BinaryFigures,
    pub scale: ScaleFigures,
    pub large: super::bench_large::LargeFigures,
    /// The optimizer around the eval, per candidate, with the cache warm.
    pub optimize: super::bench_optimize::OptimizeFigures,
}

/// `tunebench eval` run as a process on a C-case prompt (milliseconds of wall time, medians of runs).
#[derive(Debug, Serialize)]
pub struct BinaryFigures {
    pub cases: usize,
    /// The first run: the cache empty, every case asked of the server (which answers at once).
    pub first_run_ms: f64,
    /// A re-run with every answer in the response cache, the matrix printed.
    pub cached_rerun_ms: f64,
    /// Requests the server saw during the re-runs (0: every answer came from the cache).
    pub rerun_requests: usize,
    /// `tunebench --version`: starting the process and nothing else.
    pub start_baseline_ms: f64,
    pub cached_rerun_vs_start: f64,
}

/// Measures the section.
pub fn measure(args: &BenchArgs) -> anyhow::Result<EvalSection> {
    let dir = std::env::temp_dir().join(format!("tunebench-bench-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let render = |record: &crate::eval::EvalRecord| super::eval_human::report(record);
    let in_process = crate::eval::bench::measure(&dir, args.eval_answers, args.eval_cases, args.runs, &render);
    let binary = measure_binary(&dir, args.eval_cases, args.runs);
    let matrix = |record: &crate::eval::EvalRecord, delta: &crate::eval::diff::Delta| {
        super::eval_human::matrix(record, Some(delta))
    };
    let scale = crate::eval::bench_scale::measure(&dir, args.scale_cases, args.runs.min(3), &matrix);
    let large = super::bench_large::measure(&dir, args.large_cases);
    let optimize = super::bench_optimize::measure(&dir, args.optimize_cases, args.runs);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(EvalSection { in_process: in_process?, binary: binary?, scale: scale?, large: large?, optimize: optimize? })
}

fn measure_binary(dir: &Path, cases: usize, runs: usize) -> anyhow::Result<BinaryFigures> {
    let exe = std::env::current_exe()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let routes =
        (0..cases).map(|i| (format!("MARK-{i}-END"), Reply::chat_stream(&answer(i), "stop", Some((40, 60))))).collect();
    let server = runtime.block_on(WireServer::start_routed(routes))?;
    let base_url = format!("{}/v1", server.url());
    let prompt = dir.join("bench-binary.toml");
    std::fs::write(&prompt, prompt_text(cases))?;
    let (data, cache) = (dir.join("data"), dir.join("cache"));
    let eval = || -> anyhow::Result<f64> {
        let started = Instant::now();
        let output = eval_command(&exe, &prompt, &base_url, &data, &cache).output()?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        // Half the cases fail by design (exit 1); anything else is a broken measurement.
        anyhow::ensure!(
            output.status.code() == Some(1) && !output.stdout.is_empty(),
            "tunebench eval ended {:?}: {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(elapsed)
    };
    let first_run_ms = eval()?;
    let asked = server.received().len();
    anyhow::ensure!(asked == cases, "the first run asked {asked} times for {cases} cases");
    let mut reruns = Vec::new();
    let mut starts = Vec::new();
    for _ in 0..runs.max(1) {
        reruns.push(eval()?);
        let started = Instant::now();
        Command::new(&exe).arg("--version").stdout(Stdio::null()).status()?;
        starts.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let (cached_rerun_ms, start_baseline_ms) = (median(reruns), median(starts));
    Ok(BinaryFigures {
        cases,
        first_run_ms,
        cached_rerun_ms,
        rerun_requests: server.received().len() - asked,
        start_baseline_ms,
        cached_rerun_vs_start: cached_rerun_ms / start_baseline_ms.max(1e-9),
    })
}

/// `tunebench eval PROMPT` against the server at `base_url` (openai, no key, no history), with its own
/// data and cache directories and no standard input: how the bench runs an eval as a process.
pub(super) fn eval_command(exe: &Path, prompt: &Path, base_url: &str, data: &Path, cache: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .arg("eval")
        .arg(prompt)
        .args(["--provider", "openai", "--base-url", base_url, "--no-history"])
        .env("TUNEBENCH_DATA_DIR", data)
        .env("TUNEBENCH_CACHE_DIR", cache)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    command
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The section as the human report prints it.
pub fn human(section: &EvalSection) -> String {
    let f = &section.in_process;
    let b = &section.binary;
    let mut scale = String::from(
        "  scale (time per case at 2N over time per case at N: 1 is linear, 2 quadratic; median of up to 3 runs):\n",
    );
    for step in &section.scale.steps {
        scale.push_str(&format!(
            "    {:<42} N = {:>6}: {:>9.1} ms   2N: {:>9.1} ms   → {:.2}\n",
            step.step, step.n, step.ms_at_n, step.ms_at_2n, step.per_case_ratio
        ));
    }
    format!(
        "eval (median of the runs):\n\
         \x20 score {} imported answers   {:>9.1} ms  (baseline, serde_json reading them: {:.1} ms → {:.2}×)\n\
         \x20 re-run a {}-case eval in process, every answer at hand, matrix printed  {:>6.1} ms  (baseline, the run engine alone: {:.1} ms → {:.2}×)\n\
         \x20 `tunebench eval` on {} cases, first run (every case asked of a local server)  {:>7.1} ms\n\
         \x20 `tunebench eval` re-run, every answer from the response cache ({} requests)  {:>7.1} ms  (baseline, `tunebench --version`: {:.1} ms → {:.2}×)\n{}{}",
        f.answers,
        f.scoring_ms,
        f.scoring_baseline_ms,
        f.scoring_ratio,
        f.cases,
        f.rerun_ms,
        f.rerun_baseline_ms,
        f.rerun_ratio,
        b.cases,
        b.first_run_ms,
        b.rerun_requests,
        b.cached_rerun_ms,
        b.start_baseline_ms,
        b.cached_rerun_vs_start,
        super::bench_optimize::human(&section.optimize),
        scale,
    ) + &super::bench_large::human(&section.large)
}
