//! `tunebench bench`: this machine's speed figures, each against a baseline measured in the same run.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use crate::bench_data::{array_answer, union_jsonl, union_schema};
use crate::output::{parser_for, Profile, Report, ResponseType};
use crate::schema::{Check, CompiledSchema};
use crate::truncate::cut::Cuts;
use crate::truncate::sweep::sweep_points;

/// Options of `tunebench bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Lines of the discriminated-union JSONL answer to parse and validate.
    #[arg(long, default_value_t = 100_000)]
    pub lines: usize,
    /// Items of the JSON-array answer to sweep (the 10× answer has ten times as many).
    #[arg(long, default_value_t = 1_000)]
    pub items: usize,
    /// Timed repetitions of each measurement; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Tokens of the transcript the `tui` section replays into the workbench.
    #[arg(long, default_value_t = 100_000)]
    pub tui_tokens: usize,
    /// Measure only the `tui` section (the workbench's loop).
    #[arg(long)]
    pub tui_only: bool,
    /// Measure only the local model (load, tokens/s unconstrained vs constrained, memory).
    #[arg(long, conflicts_with = "no_local")]
    pub local_only: bool,
    /// Skip the local model's section.
    #[arg(long)]
    pub no_local: bool,
    /// Write the sample workload's prompt as the model's token ids (JSON: `prompt`, `max_tokens`) to
    /// FILE and stop: what `benches/llama-cpp/run.py` gives llama.cpp, so both run the same tokens.
    #[arg(long, value_name = "FILE")]
    pub workload_tokens: Option<std::path::PathBuf>,
    /// Measure only the eval figures (scoring imported answers, a fully answered re-run).
    #[arg(long, conflicts_with_all = ["tui_only", "local_only"])]
    pub eval_only: bool,
    /// Imported answers the eval section scores.
    #[arg(long, default_value_t = 10_000)]
    pub eval_answers: usize,
    /// Cases of the eval the eval section re-runs with every answer at hand.
    #[arg(long, default_value_t = 100)]
    pub eval_cases: usize,
    /// N of the eval section's scale figures: each step at N and 2N cases (or items sharing a key).
    #[arg(long, default_value_t = 10_000)]
    pub scale_cases: usize,
    /// Rows of the JSONL dataset the large eval runs as a process (peak memory, cases/s).
    #[arg(long, default_value_t = 20_000)]
    pub large_cases: usize,
    /// Measure only the optimizer's line (an optimization with the cache warm against the same
    /// cells as plain evals).
    #[arg(long, conflicts_with_all = ["tui_only", "local_only", "eval_only"])]
    pub optimize_only: bool,
    /// Cases of the prompt the optimizer's line optimizes.
    #[arg(long, default_value_t = 20)]
    pub optimize_cases: usize,
    /// Measure only the engine beside llama.cpp (llama-cpp-python, through `TUNEBENCH_LLAMA_CPP_PYTHON`
    /// or python3): each model's GGUF, the same prompt tokens and generated tokens, greedy, 2 threads.
    #[arg(long, conflicts_with_all = ["tui_only", "local_only", "eval_only", "optimize_only", "no_local"])]
    pub vs_llama_cpp: bool,
    /// Rounds of --vs-llama-cpp (each runs both once, in turn; the medians are reported).
    #[arg(long, default_value_t = 3)]
    pub vs_rounds: usize,
    /// Tokens --vs-llama-cpp generates at most (the engine's count, which an end of text may cut, is
    /// what llama.cpp generates).
    #[arg(long, default_value_t = 1024)]
    pub vs_tokens: u32,
    /// A model of --vs-llama-cpp (repeat for several; every one when none): smollm2, gemma-3-270m,
    /// qwen3-0.6b-random.
    #[arg(long = "vs-model", value_name = "NAME")]
    pub vs_models: Vec<String>,
}

/// The local model's section: its figures, or why it was skipped.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum LocalSection {
    #[cfg(feature = "local")]
    Measured(Box<crate::provider::local::bench::LocalFigures>),
    Skipped {
        skipped: String,
    },
}

fn measure_local() -> LocalSection {
    #[cfg(feature = "local")]
    {
        use crate::provider::local::{bench, fetch};
        let workload = match sample_workload() {
            Ok(workload) => workload,
            Err(error) => return LocalSection::Skipped { skipped: format!("the sample prompt's workload: {error:#}") },
        };
        match fetch::installed_model().and_then(|path| bench::measure(&path, Some(&workload))) {
            Ok(figures) => LocalSection::Measured(Box::new(figures)),
            Err(error) => LocalSection::Skipped { skipped: error.to_string() },
        }
    }
    #[cfg(not(feature = "local"))]
    LocalSection::Skipped { skipped: "built without the `local` feature".into() }
}

/// `--workload-tokens FILE`: the unconstrained workload request's prompt tokens, written atomically.
fn write_workload_tokens(file: &std::path::Path) -> anyhow::Result<()> {
    #[cfg(feature = "local")]
    {
        use crate::provider::local::{fetch, load_options, Engine};
        let workload = sample_workload()?;
        let engine = Engine::load(&fetch::installed_model()?, &load_options())?;
        let prompt = engine.tokenizer().encode(&engine.prompt_text(&workload.unconstrained)?)?;
        let body = json!({
            "workload": workload.name,
            "model": engine.path.display().to_string(),
            "prompt": prompt,
            "max_tokens": workload.unconstrained.max_tokens,
        });
        crate::prompt::file::write_atomic(file, &format!("{body}\n"))?;
        super::say!("wrote {} prompt tokens to {}\n", prompt.len(), file.display());
        Ok(())
    }
    #[cfg(not(feature = "local"))]
    anyhow::bail!("--workload-tokens {}: built without the `local` feature", file.display())
}

/// The workbench's sample prompt as `run --provider local` sends it: 1,024 tokens, greedy, unconstrained
/// (`--structured none --repeat-penalty 1`) and constrained (the default for a jsonl prompt on the local model).
#[cfg(feature = "local")]
pub(super) fn sample_workload() -> anyhow::Result<crate::provider::local::bench::Workload> {
    use crate::prompt::file::{PromptFile, ProviderSettings};
    use crate::run::setup::{RunSetup, SetupOptions};
    const NAME: &str = "sample-prompts/agent-kg-extract.toml";
    const SAMPLE: &str = include_str!("../../sample-prompts/agent-kg-extract.toml");
    let path = std::path::Path::new(NAME);
    let prompt = PromptFile::from_toml_str(SAMPLE, path)?;
    // Unconstrained as llama.cpp's figures were taken: no repetition penalty, so the answer runs to
    // 1,024 tokens; constrained as the workbench runs it (the local default penalty).
    let request = |structured: &str,
                   repeat_penalty: Option<f64>,
                   case: Option<&str>|
     -> anyhow::Result<crate::provider::Request> {
        let overrides = ProviderSettings {
            name: Some("local".into()),
            structured: Some(structured.into()),
            max_tokens: Some(1024),
            temperature: Some(0.0),
            repeat_penalty,
            ..ProviderSettings::default()
        };
        let setup = RunSetup::new(prompt.clone(), path, SetupOptions::from_flags(overrides)?)?;
        Ok(setup.plan(case)?.request)
    };
    Ok(crate::provider::local::bench::Workload {
        name: NAME.into(),
        unconstrained: request("none", Some(1.0), None)?,
        constrained: request("constrained", None, None)?,
        next_case: request("constrained", None, Some("computing-history"))?,
        later_case: request("constrained", None, Some("geology"))?,
    })
}

/// Every figure `bench` measures.
#[derive(Debug, Serialize)]
pub struct Figures {
    pub jsonl_lines: usize,
    /// tunebench's jsonl parser + validation, the answer fed whole.
    pub jsonl_lines_per_s: f64,
    /// The same, fed in 16-byte chunks as a stream arrives.
    pub jsonl_streamed_lines_per_s: f64,
    /// Baseline: `serde_json::from_str` per line + the same compiled schema, no verdicts kept.
    pub baseline_lines_per_s: f64,
    pub jsonl_vs_baseline: f64,
    pub sweep: SweepFigures,
    /// Time to first token added by tunebench's openai provider over a raw HTTP client, both against the
    /// same in-process server replaying a recorded stream.
    pub ttft: crate::provider::bench::TtftFigures,
    /// A 100k-chunk transcript replayed through the run engine with live parsing, in chunks per second.
    pub replay_chunks_per_s: f64,
    /// The workbench's loop on a test backend with a 100k-token transcript replayed instantly.
    #[cfg(feature = "tui")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tui: Option<crate::tui::bench::TuiFigures>,
    /// The embedded model (absent with --no-local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSection>,
    /// Picking a token at a temperature from a large vocabulary.
    #[cfg(feature = "local")]
    pub sampling: crate::provider::local::bench_sampling::SamplingFigures,
    /// Scoring imported answers, and a fully answered eval re-run.
    pub eval: super::bench_eval::EvalSection,
}

/// The sweep's cost against one full parse, and how it grows with the answer.
#[derive(Debug, Serialize)]
pub struct SweepFigures {
    pub items: usize,
    pub tokens: usize,
    pub full_parse_ms: f64,
    pub sweep_ms: f64,
    /// Sweep of every token cut under json, json-repair and jsonl ÷ one full parse (json + jsonl).
    pub sweep_vs_full_parse: f64,
    pub tokens_10x: usize,
    pub sweep_10x_ms: f64,
    /// Time of the 10× longer answer's sweep ÷ the 1× sweep (linear is 10).
    pub growth_10x: f64,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1, not 0");
    if args.tui_only {
        return tui_only(args);
    }
    if args.optimize_only {
        let dir = std::env::temp_dir().join(format!("tunebench-bench-optimize-{}", std::process::id()));
        let figures = super::bench_optimize::measure(&dir, args.optimize_cases, args.runs);
        let _ = std::fs::remove_dir_all(&dir);
        let figures = figures?;
        if args.json {
            super::print_json(&json!({ "eval": { "optimize": figures } }))?;
        } else {
            super::say!("eval (median of the runs):\n{}", super::bench_optimize::human(&figures));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.eval_only {
        let figures = super::bench_eval::measure(args)?;
        if args.json {
            super::print_json(&json!({ "eval": figures }))?;
        } else {
            super::say!("{}", super::bench_eval::human(&figures));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.vs_llama_cpp {
        let section = super::bench_llama_cpp::measure(args)?;
        if args.json {
            super::print_json(&json!({ "vs_llama_cpp": section }))?;
        } else {
            super::say!("{}", super::bench_llama_cpp::human(&section));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = &args.workload_tokens {
        write_workload_tokens(file)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.local_only {
        let section = measure_local();
        if args.json {
            super::print_json(&json!({ "local": section }))?;
        } else {
            super::say!("{}", super::bench_local::human(&section));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let figures = measure(args)?;
    if args.json {
        super::print_json(&figures)?;
    } else {
        super::say!("{}", human(&figures));
    }
    Ok(ExitCode::SUCCESS)
}

fn measure(args: &BenchArgs) -> anyhow::Result<Figures> {
    let schema: Arc<dyn Check> = Arc::new(CompiledSchema::compile(&union_schema())?);
    let answer = union_jsonl(args.lines);
    let [whole, streamed, baseline] = medians(
        args.runs,
        [
            &mut || {
                let mut parser = parser_for(ResponseType::Jsonl, Profile::Lenient, Some(schema.clone()));
                parser.feed(&answer);
                expect_lines(&parser.into_report(), args.lines);
            },
            &mut || {
                let mut parser = parser_for(ResponseType::Jsonl, Profile::Lenient, Some(schema.clone()));
                chunks(&answer, 16).for_each(|c| parser.feed(c));
                expect_lines(&parser.into_report(), args.lines);
            },
            &mut || {
                let valid = answer
                    .lines()
                    .filter(|line| serde_json::from_str::<Value>(line).is_ok_and(|v| schema.check(&v).is_ok()))
                    .count();
                assert!(valid > 0);
            },
        ],
    );
    let per_s = |d: Duration| args.lines as f64 / d.as_secs_f64();
    Ok(Figures {
        jsonl_lines: args.lines,
        jsonl_lines_per_s: per_s(whole),
        jsonl_streamed_lines_per_s: per_s(streamed),
        baseline_lines_per_s: per_s(baseline),
        jsonl_vs_baseline: baseline.as_secs_f64() / whole.as_secs_f64(),
        sweep: measure_sweep(args)?,
        ttft: crate::provider::bench::ttft_added_blocking(200)?,
        replay_chunks_per_s: crate::run::bench::replay_throughput(100_000)?,
        #[cfg(feature = "tui")]
        tui: Some(crate::tui::bench::measure(args.tui_tokens)?),
        local: (!args.no_local).then(measure_local),
        #[cfg(feature = "local")]
        sampling: crate::provider::local::bench_sampling::measure(|ours, sorting| {
            medians(args.runs, [ours, sorting]).map(|d| d.as_secs_f64())
        }),
        eval: super::bench_eval::measure(args)?,
    })
}

fn measure_sweep(args: &BenchArgs) -> anyhow::Result<SweepFigures> {
    let one = array_answer(args.items);
    let ten = array_answer(args.items * 10);
    let (cuts_one, cuts_ten) = (Cuts::o200k(&one), Cuts::o200k(&ten));
    let [full_parse, sweep_one, sweep_ten] = medians(
        args.runs,
        [
            &mut || {
                for response_type in [ResponseType::Json, ResponseType::Jsonl] {
                    let mut parser = parser_for(response_type, Profile::Lenient, None);
                    parser.feed(&one);
                    std::hint::black_box(parser.into_report());
                }
            },
            &mut || {
                std::hint::black_box(sweep_points(&one, cuts_one.points(), Profile::Lenient, None));
            },
            &mut || {
                std::hint::black_box(sweep_points(&ten, cuts_ten.points(), Profile::Lenient, None));
            },
        ],
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(SweepFigures {
        items: args.items,
        tokens: cuts_one.total(),
        full_parse_ms: ms(full_parse),
        sweep_ms: ms(sweep_one),
        sweep_vs_full_parse: sweep_one.as_secs_f64() / full_parse.as_secs_f64(),
        tokens_10x: cuts_ten.total(),
        sweep_10x_ms: ms(sweep_ten),
        growth_10x: sweep_ten.as_secs_f64() / sweep_one.as_secs_f64(),
    })
}

fn human(f: &Figures) -> String {
    let s = &f.sweep;
    #[cfg(feature = "tui")]
    let tui = f.tui.as_ref().map(tui_human).unwrap_or_default();
    #[cfg(not(feature = "tui"))]
    let tui = String::new();
    #[cfg(feature = "local")]
    let sampling = crate::provider::local::bench_sampling::human(&f.sampling);
    #[cfg(not(feature = "local"))]
    let sampling = String::new();
    format!(
        "jsonl parse + validate, {} discriminated-union lines:\n\
         \x20 tunebench (whole)     {:>12.0} lines/s\n\
         \x20 tunebench (streamed)  {:>12.0} lines/s  (16-byte chunks)\n\
         \x20 baseline              {:>12.0} lines/s  (serde_json per line + the same compiled schema)\n\
         \x20 tunebench / baseline  {:>12.2}×\n\
         truncation sweep, every token cut under json, json-repair and jsonl:\n\
         \x20 {} items, {} tokens: full parse {:.2} ms, sweep {:.2} ms → {:.2}× one full parse\n\
         \x20 10× longer ({} tokens): sweep {:.2} ms → {:.2}× the 1× sweep (linear = 10)\n\
         time to first token added over a raw HTTP client (same in-process server, median of {} runs):\n\
         \x20 {:.0} µs (raw {:.0} µs, tunebench {:.0} µs)\n\
         replay of a 100k-chunk transcript through the run engine with live parsing:\n\
         \x20 {:.0} chunks/s\n{tui}{}{}",
        f.jsonl_lines,
        f.jsonl_lines_per_s,
        f.jsonl_streamed_lines_per_s,
        f.baseline_lines_per_s,
        f.jsonl_vs_baseline,
        s.items,
        s.tokens,
        s.full_parse_ms,
        s.sweep_ms,
        s.sweep_vs_full_parse,
        s.tokens_10x,
        s.sweep_10x_ms,
        s.growth_10x,
        f.ttft.runs,
        f.ttft.added_median_us,
        f.ttft.raw_median_us,
        f.ttft.tunebench_median_us,
        f.replay_chunks_per_s,
        f.local.as_ref().map(super::bench_local::human).unwrap_or_default(),
        sampling,
    ) + &super::bench_eval::human(&f.eval)
}

/// `--tui-only`: the workbench's figures alone.
#[cfg(feature = "tui")]
fn tui_only(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let figures = crate::tui::bench::measure(args.tui_tokens)?;
    if args.json {
        super::print_json(&figures)?;
    } else {
        super::say!("{}", tui_human(&figures));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "tui"))]
fn tui_only(_args: &BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("--tui-only: this build has no workbench (built without the `tui` feature)")
}

/// The `tui` section as text.
#[cfg(feature = "tui")]
fn tui_human(t: &crate::tui::bench::TuiFigures) -> String {
    format!(
        "workbench (real loop, 120×40 test backend), {} tokens / {} JSONL lines replayed instantly, each line validated:\n\
         \x20 start-up to first frame   {:>8.1} ms\n\
         \x20 stream (run → last line)  {:>8.1} ms  (engine alone, no screen: {:.1} ms → {:.2}×)\n\
         \x20 stream + sweep shown      {:>8.1} ms\n\
         \x20 renders during the stream {:>8}    ({:.1} per second; the frame limiter allows 62.5)\n\
         \x20 truncation chart updated live {:>4}    times while the answer streamed\n\
         \x20 sweep work per chunk      {:>8.1} bytes read (the answer is {:.1} bytes a chunk)\n\
         \x20 {} keystrokes, one every 10 ms from the run's start: handled in median {:.1} ms, max {:.1} ms; on screen in median {:.1} ms, max {:.1} ms\n\
         \x20 request's tokens counted {} times for the status line ({} frames drawn: counted on change, never per frame)\n\
         \x20 {} keys typed into a {:.1} MB schema, each handled and drawn: median {:.1} ms, max {:.1} ms  (baseline, one lint of the schema: {:.1} ms → {:.3}×)\n\
         \x20 then lint and token count of the last text on screen after {:.1} ms (in the background; the loop's longest message meanwhile {:.1} ms)\n",
        t.tokens,
        t.lines,
        t.startup_to_first_frame_ms,
        t.stream_ms,
        t.engine_only_ms,
        t.tui_vs_engine,
        t.stream_and_sweep_ms,
        t.renders,
        t.renders_per_s,
        t.live_sweeps,
        t.swept_bytes_per_chunk,
        t.answer_bytes_per_chunk,
        t.keys,
        t.key_handled_median_ms,
        t.key_handled_max_ms,
        t.key_to_frame_median_ms,
        t.key_to_frame_max_ms,
        t.prompt_counts,
        t.frames,
        t.schema_keys.keys,
        t.schema_keys.schema_bytes as f64 / 1e6,
        t.schema_keys.key_median_ms,
        t.schema_keys.key_max_ms,
        t.schema_keys.lint_once_ms,
        t.schema_keys.key_vs_lint,
        t.schema_keys.settled_ms,
        t.schema_keys.longest_message_ms,
    ) + &rows_human(&t.rows)
}

/// The workbench at 10,000 dataset rows against 100, as text.
#[cfg(feature = "tui")]
fn rows_human(r: &crate::tui::bench_rows::RowsFigures) -> String {
    let line = |what: &str, op: &crate::tui::bench_rows::RowsOp| {
        format!(
            "  {what:<26}{:>8.2} ms  (at {} rows: {:.2} ms → {:.2}×)\n",
            op.ms, r.baseline_rows, op.baseline_ms, op.ratio
        )
    };
    format!("workbench at {} dataset rows (median per op, each with its frame):\n", r.rows)
        + &line("open to first frame", &r.open)
        + &line("key in the template", &r.key)
        + &line("key in the case filter", &r.filter_key)
        + &line("page down the case list", &r.page_down)
}

/// The median wall time of each of `works` over `runs` rounds (after one warm-up call of each). A round
/// runs each once, in turn, so that a measurement and its baseline meet the same machine: on a shared
/// machine the speed drifts over seconds, and timing one after the other would put the drift into
/// their ratio.
fn medians<const N: usize>(runs: usize, mut works: [&mut dyn FnMut(); N]) -> [Duration; N] {
    works.iter_mut().for_each(|work| work());
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    for _ in 0..runs {
        for (work, times) in works.iter_mut().zip(&mut times) {
            let start = Instant::now();
            work();
            times.push(start.elapsed());
        }
    }
    times.map(|mut times| {
        times.sort_unstable();
        times.get(times.len() / 2).copied().unwrap_or_default()
    })
}

fn expect_lines(report: &Report, lines: usize) {
    if let Report::Jsonl(r) = report {
        assert_eq!(r.lines.len(), lines, "every line has a verdict");
    }
}

fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}
