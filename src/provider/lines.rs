//! Newline-delimited JSON (Ollama's stream) off a guarded body, one [`Unit`] per non-blank line.

use std::collections::VecDeque;

use futures_util::StreamExt;

use super::http::Body;
use super::sse::{Unit, Units};
use super::ProviderError;

struct State {
    body: Body,
    provider: String,
    /// Bytes of the line not yet ended by `\n`.
    open: Vec<u8>,
    ready: VecDeque<Result<Unit, ProviderError>>,
    done: bool,
}

/// The lines of `body`; a last line without `\n` counts too. Invalid UTF-8 is a `Malformed` error.
pub(crate) fn ndjson_units(provider: &str, body: Body) -> Units {
    let state = State { body, provider: provider.to_string(), open: Vec::new(), ready: VecDeque::new(), done: false };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                if item.is_err() {
                    state.done = true;
                    state.ready.clear();
                }
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            match state.body.next().await {
                Some(Ok(bytes)) => state.split(&bytes),
                Some(Err(error)) => state.ready.push_back(Err(error)),
                None => {
                    let rest = std::mem::take(&mut state.open);
                    state.push_line(&rest);
                    state.done = true;
                }
            }
        }
    }))
}

impl State {
    fn split(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let (line, tail) = rest.split_at(end);
            if self.open.is_empty() {
                self.push_line(line);
            } else {
                let mut whole = std::mem::take(&mut self.open);
                whole.extend_from_slice(line);
                self.push_line(&whole);
            }
            rest = tail.get(1..).unwrap_or_default();
        }
        self.open.extend_from_slice(rest);
    }

    fn push_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let item = match std::str::from_utf8(line) {
            Ok(text) => Ok(Unit { event: None, data: text.to_string() }),
            Err(error) => Err(ProviderError::Malformed {
                provider: self.provider.clone(),
                what: "NDJSON line".to_string(),
                message: error.to_string(),
                snippet: super::error::snippet(&String::from_utf8_lossy(line)),
            }),
        };
        self.ready.push_back(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn lines_of(pieces: &[&'static [u8]]) -> Vec<Result<Unit, ProviderError>> {
        let body: Body =
            Box::pin(futures_util::stream::iter(pieces.iter().map(|p| Ok(Bytes::from_static(p))).collect::<Vec<_>>()));
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(ndjson_units("t", body).collect())
    }

    fn data(units: &[Result<Unit, ProviderError>]) -> Vec<String> {
        units.iter().map(|u| u.as_ref().map(|u| u.data.clone()).unwrap_or_else(|e| format!("ERR {e}"))).collect()
    }

    #[test]
    fn lines_split_anywhere_come_out_whole() {
        let units = lines_of(&[b"{\"a\":", b"1}\n\n{\"b\":2}\r\n{\"c\"", b":3}"]);
        assert_eq!(data(&units), ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        assert!(lines_of(&[]).is_empty());
        assert!(lines_of(&[b"\n \n"]).is_empty());
    }

    #[test]
    fn invalid_utf8_ends_the_stream_with_an_error() {
        let units = lines_of(&[b"{\"a\":1}\n\xff\n{\"b\":2}\n"]);
        assert_eq!(units.len(), 2);
        assert!(matches!(units[1], Err(ProviderError::Malformed { .. })));
    }
}
