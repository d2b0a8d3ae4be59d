//! A cancel (ctrl-c in the CLI) stops the optimization and keeps what was scored: the core driven in
//! process, cancelled once the baseline's train cases are scored; the record says so, keeps the
//! baseline's cases and reads back from the store.

use tunebench::optimize::{store, OptimizeEvent, OptimizeOptions};
use tunebench::provider::kind::ProviderKind;
use tunebench::run::{CacheMode, SetupOptions, Stop, Target};

use super::support::{prompt_in, proposal, scripted, Route};

#[test]
fn a_cancel_stops_the_optimization_and_keeps_the_record_of_what_was_scored() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path());
    let s = scripted(
        vec![proposal("never asked", "GOOD-EDIT")],
        vec![Route { marker: "GOOD-EDIT", right_on: vec![1, 2, 3, 4, 5, 6] }],
    );
    let target = Target {
        provider: Some(ProviderKind::Openai),
        model: Some("test-model".into()),
        base_url: Some(format!("{}/v1", s.server.url())),
        ..Target::default()
    };
    let setup = SetupOptions {
        target,
        cache: CacheMode::Use,
        cache_dir: Some(dir.path().join("cache")),
        ..SetupOptions::default()
    };
    let mut options = OptimizeOptions::new(prompt, setup);
    options.evals_dir = Some(dir.path().join("evals"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut stop = Some(stop);
    let mut events = Vec::new();
    let sink = |event: OptimizeEvent| {
        if matches!(&event, OptimizeEvent::Scored { candidate, held_out: false, .. } if candidate == "baseline") {
            if let Some(stop) = stop.take() {
                stop.send(()).unwrap();
            }
        }
        events.push(event);
    };
    let cancel = async move {
        let _ = stopped.await;
        Stop::Signal("SIGINT")
    };
    let record = s.runtime.block_on(tunebench::optimize::run(&options, sink, cancel)).unwrap();
    assert!(record.cancelled);
    assert_eq!(record.stopped.as_deref(), Some("cancelled"));
    assert_eq!(record.baseline.cases.len(), 3, "the baseline's train cases are kept");
    assert!(record.baseline.train.is_some());
    assert_eq!(record.best, None, "no held-out ranking after a cancel");
    assert_eq!(s.proposer_requests.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing asked after the cancel");
    assert_eq!(events.last(), Some(&OptimizeEvent::Done { cancelled: true }));

    let kept = dir.path().join("optimizations");
    let path = store::save_in(&kept, &record).unwrap();
    assert_eq!(store::load_file(&path).unwrap(), record);
    assert_eq!(store::find_in(&kept, "last").unwrap().id, record.id);
    let (listed, _) = store::list_in(&kept).unwrap();
    assert!(listed[0].cancelled);
}
