//! Repair of a truncated answer: the one-pass truncation sweep (json, json-repair and jsonl at every
//! cut) equals a from-scratch parse of the prefix at cuts drawn from the input, and the streamed
//! lenient parser's repaired value at a cut is a fresh parse's. No panic on any text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::output::json::JsonParser;
use tunebench::output::{OutputParser, Profile};
use tunebench::truncate::strategy::{at_cut, prefix, reference, Strategy};
use tunebench::truncate::sweep::sweep;
use tunebench_fuzz::{item_check, Draw, Input};

fuzz_target!(|data: &[u8]| {
    let input = Input::new(data);
    let text = &input.text;
    let profile = input.profile();
    let check = input.checked().then(item_check);
    let cuts: Vec<(usize, usize)> = text.char_indices().map(|(at, _)| at).chain([text.len()]).enumerate().collect();
    let swept = sweep(text, &cuts, profile, check.clone());
    let (strategy, items) = reference(text, profile, check.as_ref());
    assert_eq!((swept.reference, swept.full_items), (strategy, items.len()));
    let mut draw = Draw::new(input.seed);
    for _ in 0..2 {
        let at = draw.below(cuts.len());
        for strategy in Strategy::ALL {
            let expected = at_cut(text, cuts[at].1, strategy, profile, check.as_ref(), &items);
            assert_eq!(swept.figures(strategy)[at], expected, "{strategy} at byte {}", cuts[at].1);
        }
    }

    let cut = cuts[draw.below(cuts.len())].1;
    let mut streamed = JsonParser::new(Profile::Lenient, None);
    let half = prefix(text, cut / 2).len();
    streamed.feed(&text[..half]);
    streamed.feed(&text[half..cut]);
    let mut fresh = JsonParser::new(Profile::Lenient, None);
    fresh.feed(&text[..cut]);
    assert_eq!(streamed.report(), fresh.report(), "cut at byte {cut}");
});
