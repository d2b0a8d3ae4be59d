//! Cut positions: where an answer can be cut, counted in characters, tokens or streamed chunks.

use serde::{Deserialize, Serialize};

use super::points::{Cursor, Offsets, Points};
use super::tokens::o200k_token_offsets;
use super::transcript::{Transcript, TranscriptError};

/// What a cut position counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Unicode scalar values of the answer.
    Char,
    /// Tokens: the local model's own (a transcript with token ids), else o200k BPE tokens.
    #[default]
    Token,
    /// The chunks a provider streamed (needs a transcript).
    Chunk,
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unit::Char => "char",
            Unit::Token => "token",
            Unit::Chunk => "chunk",
        })
    }
}

/// An answer to cut: its text and, when it came from a transcript, where its chunks ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub text: String,
    /// Byte offsets where each streamed chunk ended.
    pub chunk_ends: Option<Vec<usize>>,
    /// Whether each chunk is one token of the model that wrote it.
    pub chunks_are_tokens: bool,
    /// The transcript the answer came from, if any.
    pub transcript: Option<Transcript>,
}

impl Answer {
    /// Reads an input file's text: a transcript (recognised by its header line) or the raw answer.
    pub fn from_input(text: String) -> Result<Self, TranscriptError> {
        if !Transcript::is_transcript(&text) {
            return Ok(Self { text, ..Self::default() });
        }
        let transcript = Transcript::parse(&text)?;
        Ok(Self {
            text: transcript.answer(),
            chunk_ends: Some(transcript.chunk_ends()),
            chunks_are_tokens: transcript.has_token_ids(),
            transcript: Some(transcript),
        })
    }
}

/// A cut position that does not exist, or a unit the answer cannot be cut in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CutError {
    #[error("cut {at} is past the end of the answer, which is {total} {unit}s long")]
    PastEnd { at: usize, total: usize, unit: Unit },
    #[error("--unit chunk needs a transcript (the input is plain text, so it has no recorded chunks); use --unit token or char")]
    NoChunks,
}

/// Every cut position of an answer in one unit: cut `n` keeps the first `n` units. Character cuts
/// are read off the text (nothing stored); token and chunk cuts keep where each unit ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cuts<'a> {
    pub unit: Unit,
    text: &'a str,
    ends: Ends,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ends {
    /// Every character of the text, `count` of them.
    Chars { count: usize },
    /// `offsets[i]` is the byte offset just after unit `i + 1`.
    Listed(Offsets),
}

impl<'a> Cuts<'a> {
    /// The cut positions of `answer` counted in `unit`.
    pub fn new(answer: &'a Answer, unit: Unit) -> Result<Self, CutError> {
        let text = answer.text.as_str();
        let ends = match (unit, &answer.chunk_ends) {
            (Unit::Char, _) => Ends::Chars { count: text.chars().count() },
            (Unit::Chunk, Some(ends)) => Ends::Listed(ends.as_slice().into()),
            (Unit::Chunk, None) => return Err(CutError::NoChunks),
            (Unit::Token, Some(ends)) if answer.chunks_are_tokens => Ends::Listed(ends.as_slice().into()),
            (Unit::Token, _) => return Ok(Self::o200k(text)),
        };
        Ok(Self { unit, text, ends })
    }

    /// The o200k token cuts of `text`.
    pub fn o200k(text: &'a str) -> Self {
        Self { unit: Unit::Token, text, ends: Ends::Listed(o200k_token_offsets(text)) }
    }

    /// How many units the whole answer is.
    pub fn total(&self) -> usize {
        match &self.ends {
            Ends::Chars { count } => *count,
            Ends::Listed(offsets) => offsets.len(),
        }
    }

    /// The byte offset of cut `at` (the first `at` units), or why there is none.
    pub fn offset(&self, at: usize) -> Result<usize, CutError> {
        let past_end = CutError::PastEnd { at, total: self.total(), unit: self.unit };
        match (at, &self.ends) {
            (0, _) => Ok(0),
            (_, Ends::Chars { .. }) => {
                self.text.char_indices().nth(at - 1).map(|(i, c)| i + c.len_utf8()).ok_or(past_end)
            }
            (_, Ends::Listed(offsets)) => offsets.get(at - 1).ok_or(past_end),
        }
    }

    /// Every cut, from 0 to the whole answer, as a sweep reads them.
    pub fn points(&self) -> Points<'_> {
        match &self.ends {
            Ends::Chars { .. } => Points::Chars,
            Ends::Listed(offsets) => Points::Ends(offsets),
        }
    }

    /// Every cut as `(position, byte offset)`, from 0 to the whole answer (one at a time).
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        Cursor::new(self.text, self.points()).enumerate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_cuts_are_scalar_values() {
        let answer = Answer::from_input("aé🧬".to_string()).unwrap();
        let cuts = Cuts::new(&answer, Unit::Char).unwrap();
        assert_eq!(cuts.iter().collect::<Vec<_>>(), [(0, 0), (1, 1), (2, 3), (3, 7)]);
        assert_eq!((cuts.total(), cuts.offset(2)), (3, Ok(3)));
        assert_eq!(cuts.offset(4), Err(CutError::PastEnd { at: 4, total: 3, unit: Unit::Char }));
    }

    #[test]
    fn chunk_cuts_need_a_transcript() {
        let plain = Answer::from_input("{\"a\":1}".to_string()).unwrap();
        assert_eq!(Cuts::new(&plain, Unit::Chunk), Err(CutError::NoChunks));
        let text =
            "{\"transcript\":1}\n{\"t_ms\":1,\"delta\":\"ab\",\"token\":5}\n{\"t_ms\":2,\"delta\":\"c\",\"token\":6}\n";
        let answer = Answer::from_input(text.to_string()).unwrap();
        assert_eq!(answer.text, "abc");
        assert_eq!(Cuts::new(&answer, Unit::Chunk).unwrap().iter().collect::<Vec<_>>(), [(0, 0), (1, 2), (2, 3)]);
        // Chunks carrying token ids are the model's own tokens.
        assert_eq!(Cuts::new(&answer, Unit::Token).unwrap().iter().collect::<Vec<_>>(), [(0, 0), (1, 2), (2, 3)]);
    }
}
