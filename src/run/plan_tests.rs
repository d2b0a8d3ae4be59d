//! Settings resolution and the structured mode each response type asks for.

use serde_json::json;

use super::*;

fn prompt(response_type: ResponseType) -> PromptFile {
    let mut prompt = PromptFile::new("p", "Tell me about {{ topic }}.");
    prompt.system = Some("Be brief.".into());
    prompt.response_type = response_type;
    prompt.schema = Some(json!({"type": "object", "required": ["a"]}));
    prompt.variables.insert("topic".into(), json!("stars"));
    prompt
}

/// The command line's flags as written (`name` the provider) over `file`, as a run setup resolves them.
fn resolve(
    file: &PromptFile,
    cli: &ProviderSettings,
    max_turns: Option<u32>,
    context_tokens: Option<u32>,
) -> Result<RunSettings, RunError> {
    let (target, rest) = super::super::Target::from_flags(cli.clone())?;
    RunSettings::resolve(file, &target, &rest, max_turns, context_tokens)
}

fn reading(response_type: ResponseType) -> Reading {
    Reading { response_type, profile: Profile::Lenient, check: None }
}

fn settings_for(provider: &str, structured: &str) -> RunSettings {
    let cli = ProviderSettings {
        name: Some(provider.into()),
        structured: Some(structured.into()),
        ..ProviderSettings::default()
    };
    resolve(&prompt(ResponseType::Json), &cli, None, None).unwrap()
}

fn settings(structured: &str) -> RunSettings {
    settings_for("openai", structured)
}

fn plan(response_type: ResponseType, structured: &str) -> RunPlan {
    let prompt = prompt(response_type);
    RunPlan::new(&prompt, Path::new("."), None, &Variables::new(), &settings(structured), reading(response_type))
        .unwrap()
}

#[test]
fn the_command_line_wins_over_the_prompt_over_the_defaults() {
    let mut file = prompt(ResponseType::Json);
    file.provider = ProviderSettings {
        name: Some("ollama".into()),
        model: Some("llama3".into()),
        temperature: Some(0.2),
        max_tokens: Some(100),
        stop: vec!["END".into()],
        ..ProviderSettings::default()
    };
    file.max_turns = Some(3);
    let cli = ProviderSettings { model: Some("qwen".into()), max_tokens: Some(50), ..ProviderSettings::default() };
    let settings = resolve(&file, &cli, None, Some(4096)).unwrap();
    assert_eq!((settings.provider.name(), settings.model.as_str()), ("ollama", "qwen"));
    assert_eq!((settings.temperature, settings.max_tokens, settings.max_turns), (Some(0.2), Some(50), 3));
    assert_eq!((settings.stop.clone(), settings.context_tokens), (vec!["END".to_string()], 4096));
    let defaults = resolve(&prompt(ResponseType::Json), &ProviderSettings::default(), None, None).unwrap();
    // The local model holds a json answer to its schema unless told not to; other providers are asked plainly.
    let default_mode =
        if ProviderKind::DEFAULT == ProviderKind::Local { StructuredMode::Constrained } else { StructuredMode::None };
    assert_eq!((defaults.provider, defaults.structured, defaults.max_turns), (ProviderKind::DEFAULT, default_mode, 1));
    let text = resolve(&prompt(ResponseType::Text), &ProviderSettings::default(), None, None).unwrap();
    assert_eq!(text.structured, StructuredMode::None, "a text answer is asked plainly");
    let openai = ProviderSettings { name: Some("openai".into()), ..ProviderSettings::default() };
    let remote = resolve(&prompt(ResponseType::Json), &openai, None, None).unwrap();
    assert_eq!(remote.structured, StructuredMode::None);
    let told =
        ProviderSettings { name: Some("local".into()), structured: Some("none".into()), ..ProviderSettings::default() };
    assert_eq!(resolve(&prompt(ResponseType::Json), &told, None, None).unwrap().structured, StructuredMode::None);
    assert_eq!(defaults.context_tokens, DEFAULT_CONTEXT_TOKENS);
    assert_eq!(resolve(&file, &cli, Some(1), None).unwrap().max_turns, 1);
}

/// Another provider named by the front end leaves the prompt's own provider's model, server and
/// structured mode behind (`--provider local` on an ollama prompt runs the default model, constrained).
#[test]
fn another_provider_starts_from_none_of_the_prompts_model_server_or_mode() {
    let mut file = prompt(ResponseType::Json);
    file.provider = ProviderSettings {
        name: Some("ollama".into()),
        model: Some("llama3".into()),
        base_url: Some("http://127.0.0.1:11434".into()),
        structured: Some("json-object".into()),
        temperature: Some(0.2),
        ..ProviderSettings::default()
    };
    let local = ProviderSettings { name: Some("local".into()), ..ProviderSettings::default() };
    let settings = resolve(&file, &local, None, None).unwrap();
    assert_eq!(
        (settings.provider, settings.model.as_str(), settings.base_url.as_deref()),
        (ProviderKind::Local, "", None)
    );
    assert_eq!(settings.structured, StructuredMode::Constrained, "the schema is enforced on local");
    assert_eq!(settings.temperature, Some(0.2), "sampling is the prompt's whatever the provider");
    let same = ProviderSettings { name: Some("ollama".into()), ..ProviderSettings::default() };
    let settings = resolve(&file, &same, None, None).unwrap();
    assert_eq!((settings.model.as_str(), settings.structured), ("llama3", StructuredMode::JsonObject));
}

#[test]
fn bad_settings_name_the_value_and_where_it_came_from() {
    let mut file = prompt(ResponseType::Json);
    file.provider.structured = Some("strict".into());
    let error = resolve(&file, &ProviderSettings::default(), None, None).unwrap_err().to_string();
    assert!(error.contains("\"strict\" (from the prompt's [provider]) is not a structured mode"), "{error}");
    let cli = ProviderSettings { name: Some("gpt".into()), ..ProviderSettings::default() };
    let error = resolve(&file, &cli, None, None).unwrap_err().to_string();
    assert!(error.contains("\"gpt\" (from --provider) is not a provider"), "{error}");
    let ok = prompt(ResponseType::Json);
    let error = resolve(&ok, &ProviderSettings::default(), Some(0), None).unwrap_err().to_string();
    assert!(error.contains("at least 1 turn"), "{error}");
    let cold = ProviderSettings { temperature: Some(-1.0), ..ProviderSettings::default() };
    assert!(resolve(&ok, &cold, None, None).is_err());
    let none = ProviderSettings { max_tokens: Some(0), ..ProviderSettings::default() };
    assert!(resolve(&ok, &none, None, None).is_err());
}

#[test]
fn json_prompts_ask_for_the_mode_with_the_whole_answer_schema() {
    let plan = plan(ResponseType::Json, "json-schema");
    assert_eq!(plan.request.structured, StructuredMode::JsonSchema);
    assert_eq!(plan.request.schema, Some(json!({"type": "object", "required": ["a"]})));
    assert_eq!(plan.request.messages[0].content, "Be brief.");
    assert_eq!(plan.request.messages[1].content, "Tell me about stars.");
    assert!(plan.mode.fallbacks.is_empty());
    assert_eq!(plan.expected, Expected::Schema(json!({"type": "object", "required": ["a"]})));
}

#[test]
fn jsonl_prompts_never_bind_the_whole_answer_to_one_value() {
    for mode in ["json-schema", "json-object", "constrained"] {
        let plan = plan(ResponseType::Jsonl, mode);
        assert_eq!(plan.request.structured, StructuredMode::None, "{mode}");
        let system = &plan.request.messages[0].content;
        assert!(system.starts_with("Be brief.\n\nAnswer in JSON Lines"), "{system}");
        assert!(system.contains("\"required\": ["), "{system}");
        assert_eq!(plan.mode.used, StructuredMode::None);
        assert!(plan.mode.schema_in_prompt);
        assert_eq!(plan.mode.fallbacks.len(), 1);
        assert!(plan.mode.fallbacks[0].reason.contains("force the whole answer into one value"));
    }
    let plain = plan(ResponseType::Jsonl, "none");
    assert_eq!(plain.request.messages[0].content, "Be brief.");
    assert!(plain.mode.fallbacks.is_empty() && !plain.mode.schema_in_prompt);
}

#[test]
fn the_local_model_keeps_the_mode_of_a_jsonl_prompt_and_constrains_each_line() {
    let prompt = prompt(ResponseType::Jsonl);
    let reading = reading(ResponseType::Jsonl);
    for mode in ["json-schema", "constrained"] {
        let settings = settings_for("local", mode);
        let plan = RunPlan::new(&prompt, Path::new("."), None, &Variables::new(), &settings, reading.clone()).unwrap();
        assert_ne!(plan.request.structured, StructuredMode::None, "{mode}");
        assert!(plan.request.jsonl, "{mode}");
        assert!(plan.mode.fallbacks.is_empty(), "{mode}");
        assert!(plan.request.messages[0].content.contains("Answer in JSON Lines"));
    }
    // vLLM holds each line to the schema with a grammar when json-schema is asked; json-object is one value.
    let vllm = RunPlan::new(
        &prompt,
        Path::new("."),
        None,
        &Variables::new(),
        &settings_for("vllm", "json-schema"),
        reading.clone(),
    )
    .unwrap();
    assert_eq!((vllm.request.structured, vllm.request.jsonl), (StructuredMode::JsonSchema, true));
    let object =
        RunPlan::new(&prompt, Path::new("."), None, &Variables::new(), &settings_for("vllm", "json-object"), reading)
            .unwrap();
    assert_eq!((object.request.structured, object.request.jsonl), (StructuredMode::None, false));
    let url = ProviderSettings { base_url: Some("http://127.0.0.1:1/v1".into()), ..ProviderSettings::default() };
    let served = resolve(&prompt, &url, None, None).unwrap();
    assert_eq!(served.provider, ProviderKind::Openai, "a base URL with no provider means an OpenAI-compatible server");
}

#[test]
fn text_prompts_are_sent_as_written() {
    let plan = plan(ResponseType::Text, "json-object");
    assert_eq!((plan.request.structured, plan.request.schema.clone()), (StructuredMode::None, None));
    assert!(plan.mode.fallbacks[0].reason.contains("not JSON"));
}

#[test]
fn the_providers_steps_follow_the_plans() {
    let plan = plan(ResponseType::Jsonl, "json-schema");
    let provider = ModeReport {
        requested: StructuredMode::None,
        used: StructuredMode::None,
        schema_in_prompt: false,
        fallbacks: vec![Fallback { from: StructuredMode::None, to: StructuredMode::None, reason: "x".into() }],
    };
    let merged = plan.mode_with(Some(&provider));
    assert_eq!(merged.requested, StructuredMode::JsonSchema);
    assert!(merged.schema_in_prompt);
    assert_eq!(merged.fallbacks.len(), 2);
    assert_eq!(plan.mode_with(None), plan.mode);
}

#[test]
fn cases_and_overrides_are_rendered_and_kept() {
    let mut file = prompt(ResponseType::Json);
    file.cases.push(crate::prompt::file::Case {
        name: "moon".into(),
        expect: None,
        variables: [("topic".to_string(), json!("the moon"))].into_iter().collect(),
        ..Default::default()
    });
    let settings = settings("none");
    let plan =
        RunPlan::new(&file, Path::new("."), Some("moon"), &Variables::new(), &settings, reading(ResponseType::Json))
            .unwrap();
    assert_eq!(plan.request.messages[1].content, "Tell me about the moon.");
    assert_eq!(plan.case.as_deref(), Some("moon"));
    let overrides: Variables = [("topic".to_string(), json!("comets"))].into_iter().collect();
    let plan =
        RunPlan::new(&file, Path::new("."), Some("moon"), &overrides, &settings, reading(ResponseType::Json)).unwrap();
    assert_eq!(plan.request.messages[1].content, "Tell me about comets.");
    assert_eq!(plan.variables, overrides);
    let unknown = RunPlan::new(&file, Path::new("."), Some("sun"), &overrides, &settings, reading(ResponseType::Json));
    let error = unknown.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("no case named \"sun\"") && error.contains("moon"), "{error}");
}

#[test]
fn a_target_named_in_the_other_settings_is_refused() {
    let prompt = prompt(ResponseType::Json);
    let named = ProviderSettings { name: Some("openai".into()), ..ProviderSettings::default() };
    let error = RunSettings::resolve(&prompt, &Target::default(), &named, None, None).unwrap_err().to_string();
    assert!(error.contains("the provider is named in the provider settings"), "{error}");
    let target = Target::on(ProviderKind::Openai);
    let settings = RunSettings::resolve(&prompt, &target, &ProviderSettings::default(), None, None).unwrap();
    assert_eq!(settings.provider, ProviderKind::Openai);
}

#[test]
fn thinking_is_the_local_models_and_the_command_line_wins() {
    use crate::prompt::file::Thinking;
    let mut file = prompt(ResponseType::Json);
    file.provider.thinking = Some(Thinking::Budget(64));
    let on_file = |file: &PromptFile, name: &str, think: Option<Thinking>| {
        let cli = ProviderSettings { name: Some(name.into()), thinking: think, ..ProviderSettings::default() };
        resolve(file, &cli, None, None)
    };
    let on = |name: &str, think: Option<Thinking>| on_file(&file, name, think);
    let local = on("local", None).unwrap();
    assert_eq!(local.thinking, Some(64));
    let plan =
        RunPlan::new(&file, Path::new("."), None, &Variables::new(), &local, reading(ResponseType::Json)).unwrap();
    assert_eq!(plan.request.thinking, Some(64));
    assert_eq!(on("local", Some(Thinking::Budget(8))).unwrap().thinking, Some(8));
    assert_eq!(
        on("local", Some(Thinking::On)).unwrap().thinking,
        Some(crate::engine::thinking::DEFAULT_THINKING_BUDGET)
    );
    assert_eq!(on("local", Some(Thinking::Off)).unwrap().thinking, None);
    assert_eq!(on("replay", None).unwrap().thinking, None);
    let refused = on("openai", None).unwrap_err().to_string();
    assert!(refused.contains("the prompt's [provider] thinking") && refused.contains("provider openai"), "{refused}");
    let refused = on("anthropic", Some(Thinking::Budget(8))).unwrap_err().to_string();
    assert!(refused.starts_with("thinking (from --think)") && refused.contains("provider anthropic"), "{refused}");
    // A prompt written for the local model run elsewhere starts from none of its local settings.
    let mut local_file = file.clone();
    local_file.provider.name = Some("local".into());
    assert_eq!(on_file(&local_file, "openai", None).unwrap().thinking, None);
    // Without thinking, the request carries none (its cache key and transcript unchanged).
    let plain = RunPlan::new(
        &prompt(ResponseType::Json),
        Path::new("."),
        None,
        &Variables::new(),
        &settings("none"),
        reading(ResponseType::Json),
    )
    .unwrap();
    assert_eq!(plain.request.thinking, None);
    assert!(!serde_json::to_string(&plain.request).unwrap().contains("thinking"));
}
