//! Sampling samples: an eval's repeats at temperature 1.0 with `--seed 7` run with seeds 7 and 8 and
//! answer differently; each cell and run record keeps its seed, and a run given that seed answers the
//! same again; runs given no seed get fresh ones.

use std::path::Path;

use tunebench::eval::pipeline::{self, Pipeline};
use tunebench::eval::{EvalEvent, EvalOptions, EvalPlan};
use tunebench::prompt::file::ProviderSettings;
use tunebench::run::{CacheMode, RunRecord, RunSetup, SetupOptions, Stop};

/// A free-text prompt: at temperature 1.0, 32 tokens of two seeds differ somewhere all but surely.
const STORY: &str = r#"id = "story"
response_type = "text"
template = "Write the opening of a short story about a lighthouse keeper."
"#;

fn options(seed: Option<u64>) -> SetupOptions {
    let overrides = ProviderSettings {
        name: Some("local".into()),
        temperature: Some(1.0),
        max_tokens: Some(32),
        ..ProviderSettings::default()
    };
    SetupOptions { seed, cache: CacheMode::Off, ..SetupOptions::from_flags(overrides).unwrap() }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// One run of the prompt at `path`, as `run --temperature 1.0 [--seed S]` makes it.
fn run_once(path: &Path, seed: Option<u64>) -> RunRecord {
    let setup = RunSetup::load(path, options(seed)).unwrap();
    let provider = setup.provider(None).unwrap();
    let plan = setup.plan(None).unwrap();
    runtime().block_on(tunebench::run::run(provider.as_ref(), &plan, |_| {}))
}

fn answer(record: &RunRecord) -> &str {
    record.turns.last().map_or("", |t| t.output.as_str())
}

#[test]
fn repeats_sample_with_seed_plus_k_and_a_recorded_seed_reproduces_its_answer() {
    super::support::model_file();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("story.toml");
    std::fs::write(&path, STORY).unwrap();
    let plan = EvalPlan::new(&EvalOptions {
        prompts: vec![path.clone()],
        repeat: 2,
        setup: options(Some(7)),
        ..EvalOptions::default()
    })
    .unwrap();
    let mut runs: Vec<RunRecord> = Vec::new();
    let pipeline = Pipeline { plan: &plan, concurrency: 1, record_history: false, wrap: None };
    let ran = runtime()
        .block_on(pipeline::run(
            pipeline,
            |event| {
                if let EvalEvent::CellScored { run, .. } = event {
                    runs.push(*run);
                }
            },
            std::future::pending::<Stop>(),
        ))
        .unwrap();
    runs.sort_by_key(|r| r.seed);
    let seeds: Vec<Option<u64>> = runs.iter().map(|r| r.seed).collect();
    assert_eq!(seeds, [Some(7), Some(8)], "repeat k uses the seed + k");
    let cells: Vec<(u32, Option<u64>)> = ran.record.cells.iter().map(|c| (c.repeat, c.run.seed)).collect();
    assert_eq!(cells, [(1, Some(7)), (2, Some(8))], "each cell keeps its seed");
    assert!(runs.iter().all(|r| !answer(r).is_empty()), "{runs:?}");
    assert_ne!(answer(&runs[0]), answer(&runs[1]), "two seeds at temperature 1.0 answer differently");

    // `run --seed 8` (the second cell's recorded seed) answers exactly as that cell did.
    let again = run_once(&path, Some(8));
    assert_eq!((again.seed, answer(&again)), (Some(8), answer(&runs[1])));

    // Without a seed each run samples with a fresh one, which its record keeps.
    let (one, two) = (run_once(&path, None), run_once(&path, None));
    assert!(one.seed.is_some() && two.seed.is_some() && one.seed != two.seed, "{:?} {:?}", one.seed, two.seed);
    let replayed = run_once(&path, one.seed);
    assert_eq!(answer(&replayed), answer(&one), "the recorded fresh seed reproduces its run");
}
