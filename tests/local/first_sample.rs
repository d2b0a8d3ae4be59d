//! The sample the first start opens, on the embedded model as the first start runs it (the default
//! provider, constrained decoding, the prompt's settings, no cache): four of its five cases pass
//! against their own expected answers and one fails, as measured; and the recorded answer the
//! workbench replays while the model is fetched is this model's answer to the first case.

use tunebench::eval::score::{score_record, Expectations, Verdict};
use tunebench::prompt::file::PromptFile;
use tunebench::run::{RunRecord, RunSetup, SetupOptions};
use tunebench::truncate::transcript::Transcript;

fn run_case(setup: &RunSetup, case: &str) -> RunRecord {
    let provider = setup.provider_with(None, &|_| None).unwrap();
    let plan = setup.plan(Some(case)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(tunebench::run::run(provider.as_ref(), &plan, |_| {}))
}

#[test]
fn the_first_start_sample_passes_four_of_its_five_cases_on_the_local_model() {
    // The run looks the default model up in the cache directory: fetched first when it is not there.
    super::support::model_file();
    let data = tempfile::tempdir().unwrap();
    let path = tunebench::tui::sample::ensure(data.path()).unwrap();
    let prompt = PromptFile::load(&path).unwrap();
    let setup = RunSetup::load(&path, SetupOptions::default()).unwrap();
    let base_dir = path.parent().unwrap();

    let mut verdicts = Vec::new();
    let mut first_answer = None;
    for case in &prompt.cases {
        let record = run_case(&setup, &case.name);
        assert_eq!(record.provider, "local", "the first start's provider");
        let expectations = Expectations::for_case(&prompt, base_dir, Some(&case.name)).unwrap();
        let score = score_record(&expectations, &record);
        first_answer.get_or_insert_with(|| record.turns[0].output.clone());
        verdicts.push((case.name.as_str(), score.verdict, score.reason));
    }
    let names: Vec<(&str, Verdict)> = verdicts.iter().map(|(n, v, _)| (*n, *v)).collect();
    assert_eq!(
        names,
        [
            ("flight", Verdict::Pass),
            ("train", Verdict::Fail),
            ("return", Verdict::Pass),
            ("bus", Verdict::Pass),
            ("visit", Verdict::Pass),
        ],
        "{verdicts:#?}"
    );
    // The fail is a wrong answer, valid against the schema: the cities are not the sentence's.
    assert_eq!(verdicts[1].2, "fields 0.50 < pass_fields 1", "{verdicts:#?}");

    let recorded = std::fs::read_to_string(base_dir.join("answers/extract-trip.jsonl")).unwrap();
    let recorded = Transcript::parse(&recorded).unwrap();
    assert_eq!(recorded.header.provider, "local");
    assert_eq!(Some(recorded.answer()), first_answer, "the replayed answer is the model's own");
}
