//! One answer as it streams: deltas out at once, usage and finish reason held until the end, so every
//! stream ends `Usage` + `Finish` (estimating what the server did not send) or `Error`.

use super::generate::Emit;
use super::{Event, FinishReason, ProviderError, Request, Usage};
use crate::truncate::tokens::count_o200k;

/// The answer of one request, while it streams.
pub(crate) struct Answer {
    emit: Emit,
    input_text: String,
    output: String,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    finish: Option<FinishReason>,
}

impl Answer {
    pub(crate) fn new(emit: Emit, request: &Request) -> Self {
        Self {
            emit,
            input_text: request.input_text(),
            output: String::new(),
            input_tokens: None,
            output_tokens: None,
            finish: None,
        }
    }

    /// Sends a piece of text (empty pieces are dropped).
    pub(crate) fn delta(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.output.push_str(text);
        self.emit.send(Event::Delta(text.to_string()));
    }

    /// Sends how likely the tokens of the text just sent were (nothing when there are none).
    pub(crate) fn probs(&mut self, probs: Vec<super::TokenProb>) {
        if !probs.is_empty() {
            self.emit.send(Event::Probs(probs));
        }
    }

    /// Records token counts the server sent (later counts replace earlier ones).
    pub(crate) fn usage(&mut self, input: Option<u64>, output: Option<u64>) {
        self.input_tokens = input.or(self.input_tokens);
        self.output_tokens = output.or(self.output_tokens);
    }

    /// Records the finish reason the server sent.
    pub(crate) fn finish_reason(&mut self, reason: FinishReason) {
        self.finish = Some(reason);
    }

    fn final_usage(&self) -> Usage {
        let estimated = self.input_tokens.is_none() || self.output_tokens.is_none();
        Usage {
            input_tokens: self.input_tokens.unwrap_or_else(|| estimate_tokens(&self.input_text)),
            output_tokens: self.output_tokens.unwrap_or_else(|| estimate_tokens(&self.output)),
            estimated,
            cached_input_tokens: 0,
        }
    }

    /// Ends the stream: usage, then the finish reason (`interrupted` when the server sent none).
    pub(crate) fn end(self) {
        self.emit.send(Event::Usage(self.final_usage()));
        self.emit.send(Event::Finish(self.finish.unwrap_or(FinishReason::Interrupted)));
    }

    /// Ends the stream with an error, after the usage of what was received (if anything was).
    pub(crate) fn fail(self, error: ProviderError) {
        if !self.output.is_empty() || self.input_tokens.is_some() {
            self.emit.send(Event::Usage(self.final_usage()));
        }
        self.emit.send(Event::Error(error));
    }
}

/// The o200k token count of `text`. Long texts are counted in pieces of about 1 KiB cut at whitespace
/// (BPE time grows with the square of a word's length, and a 10 MB answer may be one "word"), and past
/// 1 MiB from a 512 KiB sample; both stay within what `estimated` promises.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    const WHOLE: usize = 64 * 1024;
    const SAMPLE: usize = 512 * 1024;
    if text.len() <= WHOLE {
        return count_o200k(text) as u64;
    }
    if text.len() > 2 * SAMPLE {
        // Past 1 MiB, count the first 512 KiB and scale by length.
        let mut cut = SAMPLE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let sample = text.get(..cut).unwrap_or_default();
        let counted = count_in_pieces(sample) as f64;
        return (counted * text.len() as f64 / sample.len().max(1) as f64).round() as u64;
    }
    count_in_pieces(text)
}

fn count_in_pieces(text: &str) -> u64 {
    const PIECE: usize = 1024;
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut < rest.len() {
            let space = rest.get(..cut).and_then(|head| head.rfind(char::is_whitespace));
            if let Some(space) = space.filter(|at| *at > PIECE / 2) {
                cut = space;
            }
        }
        let (piece, tail) = rest.split_at(cut);
        total += count_o200k(piece) as u64;
        rest = tail;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_counted_in_pieces_close_to_the_whole() {
        let prose = "The sky is blue because of Rayleigh scattering. ".repeat(3000);
        let whole = count_o200k(&prose) as u64;
        let pieces = estimate_tokens(&prose);
        assert!(pieces.abs_diff(whole) <= whole / 100, "{pieces} vs {whole}");
        let started = std::time::Instant::now();
        let run = "x".repeat(10 * 1024 * 1024);
        assert!(estimate_tokens(&run) >= (run.len() / 8) as u64);
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        let long_prose = prose.repeat(10);
        let scaled = estimate_tokens(&long_prose);
        assert!(scaled.abs_diff(whole * 10) <= whole / 10, "{scaled} vs {}", whole * 10);
        assert_eq!(estimate_tokens("héllo wörld"), count_o200k("héllo wörld") as u64);
        let multibyte = "é".repeat(100_000);
        assert!(estimate_tokens(&multibyte) > 0);
    }
}
