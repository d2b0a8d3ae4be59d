//! Token positions in text with no recorded chunks, from a real BPE tokenizer (o200k, via tiktoken-rs).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::points::Offsets;

/// How many times this process asked for the o200k tokenizer (building it the first time costs
/// tens of milliseconds: a cached eval must not need it).
static ASKED: AtomicUsize = AtomicUsize::new(0);

/// The tokenizer, built on first use; every use counted in [`ASKED`].
fn o200k() -> &'static tiktoken_rs::CoreBPE {
    ASKED.fetch_add(1, Ordering::Relaxed);
    tiktoken_rs::o200k_base_singleton()
}

/// How many times this process asked for the o200k tokenizer so far (0: it was never built).
pub fn o200k_uses() -> usize {
    ASKED.load(Ordering::Relaxed)
}

/// Byte offsets in `text` where each o200k token ends, in order; the last is `text.len()`.
///
/// A token that ends inside a UTF-8 character (BPE works on bytes) ends at the start of that character
/// instead, as a stream holds back the bytes of a split character until it is whole.
pub fn o200k_token_ends(text: &str) -> Vec<usize> {
    token_ends(text).collect()
}

/// [`o200k_token_ends`] kept as [`Offsets`]: 4 bytes a token while the text is under 4 GiB.
pub fn o200k_token_offsets(text: &str) -> Offsets {
    let ends = token_ends(text);
    let mut narrow = Vec::with_capacity(ends.len());
    for end in ends {
        match u32::try_from(end) {
            Ok(end) => narrow.push(end),
            Err(_) => return Offsets::Wide(o200k_token_ends(text)),
        }
    }
    Offsets::Narrow(narrow)
}

/// Where each o200k token of `text` ends.
fn token_ends(text: &str) -> impl ExactSizeIterator<Item = usize> + '_ {
    let bpe = o200k();
    let mut end = 0;
    bpe.encode_ordinary(text).into_iter().map(move |token| {
        end += bpe.decode_bytes(&[token]).map_or(0, |bytes| bytes.len());
        let mut at = end.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    })
}

/// How many o200k tokens `text` is, for usage estimates where a provider sends none.
pub fn count_o200k(text: &str) -> usize {
    o200k().encode_ordinary(text).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ends_cover_the_text_and_are_char_boundaries() {
        let text = "{\"entity\": \"DNA\", \"definition\": \"分子 🧬 carrying 12345\"}\n";
        let ends = o200k_token_ends(text);
        assert_eq!(ends.last(), Some(&text.len()));
        assert!(ends.windows(2).all(|w| w[0] <= w[1]));
        assert!(ends.iter().all(|&e| text.is_char_boundary(e)));
        // A real BPE: far fewer tokens than characters, more than whitespace words.
        assert!(ends.len() < text.chars().count());
        assert!(ends.len() > text.split_whitespace().count());
        assert_eq!(count_o200k(text), ends.len());
        assert_eq!(o200k_token_offsets(text).iter().collect::<Vec<_>>(), ends);
    }

    #[test]
    fn empty_text_has_no_tokens() {
        assert!(o200k_token_ends("").is_empty());
    }
}
