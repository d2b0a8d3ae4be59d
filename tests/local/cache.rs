//! The response cache in front of the embedded model, set up as `run` and `eval` set it up: a repeated
//! request is played from the cache token by token; another request (a different `max_tokens`) runs
//! the model.

use std::path::Path;

use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::FinishReason;
use tunebench::run::{CacheMode, RunRecord, RunSetup, SetupOptions};

fn run_cached(cache: &Path, max_tokens: u32) -> RunRecord {
    // The run looks the default model up in the cache directory: fetched first when it is not there.
    super::support::model_file();
    let prompt = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/extract-definitions.toml");
    let overrides = ProviderSettings {
        name: Some("local".into()),
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        ..ProviderSettings::default()
    };
    let options = SetupOptions {
        cache: CacheMode::Use,
        cache_dir: Some(cache.to_path_buf()),
        ..SetupOptions::from_flags(overrides).unwrap()
    };
    let setup = RunSetup::load(&prompt, options).unwrap();
    let provider = setup.provider_with(None, &|_| None).unwrap();
    let plan = setup.plan(None).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(tunebench::run::run(provider.as_ref(), &plan, |_| {}))
}

#[test]
fn a_repeated_request_to_the_local_model_is_played_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let live = run_cached(cache.path(), 12);
    let first = &live.turns[0];
    assert!(!first.cached && first.error.is_none(), "{live:?}");
    assert_eq!(first.finish_reason, Some(FinishReason::Length));
    let kept = run_cached(cache.path(), 12);
    let again = &kept.turns[0];
    assert!(again.cached);
    assert_eq!((again.output.as_str(), again.usage), (first.output.as_str(), first.usage));
    assert!(again.transcript.has_token_ids(), "played token by token");
    let ids = |record: &RunRecord| record.turns[0].transcript.chunks.iter().map(|c| c.token).collect::<Vec<_>>();
    assert_eq!(ids(&kept), ids(&live));
    let longer = run_cached(cache.path(), 13);
    assert!(!longer.turns[0].cached, "another max_tokens is another request");
    assert!(longer.turns[0].output.starts_with(&first.output));
}

/// A warm asked for on another thread, once it has taken its turn (it then waits for the engine).
fn warm_waiting(
    local: &tunebench::provider::local::Local,
    request: &tunebench::provider::Request,
) -> std::thread::JoinHandle<Result<bool, tunebench::provider::local::LocalError>> {
    let asked = local.warms_asked();
    let warm = std::thread::spawn({
        let (local, request) = (local.clone(), request.clone());
        move || local.warm(&request)
    });
    while local.warms_asked() <= asked {
        std::thread::yield_now();
    }
    warm
}

/// A warm that waited for the engine while a later one was asked for gives way to it: only the newest
/// prompt runs (the user moved on to another case), and the cache then holds it.
#[test]
fn a_warm_superseded_while_it_waits_gives_way_to_the_newer_one() {
    let local = super::support::local();
    let (first, second) = (super::support::jsonl_request(8), {
        let mut request = super::support::jsonl_request(8);
        request.messages.last_mut().unwrap().content.push_str(" Mitochondria produce energy.");
        request
    });
    // The engine is busy (held here) while two warms are asked for, one after the other.
    let (a, b) = local.with_engine(|_| (warm_waiting(local, &first), warm_waiting(local, &second)));
    assert_eq!(a.join().unwrap(), Ok(false), "the older warm gave way");
    assert_eq!(b.join().unwrap(), Ok(true), "the newer warm ran");
    local.with_engine(|engine| {
        let prompt = engine.tokenizer().encode(&engine.prompt_text(&second).unwrap()).unwrap();
        assert_eq!(engine.cached_tokens(), prompt.len(), "the cache holds the newer prompt");
    });
}

/// A run asked for while a warm waits for the engine: the warm gives way (the run needs the engine
/// now, and runs its own prompt).
#[test]
fn a_warm_waiting_when_a_run_is_asked_for_gives_way() {
    use tunebench::provider::Provider;
    let local = super::support::local();
    let request = super::support::jsonl_request(8);
    let warm = local.with_engine(|_| {
        let warm = warm_waiting(local, &request);
        // Asking for the run is enough (its stream is not read here).
        drop(local.stream(&request));
        warm
    });
    assert_eq!(warm.join().unwrap(), Ok(false), "the warm gave way to the run");
}
