//! The stream readers as a provider runs them, fed a response body from memory: the entry point of
//! the `sse_stream` and `ndjson_stream` fuzz targets (`fuzz/`), hidden from the docs.

use bytes::Bytes;
use futures_util::StreamExt;

use super::generate::generate;
use super::http::{guard, HttpOptions, RawBody};
use super::lines::ndjson_units;
use super::sse::sse_units;
use super::turn::Answer;
use super::{anthropic, ollama, openai, Event, Request};

/// Which provider's stream the body is read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible SSE (`chat.completion.chunk` events, `[DONE]`).
    OpenAi,
    /// Anthropic Messages SSE (`message_start` … `message_stop`).
    Anthropic,
    /// Ollama NDJSON (`{"message": …, "done": …}` lines).
    Ollama,
}

/// The events a provider streams for a response body arriving as `pieces`, with lines limited to
/// `max_line_bytes` (the guard, the SSE or NDJSON reader and the provider's decoding, as a live run).
pub fn stream_events(wire: Wire, pieces: &[&[u8]], max_line_bytes: usize) -> Vec<Event> {
    let body: Vec<Result<Bytes, String>> = pieces.iter().map(|piece| Ok(Bytes::copy_from_slice(piece))).collect();
    let body: RawBody = Box::pin(futures_util::stream::iter(body));
    let options = HttpOptions { max_line_bytes, ..HttpOptions::default() };
    let request = Request::new("m").user("u");
    let events = generate(move |emit| async move {
        let mut answer = Answer::new(emit, &request);
        let name = "fuzz";
        let body = guard(name, body, &options);
        let read = match wire {
            Wire::OpenAi => openai::read_events(name, &mut answer, sse_units(name, body)).await,
            Wire::Anthropic => anthropic::read_events(&mut answer, sse_units(name, body)).await,
            Wire::Ollama => ollama::read_events(&mut answer, ndjson_units(name, body)).await,
        };
        match read {
            Ok(()) => answer.end(),
            Err(error) => answer.fail(error),
        }
    });
    // No runtime (the OS refused its timer): nothing can be read, so nothing is streamed.
    RUNTIME.with(|runtime| runtime.as_ref().map(|runtime| runtime.block_on(events.collect())).unwrap_or_default())
}

thread_local! {
    static RUNTIME: Option<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FinishReason, ProviderError};

    #[test]
    fn a_body_split_anywhere_streams_the_same_events() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"a\\\":1}\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";
        let whole = stream_events(Wire::OpenAi, &[body], 1 << 20);
        assert_eq!(whole.first(), Some(&Event::Delta("{\"a\":1}".into())));
        assert_eq!(whole.last(), Some(&Event::Finish(FinishReason::Stop)));
        let pieces: Vec<&[u8]> = body.chunks(7).collect();
        assert_eq!(stream_events(Wire::OpenAi, &pieces, 1 << 20), whole);
    }

    #[test]
    fn a_line_past_the_limit_ends_the_stream_with_too_large() {
        let body = b"{\"message\":{\"content\":\"ab\"},\"done\":false}\n";
        let events = stream_events(Wire::Ollama, &[body], 8);
        assert!(
            matches!(events.last(), Some(Event::Error(ProviderError::TooLarge { limit_bytes: 8, .. }))),
            "{events:?}"
        );
    }
}
