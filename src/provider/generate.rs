//! Turns an async function that emits events into an [`EventStream`], keeping "Finish or Error is last".
//!
//! The function runs only while the stream is polled and the queue is empty, so it never runs ahead of
//! the consumer by more than one network read; dropping the stream drops the function mid-await, which
//! drops its HTTP response and closes the connection.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures_util::Stream;

use super::{Event, EventStream};

#[derive(Default)]
struct Shared {
    events: VecDeque<Event>,
    /// A `Finish` or `Error` was queued: nothing more is accepted.
    closed: bool,
}

/// The sending half handed to the producing function.
#[derive(Clone)]
pub(crate) struct Emit {
    shared: Arc<Mutex<Shared>>,
}

impl Emit {
    /// An `Emit` whose events nobody reads (a request that is not a stream: embeddings).
    pub(crate) fn discarding() -> Self {
        Self { shared: Arc::new(Mutex::new(Shared::default())) }
    }

    /// Queues `event`; ignored once a `Finish` or `Error` was queued.
    pub(crate) fn send(&self, event: Event) {
        let mut shared = lock(&self.shared);
        if shared.closed {
            return;
        }
        shared.closed = matches!(event, Event::Finish(_) | Event::Error(_));
        shared.events.push_back(event);
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

type Producer = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Generated {
    shared: Arc<Mutex<Shared>>,
    producer: Option<Producer>,
}

/// The stream of the events `produce` sends.
pub(crate) fn generate<F, Fut>(produce: F) -> EventStream
where
    F: FnOnce(Emit) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let shared = Arc::new(Mutex::new(Shared::default()));
    let producer = produce(Emit { shared: Arc::clone(&shared) });
    Box::pin(Generated { shared, producer: Some(Box::pin(producer)) })
}

impl Generated {
    fn pop(&self) -> (Option<Event>, bool) {
        let mut shared = lock(&self.shared);
        (shared.events.pop_front(), shared.closed)
    }
}

impl Stream for Generated {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let (event, closed) = self.pop();
        if event.is_some() {
            return Poll::Ready(event);
        }
        if closed {
            // The last event was delivered: stop the producer (and its connection) now.
            self.producer = None;
            return Poll::Ready(None);
        }
        if let Some(producer) = self.producer.as_mut() {
            if producer.as_mut().poll(cx).is_ready() {
                self.producer = None;
            }
        }
        match self.pop() {
            (Some(event), _) => Poll::Ready(Some(event)),
            (None, true) => Poll::Ready(None),
            (None, false) if self.producer.is_none() => Poll::Ready(None),
            (None, false) => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FinishReason, ProviderError};
    use futures_util::StreamExt;

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
    }

    #[test]
    fn nothing_follows_the_last_event() {
        let events: Vec<Event> = block_on(
            generate(|emit| async move {
                emit.send(Event::Delta("a".into()));
                tokio::task::yield_now().await;
                emit.send(Event::Finish(FinishReason::Stop));
                emit.send(Event::Delta("late".into()));
                emit.send(Event::Error(ProviderError::Server { provider: "p".into(), message: "m".into() }));
            })
            .collect(),
        );
        assert_eq!(events, [Event::Delta("a".into()), Event::Finish(FinishReason::Stop)]);
    }

    #[test]
    fn a_producer_that_ends_silently_ends_the_stream() {
        let events: Vec<Event> = block_on(generate(|_emit| async {}).collect());
        assert!(events.is_empty());
    }

    #[test]
    fn dropping_the_stream_drops_the_producer() {
        let flag = Arc::new(());
        let held = Arc::clone(&flag);
        let stream = generate(move |emit| async move {
            let _held = held;
            emit.send(Event::Delta("a".into()));
            std::future::pending::<()>().await;
        });
        block_on(async {
            let mut stream = stream;
            assert_eq!(stream.next().await, Some(Event::Delta("a".into())));
            assert_eq!(Arc::strong_count(&flag), 2);
            drop(stream);
        });
        assert_eq!(Arc::strong_count(&flag), 1);
    }
}
