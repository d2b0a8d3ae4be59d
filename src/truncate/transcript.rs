//! Transcript files: a model's answer as the chunks it streamed, with their timing (CLI.md's format).
//!
//! First line `{"transcript":1,"provider":..,"model":..,"request":{..}}`, then one line per chunk
//! `{"t_ms":12,"delta":".."}` (with `"token":ID` from the local model, and `"probs":[..]` when the
//! provider said how likely each token was), last line
//! `{"t_ms":900,"finish_reason":"length","usage":{..}}` or `{"t_ms":..,"error":{..}}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the transcript format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The header line: who answered, and the request that was sent (never an API key).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub transcript: u32,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub request: Value,
}

/// One streamed piece of the answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Milliseconds since the request was sent.
    pub t_ms: u64,
    pub delta: String,
    /// The token id, when the chunk is exactly one token of the local model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u32>,
    /// How likely each token of the chunk was, in order (the local model; a server asked for
    /// `logprobs`); empty when unknown. Older transcripts have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probs: Vec<TokenProb>,
}

/// How sure the model was of one token of the answer: the probability it had when it was picked and
/// the most likely other token's. A token the grammar forced has none (nothing was chosen).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenProb {
    /// The token's text (a token holding part of a character: its bytes read lossily).
    pub token: String,
    /// Its probability, 0 to 1 (the local model: among the tokens the schema allowed, at temperature 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f32>,
    /// The runner-up: the most likely other token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt: Option<Alternative>,
    /// Inserted by the grammar without a choice (the local model's constrained decoding).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
}

/// A token the model could have written instead, and its probability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub token: String,
    pub p: f32,
}

impl TokenProb {
    /// A token the grammar forced.
    pub fn forced(token: impl Into<String>) -> Self {
        Self { token: token.into(), p: None, alt: None, forced: true }
    }
}

/// Tokens counted for a turn; `estimated` when the provider sent none and they were counted here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Input tokens the provider did not run again: the embedded model's prompt tokens whose keys and
    /// values were cached from the answer before (a later case of the same prompt). Part of
    /// `input_tokens`; 0 (not written) when nothing was cached or the provider does not say.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The last line: how the stream ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct End {
    pub t_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// A recorded answer: header, chunks in order, and the end line if the stream reached one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub header: Header,
    pub chunks: Vec<Chunk>,
    pub end: Option<End>,
}

/// A transcript file that cannot be read: the 1-based line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transcript line {line}: {message}")]
pub struct TranscriptError {
    pub line: usize,
    pub message: String,
}

impl Transcript {
    /// Whether `text` looks like a transcript: its first line is a JSON object with a `transcript` key.
    pub fn is_transcript(text: &str) -> bool {
        let first = text.lines().next().unwrap_or_default();
        first.trim_start().starts_with('{')
            && serde_json::from_str::<Value>(first).is_ok_and(|v| v.get("transcript").is_some())
    }

    /// Reads a transcript; every malformed line is an error naming the line.
    pub fn parse(text: &str) -> Result<Self, TranscriptError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or_else(|| err(1, "empty transcript"))?;
        let header: Header = serde_json::from_str(first).map_err(|e| err(1, &format!("bad header: {e}")))?;
        if header.transcript != FORMAT_VERSION {
            let message =
                format!("transcript format {} is not supported (this build reads {FORMAT_VERSION})", header.transcript);
            return Err(err(1, &message));
        }
        let mut transcript = Self { header, ..Self::default() };
        for (index, line) in lines {
            let number = index + 1;
            if transcript.end.is_some() {
                return Err(err(number, "a line after the end line"));
            }
            let value: Value = serde_json::from_str(line).map_err(|e| err(number, &e.to_string()))?;
            if value.get("delta").is_some() {
                let chunk = serde_json::from_value(value).map_err(|e| err(number, &format!("bad chunk: {e}")))?;
                transcript.chunks.push(chunk);
            } else if value.get("finish_reason").is_some()
                || value.get("error").is_some()
                || value.get("usage").is_some()
            {
                let end = serde_json::from_value(value).map_err(|e| err(number, &format!("bad end line: {e}")))?;
                transcript.end = Some(end);
            } else {
                return Err(err(
                    number,
                    "neither a chunk (\"delta\") nor an end line (\"finish_reason\", \"usage\" or \"error\")",
                ));
            }
        }
        Ok(transcript)
    }

    /// The whole answer: every chunk's text in order.
    pub fn answer(&self) -> String {
        self.chunks.iter().map(|c| c.delta.as_str()).collect()
    }

    /// Byte offsets in [`Self::answer`] where each chunk ends (so `ends[i]` is the cut after chunk i+1).
    pub fn chunk_ends(&self) -> Vec<usize> {
        self.chunks
            .iter()
            .scan(0, |end, c| {
                *end += c.delta.len();
                Some(*end)
            })
            .collect()
    }

    /// Whether every chunk carries a token id, so a chunk cut is a token cut.
    pub fn has_token_ids(&self) -> bool {
        !self.chunks.is_empty() && self.chunks.iter().all(|c| c.token.is_some())
    }

    /// The transcript as its JSONL file text.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        let mut push = |value: String| {
            out.push_str(&value);
            out.push('\n');
        };
        push(json_line(&self.header));
        self.chunks.iter().for_each(|c| push(json_line(c)));
        if let Some(end) = &self.end {
            push(json_line(end));
        }
        out
    }
}

fn json_line(value: &impl Serialize) -> String {
    // Serializing these plain structs cannot fail (string keys, no non-finite floats).
    serde_json::to_string(value).unwrap_or_default()
}

fn err(line: usize, message: &str) -> TranscriptError {
    TranscriptError { line, message: message.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = concat!(
        r#"{"transcript":1,"provider":"openai","model":"m","request":{"max_tokens":5}}"#,
        "\n",
        r#"{"t_ms":12,"delta":"{\"a\":"}"#,
        "\n",
        r#"{"t_ms":15,"delta":"1}"}"#,
        "\n",
        r#"{"t_ms":20,"finish_reason":"stop","usage":{"input_tokens":3,"output_tokens":2}}"#,
        "\n",
    );

    #[test]
    fn reads_and_writes_back_exactly() {
        let t = Transcript::parse(SAMPLE).unwrap();
        assert!(Transcript::is_transcript(SAMPLE));
        assert_eq!(t.answer(), "{\"a\":1}");
        assert_eq!(t.chunk_ends(), [5, 7]);
        assert_eq!(t.end.as_ref().unwrap().finish_reason.as_deref(), Some("stop"));
        assert_eq!(t.to_jsonl(), SAMPLE);
    }

    #[test]
    fn errors_name_the_line() {
        let bad = SAMPLE.replace(r#"{"t_ms":15,"delta":"1}"}"#, r#"{"t_ms":15,"delta":3}"#);
        let e = Transcript::parse(&bad).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = Transcript::parse("{\"transcript\":2}").unwrap_err();
        assert!(e.message.contains("format 2"), "{e}");
        assert!(!Transcript::is_transcript("{\"a\":1}\n"));
        assert!(!Transcript::is_transcript(""));
    }

    #[test]
    fn token_probabilities_are_optional_per_chunk() {
        let with = concat!(
            r#"{"transcript":1,"provider":"local","model":"m"}"#,
            "\n",
            r#"{"t_ms":1,"delta":"{\"","token":7,"probs":[{"token":"{\"","forced":true}]}"#,
            "\n",
            r#"{"t_ms":2,"delta":"a","token":9,"probs":[{"token":"a","p":0.75,"alt":{"token":"b","p":0.25}}]}"#,
            "\n",
            r#"{"t_ms":3,"delta":"}"}"#,
            "\n",
        );
        let t = Transcript::parse(with).unwrap();
        assert_eq!(t.chunks[0].probs, [TokenProb::forced("{\"")]);
        let alt = Alternative { token: "b".into(), p: 0.25 };
        assert_eq!(t.chunks[1].probs[0], TokenProb { token: "a".into(), p: Some(0.75), alt: Some(alt), forced: false });
        assert!(t.chunks[2].probs.is_empty());
        assert_eq!(t.to_jsonl(), with, "written back as read");
        // A transcript from before token probabilities reads with none.
        assert!(Transcript::parse(SAMPLE).unwrap().chunks.iter().all(|c| c.probs.is_empty()));
    }

    #[test]
    fn a_stream_without_an_end_line_is_kept() {
        let cut: String = SAMPLE.lines().take(3).map(|l| format!("{l}\n")).collect();
        let t = Transcript::parse(&cut).unwrap();
        assert!(t.end.is_none());
        assert_eq!(t.chunks.len(), 2);
    }
}
