//! Constrained decoding holds an object to the keys its schema lists: the extract-definitions sample,
//! whose schema does not say `additionalProperties: false`, under `constrained` and `json-schema` on
//! the embedded model writes lines with the schema's keys only and ends by itself (`stop`), where it
//! used to add keys of its own (`definition_jsonl`, ...) until the token limit.

use std::path::Path;

use serde_json::Value;
use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::FinishReason;
use tunebench::run::{RunSetup, SetupOptions};

#[test]
fn the_definitions_sample_keeps_to_the_schemas_keys_and_stops() {
    super::support::model_file();
    let prompt = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/extract-definitions.toml");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for mode in ["constrained", "json-schema"] {
        let overrides = ProviderSettings {
            name: Some("local".into()),
            structured: Some(mode.into()),
            temperature: Some(0.0),
            ..ProviderSettings::default()
        };
        let setup = RunSetup::load(&prompt, SetupOptions::from_flags(overrides).unwrap()).unwrap();
        let provider = setup.provider_with(None, &|_| None).unwrap();
        let plan = setup.plan(None).unwrap();
        let record = runtime.block_on(tunebench::run::run(provider.as_ref(), &plan, |_| {}));
        let turn = &record.turns[0];
        let answer = &turn.output;
        assert_eq!(turn.finish_reason, Some(FinishReason::Stop), "{mode}: {answer}");
        let lines: Vec<Value> =
            answer.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(!lines.is_empty(), "{mode}: {answer}");
        for line in &lines {
            let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
            assert!(keys.iter().all(|k| ["entity", "definition"].contains(k)), "{mode}: {keys:?} in {answer}");
        }
        assert!(record.ok, "{mode}: every line valid: {answer}");
    }
}
