//! Prompt files end to end: every sample prompt loads, resolves a schema that compiles, renders with
//! its defaults and each case, and agrees with its own examples; errors name what is wrong; saving
//! round-trips; TrustGraph import → export is byte-exact, through the library and the binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{json, Value};
use tunebench::output::ResponseType;
use tunebench::prompt::file::{PromptError, PromptFile, SchemaOrigin};
use tunebench::prompt::template::Variables;
use tunebench::prompt::trustgraph;

const TRUSTGRAPH_SAMPLES: [&str; 6] = [
    "extract-definitions",
    "extract-relationships",
    "extract-topics",
    "extract-rows",
    "agent-kg-extract",
    "ontology-extract",
];

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts")
}

fn sample(name: &str) -> PromptFile {
    PromptFile::load(samples_dir().join(format!("{name}.toml"))).unwrap()
}

fn all_samples() -> Vec<(PathBuf, PromptFile)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths.into_iter().map(|p| (p.clone(), PromptFile::load(&p).unwrap_or_else(|e| panic!("{e}")))).collect()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[test]
fn every_sample_loads_resolves_a_compiling_schema_and_renders_every_case() {
    let samples = all_samples();
    assert_eq!(
        samples.len(),
        // Each TrustGraph sample and its json twin, classify-sentiment, extract-trip (the first start's)
        // and find-cities (a command check).
        2 * TRUSTGRAPH_SAMPLES.len() + 3,
        "{:?}",
        samples.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    for (path, prompt) in &samples {
        assert_eq!(path.file_stem().unwrap().to_str(), Some(prompt.id.as_str()));
        let schema =
            prompt.resolve_schema(&samples_dir()).unwrap().unwrap_or_else(|| panic!("{} has no schema", prompt.id));
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", prompt.id));
        assert!((2..=5).contains(&prompt.cases.len()), "{}: {} cases", prompt.id, prompt.cases.len());
        let default = prompt.render(None, &Variables::new()).unwrap_or_else(|e| panic!("{e}"));
        let text = prompt.variables["text"].as_str().unwrap();
        assert!(default.user.contains(text), "{}: the default text is not in the prompt", prompt.id);
        for case in &prompt.cases {
            let rendered = prompt.render(Some(&case.name), &Variables::new()).unwrap_or_else(|e| panic!("{e}"));
            let case_text = case.variables["text"].as_str().unwrap();
            assert!(rendered.user.contains(case_text), "{} / {}", prompt.id, case.name);
            assert!(!rendered.user.contains(text), "{} / {}: the default text leaked in", prompt.id, case.name);
            for leftover in ["{{", "}}", "{%", "%}", "{#"] {
                assert!(
                    !rendered.user.contains(leftover),
                    "{} / {}: `{leftover}` left in the rendered prompt",
                    prompt.id,
                    case.name
                );
            }
            assert!(rendered.system.is_some());
        }
    }
}

#[test]
fn every_jsonl_sample_has_a_json_array_twin() {
    for name in TRUSTGRAPH_SAMPLES {
        let jsonl = sample(name);
        let json = sample(&format!("{name}-json"));
        assert_eq!((jsonl.response_type, json.response_type), (ResponseType::Jsonl, ResponseType::Json), "{name}");
        let item = jsonl.schema.clone().unwrap();
        assert_eq!(json.schema, Some(json!({"type": "array", "items": item})), "{name}");
        assert_eq!(jsonl.variables, json.variables, "{name}");
        assert_eq!(jsonl.cases, json.cases, "{name}");
        assert!(
            jsonl.template.contains("Output format: JSONL")
                && jsonl.template.contains("one compact JSON object per line"),
            "{name}"
        );
        assert!(json.template.contains("a JSON array"), "{name}");
        assert!(!jsonl.template.contains("JSON array"), "{name}");
    }
}

/// The text after "Example output:" in `template`, up to the `<text>` that ends some templates.
fn example_output(template: &str) -> &str {
    let example = template.split("Example output:\n").nth(1).unwrap();
    example.split("\n<text>").next().unwrap()
}

/// The examples a prompt shows the model must pass its own schema (else the prompt teaches errors).
#[test]
fn examples_in_the_prompts_pass_their_schemas() {
    for name in TRUSTGRAPH_SAMPLES {
        let jsonl = sample(name);
        let validator = jsonschema::validator_for(jsonl.schema.as_ref().unwrap()).unwrap();
        // The example runs to the case's text (the template's end when the text comes before it).
        let example = example_output(&jsonl.template);
        let lines: Vec<&str> = example.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines.len() >= 2, "{name}");
        let mut branches = std::collections::BTreeSet::new();
        for line in lines {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {line}: {e}"));
            assert!(validator.is_valid(&value), "{name}: example {line} fails the schema");
            if let Some(t) = value.get("type") {
                branches.insert(t.to_string());
            }
        }
        let union = jsonl.schema.as_ref().unwrap().get("oneOf").map_or(0, |b| b.as_array().unwrap().len());
        assert_eq!(branches.len(), union, "{name}: the examples show every branch of the union");

        let twin = sample(&format!("{name}-json"));
        let array: Value = serde_json::from_str(example_output(&twin.template).trim()).unwrap();
        assert!(jsonschema::validator_for(twin.schema.as_ref().unwrap()).unwrap().is_valid(&array), "{name}-json");
    }
}

#[test]
fn classify_sentiment_is_a_ptc_signature_prompt_with_a_mustache_section() {
    let prompt = sample("classify-sentiment");
    assert_eq!(prompt.response_type, ResponseType::Json);
    assert_eq!(prompt.signature.as_deref(), Some("(text :string) -> {sentiment :string, score :float}"));
    let resolved = prompt.resolve_schema(&samples_dir()).unwrap().unwrap();
    assert!(matches!(resolved.origin, SchemaOrigin::Signature(_)));
    assert_eq!(
        resolved.schema,
        json!({"type": "object", "properties": {"sentiment": {"type": "string"}, "score": {"type": "number"}},
               "required": ["sentiment", "score"], "additionalProperties": false})
    );
    let user = prompt.render(None, &Variables::new()).unwrap().user;
    assert!(user.contains("review of the Brisk 1.7 L kettle (kitchen appliances)."), "{user}");
    assert!(user.contains("fits best:\n- positive\n- negative\n- neutral\n\n# Expected Output"), "{user}");
    let five = prompt.render(Some("five-point-scale"), &Variables::new()).unwrap().user;
    assert!(five.contains("- very negative\n") && five.contains("- very positive\n"), "{five}");
    let no_product: Variables = [("product".to_string(), json!(null))].into_iter().collect();
    let plain = prompt.render(None, &no_product).unwrap().user;
    assert!(plain.contains("customer review.\n"), "{plain}");
}

#[test]
fn an_undefined_variable_is_named_with_its_line() {
    let mut prompt = sample("extract-definitions");
    prompt.variables.remove("text");
    let err = prompt.render(None, &Variables::new()).unwrap_err();
    let line = prompt.template.lines().position(|l| l.contains("{{text}}")).unwrap() + 1;
    assert!(matches!(&err, PromptError::Template { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("undefined variable `text`") && message.contains(&format!("line {line}")), "{message}");
    // As the CLI prints it (the whole chain): the sentence once.
    let chain = format!("{:#}", anyhow::Error::new(err));
    assert_eq!(chain.matches("undefined variable").count(), 1, "{chain}");
}

#[test]
fn bad_toml_and_unknown_keys_are_named_at_file_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, "id = \"x\"\ntemplate = \"\"\"\nunterminated").unwrap();
    let err = PromptFile::load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:3:", path.display())) || err.starts_with(&format!("{}:2:", path.display())),
        "{err}"
    );

    std::fs::write(&path, "template = 'x'\n\n[provider]\nname = 'openai'\ntop_k = 5\n").unwrap();
    let err = PromptFile::load(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:5:1:", path.display())) && err.contains("`top_k`"), "{err}");
}

#[test]
fn mustache_sections_render_from_a_prompt_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.toml");
    let text = "template = '''\nItems:\n{{#items}}\n- {{name}} x{{qty}}{{#gift}} (gift){{/gift}}\n{{/items}}\n{{^items}}\nnothing\n{{/items}}\n'''\n\
                [[variables.items]]\nname = 'pen'\nqty = 2\ngift = true\n\n[[variables.items]]\nname = 'ink'\nqty = 1\ngift = false\n\n\
                [[cases]]\nname = 'empty'\nvariables = { items = [] }\n";
    std::fs::write(&path, text).unwrap();
    let prompt = PromptFile::load(&path).unwrap();
    assert_eq!(prompt.render(None, &Variables::new()).unwrap().user, "Items:\n- pen x2 (gift)\n- ink x1\n");
    assert_eq!(prompt.render(Some("empty"), &Variables::new()).unwrap().user, "Items:\nnothing\n");
}

#[test]
fn saving_every_sample_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let samples = all_samples();
    for (_, prompt) in &samples {
        let path = dir.path().join(format!("{}.toml", prompt.id));
        prompt.save(&path).unwrap();
        assert_eq!(&PromptFile::load(&path).unwrap(), prompt, "{}", prompt.id);
        prompt.save(&path).unwrap();
    }
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, samples.len(), "no temporary files left behind");
}

#[test]
fn trustgraph_import_save_load_export_is_byte_exact() {
    let config_text = std::fs::read_to_string(fixture("trustgraph-prompts.json")).unwrap();
    let config = trustgraph::import(&config_text).unwrap();
    assert_eq!(config.prompts.len(), 6);
    assert!(config.notes.is_empty(), "{:?}", config.notes);
    let dir = tempfile::tempdir().unwrap();
    let mut reloaded = Vec::new();
    for prompt in &config.prompts {
        let path = dir.path().join(format!("{}.toml", prompt.id));
        prompt.save(&path).unwrap();
        reloaded.push(PromptFile::load(&path).unwrap());
    }
    assert_eq!(trustgraph::export(&reloaded).unwrap().json, config_text);
}

fn tunebench() -> Command {
    Command::cargo_bin("tunebench").unwrap()
}

#[test]
fn cli_import_then_export_reproduces_the_configuration() {
    let config = fixture("trustgraph-prompts.json");
    let dir = tempfile::tempdir().unwrap();
    let out = tunebench()
        .args(["import", "trustgraph"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: Vec<PathBuf> =
        report["written"].as_array().unwrap().iter().map(|w| PathBuf::from(w["path"].as_str().unwrap())).collect();
    assert_eq!(written.len(), 6);
    assert_eq!(report["written"][1]["variables"], json!(["text"]));

    let exported = tunebench().args(["export", "trustgraph"]).args(&written).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    assert_eq!(String::from_utf8(exported.stdout).unwrap(), std::fs::read_to_string(&config).unwrap());

    let again = tunebench().args(["import", "trustgraph"]).arg(&config).arg("--out").arg(dir.path()).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "existing files are not overwritten without --force");
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    let forced = tunebench()
        .args(["import", "trustgraph"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path())
        .arg("--force")
        .output()
        .unwrap();
    assert!(forced.status.success());
    assert!(String::from_utf8_lossy(&forced.stdout).contains("wrote "));
}

#[test]
fn cli_bad_input_exits_2_naming_the_file_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("config.json");
    std::fs::write(&bad, r#"{"template-index": ["a"], "template.a": {"prompt": "x", "response-type": "xml"}}"#)
        .unwrap();
    let out = tunebench().args(["import", "trustgraph"]).arg(&bad).arg("--out").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.json") && err.contains("\"xml\"") && err.contains("/template.a/response-type"),
        "{err}"
    );

    let mut files: Vec<PathBuf> = TRUSTGRAPH_SAMPLES.iter().map(|n| samples_dir().join(format!("{n}.toml"))).collect();
    let ok = tunebench().args(["export", "trustgraph"]).args(&files).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let value: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(value["prompt"]["template-index"].as_array().unwrap().len(), TRUSTGRAPH_SAMPLES.len());
    assert!(String::from_utf8_lossy(&ok.stderr).contains("left out"));

    files.push(samples_dir().join("classify-sentiment.toml"));
    let clash = tunebench().args(["export", "trustgraph"]).args(&files).output().unwrap();
    assert_eq!(clash.status.code(), Some(2));
    let err = String::from_utf8_lossy(&clash.stderr);
    assert!(err.contains("system") && err.contains("classify-sentiment.toml"), "{err}");

    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "template = 'x'\nschema = 1\nsignature = '{a :int}'\n").unwrap();
    let out = tunebench().args(["export", "trustgraph"]).arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("broken.toml:3:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `answer` to `case` of `prompt`, played by the replay provider through the run engine.
fn replayed(prompt: &PromptFile, case: &str, answer: &str) -> tunebench::run::RunRecord {
    use tunebench::run::{ReplayFrom, RunSetup, SetupOptions};
    use tunebench::truncate::transcript::{Chunk, End, Header, Transcript};
    let transcript = Transcript {
        header: Header { transcript: 1, provider: "replay".into(), model: "recorded".into(), request: Value::Null },
        chunks: vec![Chunk { t_ms: 5, delta: answer.to_string(), token: None, ..Chunk::default() }],
        end: Some(End { t_ms: 9, finish_reason: Some("stop".into()), usage: None, error: None }),
    };
    let options = SetupOptions {
        target: tunebench::run::Target::replaying(ReplayFrom::Transcript(Box::new(transcript))),
        max_turns: Some(1),
        ..SetupOptions::default()
    };
    let setup = RunSetup::new(prompt.clone(), &samples_dir().join("x.toml"), options).unwrap();
    let plan = setup.plan(Some(case)).unwrap();
    let provider = setup.provider(Some(case)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(tunebench::run::run(&*provider, &plan, |_| {}))
}

#[test]
fn every_sample_case_has_expectations_its_own_expected_answer_passes() {
    use tunebench::eval::score::{Expectations, Verdict};
    use tunebench::prompt::expect::resolve::{validate_expectations, ExpectedAnswer};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (_, prompt) in all_samples() {
        validate_expectations(&prompt, &samples_dir()).unwrap_or_else(|e| panic!("{e}"));
        for case in &prompt.cases {
            let at = format!("{} / {}", prompt.id, case.name);
            let expectations = Expectations::for_case(&prompt, &samples_dir(), Some(&case.name))
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            assert!(!expectations.is_empty(), "{at}: nothing to score against");
            // Every case but one says what the answer is; that one (nothing, or only foods, is right)
            // has checks only.
            let checks_only = prompt.id.starts_with("ontology-extract") && case.name == "no-recipe";
            assert_eq!(expectations.expected.is_none(), checks_only, "{at}");
            // The expected answer itself, written as the model would, passes.
            let answer = match (&expectations.expected, prompt.response_type) {
                (None, ResponseType::Json) => "[]".to_string(),
                (None, _) => String::new(),
                (Some(ExpectedAnswer::Items(items)), ResponseType::Jsonl) => {
                    items.iter().map(|item| format!("{item}\n")).collect()
                }
                (Some(ExpectedAnswer::Items(items)), _) => Value::Array(items.clone()).to_string(),
                (Some(ExpectedAnswer::Value(value)), _) => value.to_string(),
            };
            let record = replayed(&prompt, &case.name, &answer);
            // Graded checks (find-cities' Python script) run as an eval runs them.
            let vars = prompt.variables_for(Some(&case.name)).unwrap();
            let judges = tunebench::eval::grade::Judges::none();
            let grades = runtime.block_on(tunebench::eval::graded::grade_cell(&expectations, &record, &vars, &judges));
            let score = tunebench::eval::score::score_graded(&expectations, &record, &grades);
            assert_eq!(score.verdict, Verdict::Pass, "{at}: {score:?}");
        }
    }
}
