//! Batches: every case of a prompt, at most `concurrency` streams at a time, records in case order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tunebench::prompt::file::{PromptFile, ProviderSettings};
use tunebench::provider::{Event, EventStream, FinishReason, Provider, Request};
use tunebench::run::{run_batch, Job, RunEvent};

use crate::support::*;

/// Streams currently open, and the most ever open at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
}

struct Open(Arc<Gauge>);

impl Open {
    fn new(gauge: &Arc<Gauge>) -> Self {
        let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
        gauge.max.fetch_max(now, Ordering::SeqCst);
        Self(Arc::clone(gauge))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers every request with one valid JSONL line after a pause, counting open streams.
struct Slow {
    gauge: Arc<Gauge>,
}

impl Provider for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn stream(&self, request: &Request) -> EventStream {
        let gauge = Arc::clone(&self.gauge);
        let entity = request.messages.last().map_or(0, |m| m.content.len());
        Box::pin(futures_util::stream::unfold((0u8, None::<Open>), move |(step, open)| {
            let gauge = Arc::clone(&gauge);
            async move {
                match step {
                    0 => {
                        let open = Open::new(&gauge);
                        tokio::time::sleep(Duration::from_millis(60)).await;
                        let line = format!("{{\"entity\": \"e{entity}\", \"definition\": \"d\"}}\n");
                        Some((Event::Delta(line), (1, Some(open))))
                    }
                    1 => Some((Event::Finish(FinishReason::Stop), (2, open))),
                    _ => None,
                }
            }
        }))
    }
}

fn jobs(provider: Arc<dyn Provider>) -> Vec<Job> {
    let path = sample("extract-definitions");
    let prompt = PromptFile::load(&path).unwrap();
    prompt
        .cases
        .iter()
        .map(|case| Job {
            provider: Arc::clone(&provider),
            plan: plan_with(&path, Some(&case.name), &ProviderSettings::default(), None),
        })
        .collect()
}

#[tokio::test]
async fn cases_run_concurrently_within_the_bound_and_come_back_in_order() {
    for (bound, expected_max) in [(2, 2), (1, 1)] {
        let gauge = Arc::new(Gauge::default());
        let jobs = jobs(Arc::new(Slow { gauge: Arc::clone(&gauge) }));
        assert_eq!(jobs.len(), 3);
        let mut ended = Vec::new();
        let records = run_batch(&jobs, bound, |index, event| {
            if let RunEvent::RunEnded { ok, .. } = event {
                ended.push((index, ok));
            }
        })
        .await;
        assert_eq!(gauge.max.load(Ordering::SeqCst), expected_max, "bound {bound}");
        assert_eq!(gauge.now.load(Ordering::SeqCst), 0, "every stream was closed");
        let cases: Vec<_> = records.iter().map(|r| r.case.clone().unwrap()).collect();
        assert_eq!(cases, ["astronomy", "medicine-comparisons", "nothing-to-define"]);
        assert!(records.iter().all(|r| r.ok && r.provider == "slow"));
        ended.sort();
        assert_eq!(ended, [(0, true), (1, true), (2, true)]);
    }
}

#[tokio::test]
async fn dropping_a_run_closes_its_connection() {
    use tunebench::provider::wire_server::{Reply, Step};
    // The server sends the head and one token, then waits for the client to hang up.
    let reply = Reply::chunked("text/event-stream")
        .chunk("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\"},\"finish_reason\":null}]}\n\n")
        .then(Step::AwaitClose);
    let server = serve(vec![reply]).await;
    let provider = openai(&server);
    let plan = plan(&sample("extract-definitions"), None);
    let (first_delta, seen) = tokio::sync::oneshot::channel::<()>();
    let mut first_delta = Some(first_delta);
    let task = tokio::spawn(async move {
        tunebench::run::run(provider.as_ref(), &plan, |event| {
            if matches!(event, RunEvent::Delta(_)) {
                if let Some(tx) = first_delta.take() {
                    let _ = tx.send(());
                }
            }
        })
        .await
    });
    tokio::time::timeout(Duration::from_secs(10), seen).await.unwrap().unwrap();
    task.abort();
    assert!(server.wait_for_client_closes(1, Duration::from_secs(10)).await, "the connection was closed");
}
