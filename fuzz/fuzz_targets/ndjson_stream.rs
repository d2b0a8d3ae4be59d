//! The NDJSON stream reader as Ollama runs use it (the body guard, the line splitter, the chat
//! response decoding): no panic on any body, the stream ends with exactly one Finish or Error, and
//! a body split anywhere streams the events of the whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::provider::fuzzing::{stream_events, Wire};
use tunebench_fuzz::{byte_pieces, ends_once};

fuzz_target!(|data: &[u8]| {
    let (options, seed, body) = match data {
        [options, seed, body @ ..] => (*options, *seed, body),
        _ => return,
    };
    let limit = if options & 2 != 0 { 1 + usize::from(seed) * 4 } else { 1 << 20 };
    let chunked = stream_events(Wire::Ollama, &byte_pieces(body, seed), limit);
    ends_once(&chunked);
    if options & 2 == 0 {
        assert_eq!(stream_events(Wire::Ollama, &[body], limit), chunked);
    }
});
