//! The response cache: a request answered before (same provider, model, base URL and request body) is
//! answered again from its recorded transcript, instantly and without a request, so re-running a prompt
//! after an edit only calls the model for the cases whose request changed.
//!
//! It is a provider wrapper ([`Cached::wrap`], or [`provider`] from a [`ProviderChoice`]): the run engine
//! and every front end use it as any provider. Each turn is its own request (a retry carries its
//! feedback), so each turn is looked up on its own. On a hit the stream starts with
//! [`Event::Cached`] (the turn is marked `cached` in the run record) and plays the transcript as replay
//! does, with its mode, usage and finish reason. On a miss the answer streams from the provider while
//! it is recorded, and is kept only when it ends `stop` or `length`: a failed stream, an interrupted
//! one, or one the client stopped (cancelled, cut at `max_tokens` as counted here or at the answer cap,
//! which drops the stream before its end) is never kept. Replay is never cached.
//!
//! - [`key`]: what makes two requests the same ([`CacheKey`], [`Keys`]).
//! - [`store`]: the entries on disk ([`ResponseCache`]): `<cache dir>/responses/`, which can be deleted
//!   at any time without loss.

mod key;
mod store;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use futures_util::{stream, StreamExt};

use super::factory::{Lookup, ProviderChoice};
use super::RunError;
use crate::provider::kind::ProviderKind;
use crate::provider::record::Recorder;
use crate::provider::replay::{Pace, Replay};
use crate::provider::{Event, EventStream, Provider, ProviderError, Request};
use crate::truncate::transcript::Transcript;

pub use key::{CacheKey, Keys, ModelFile};
pub use store::{is_complete, ResponseCache, MAX_ENTRY_BYTES, RESPONSES_DIR};

/// Whether a run uses the response cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheMode {
    /// No cache: every request goes to the provider and nothing is kept (`run` by default,
    /// `eval --no-cache`).
    #[default]
    Off,
    /// A request answered before is played from the cache; any other goes to the provider, and its
    /// answer is kept when complete.
    Use,
    /// Every request goes to the provider (fresh answers: `eval --repeat`); complete answers are kept,
    /// replacing what was there.
    Refresh,
}

/// A provider behind the response cache.
pub struct Cached {
    inner: Arc<dyn Provider>,
    keys: Arc<Keys>,
    cache: ResponseCache,
    mode: CacheMode,
}

impl Cached {
    /// `inner` answering through `cache` as `mode` says, its requests keyed by `keys` (see
    /// [`Keys::for_choice`]); `inner` itself when `mode` is `Off` or there are no keys (replay).
    pub fn wrap(
        inner: Arc<dyn Provider>,
        keys: Option<Keys>,
        cache: ResponseCache,
        mode: CacheMode,
    ) -> Arc<dyn Provider> {
        match keys {
            Some(keys) if mode != CacheMode::Off => Arc::new(Self { inner, keys: Arc::new(keys), cache, mode }),
            _ => inner,
        }
    }
}

/// The provider `choice` builds for `case` (see [`ProviderChoice::build_with`]), behind the response
/// cache in `dir` (`None`: the platform's, see [`ResponseCache::default_dir`]) as `mode` says. Not
/// behind it when `mode` is `Off`, for replay, or when the platform has no cache directory: the cache
/// never stops a run. Behind it, the local model is loaded at the first request the cache cannot
/// answer, so a run answered wholly from the cache never loads it.
pub fn provider(
    choice: &ProviderChoice,
    case: Option<&str>,
    lookup: Lookup,
    mode: CacheMode,
    dir: Option<&Path>,
) -> Result<Arc<dyn Provider>, RunError> {
    let cache = match (mode, dir) {
        (CacheMode::Off, _) => None,
        (_, Some(dir)) => Some(ResponseCache::at(dir)),
        (_, None) => ResponseCache::default_dir(),
    };
    let (Some(cache), Some(keys)) = (cache, Keys::for_choice(choice, lookup)) else {
        return choice.build_with(case, lookup);
    };
    let inner: Arc<dyn Provider> = match choice.kind {
        ProviderKind::Local => Arc::new(Deferred { choice: choice.clone(), built: OnceLock::new() }),
        _ => choice.build_with(case, lookup)?,
    };
    Ok(Cached::wrap(inner, Some(keys), cache, mode))
}

/// The local model, loaded at its first request (its file was found when the keys were made).
struct Deferred {
    choice: ProviderChoice,
    built: OnceLock<Result<Arc<dyn Provider>, ProviderError>>,
}

impl Provider for Deferred {
    fn name(&self) -> &str {
        self.choice.kind.name()
    }

    fn stream(&self, request: &Request) -> EventStream {
        let built = self.built.get_or_init(|| {
            self.choice.build_with(None, &|_| None).map_err(|error| match error {
                RunError::Provider(error) => error,
                other => ProviderError::Config { provider: self.choice.kind.name().into(), message: other.to_string() },
            })
        });
        match built {
            Ok(provider) => provider.stream(request),
            Err(error) => Box::pin(stream::iter([Event::Error(error.clone())])),
        }
    }
}

impl Provider for Cached {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream(&self, request: &Request) -> EventStream {
        let (inner, keys, cache, mode) =
            (Arc::clone(&self.inner), Arc::clone(&self.keys), self.cache.clone(), self.mode);
        let request = request.clone();
        // Nothing is read or sent until the stream is polled.
        let opened = async move {
            let Some(key) = keys.key(&request) else { return inner.stream(&request) };
            if mode == CacheMode::Use {
                if let Some(transcript) = cache.get(&key) {
                    return played(transcript, &request);
                }
            }
            recording(inner.as_ref(), &request, cache, key)
        };
        Box::pin(stream::once(opened).flatten())
    }
}

/// A kept answer played instantly, after [`Event::Cached`].
fn played(transcript: Transcript, request: &Request) -> EventStream {
    let replay = Replay::new(transcript, Pace::Instant).stream(request);
    Box::pin(stream::iter([Event::Cached]).chain(replay))
}

/// `inner`'s answer to `request`, passed on unchanged while it is recorded; kept under `key` when its
/// last event is a `stop` or `length` finish. A stream dropped before its end keeps nothing.
fn recording(inner: &dyn Provider, request: &Request, cache: ResponseCache, key: CacheKey) -> EventStream {
    let mut recorder = Some(Recorder::new(inner.name(), request));
    let mut bytes = 0u64;
    let events = inner.stream(request).inspect(move |event| {
        let Some(active) = recorder.as_mut() else { return };
        if matches!(event, Event::Thinking { .. }) {
            // A thought is not in the transcript: an answer played back would lose it, so none is kept.
            recorder = None;
            return;
        }
        bytes += event.text().map_or(0, |text| text.len() as u64);
        if bytes > MAX_ENTRY_BYTES {
            // Too large to keep: stop recording.
            recorder = None;
            return;
        }
        active.observe(event);
        if matches!(event, Event::Finish(_) | Event::Error(_)) {
            if let Some(done) = recorder.take() {
                cache.put(&key, &done.into_transcript());
            }
        }
    });
    Box::pin(events)
}
