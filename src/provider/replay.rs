//! `replay`: a recorded transcript played back as a provider — at its recorded pace, N× faster, or
//! as fast as possible — so every recorded run can be run again offline with the same events.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream;
use tokio::time::Instant;

use super::generate::generate;
use super::{Event, EventStream, FinishReason, ModeReport, Provider, ProviderError, Request, Usage};
use crate::truncate::tokens::count_o200k;
use crate::truncate::transcript::Transcript;

const NAME: &str = "replay";

/// How fast a transcript is played.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// Each chunk at the time it was recorded.
    Recorded,
    /// N times faster than recorded (`Speed(2.0)` halves every wait).
    Speed(f64),
    /// No waits at all.
    Instant,
}

impl Pace {
    /// Reads `recorded`, `instant` (or `fast`), or a speed such as `10x` / `10`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "recorded" => Some(Self::Recorded),
            "instant" | "fast" => Some(Self::Instant),
            other => {
                let speed: f64 = other.trim_end_matches(['x', 'X']).parse().ok()?;
                (speed.is_finite() && speed > 0.0).then_some(Self::Speed(speed))
            }
        }
    }

    fn scale(self) -> Option<f64> {
        match self {
            Self::Recorded => Some(1.0),
            Self::Speed(speed) => Some(speed),
            Self::Instant => None,
        }
    }
}

/// A transcript played as a provider's answer (the request is ignored).
#[derive(Clone, Debug)]
pub struct Replay {
    transcript: Arc<Transcript>,
    pace: Pace,
}

impl Replay {
    pub fn new(transcript: Transcript, pace: Pace) -> Self {
        Self { transcript: Arc::new(transcript), pace }
    }

    /// Reads a transcript file; errors name the file and line.
    pub fn from_file(path: &Path, pace: Pace) -> Result<Self, ProviderError> {
        let config = |message: String| ProviderError::Config { provider: NAME.to_string(), message };
        let text = crate::files::read_text(path, crate::files::TRANSCRIPT).map_err(|e| config(e.to_string()))?;
        let transcript = Transcript::parse(&text).map_err(|e| config(format!("{}: {e}", path.display())))?;
        Ok(Self::new(transcript, pace))
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }
}

/// The events that follow the chunks, as the live stream sent them.
fn closing_events(transcript: &Transcript) -> Vec<Event> {
    let provider = if transcript.header.provider.is_empty() { NAME } else { &transcript.header.provider };
    let Some(end) = &transcript.end else {
        // The recording stopped without its end line: count what is there and call it interrupted.
        let input = transcript.header.request["messages"]
            .as_array()
            .map(|messages| messages.iter().filter_map(|m| m["content"].as_str()).map(count_o200k).sum::<usize>())
            .unwrap_or(0);
        let usage = Usage {
            input_tokens: input as u64,
            output_tokens: count_o200k(&transcript.answer()) as u64,
            estimated: true,
            cached_input_tokens: 0,
        };
        return vec![Event::Usage(usage), Event::Finish(FinishReason::Interrupted)];
    };
    let mut events: Vec<Event> = end.usage.map(Event::Usage).into_iter().collect();
    match (&end.error, &end.finish_reason) {
        (Some(error), _) => events.push(Event::Error(ProviderError::from_value(provider, error))),
        (None, Some(reason)) => events.push(Event::Finish(FinishReason::parse(reason))),
        (None, None) => events.push(Event::Finish(FinishReason::Interrupted)),
    }
    events
}

/// A chunk as its stream sent it: a local model's token, or a delta; then its tokens' probabilities,
/// when it has them.
fn chunk_events(chunk: &crate::truncate::transcript::Chunk) -> impl Iterator<Item = Event> {
    let text = match chunk.token {
        Some(id) => Event::Token { id, text: chunk.delta.clone() },
        None => Event::Delta(chunk.delta.clone()),
    };
    let probs = (!chunk.probs.is_empty()).then(|| Event::Probs(chunk.probs.clone()));
    std::iter::once(text).chain(probs)
}

fn mode_event(transcript: &Transcript) -> Option<Event> {
    let mode = transcript.header.request.get("mode")?;
    serde_json::from_value::<ModeReport>(mode.clone()).ok().map(Event::Mode)
}

impl Provider for Replay {
    fn name(&self) -> &str {
        NAME
    }

    fn stream(&self, _request: &Request) -> EventStream {
        let transcript = Arc::clone(&self.transcript);
        let Some(scale) = self.pace.scale() else {
            let chunks = Arc::clone(&transcript);
            let deltas = (0..transcript.chunks.len())
                .flat_map(move |i| chunks.chunks.get(i).map(chunk_events).into_iter().flatten());
            let head = mode_event(&transcript);
            let tail = closing_events(&transcript);
            return Box::pin(stream::iter(head.into_iter().chain(deltas).chain(tail)));
        };
        generate(move |emit| async move {
            let start = Instant::now();
            let at = |t_ms: u64| start + Duration::from_secs_f64(t_ms as f64 / 1000.0 / scale);
            if let Some(mode) = mode_event(&transcript) {
                emit.send(mode);
            }
            for chunk in &transcript.chunks {
                tokio::time::sleep_until(at(chunk.t_ms)).await;
                chunk_events(chunk).for_each(|event| emit.send(event));
            }
            if let Some(end) = &transcript.end {
                tokio::time::sleep_until(at(end.t_ms)).await;
            }
            closing_events(&transcript).into_iter().for_each(|event| emit.send(event));
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_read_from_the_command_line() {
        assert_eq!(Pace::parse("recorded"), Some(Pace::Recorded));
        assert_eq!(Pace::parse("fast"), Some(Pace::Instant));
        assert_eq!(Pace::parse("10x"), Some(Pace::Speed(10.0)));
        assert_eq!(Pace::parse("0x"), None);
        assert_eq!(Pace::parse("NaN"), None);
        assert_eq!(Pace::parse("soon"), None);
    }

    #[test]
    fn a_transcript_without_its_end_line_ends_interrupted() {
        let text = "{\"transcript\":1,\"provider\":\"openai\",\"model\":\"m\",\"request\":{\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}}\n{\"t_ms\":1,\"delta\":\"Hi\"}\n";
        let events = closing_events(&Transcript::parse(text).unwrap());
        assert_eq!(events.last(), Some(&Event::Finish(FinishReason::Interrupted)));
        assert!(matches!(
            events[0],
            Event::Usage(Usage { input_tokens: 2, output_tokens: 1, estimated: true, cached_input_tokens: 0 })
        ));
    }
}
