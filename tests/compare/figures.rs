//! The figures of two recorded transcripts, worked out by hand.
//!
//! `tests/fixtures/compare/definitions-json.jsonl` (side A, the json twin of extract-definitions):
//! five chunks, each carrying a token id, cut off by max_tokens (finish `length`):
//!
//! ```text
//! token 1  [{"entity": "DNA", "definition": "A molecule."},
//! token 2   {"entity": "NAD", "definition": "A coenzyme."},
//! token 3   {"entity": "RNA", "definition": "A copy
//! token 4   of a gene."},
//! token 5   {"entity": "ATP", "definition": "The energy          (t_ms 100, 120, ..., 180; end 185)
//! ```
//!
//! `tests/fixtures/compare/definitions.jsonl` (side B, extract-definitions): eleven chunks with token
//! ids, finish `stop`: DNA (tokens 1-2, same as A), RNA "A copy." (3-4), ATP "The energy carrier."
//! (5-6), GTP (7-8), CTP (9-10), and `{"entity": "UTP"}` (11), which lacks `definition`.
//! (t_ms 90, 105, ..., 240; end 250)

use serde_json::json;
use tunebench::compare::pair::{keep_recorded_times, recorded_turns, replay_jobs, run_pairs};
use tunebench::compare::{Comparison, Crossing, RowStatus};
use tunebench::prompt::template::Variables;
use tunebench::truncate::strategy::Strategy;

use crate::support::*;

#[tokio::test]
async fn two_recorded_transcripts_give_the_figures_worked_out_by_hand() {
    let specs = twin_sides("extract-definitions");
    let transcripts = [fixture("compare/definitions-json.jsonl"), fixture("compare/definitions.jsonl")];
    let settings = tunebench::run::setup::settings(&specs[1].prompt, &Default::default()).unwrap();
    let plans = tunebench::compare::pair::plans([&specs[0], &specs[1]], &[None], &Variables::new(), &settings).unwrap();
    let jobs = replay_jobs(plans, [&transcripts[0], &transcripts[1]], false).unwrap();
    let mut records = run_pairs(&jobs, 2, |_, _| {}).await.pop().unwrap();
    for (record, path) in records.iter_mut().zip(&transcripts) {
        keep_recorded_times(record, &recorded_turns(path, None).unwrap());
    }
    let comparison = Comparison::new(None, [&specs[0], &specs[1]], records, None);
    let [a, b] = &comparison.sides;

    // Side A, read as a json array under lenient (the cut tail repaired): DNA, NAD, RNA ("A copy of
    // a gene."), ATP ("The energy") = 4 items, all with entity and definition = 4 valid. 5 tokens out
    // (the end line's usage), first chunk at 100 ms, end at 185 ms, finish length, 1 turn of 1.
    // The repaired value is valid against the array schema, so the answer passes (flagged truncated).
    let fa = &a.figures;
    assert_eq!((fa.items, fa.valid_items, fa.tokens_out), (4, 4, Some(5)));
    assert_eq!((fa.ttft_ms, fa.total_ms, fa.finish_reason.as_deref()), (Some(100), 185, Some("length")));
    assert_eq!((fa.turns_used, fa.max_turns, fa.ok, a.run.truncated), (1, 1, true, true));
    // Side B: 6 JSON lines, UTP fails the line schema = 5 valid; 11 tokens, 90 ms, 250 ms, stop; the
    // schema error fails the answer.
    let fb = &b.figures;
    assert_eq!((fb.items, fb.valid_items, fb.tokens_out), (6, 5, Some(11)));
    assert_eq!((fb.ttft_ms, fb.total_ms, fb.finish_reason.as_deref()), (Some(90), 250, Some("stop")));
    assert_eq!((fb.turns_used, fb.max_turns, fb.ok), (1, 1, false));
    assert!(!comparison.ok());

    // Agreement on "entity" (the first string field of A's first item), valid items only:
    // DNA equal on both sides (same); RNA and ATP differ in `definition`; NAD only in A; GTP and CTP
    // only in B (UTP is not valid, so not an item). both = 1 + 2 = 3.
    let agreement = &comparison.agreement;
    assert_eq!(agreement.key.as_deref(), Some("entity"));
    let counts = (agreement.both, agreement.same, agreement.differ, agreement.only_a, agreement.only_b);
    assert_eq!(counts, (3, 1, 2, 1, 2));
    let differ: Vec<_> = agreement.rows.iter().filter(|r| r.status == RowStatus::Differ).collect();
    assert_eq!(differ[0].key, json!("RNA"));
    assert_eq!(differ[0].fields[0].field, "definition");
    assert_eq!(differ[0].fields[0].a, Some(json!("A copy of a gene.")));
    assert_eq!(differ[0].fields[0].b, Some(json!("A copy.")));
    assert_eq!((differ[1].key.clone(), differ[1].fields[0].a.clone()), (json!("ATP"), Some(json!("The energy"))));

    // Truncation on the model's own tokens (every chunk of both transcripts carries a token id);
    // the axis runs to the longer answer, B's 11 tokens.
    let chart = &comparison.chart;
    assert_eq!((chart.tokens, chart.axis), ("model", 11));
    let labels: Vec<_> = chart.curves.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["json/json", "json/json-repair", "jsonl/jsonl"]);

    // A, json (no repair): the array never closes, so 0 items at every cut; never yields.
    let json = &chart.curves[0];
    assert_eq!(
        (json.strategy, json.steps.clone(), json.first_yield, json.resilience),
        (Strategy::Json, vec![[0, 0, 0]], None, 0.0)
    );
    // A, json-repair, against A's full answer repaired (4 items):
    //   cut 0: nothing; 1: DNA; 2: + NAD; 3: + RNA "A copy" (valid but not the full answer's
    //   "A copy of a gene.": 1 corrupt); 4: RNA whole (0 corrupt); 5: + ATP "The energy" = 4.
    //   items - corrupt per cut 0,1,2,2,3,4 → 12; resilience 12 / 4 items / 6 cuts = 0.5.
    let repair = &chart.curves[1];
    assert_eq!(repair.steps, vec![[0, 0, 0], [1, 1, 0], [2, 2, 0], [3, 3, 1], [4, 3, 0], [5, 4, 0]]);
    assert_eq!((repair.full_items, repair.first_yield, repair.total), (4, Some(1), 5));
    assert!((repair.resilience - 0.5).abs() < 1e-12, "{}", repair.resilience);
    assert_eq!((repair.corrupt_cuts, repair.max_corrupt), (1, 1));
    // B, jsonl, against B's 5 valid lines: a line counts once its closing brace is in (tokens 2,
    // 4, 6, 8, 10); token 11 (UTP) fails the schema. items per cut 0,0,1,1,2,2,3,3,4,4,5,5 → 30;
    // resilience 30 / 5 items / 12 cuts = 0.5.
    let jsonl = &chart.curves[2];
    assert_eq!(jsonl.steps, vec![[0, 0, 0], [2, 1, 0], [4, 2, 0], [6, 3, 0], [8, 4, 0], [10, 5, 0]]);
    assert_eq!((jsonl.full_items, jsonl.first_yield, jsonl.total), (5, Some(2), 11));
    assert!((jsonl.resilience - 0.5).abs() < 1e-12, "{}", jsonl.resilience);
    assert_eq!((jsonl.corrupt_cuts, jsonl.max_corrupt), (0, 0));
    // Crossings, json-repair (A) vs jsonl (B) at every step: 0: 0-0; 1: 1-0 A ahead; 2: 2-1; 3: 3-1;
    // 4: 3-2; 5: 4-2; 6: 4-3; 8: 4-4 tie; 10: 4-5 → B overtakes at token 10. json (A) is 0 throughout,
    // so jsonl leads it from token 2 on and never changes hands: no crossing.
    assert_eq!(chart.crossings, [Crossing { at: 10, ahead: "jsonl/jsonl".into(), behind: "json/json-repair".into() }]);
}
