//! Paired runs over real HTTP: the in-process wire server serves the recorded json-array answer to
//! the json twin's request and the recorded JSONL answer to the jsonl prompt's. Both sides send the
//! same model and settings; they run at once where allowed, one after the other for a server on this
//! machine (llama.cpp-style: one request at a time).

use std::sync::Arc;
use std::time::Duration;

use tunebench::compare::pair::{self, live_jobs, run_pairs, At};
use tunebench::compare::Comparison;
use tunebench::prompt::file::ProviderSettings;
use tunebench::prompt::template::Variables;
use tunebench::provider::replay::Pace;
use tunebench::provider::wire_server::{reply_from_recording, Reply, Step, WireServer};
use tunebench::run::{ProviderChoice, RunEvent, RunSettings};

use crate::support::*;

fn recorded(path: &str, pause: Duration) -> Reply {
    let text = std::fs::read_to_string(fixture(&format!("wire/{path}"))).unwrap();
    let mut reply = reply_from_recording(&text, 1.0).unwrap();
    // Hold the stream open after its head, so that runs sent at once are in flight together.
    reply.steps.insert(1, Step::Sleep(pause));
    reply
}

async fn server(pause: Duration) -> WireServer {
    WireServer::start_routed(vec![
        ("Output format: a JSON array".into(), recorded("compare/definitions_json_stream.txt", pause)),
        ("Output format: JSONL".into(), recorded("run/definitions_stream.txt", pause)),
    ])
    .await
    .unwrap()
}

fn settings(server: &WireServer) -> RunSettings {
    let specs = twin_sides("extract-definitions");
    let cli = ProviderSettings {
        name: Some("openai".into()),
        model: Some("smollm2".into()),
        base_url: Some(format!("{}/v1", server.url())),
        temperature: Some(0.0),
        max_tokens: Some(256),
        ..ProviderSettings::default()
    };
    tunebench::run::setup::settings(&specs[1].prompt, &tunebench::run::SetupOptions::from_flags(cli.clone()).unwrap())
        .unwrap()
}

/// Runs both sides of extract-definitions and its json twin, `concurrency` at a time.
async fn compare(server: &WireServer, concurrency: usize) -> (Comparison, Vec<(At, String)>) {
    let specs = twin_sides("extract-definitions");
    let settings = settings(server);
    let plans = pair::plans([&specs[0], &specs[1]], &[None], &Variables::new(), &settings).unwrap();
    let jobs = live_jobs(plans, &ProviderChoice::new(&settings, None, Pace::Instant)).unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let run = run_pairs(&jobs, concurrency, move |at, event| {
        let name = match event {
            RunEvent::TurnStarted { .. } => "started",
            RunEvent::RunEnded { .. } => "ended",
            _ => return,
        };
        seen.lock().unwrap().push((at, name.to_string()));
    });
    let records = tokio::time::timeout(Duration::from_secs(30), run).await.expect("in time").pop().unwrap();
    let events = events.lock().unwrap().clone();
    (Comparison::new(None, [&specs[0], &specs[1]], records, None), events)
}

/// The figures both runs must give, whichever way they were scheduled.
fn check_sides(comparison: &Comparison, server: &WireServer) {
    let [a, b] = &comparison.sides;
    assert_eq!((a.figures.items, a.figures.valid_items, a.figures.finish_reason.as_deref()), (3, 3, Some("stop")));
    assert_eq!((b.figures.items, b.figures.valid_items, b.figures.finish_reason.as_deref()), (3, 3, Some("stop")));
    assert!(a.run.ok && b.run.ok && comparison.ok());
    assert!(a.run.turns[0].output.starts_with("[\n  {\"entity\": \"mitochondria\""), "{}", a.run.turns[0].output);
    assert!(b.run.turns[0].output.starts_with("{\"entity\": \"mitochondria\""), "{}", b.run.turns[0].output);
    // mitochondria and ribosome on both sides; chloroplast only in the json answer, messenger RNA
    // only in the JSONL one.
    let agreement = &comparison.agreement;
    let counts = (agreement.both, agreement.same, agreement.only_a, agreement.only_b);
    assert_eq!(counts, (2, 2, 1, 1));
    // The same model and settings went out on both requests; only the prompt differs.
    let bodies: Vec<_> = server.received().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 2);
    for key in ["model", "temperature", "max_tokens", "stream"] {
        assert_eq!(bodies[0][key], bodies[1][key], "{key}");
    }
    assert_eq!(bodies[0]["model"], "smollm2");
    assert_eq!(bodies[0]["max_tokens"], 256);
    let texts: Vec<String> = bodies.iter().map(|b| b["messages"].to_string()).collect();
    assert_eq!(texts.iter().filter(|t| t.contains("Output format: a JSON array")).count(), 1);
    assert_eq!(texts.iter().filter(|t| t.contains("Output format: JSONL")).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_style_provider_runs_both_sides_at_once() {
    let server = server(Duration::from_millis(1000)).await;
    let (comparison, _) = compare(&server, 2).await;
    check_sides(&comparison, &server);
    assert_eq!(server.max_in_flight(), 2, "both streams were open at the same time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_this_machine_gets_one_request_at_a_time() {
    let server = server(Duration::from_millis(100)).await;
    // 127.0.0.1 is a llama.cpp-style local server: the pairing picks one run at a time.
    let pairing = pair::pairing(&settings(&server));
    assert_eq!(pairing.runs, 1, "{}", pairing.reason);
    assert!(pairing.reason.contains("one request at a time"), "{}", pairing.reason);
    let (comparison, events) = compare(&server, pairing.runs).await;
    check_sides(&comparison, &server);
    assert_eq!(server.max_in_flight(), 1, "the second request waited for the first answer");
    // Side A ran to its end before side B started.
    let order: Vec<(usize, &str)> = events.iter().map(|(at, name)| (at.side, name.as_str())).collect();
    assert_eq!(order, [(0, "started"), (0, "ended"), (1, "started"), (1, "ended")]);
    assert!(server.received()[0].body.contains("Output format: a JSON array"));
}
