//! JSON extraction from prose and fences under every profile: no panic on any text, any chunking
//! gives the report of the whole, and the `trustgraph` and `ptc` profiles give exactly what the
//! peers' own extraction (`parse_json`, `JsonParser.parse`) gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::output::json::{ptc_extract_json, trustgraph_parse_json, JsonParser};
use tunebench::output::{OutputParser, Profile, Report};
use tunebench_fuzz::{answer_check, chunks, Input, PROFILES};

fuzz_target!(|data: &[u8]| {
    let input = Input::new(data);
    let text = &input.text;
    let check = input.checked().then(answer_check);
    for profile in PROFILES {
        let mut whole = JsonParser::new(profile, check.clone());
        whole.feed(text);
        let mut chunked = JsonParser::new(profile, check.clone());
        for piece in chunks(text, input.seed) {
            chunked.feed(piece);
        }
        let report = whole.report();
        assert_eq!(report, chunked.report(), "{profile:?}");
        let Report::Json(report) = report else { panic!("not a json report") };
        if check.is_none() {
            match profile {
                Profile::Trustgraph => assert_eq!(report.value, trustgraph_parse_json(text).ok()),
                Profile::Ptc => assert_eq!(report.value, ptc_extract_json(text).ok()),
                Profile::Strict | Profile::Lenient => {}
            }
        }
    }
});
