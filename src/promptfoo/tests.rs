//! Reading promptfoo configs: the shapes promptfoo's docs write (configuration/guide, prompts,
//! providers, test-cases, expected-outputs), and each bad input an error at its file:line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn error_of(yaml: &str) -> PromptfooError {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "promptfooconfig.yaml", yaml);
    read(&path).expect_err("refused")
}

/// The getting-started config of promptfoo's docs (configuration/guide), with a provider object.
const GUIDE: &str = r#"description: Translations
prompts:
  - 'Convert this English to {{language}}: {{input}}'
  - file://prompts.txt
providers:
  - openai:gpt-4o-mini
  - id: openai:chat:qwen2.5
    label: local vllm
    config:
      apiBaseUrl: http://localhost:8000/v1
      apiKeyEnvar: VLLM_KEY
      temperature: 0
      max_tokens: 128
  - anthropic:messages:claude-3-5-haiku
  - ollama:chat:llama3.2
defaultTest:
  assert:
    - type: not-icontains
      value: 'as an AI'
tests:
  - description: first
    vars:
      language: French
      input: Hello world
    assert:
      - type: contains
        value: Bonjour
        weight: 2
  - vars:
      language: [German, Spanish]
      input: Goodbye
    threshold: 0.5
"#;

#[test]
fn the_guide_config_reads_into_prompts_providers_and_tests() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts.txt", "Translate to {{language}}: {{input}}\n---\nSay {{input}} in {{language}}\n");
    let path = write(dir.path(), "promptfooconfig.yaml", GUIDE);
    let config = read(&path).unwrap();
    assert_eq!(config.description.as_deref(), Some("Translations"));
    let labels: Vec<&str> = config.prompts.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(
        labels,
        ["Convert this English to {{language}}: {{input}}", "file://prompts.txt 1", "file://prompts.txt 2"]
    );
    assert_eq!(config.prompts[2].template, "Say {{input}} in {{language}}");
    let providers: Vec<(&str, ProviderKind, &str)> =
        config.providers.iter().map(|p| (p.label.as_str(), p.kind, p.model.as_str())).collect();
    assert_eq!(
        providers,
        [
            ("openai:gpt-4o-mini", ProviderKind::Openai, "gpt-4o-mini"),
            ("local vllm", ProviderKind::Openai, "qwen2.5"),
            ("anthropic:messages:claude-3-5-haiku", ProviderKind::Anthropic, "claude-3-5-haiku"),
            ("ollama:chat:llama3.2", ProviderKind::Ollama, "llama3.2"),
        ]
    );
    let vllm = &config.providers[1];
    assert_eq!(vllm.base_url.as_deref(), Some("http://localhost:8000/v1"));
    assert_eq!(vllm.api_key_env.as_deref(), Some("VLLM_KEY"));
    assert_eq!((vllm.temperature, vllm.max_tokens), (Some(0.0), Some(128)));
    // A list variable makes one test per value (test-cases docs); defaultTest's asserts come first.
    let names: Vec<&str> = config.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["first", "test 2 (language=German, input=Goodbye)", "test 2 (language=Spanish, input=Goodbye)"]);
    let first = &config.tests[0];
    assert_eq!(first.asserts.len(), 2);
    assert_eq!(first.asserts[0].kind.to_string(), "not-icontains");
    assert_eq!((first.asserts[1].kind.to_string(), first.asserts[1].weight), ("contains".to_string(), 2.0));
    assert_eq!(first.asserts[1].at, format!("{}:26", path.display()));
    assert_eq!(config.tests[1].threshold, Some(0.5));
    assert_eq!(config.tests[2].vars, json!({"language": "Spanish", "input": "Goodbye"}).as_object().unwrap().clone());
}

#[test]
fn a_raw_prompt_with_a_json_schema_response_format_carries_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "chat.json",
        r#"[{"role": "system", "content": "You extract."}, {"role": "user", "content": "{{text}}"}]"#,
    );
    let path = write(
        dir.path(),
        "promptfooconfig.yaml",
        r#"prompts:
  - id: file://chat.json
    label: chat
  - label: extract
    raw: 'Extract the city from: {{text}}'
    config:
      response_format:
        type: json_schema
        json_schema:
          name: city
          strict: true
          schema:
            type: object
            properties: { city: { type: string } }
            required: [city]
providers: [openai:chat:gpt-4o-mini]
tests:
  - vars: { text: I live in Paris }
"#,
    );
    let config = read(&path).unwrap();
    assert_eq!(config.prompts[0].system.as_deref(), Some("You extract."));
    assert_eq!(config.prompts[0].template, "{{text}}");
    assert!(config.prompts[0].schema.is_none());
    let extract = &config.prompts[1];
    assert!(extract.json);
    assert_eq!(extract.schema.as_ref().unwrap()["required"], json!(["city"]));
}

#[test]
fn a_csv_of_tests_reads_expected_columns_as_assertions() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "tests/a.csv",
        "text,__expected,__expected2,__description\nHello,Bonjour,not-contains:Hallo,greeting\nBye,\"contains-any:Au revoir,Adieu\",levenshtein(3):Adieu,\n",
    );
    write(
        dir.path(),
        "tests/b.jsonl",
        "{\"description\": \"from jsonl\", \"vars\": {\"text\": \"x\"}, \"assert\": [{\"type\": \"is-json\"}]}\n",
    );
    let path = write(
        dir.path(),
        "promptfooconfig.yaml",
        "prompts: ['{{text}}']\nproviders: [openai:gpt-4o-mini]\ntests: file://tests/*\n",
    );
    let config = read(&path).unwrap();
    let names: Vec<&str> = config.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["greeting", "test 2 (text=Bye)", "from jsonl"]);
    let greeting = &config.tests[0];
    assert_eq!(greeting.asserts[0].kind.to_string(), "equals");
    assert_eq!(greeting.asserts[0].value, Some(json!("Bonjour")));
    assert_eq!(greeting.asserts[1].kind.to_string(), "not-contains");
    let bye = &config.tests[1];
    assert_eq!(bye.asserts[0].value, Some(json!(["Au revoir", "Adieu"])));
    assert_eq!((bye.asserts[1].kind.to_string(), bye.asserts[1].threshold), ("levenshtein".to_string(), Some(3.0)));
    assert!(bye.at.ends_with("a.csv:3"), "{}", bye.at);
}

#[test]
fn the_expected_string_syntax_follows_promptfoos_table() {
    let at = || "t.csv:2".to_string();
    let cases = [
        ("Paris", "equals", json!("Paris"), None),
        ("contains:Paris", "contains", json!("Paris"), None),
        ("icontains:paris", "icontains", json!("paris"), None),
        ("contains-all:Paris,France", "contains-all", json!(["Paris", "France"]), None),
        // promptfoo gives these a threshold of 0.75 in a CSV cell.
        ("starts-with:The answer", "starts-with", json!("The answer"), Some(0.75)),
        ("regex:^Hello.*world$", "regex", json!("^Hello.*world$"), None),
        ("not-contains:error", "not-contains", json!("error"), None),
        ("levenshtein(5):expected text", "levenshtein", json!("expected text"), Some(5.0)),
        ("grade:Is helpful", "llm-rubric", json!("Is helpful"), None),
        ("Note: a colon", "equals", json!("Note: a colon"), None),
    ];
    for (text, kind, value, threshold) in cases {
        let assert = parse_expected(text, at()).unwrap();
        assert_eq!(assert.kind.to_string(), kind, "{text}");
        assert_eq!(assert.value, Some(value), "{text}");
        assert_eq!(assert.threshold, threshold, "{text}");
    }
    let json = parse_expected("is-json", at()).unwrap();
    assert_eq!((json.kind.to_string(), json.value), ("is-json".to_string(), None));
}

#[test]
fn each_bad_input_is_an_error_at_its_line() {
    let head = "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\n";
    let cases = [
        (
            format!("{head}tests:\n  - assert:\n      - type: contains-everything\n"),
            ":5",
            "unknown assertion type \"contains-everything\"",
        ),
        (format!("{head}tests:\n  - vars: {{q: x}}\n    asert: []\n"), ":5", "unknown key `asert`"),
        (
            "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini, bedrock:claude]\n".to_string(),
            ":2",
            "unknown provider \"bedrock:claude\"",
        ),
        (format!("{head}tests: file://missing.csv\n"), ":3", "missing.csv"),
        (format!("{head}scenarios: []\n"), ":3", "`scenarios` is not supported"),
        (format!("{head}colour: red\n"), ":3", "unknown key `colour`"),
        ("prompts: ['{{q | dump}}']\nproviders: [openai:gpt-4o-mini]\n".to_string(), ":1", "`tojson` here"),
        (
            "prompts: ['{{q}}']\nproviders:\n  - id: openai:gpt-4o-mini\n    config:\n      apiKey: [sk-secret-123]\n"
                .to_string(),
            ":5",
            "`apiKey` is text",
        ),
        (format!("{head}tests:\n  - options:\n      prefix: \"Answer: \"\n"), ":5", "options.prefix"),
        (format!("{head}tests:\n  - threshold: high\n"), ":4", "threshold"),
    ];
    for (yaml, line, says) in cases {
        let error = error_of(&yaml);
        let text = error.to_string();
        assert!(error.at.ends_with(line), "{yaml}\n→ {text} (expected line {line})");
        assert!(text.contains(says), "{yaml}\n→ {text}");
        assert!(!text.contains("sk-secret-123"), "a key is never echoed: {text}");
    }
}

#[test]
fn a_bad_row_of_a_tests_file_is_an_error_at_the_row() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "t.csv", "q,__expected,__metric\nx,y,z\n");
    let path = write(
        dir.path(),
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ntests: file://t.csv\n",
    );
    let error = read(&path).expect_err("refused");
    assert!(error.at.ends_with("t.csv:2"), "{error}");
    assert!(error.message.contains("__metric"), "{error}");
}

#[test]
fn ignored_keys_are_listed_as_warnings_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\noutputPath: out.json\n",
    );
    let config = read(&path).unwrap();
    assert_eq!(config.tests.len(), 1);
    assert_eq!(config.warnings.len(), 1);
    assert!(config.warnings[0].contains("promptfooconfig.yaml:3: `outputPath`"), "{:?}", config.warnings);
}

#[test]
fn a_python_or_javascript_assertion_may_name_its_code_file_and_no_other_type_may() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - assert:\n      - type: python\n        value: file://check.py\n      - type: javascript\n        value: file://check.js:score\n";
    let config = read(&write(dir.path(), "promptfooconfig.yaml", yaml)).unwrap();
    let values: Vec<_> = config.tests[0].asserts.iter().map(|a| a.value.clone().unwrap()).collect();
    assert_eq!(values, [json!("file://check.py"), json!("file://check.js:score")]);
    let error = error_of("prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - assert:\n      - type: contains\n        value: file://x.txt\n");
    assert!(error.to_string().contains("is not read here"), "{error}");
}

#[test]
fn an_llm_rubric_grader_comes_from_its_provider_else_the_tests_options_else_default_tests() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ndefaultTest:\n  options:\n    provider: ollama:qwen2.5\ntests:\n  - assert:\n      - type: llm-rubric\n        value: is polite\n      - type: llm-rubric\n        value: is short\n        provider: openai:gpt-4o-mini\n  - options:\n      provider: {id: local}\n    assert:\n      - type: llm-rubric\n        value: is polite\n";
    let config = read(&write(dir.path(), "promptfooconfig.yaml", yaml)).unwrap();
    let graders =
        |test: usize| config.tests[test].asserts.iter().map(|a| a.grader.clone().unwrap().id).collect::<Vec<_>>();
    assert_eq!(graders(0), ["ollama:qwen2.5", "openai:gpt-4o-mini"]);
    assert_eq!(graders(1), ["local"]);
    // Each column's checks are judged by the grader the assertion was given.
    let columns = super::columns::columns(config);
    let judges: Vec<_> = columns[0].prompt.cases[0].checks.iter().map(|c| c.judge.clone()).collect();
    assert_eq!(judges, [Some("ollama:qwen2.5".to_string()), Some("openai:gpt-4o-mini".to_string())]);
    let error = error_of("prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - assert:\n      - type: llm-rubric\n        value: x\n        provider: bedrock:claude\n");
    assert!(error.at.ends_with(":7") && error.to_string().contains("\"bedrock:claude\" is not a provider"), "{error}");
}

#[test]
fn a_key_written_in_the_config_is_used_for_its_provider_and_never_kept_in_the_text_a_record_holds() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "prompts: ['{{q}}']\nproviders:\n  - id: openai:chat:local-model\n    config:\n      apiBaseUrl: http://127.0.0.1:9/v1\n      apiKey: sk-no-key-required-4711\n  - id: openai:gpt-4o-mini\n    config: {apiKey: '{{ env.PF_KEY }}'}\n";
    let config = read(&write(dir.path(), "promptfooconfig.yaml", yaml)).unwrap();
    let key = config.providers[0].key.as_ref().expect("the key is read");
    assert_eq!(key, &crate::provider::ApiKey::new("sk-no-key-required-4711").unwrap());
    assert_eq!(config.providers[1].api_key_env.as_deref(), Some("PF_KEY"));
    assert!(config.providers[1].key.is_none());
    // One warning, naming no key.
    let said: Vec<&String> = config.warnings.iter().filter(|w| w.contains("a key written in the config")).collect();
    assert_eq!(said.len(), 1, "{:?}", config.warnings);
    assert!(!format!("{config:?}").contains("4711"), "Debug never shows the key");
    // The column's prompt holds the key in memory; its TOML does not.
    let columns = super::columns::columns(config);
    assert!(columns[0].prompt.provider.key.is_some());
    let toml = columns[0].prompt.to_toml_string().unwrap();
    assert!(!toml.contains("4711"), "{toml}");
    // The config's text as a record keeps it.
    let shown = super::redacted(yaml);
    assert!(!shown.contains("4711"), "{shown}");
    assert!(shown.contains("apiKey: '[a key written in the config]'"), "{shown}");
    assert!(shown.contains("apiKey: '{{ env.PF_KEY }}'"), "{shown}");
    let flow = super::redacted("providers: [{id: openai:x, config: {apiKey: \"sk-flow-1234\", temperature: 0}}]");
    assert!(!flow.contains("sk-flow-1234") && flow.contains("temperature: 0"), "{flow}");
}

#[test]
fn a_graders_block_reads_its_config_as_a_providers_does() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ndefaultTest:\n  options:\n    provider:\n      id: openai:chat:judge\n      config:\n        apiBaseUrl: http://127.0.0.1:9/v1\n        apiKey: sk-grader-4711\ntests:\n  - assert:\n      - type: llm-rubric\n        value: is polite\n      - type: llm-rubric\n        value: is short\n        provider: {id: openai:other, config: {apiBaseUrl: 'http://127.0.0.1:8/v1', apiKeyEnvar: OTHER_KEY}}\n";
    let config = read(&write(dir.path(), "promptfooconfig.yaml", yaml)).unwrap();
    let asserts = &config.tests[0].asserts;
    let first = asserts[0].grader.clone().unwrap();
    assert_eq!(first.id, "openai:judge");
    assert_eq!(first.server.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(first.server.key, crate::provider::ApiKey::new("sk-grader-4711"));
    let second = asserts[1].grader.clone().unwrap();
    assert_eq!(second.server.base_url.as_deref(), Some("http://127.0.0.1:8/v1"));
    assert_eq!(second.server.key_env.as_deref(), Some("OTHER_KEY"));
    // The column's check carries the address; its judge model is called there.
    let columns = super::columns::columns(config);
    let check = &columns[0].prompt.cases[0].checks[0];
    assert_eq!(check.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    let judge = crate::eval::grade::judge::JudgeCheck::of(check).unwrap();
    let model = judge.model.unwrap();
    assert_eq!(model.server.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(model.shown(), "openai:judge at http://127.0.0.1:9/v1");
}

#[test]
fn expected_cells_are_trimmed_and_assertion_values_rendered_with_the_tests_variables() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "t.csv",
        "item,expected,__expected1,__expected2\npen,Pen, icontains: notebook,equals:{{expected}}\n",
    );
    let yaml = "prompts: ['{{item}}']\nproviders: [openai:gpt-4o-mini]\ntests: file://t.csv\n";
    let config = read(&write(dir.path(), "promptfooconfig.yaml", yaml)).unwrap();
    let values: Vec<_> = config.tests[0].asserts.iter().map(|a| a.value.clone().unwrap()).collect();
    assert_eq!(values, [json!("notebook"), json!("Pen")]);
}

#[test]
fn tests_past_the_limits_are_refused_before_they_are_made() {
    // 3 list variables of 100 values: a million tests, counted, never expanded.
    let values: Vec<String> = (0..100).map(|i| format!("v{i}")).collect();
    let list = format!("[{}]", values.join(", "));
    let yaml = format!("prompts: ['{{{{a}}}}']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - vars:\n      a: {list}\n      b: {list}\n      c: {list}\n");
    let error = error_of(&yaml);
    assert!(
        error.to_string().contains("more than 10000 tests of one test")
            || error.to_string().contains("more than 200000 tests"),
        "{error}"
    );
    // A large defaultTest variable reaching many tests: counted once per test.
    let big = "x".repeat(2 << 20);
    let mut yaml = format!(
        "prompts: ['{{{{a}}}}']\nproviders: [openai:gpt-4o-mini]\ndefaultTest:\n  vars:\n    doc: {big}\ntests:\n"
    );
    for i in 0..300 {
        yaml.push_str(&format!("  - vars: {{a: '{i}'}}\n"));
    }
    let error = error_of(&yaml);
    assert!(error.to_string().contains("more than 512 MiB"), "{error}");
    assert!(error.at.contains("promptfooconfig.yaml:"), "{}", error.at);
}
