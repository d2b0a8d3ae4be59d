//! Writing any provider's stream down as a transcript (CLI.md's format), with each chunk's time.
//!
//! The header keeps the request as sent (it holds no key) and, under `request.mode`, how the structured
//! mode was settled, so a replay reproduces the run record.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Value;

use super::{Event, EventStream, Request, Usage};
use crate::truncate::transcript::{Chunk, End, Header, Transcript, FORMAT_VERSION};

/// Builds a transcript from the events of one request.
#[derive(Clone, Debug)]
pub struct Recorder {
    transcript: Transcript,
    usage: Option<Usage>,
    started: Instant,
}

impl Recorder {
    /// Starts recording now: chunk times count from this moment (when the request is sent).
    pub fn new(provider: &str, request: &Request) -> Self {
        let header = Header {
            transcript: FORMAT_VERSION,
            provider: provider.to_string(),
            model: request.model.clone(),
            request: serde_json::to_value(request).unwrap_or(Value::Null),
        };
        Self { transcript: Transcript { header, chunks: Vec::new(), end: None }, usage: None, started: Instant::now() }
    }

    /// Milliseconds since recording started.
    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Records `event` at the current time.
    pub fn observe(&mut self, event: &Event) {
        let t_ms = self.elapsed_ms();
        self.observe_at(event, t_ms);
    }

    /// Records `event` at `t_ms`.
    pub fn observe_at(&mut self, event: &Event, t_ms: u64) {
        match event {
            Event::Mode(report) => {
                if let (Value::Object(request), Ok(mode)) =
                    (&mut self.transcript.header.request, serde_json::to_value(report))
                {
                    request.insert("mode".to_string(), mode);
                }
            }
            // The thought is kept in the run record's turn, not in the answer's chunks.
            Event::Retrying { .. } | Event::Cached | Event::Thinking { .. } => {}
            Event::Delta(text) => self.transcript.chunks.push(Chunk { t_ms, delta: text.clone(), ..Chunk::default() }),
            Event::Token { id, text } => {
                self.transcript.chunks.push(Chunk { t_ms, delta: text.clone(), token: Some(*id), ..Chunk::default() })
            }
            Event::Probs(probs) => {
                if let Some(chunk) = self.transcript.chunks.last_mut() {
                    chunk.probs.extend(probs.iter().cloned());
                }
            }
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish(reason) => {
                let end =
                    End { t_ms, finish_reason: Some(reason.as_str().to_string()), usage: self.usage, error: None };
                self.transcript.end = Some(end);
            }
            Event::Error(error) => {
                let end = End { t_ms, finish_reason: None, usage: self.usage, error: Some(error.to_value()) };
                self.transcript.end = Some(end);
            }
        }
    }

    /// Keeps the first `len` bytes of the last chunk's text (a client that stops the answer inside a
    /// chunk: the transcript holds the answer as kept).
    pub fn keep_last_chunk(&mut self, len: usize) {
        if let Some(chunk) = self.transcript.chunks.last_mut() {
            if chunk.delta.is_char_boundary(len) {
                chunk.delta.truncate(len);
            }
        }
    }

    /// The transcript so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn into_transcript(self) -> Transcript {
        self.transcript
    }
}

/// `stream` passed through unchanged while `recorder` writes it down; read the transcript from the
/// returned handle once the stream has ended.
pub fn recorded(stream: EventStream, recorder: Recorder) -> (EventStream, Arc<Mutex<Recorder>>) {
    let handle = Arc::new(Mutex::new(recorder));
    let shared = Arc::clone(&handle);
    let stream = stream.inspect(move |event| {
        if let Ok(mut recorder) = shared.lock() {
            recorder.observe(event);
        }
    });
    (Box::pin(stream), handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FinishReason, ModeReport, ProviderError, StructuredMode};

    #[test]
    fn events_become_transcript_lines() {
        let request = Request::new("m").user("u");
        let mut recorder = Recorder::new("openai", &request);
        let mode = ModeReport {
            requested: StructuredMode::JsonSchema,
            used: StructuredMode::JsonObject,
            ..ModeReport::default()
        };
        recorder.observe_at(&Event::Mode(mode), 0);
        recorder.observe_at(&Event::Delta("{\"a\"".into()), 12);
        recorder.observe_at(&Event::Delta(":1}".into()), 15);
        recorder.observe_at(
            &Event::Usage(Usage { input_tokens: 3, output_tokens: 2, estimated: true, cached_input_tokens: 0 }),
            20,
        );
        recorder.observe_at(&Event::Finish(FinishReason::Length), 20);
        let text = recorder.transcript().to_jsonl();
        let back = Transcript::parse(&text).unwrap();
        assert_eq!(&back, recorder.transcript());
        assert_eq!(back.answer(), "{\"a\":1}");
        assert_eq!(back.header.request["mode"]["used"], "json-object");
        let end = back.end.unwrap();
        assert_eq!((end.finish_reason.as_deref(), end.usage.map(|u| u.estimated)), (Some("length"), Some(true)));
    }

    #[test]
    fn errors_are_kept_in_the_end_line() {
        let mut recorder = Recorder::new("ollama", &Request::new("m"));
        let error = ProviderError::Stalled { provider: "ollama".into(), after_ms: 2000 };
        recorder.observe_at(&Event::Delta("part".into()), 5);
        recorder.observe_at(&Event::Error(error.clone()), 2005);
        let end = recorder.into_transcript().end.unwrap();
        assert_eq!(ProviderError::from_value("ollama", end.error.as_ref().unwrap()), error);
    }
}
