//! The response cache end to end: runs set up as `run` and `eval` set them up (`RunSetup` with a
//! `CacheMode`), against an in-process server replaying recorded wire traffic that counts the
//! requests it gets. A repeated request is answered from the cache with no request; an edited one,
//! a failed one, a cut or cancelled one, a damaged entry and `Refresh` all go to the server.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::wire_server::{Reply, WireServer};
use tunebench::provider::FinishReason;
use tunebench::run::{CacheMode, RunRecord, RunSetup, SetupOptions, Stop};

use crate::support::*;

/// The setup `run`/`eval` makes for `prompt` against `server`, with the cache in `cache`.
fn cached_setup(prompt: &Path, server: &WireServer, cache: &Path, mode: CacheMode) -> RunSetup {
    setup_with(prompt, server, cache, mode, ProviderSettings::default())
}

fn setup_with(prompt: &Path, server: &WireServer, cache: &Path, mode: CacheMode, more: ProviderSettings) -> RunSetup {
    let overrides =
        ProviderSettings { name: Some("openai".into()), base_url: Some(format!("{}/v1", server.url())), ..more };
    let options = SetupOptions {
        cache: mode,
        cache_dir: Some(cache.to_path_buf()),
        ..SetupOptions::from_flags(overrides).unwrap()
    };
    RunSetup::load(prompt, options).unwrap()
}

/// One run of `setup`'s default case, as `run` does it (no environment read).
async fn run_setup(setup: &RunSetup) -> RunRecord {
    let provider = setup.provider_with(None, &|_| None).unwrap();
    run(provider.as_ref(), &setup.plan(None).unwrap()).await.0
}

/// A server answering every request with the recording at `fixture`.
async fn always(fixture: &'static str) -> WireServer {
    WireServer::start_handler(move |_| recorded(fixture)).await.unwrap()
}

/// The cache's entry files.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            if entry.path().extension().is_some_and(|e| e == "jsonl") {
                found.push(entry.path());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_repeated_request_is_answered_from_the_cache_without_a_request() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);

    let first = run_setup(&setup).await;
    assert_eq!(server.received().len(), 1);
    assert!(first.ok && !first.turns[0].cached, "{:?}", first.warnings);
    assert_eq!(entries(cache.path()).len(), 1);

    let second = run_setup(&setup).await;
    assert_eq!(server.received().len(), 1, "no new request");
    let (live, kept) = (&first.turns[0], &second.turns[0]);
    assert!(kept.cached && second.ok);
    assert_eq!(kept.output, live.output);
    assert_eq!(second.result, first.result);
    assert_eq!((kept.finish_reason.clone(), kept.usage), (Some(FinishReason::Stop), live.usage));
    assert_eq!(kept.chunks, live.chunks, "played chunk by chunk as recorded");
    assert_eq!(serde_json::to_value(&kept.parse).unwrap(), serde_json::to_value(&live.parse).unwrap());
    assert_eq!((second.provider.as_str(), second.model.as_str()), ("openai", first.model.as_str()));
    assert!(second.summary_line().ends_with("· cached"), "{}", second.summary_line());

    // The record says so, and reads back; a live turn says nothing.
    let json = serde_json::to_value(&second).unwrap();
    assert_eq!(json["turns"][0]["cached"], true);
    assert!(serde_json::to_value(&first).unwrap()["turns"][0].get("cached").is_none());
    assert_eq!(serde_json::from_value::<RunRecord>(json).unwrap(), second);

    // The prompt file's place is not part of the request: an unedited copy is the same request.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(sample("extract-definitions")).unwrap();
    let copy = prompt_file(dir.path(), "copy", &text);
    assert!(run_setup(&cached_setup(&copy, &server, cache.path(), CacheMode::Use)).await.turns[0].cached);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn an_edit_to_the_prompt_text_or_a_setting_is_a_new_request() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(sample("extract-definitions")).unwrap();
    let prompt = prompt_file(dir.path(), "p", &text);
    assert!(!run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Use)).await.turns[0].cached);
    assert!(run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Use)).await.turns[0].cached);
    assert_eq!(server.received().len(), 1);

    let edited = prompt_file(dir.path(), "p", &text.replace("Skip entities", "Leave out entities"));
    let after_edit = run_setup(&cached_setup(&edited, &server, cache.path(), CacheMode::Use)).await;
    assert!(!after_edit.turns[0].cached);
    assert_eq!(server.received().len(), 2, "the edited prompt was sent");
    assert!(server.received()[1].body.contains("Leave out entities"));

    let hotter = ProviderSettings { temperature: Some(0.7), ..ProviderSettings::default() };
    let setting = run_setup(&setup_with(&edited, &server, cache.path(), CacheMode::Use, hotter)).await;
    assert!(!setting.turns[0].cached);
    assert_eq!(server.received().len(), 3, "another temperature is another request");
    assert_eq!(entries(cache.path()).len(), 3);
}

#[tokio::test]
async fn a_failed_request_is_not_kept_and_is_sent_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let server = WireServer::start_handler(move |_| match counted.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::status(500, "text/plain", "Internal Server Error"),
        _ => recorded("run/definitions_stream.txt"),
    })
    .await
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    let failed = run_setup(&setup).await;
    assert!(!failed.ok && failed.turns[0].error.is_some(), "{failed:?}");
    assert!(entries(cache.path()).is_empty());
    let again = run_setup(&setup).await;
    assert_eq!(server.received().len(), 2, "the error was not cached");
    assert!(again.ok && !again.turns[0].cached);
    assert!(run_setup(&setup).await.turns[0].cached);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn an_answer_cut_by_max_tokens_is_kept_as_it_ended() {
    let server = always("run/definitions_length_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    let live = run_setup(&setup).await;
    assert_eq!(live.turns[0].finish_reason, Some(FinishReason::Length));
    let kept = run_setup(&setup).await;
    assert_eq!(server.received().len(), 1);
    assert!(kept.turns[0].cached && kept.truncated);
    assert_eq!(kept.turns[0].finish_reason, Some(FinishReason::Length));
    assert_eq!((kept.result.clone(), kept.warnings.clone()), (live.result, live.warnings));
}

#[tokio::test]
async fn an_answer_the_client_cut_or_cancelled_is_not_kept() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let small = ProviderSettings { max_answer_bytes: Some(40), ..ProviderSettings::default() };
    let cut = setup_with(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use, small);
    for _ in 0..2 {
        let record = run_setup(&cut).await;
        assert!(record.turns[0].cut_by_client.is_some() && !record.turns[0].cached, "{record:?}");
    }
    assert_eq!(server.received().len(), 2, "a cut answer is asked for again");
    assert!(entries(cache.path()).is_empty());

    // Cancelled at the first piece of the answer: the stream is dropped before its end.
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    let provider = setup.provider_with(None, &|_| None).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut stop = Some(stop);
    let sink = move |event| {
        if matches!(event, tunebench::run::RunEvent::Delta(_)) {
            stop.take().map(|stop| stop.send(()));
        }
    };
    let cancel = async move {
        let _ = stopped.await;
        Stop::User
    };
    let record = tunebench::run::run_until(provider.as_ref(), &setup.plan(None).unwrap(), sink, cancel).await;
    assert!(record.cancelled && !record.turns[0].cached);
    assert!(entries(cache.path()).is_empty());
    assert!(!run_setup(&setup).await.turns[0].cached);
    assert_eq!(server.received().len(), 4, "the cancelled answer was asked for again");
}

#[tokio::test]
async fn a_damaged_entry_is_a_miss_and_is_written_again() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    let first = run_setup(&setup).await;
    let [entry] = entries(cache.path()).try_into().unwrap();
    let whole = std::fs::read_to_string(&entry).unwrap();
    for damage in [&whole[..whole.len() / 2], "\u{0}\u{1}garbage", ""] {
        std::fs::write(&entry, damage).unwrap();
        let record = run_setup(&setup).await;
        assert!(!record.turns[0].cached && record.ok, "{damage:?}");
        assert_eq!(record.result, first.result);
        let rewritten = std::fs::read_to_string(&entry).unwrap();
        assert!(rewritten.starts_with("{\"response_cache\":2,") && rewritten.len() > whole.len() / 2, "{rewritten}");
    }
    assert_eq!(server.received().len(), 4);
    assert!(run_setup(&setup).await.turns[0].cached);
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn refresh_takes_a_fresh_answer_and_keeps_it_and_off_keeps_nothing() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let prompt = sample("extract-definitions");
    let off = run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Off)).await;
    assert!(off.ok && !off.turns[0].cached);
    assert!(entries(cache.path()).is_empty(), "Off writes nothing");

    assert!(!run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Use)).await.turns[0].cached);
    let [entry] = entries(cache.path()).try_into().unwrap();
    std::fs::write(&entry, "").unwrap();
    let fresh = run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Refresh)).await;
    assert!(fresh.ok && !fresh.turns[0].cached);
    assert_eq!(server.received().len(), 3, "Refresh asked the server");
    assert!(run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Use)).await.turns[0].cached);
    assert_eq!(server.received().len(), 3, "and kept its answer");
    let fresh = run_setup(&cached_setup(&prompt, &server, cache.path(), CacheMode::Refresh)).await;
    assert!(!fresh.turns[0].cached);
    assert_eq!(server.received().len(), 4, "Refresh asks even when an answer is kept");
}

#[tokio::test]
async fn each_turn_of_a_retry_is_its_own_request() {
    // Turn 1 is answered badly; the retry (carrying the answer and its feedback) well.
    let server = WireServer::start_handler(|request| {
        let messages = request.json()["messages"].as_array().map_or(0, Vec::len);
        recorded(if messages > 2 { "run/definitions_stream.txt" } else { "run/definitions_invalid_stream.txt" })
    })
    .await
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    setup.settings.max_turns = 2;
    let live = run_setup(&setup).await;
    assert!(live.ok && live.turns.len() == 2, "{:?}", live.warnings);
    assert_eq!(server.received().len(), 2);
    assert_eq!(entries(cache.path()).len(), 2);
    let kept = run_setup(&setup).await;
    assert_eq!(server.received().len(), 2);
    assert!(kept.ok && kept.turns.iter().all(|t| t.cached));
    assert_eq!(kept.turns[0].feedback, live.turns[0].feedback);
    assert_eq!(kept.result, live.result);
}

#[tokio::test]
async fn concurrent_runs_of_one_request_leave_one_whole_entry() {
    let server = always("run/definitions_stream.txt").await;
    let cache = tempfile::tempdir().unwrap();
    let setup = cached_setup(&sample("extract-definitions"), &server, cache.path(), CacheMode::Use);
    let jobs = setup.jobs(&[None, None, None, None], false).unwrap();
    let records = tunebench::run::run_batch(&jobs, 4, |_, _| {}).await;
    assert!(records.iter().all(|r| r.ok && !r.turns[0].cached));
    assert_eq!(server.received().len(), 4);
    let [entry] = entries(cache.path()).try_into().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(entry.parent().unwrap()).unwrap().flatten().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
    assert!(run_setup(&setup).await.turns[0].cached);
    assert_eq!(server.received().len(), 4);
}

#[test]
fn run_with_cache_answers_a_repeated_run_from_the_cache_and_says_so() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(always("run/definitions_stream.txt"));
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let run = |flags: &[&str]| {
        let output = tunebench(dir.path())
            .env("TUNEBENCH_CACHE_DIR", &cache)
            .arg("run")
            .arg(sample("extract-definitions"))
            .args(["--provider", "openai", "--base-url", &format!("{}/v1", server.url())])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        (String::from_utf8(output.stdout).unwrap(), stderr)
    };
    let (live, stderr) = run(&["--cache"]);
    assert!(stderr.contains("ttft") && !stderr.contains("cached"), "{stderr}");
    assert_eq!(entries(&cache.join("responses")).len(), 1);
    let (kept, stderr) = run(&["--cache"]);
    assert_eq!(server.received().len(), 1, "{stderr}");
    assert_eq!(kept, live);
    assert!(stderr.contains("finish stop · tokens ") && stderr.contains(" · cached"), "{stderr}");
    let (_, stderr) = run(&[]);
    assert_eq!(server.received().len(), 2, "without --cache the model is asked: {stderr}");
    let history = tunebench::run::history::read(&dir.path().join("history.jsonl")).unwrap().records;
    let cached: Vec<bool> = history.iter().map(|r| r.turns[0].cached).collect();
    assert_eq!(cached, [false, true, false]);
}
