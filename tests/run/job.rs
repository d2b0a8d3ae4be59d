//! The run job's policies, each pinned once: a run cancelled before it starts leaves no history line;
//! a replay names its transcript's model; the runs at once default to the provider's; the job writes
//! each run's transcripts.

use std::path::{Path, PathBuf};

use tunebench::provider::kind::ProviderKind;
use tunebench::provider::replay::{Pace, Replay};
use tunebench::run::{History, ReplayFrom, RunJob, RunSetup, SetupOptions, Stop, Target};

use super::support::sample;

/// The sample's recorded answer (its header names the model "hand-written example answer").
fn answer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/answers/extract-definitions.jsonl")
}

/// extract-definitions replayed from its recorded answer, no model named, its records kept in `history`.
fn replay_job(history: History, transcripts: Option<PathBuf>) -> RunJob {
    let target = Target::replaying(ReplayFrom::File(answer(), Pace::Instant));
    let setup = RunSetup::load(&sample("extract-definitions"), SetupOptions { target, ..SetupOptions::default() })
        .expect("the sample sets up");
    RunJob { setup, cases: vec![None], batch: false, concurrency: None, history, transcripts }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_leaves_no_history_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.jsonl");
    let job = replay_job(History::File(file.clone()), None);
    // Cancelled before anything ran: the record says so, and the history does not keep it.
    let ran = job.run(|_, _| {}, async { Stop::User }).await.unwrap();
    assert!(ran.records[0].never_started(), "{:?}", ran.records[0]);
    assert_eq!((ran.kept.clone(), lines(&file)), (vec![None], 0), "{:?}", ran.warnings);
    // The same job run to its end is kept, once.
    let ran = job.run(|_, _| {}, std::future::pending()).await.unwrap();
    assert!(!ran.records[0].cancelled && !ran.records[0].turns[0].output.is_empty(), "{:?}", ran.records[0]);
    assert_eq!((ran.kept, lines(&file)), (vec![Some(file.clone())], 1));
}

#[tokio::test]
async fn a_replay_names_the_model_its_transcript_recorded() {
    let recorded = Replay::from_file(&answer(), Pace::Instant).unwrap().transcript().header.model.clone();
    assert_eq!(recorded, "hand-written example answer");
    let job = replay_job(History::Off, None);
    assert_eq!(job.setup.settings.model, recorded, "the settings name it before the run");
    let ran = job.run(|_, _| {}, std::future::pending()).await.unwrap();
    assert_eq!((ran.records[0].provider.as_str(), ran.records[0].model.as_str()), ("replay", recorded.as_str()));
    // A model named for the replay is the one the record names.
    let target = Target { model: Some("named".into()), ..Target::replaying(ReplayFrom::File(answer(), Pace::Instant)) };
    let setup =
        RunSetup::load(&sample("extract-definitions"), SetupOptions { target, ..SetupOptions::default() }).unwrap();
    assert_eq!(setup.settings.model, "named");
}

#[tokio::test]
async fn the_runs_at_once_default_to_the_providers() {
    let mut job = replay_job(History::Off, None);
    let ran = job.run(|_, _| {}, std::future::pending()).await.unwrap();
    assert_eq!((job.concurrency(), ran.concurrency), (8, 8), "replayed transcripts: 8 at once");
    job.concurrency = Some(3);
    assert_eq!(job.concurrency(), 3, "asked for: as asked");
    job.concurrency = Some(0);
    assert_eq!(job.concurrency(), 1, "never fewer than one");
    // A server on this machine answers one request at a time; a remote API several.
    let on = |base_url: &str| {
        let target =
            Target { base_url: Some(base_url.into()), model: Some("m".into()), ..Target::on(ProviderKind::Openai) };
        let setup =
            RunSetup::load(&sample("extract-definitions"), SetupOptions { target, ..SetupOptions::default() }).unwrap();
        RunJob { setup, cases: vec![None], batch: false, concurrency: None, history: History::Off, transcripts: None }
            .concurrency()
    };
    assert_eq!(on("http://127.0.0.1:8080/v1"), 1);
    assert_eq!(on("https://api.example.com/v1"), 4);
}

#[tokio::test]
async fn the_job_writes_each_runs_transcripts_and_they_replay_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("out/run.jsonl");
    let job = replay_job(History::Off, Some(base.clone()));
    let ran = job.run(|_, _| {}, std::future::pending()).await.unwrap();
    assert_eq!(ran.recorded, vec![base.clone()], "{:?}", ran.warnings);
    let written = Replay::from_file(&base, Pace::Instant).unwrap().transcript().answer();
    assert_eq!(written, ran.records[0].turns[0].output);
}
