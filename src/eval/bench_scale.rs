//! (feature `testing`) `tunebench bench`'s scale figures: each step a user waits for on a large eval,
//! measured at N and at 2N (cases, or answer items that share a key) in the same run, reported as
//! the time per case at 2N over the time per case at N: about 1 when the step is linear, about 2
//! when it is quadratic. The steps: a prompt file read and planned up to its first request; the same
//! cases as a JSONL dataset (`cases_file`) read, checked and planned; `eval
//! diff` of two records; a baseline delta with the matrix printed; the JUnit report; one cell's
//! items scored when every item shares one key.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use super::diff::{delta, diff, Delta};
use super::pairing::score_items;
use super::plan::{Column, EvalOptions, EvalPlan};
use super::record::{CellRecord, EvalRecord, RunBrief, FORMAT};
use super::report::junit;
use super::score::{CaseScore, CheckResult, Difference, ItemScores, Verdict};
use crate::output::ResponseType;
use crate::prompt::expect::resolve::PairKey;
use crate::prompt::expect::EvalSettings;
use crate::run::SetupOptions;

/// One step at N and 2N (milliseconds, medians of the runs).
#[derive(Clone, Debug, Serialize)]
pub struct Scaling {
    pub step: String,
    /// N (cases, or items that share a key).
    pub n: usize,
    pub ms_at_n: f64,
    pub ms_at_2n: f64,
    /// Time per case at 2N over time per case at N: ≈ 1 linear, ≈ 2 quadratic.
    pub per_case_ratio: f64,
}

/// The scale figures.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleFigures {
    pub steps: Vec<Scaling>,
}

/// A step timed on its input of size n (the input is built before the clock starts).
struct Step<'a> {
    name: &'a str,
    /// Builds the input of size n, then times the step on it (milliseconds).
    time: &'a dyn Fn(usize) -> anyhow::Result<f64>,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Measures every step at `n` and `2n`; `render` prints the matrix with a baseline's marks (the
/// front end's report). `dir` holds the generated prompt files.
pub fn measure(
    dir: &Path,
    n: usize,
    runs: usize,
    render: &dyn Fn(&EvalRecord, &Delta) -> String,
) -> anyhow::Result<ScaleFigures> {
    let read_and_plan = |cases: usize| -> anyhow::Result<f64> {
        let path = dir.join(format!("bench-scale-{cases}.toml"));
        std::fs::write(&path, super::bench::prompt_text(cases))?;
        let options = EvalOptions {
            prompts: vec![path.clone()],
            repeat: 1,
            setup: SetupOptions::default(),
            ..EvalOptions::default()
        };
        let started = Instant::now();
        let plan = EvalPlan::new(&options)?;
        let jobs = super::pipeline::jobs(&plan, None)?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(jobs.len() == cases, "{} jobs planned for {cases} cases", jobs.len());
        std::fs::remove_file(&path)?;
        Ok(elapsed)
    };
    let read_dataset = |rows: usize| -> anyhow::Result<f64> {
        let path = dir.join(format!("bench-dataset-{rows}.toml"));
        let dataset = dir.join(format!("bench-dataset-{rows}.jsonl"));
        std::fs::write(
            &path,
            format!("cases_file = \"bench-dataset-{rows}.jsonl\"\n{}", super::bench::prompt_text(0)),
        )?;
        std::fs::write(&dataset, dataset_text(rows))?;
        let options = EvalOptions { prompts: vec![path.clone()], repeat: 1, ..EvalOptions::default() };
        let started = Instant::now();
        let plan = EvalPlan::new(&options)?;
        let jobs = super::pipeline::jobs(&plan, None)?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(jobs.len() == rows, "{} jobs planned for {rows} dataset rows", jobs.len());
        std::fs::remove_file(&path)?;
        std::fs::remove_file(&dataset)?;
        Ok(elapsed)
    };
    let eval_diff = |cases: usize| -> anyhow::Result<f64> {
        let (a, b) = (record(cases, 0), record(cases, 1));
        let started = Instant::now();
        let changed = diff(&a, &b).cases.len();
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(changed > 0, "eval diff of {cases} cases found no change");
        Ok(elapsed)
    };
    let baseline = |cases: usize| -> anyhow::Result<f64> {
        let (a, b) = (record(cases, 0), record(cases, 1));
        let started = Instant::now();
        let delta = delta(&a, &b);
        let printed = render(&b, &delta);
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(printed.lines().count() > cases, "the matrix of {cases} cases has too few lines");
        Ok(elapsed)
    };
    let junit_report = |cases: usize| -> anyhow::Result<f64> {
        let b = record(cases, 1);
        let started = Instant::now();
        let xml = junit(&b);
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(xml.matches("<testcase ").count() == cases, "the JUnit report lost cases");
        Ok(elapsed)
    };
    let shared_key = |items: usize| -> anyhow::Result<f64> {
        let (expected, answer) = shared_key_items(items);
        let refs: Vec<&Value> = expected.iter().collect();
        let key = PairKey::Fields(vec!["/kind".into()]);
        let started = Instant::now();
        let (scores, _) = score_items(&refs, &answer, &key, &EvalSettings::default());
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(scores.paired == items, "{} of {items} items sharing a key paired", scores.paired);
        Ok(elapsed)
    };
    let steps = [
        Step { name: "read + plan a prompt file (cases)", time: &read_and_plan },
        Step { name: "read + plan a JSONL dataset (rows)", time: &read_dataset },
        Step { name: "eval diff of two records (cases)", time: &eval_diff },
        Step { name: "baseline delta + matrix printed (cases)", time: &baseline },
        Step { name: "JUnit report (cases)", time: &junit_report },
        Step { name: "score one cell (items sharing one key)", time: &shared_key },
    ];
    let mut figures = Vec::new();
    for step in steps {
        let (mut small, mut large) = (Vec::new(), Vec::new());
        for _ in 0..runs.max(1) {
            small.push((step.time)(n)?);
            large.push((step.time)(2 * n)?);
        }
        let (ms_at_n, ms_at_2n) = (median(small), median(large));
        figures.push(Scaling {
            step: step.name.to_string(),
            n,
            ms_at_n,
            ms_at_2n,
            per_case_ratio: ms_at_2n / (2.0 * ms_at_n).max(1e-9),
        });
    }
    Ok(ScaleFigures { steps: figures })
}

/// A JSONL dataset of `rows` rows, each the case [`super::bench::prompt_text`] writes inline.
pub fn dataset_text(rows: usize) -> String {
    let mut text = String::new();
    for i in 0..rows {
        let items: Vec<Value> =
            (0..5).map(|k| json!({"entity": format!("entity {i} {k}"), "definition": "A thing."})).collect();
        text.push_str(
            &json!({"name": format!("case-{i}"), "text": format!("MARK-{i}-END"), "expected": items}).to_string(),
        );
        text.push('\n');
    }
    text
}

/// An eval record of `cases` cases on one column; `side` 1 differs from side 0 on every third case
/// (a check that flips, a difference fixed, one introduced), as a real baseline does.
pub fn record(cases: usize, side: usize) -> EvalRecord {
    let column = Column {
        label: "bench".into(),
        prompt: "bench".into(),
        path: "bench.toml".into(),
        response_type: ResponseType::Jsonl,
        twin: false,
        provider: "openai".into(),
        model: "m".into(),
        base_url: None,
        structured: None,
    };
    let cells = (0..cases)
        .map(|row| {
            let flips = side == 1 && row % 3 == 0;
            let differences: Vec<Difference> = (0..4)
                .map(|k| {
                    let k = if flips && k == 0 { 9 } else { k };
                    Difference::Field {
                        key: format!("entity {row} {k}"),
                        field: "/definition".into(),
                        expected: json!("A thing."),
                        got: json!(format!("Something else {k}.")),
                        score: None,
                        note: None,
                    }
                })
                .collect();
            let checks = (0..3)
                .map(|k| CheckResult {
                    check: format!("regex /entity {k}"),
                    key: format!("regex /entity {k}"),
                    at: format!("bench.toml:{}", 10 + k),
                    passed: !(flips && k == 1),
                    message: None,
                    weight: None,
                    not_evaluated: false,
                    graded: None,
                })
                .collect();
            let verdict = if flips { Verdict::Pass } else { Verdict::Fail };
            let items = ItemScores {
                answer_items: 5,
                expected_items: 5,
                paired: 5,
                fuzzy: 0,
                precision: 1.0,
                recall: 1.0,
                f1: 1.0,
                field_accuracy: 0.2,
                key: "/entity".into(),
                one_value: false,
            };
            CellRecord {
                row,
                column: 0,
                repeat: 1,
                case: Some(format!("case-{row}")),
                score: CaseScore {
                    verdict,
                    items: Some(items),
                    differences,
                    checks,
                    recovered: Vec::new(),
                    field_judges: Vec::new(),
                    reason: "field accuracy 0.20 < pass_fields 1.0".into(),
                },
                run: RunBrief { duration_ms: 5, items: 5, ..RunBrief::default() },
            }
        })
        .collect();
    let mut record = EvalRecord {
        eval: FORMAT,
        id: format!("20250101-000000-00{side}00"),
        started_at_ms: 0,
        duration_ms: 0,
        prompts: Vec::new(),
        columns: vec![column],
        rows: (0..cases).map(|row| Some(format!("case-{row}"))).collect(),
        repeat: 1,
        cells,
        totals: Vec::new(),
        groups: Vec::new(),
        cancelled: false,
        batch: None,
        delta: None,
    };
    record.sum_up();
    record
}

/// `items` expected items that share one key and the answer's items in another order, a quarter of
/// them with one field changed.
pub fn shared_key_items(items: usize) -> (Vec<Value>, Vec<Value>) {
    let item = |i: usize, changed: bool| {
        let detail = if changed { format!("changed {i}") } else { format!("detail {i}") };
        json!({"kind": "note", "text": format!("note {i}"), "detail": detail})
    };
    let expected = (0..items).map(|i| item(i, false)).collect();
    // A fixed permutation (a stride coprime with the count) so the answer is not in expected order.
    let stride = (1..).map(|s| 7919 * s + 1).find(|s: &usize| gcd(*s, items.max(1)) == 1).unwrap_or(1);
    let answer = (0..items).map(|k| (k * stride) % items.max(1)).map(|i| item(i, i % 4 == 0)).collect();
    (expected, answer)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
