//! Server-sent events off a guarded body (parsed by the `sse-stream` crate), as [`Unit`]s.

use std::pin::Pin;

use futures_util::{future, Stream, StreamExt};
use sse_stream::{Error as SseError, SseByteStream};

use super::error::chain;
use super::http::Body;
use super::ProviderError;

/// One message off the wire: an SSE event (its type and data) or one NDJSON line (data only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub event: Option<String>,
    pub data: String,
}

/// A stream of units; it ends after its first error.
pub(crate) type Units = Pin<Box<dyn Stream<Item = Result<Unit, ProviderError>> + Send>>;

/// The SSE events of `body`. Comments (`: ping`) and blocks without data are skipped.
pub(crate) fn sse_units(provider: &str, body: Body) -> Units {
    let provider = provider.to_string();
    Box::pin(SseByteStream::new(body).filter_map(move |item| {
        future::ready(match item {
            Ok(sse) => sse.data.map(|data| Ok(Unit { event: sse.event, data })),
            Err(SseError::Body(inner)) => Some(Err(match inner.downcast::<ProviderError>() {
                Ok(error) => *error,
                Err(other) => ProviderError::Broken {
                    provider: provider.clone(),
                    received_bytes: 0,
                    message: chain(other.as_ref()),
                },
            })),
            Err(other) => Some(Err(ProviderError::Malformed {
                provider: provider.clone(),
                what: "SSE event".to_string(),
                message: other.to_string(),
                snippet: String::new(),
            })),
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn units_of(pieces: &[&'static [u8]]) -> Vec<Result<Unit, ProviderError>> {
        let body: Body =
            Box::pin(futures_util::stream::iter(pieces.iter().map(|p| Ok(Bytes::from_static(p))).collect::<Vec<_>>()));
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(sse_units("t", body).collect())
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let units = units_of(&[b": ping - now\n\nevent: message_st", b"art\ndata: {\"a\"", b":1}\n\ndata: [DONE]\n\n"]);
        assert_eq!(
            units,
            [
                Ok(Unit { event: Some("message_start".into()), data: "{\"a\":1}".into() }),
                Ok(Unit { event: None, data: "[DONE]".into() })
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_a_malformed_event() {
        let units = units_of(&[b"data: \xff\xfe\n\n"]);
        assert!(matches!(&units[..], [Err(ProviderError::Malformed { .. })]), "{units:?}");
    }
}
