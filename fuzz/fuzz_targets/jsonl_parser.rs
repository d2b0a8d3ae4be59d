//! The JSONL parser under every profile, with and without a schema: no panic on any text, the text
//! fed in chunks gives the report of the text fed whole, verdicts once given never change, and the
//! `trustgraph` stream hands on what TrustGraph's batch `parse_jsonl` returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::output::jsonl::{trustgraph_parse_jsonl, JsonlParser};
use tunebench::output::{OutputParser, Profile, Report};
use tunebench_fuzz::{chunks, item_check, Draw, Input};

fuzz_target!(|data: &[u8]| {
    let input = Input::new(data);
    let profile = input.profile();
    let check = input.checked().then(item_check);
    let mut whole = JsonlParser::new(profile, check.clone());
    whole.feed(&input.text);

    let pieces = chunks(&input.text, input.seed);
    let look_at = Draw::new(input.seed.rotate_left(3)).below(pieces.len() + 1);
    let mut chunked = JsonlParser::new(profile, check.clone());
    let mut said = Vec::new();
    for (at, piece) in pieces.iter().enumerate() {
        if at == look_at {
            said = chunked.lines().to_vec();
        }
        chunked.feed(piece);
    }
    assert!(chunked.lines().starts_with(&said), "a verdict changed after it was given");
    assert_eq!(whole.lines(), chunked.lines());
    assert_eq!(whole.items(), chunked.items());
    let report = whole.report();
    assert_eq!(report, chunked.report());
    assert_eq!(report, Box::new(chunked).into_report());
    if profile == Profile::Trustgraph && check.is_none() {
        let Report::Jsonl(report) = report else { panic!("not a jsonl report") };
        assert_eq!(report.items, trustgraph_parse_jsonl(&input.text));
    }
});
