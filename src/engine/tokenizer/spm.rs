//! SentencePiece as llama.cpp runs it (`tokenizer.ggml.model` = "llama": Gemma, Llama 2): the text
//! (spaces already written `▁`) starts as one symbol per character; the adjacent pair whose joined
//! text is the best-scored token (`tokenizer.ggml.scores`; the leftmost on a tie) is merged, again and
//! again; a character left that is no token is written as its bytes' `<0xNN>` tokens (byte fallback).
//! Written by hand: the `tokenizers` crate's models merge by rank, not by the joined token's score.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{TokenId, Vocab};
use crate::engine::EngineError;

/// One symbol of the text: `len` bytes from `start` (0 once merged into its left neighbour).
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

/// A pair of adjacent symbols whose joined text is a token.
struct Pair {
    score: f32,
    left: usize,
    right: usize,
    len: usize,
}

impl PartialEq for Pair {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pair {}

impl PartialOrd for Pair {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pair {
    /// The best pair is the greatest: the higher score, then the one further left.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.left.cmp(&self.left))
    }
}

/// Appends the tokens of `text` (spaces already `▁`) to `out`.
pub fn encode(vocab: &Vocab, text: &str, out: &mut Vec<TokenId>) -> Result<(), EngineError> {
    let mut symbols: Vec<Symbol> = Vec::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let index = symbols.len();
        symbols.push(Symbol {
            start,
            len: c.len_utf8(),
            prev: index.checked_sub(1),
            next: chars.peek().map(|_| index + 1),
        });
    }
    let mut queue = BinaryHeap::new();
    let pair = |symbols: &[Symbol], left: Option<usize>, right: Option<usize>| -> Option<Pair> {
        let (left, right) = (left?, right?);
        let len = symbols[left].len + symbols[right].len;
        let start = symbols[left].start;
        let id = vocab.id(text.get(start..start + len)?)?;
        Some(Pair { score: vocab.scores[id as usize], left, right, len })
    };
    for right in 1..symbols.len() {
        queue.extend(pair(&symbols, Some(right - 1), Some(right)));
    }
    while let Some(best) = queue.pop() {
        let (l, r) = (best.left, best.right);
        if symbols[l].len == 0 || symbols[r].len == 0 || symbols[l].len + symbols[r].len != best.len {
            continue; // one side has changed since this pair was queued
        }
        symbols[l].len += symbols[r].len;
        symbols[r].len = 0;
        symbols[l].next = symbols[r].next;
        if let Some(next) = symbols[r].next {
            symbols[next].prev = Some(l);
        }
        queue.extend(pair(&symbols, symbols[l].prev, Some(l)));
        queue.extend(pair(&symbols, Some(l), symbols[l].next));
    }
    let mut at = if symbols.is_empty() { None } else { Some(0) };
    while let Some(i) = at {
        let symbol = symbols[i];
        let piece = &text[symbol.start..symbol.start + symbol.len];
        match vocab.id(piece) {
            Some(id) => out.push(id),
            None => {
                for byte in piece.bytes() {
                    out.push(byte_token(vocab, byte)?);
                }
            }
        }
        at = symbol.next;
    }
    Ok(())
}

/// The token of one byte: `<0xNN>`, else the byte's own character.
fn byte_token(vocab: &Vocab, byte: u8) -> Result<TokenId, EngineError> {
    vocab
        .id(&format!("<0x{byte:02X}>"))
        .or_else(|| std::str::from_utf8(&[byte]).ok().and_then(|c| vocab.id(c)))
        .ok_or_else(|| {
            EngineError::Model(format!(
                "the text holds byte 0x{byte:02X}, which this SentencePiece vocabulary has no token for \
                 (no <0x{byte:02X}> byte-fallback token)"
            ))
        })
}
