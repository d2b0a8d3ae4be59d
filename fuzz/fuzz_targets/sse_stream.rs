//! The SSE stream readers as OpenAI-compatible and Anthropic runs use them (the body guard, the
//! `sse-stream` event parser, each provider's event decoding): no panic on any body, the stream
//! ends with exactly one Finish or Error, and a body split anywhere streams the events of the whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::provider::fuzzing::{stream_events, Wire};
use tunebench_fuzz::{byte_pieces, ends_once};

fuzz_target!(|data: &[u8]| {
    let (options, seed, body) = match data {
        [options, seed, body @ ..] => (*options, *seed, body),
        _ => return,
    };
    let wire = if options & 1 == 0 { Wire::OpenAi } else { Wire::Anthropic };
    // Option bit 1: a line limit small enough to be hit (then the split decides where the error falls).
    let limit = if options & 2 != 0 { 1 + usize::from(seed) * 4 } else { 1 << 20 };
    let chunked = stream_events(wire, &byte_pieces(body, seed), limit);
    ends_once(&chunked);
    if options & 2 == 0 {
        assert_eq!(stream_events(wire, &[body], limit), chunked);
    }
});
