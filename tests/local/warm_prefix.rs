//! Later cases start from a warm prefix: the cases of a run share the local model the run factory
//! loads, so a later case runs only from its first token that differs from the case before (the
//! system prompt and the template's text before the variable stay cached) and answers as it would
//! from an empty cache; another system prompt, setting or model reuses only what is truly the same;
//! a schema is compiled once for all the cases held to it.

use std::path::{Path, PathBuf};

use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::local::{Engine, Local, PromptReuse};
use tunebench::provider::{Request, StructuredMode};
use tunebench::run::factory::loaded_local;
use tunebench::run::{RunPlan, RunRecord, RunSetup, SetupOptions};

/// A json prompt with a variable in the middle of its template and three cases.
const PROMPT: &str = r#"
id = "warm-prefix"
response_type = "json"
system = "You name the main entity of a text."
template = '''
Read the text and name the one entity it is about.

<text>
{{text}}
</text>

Answer with {"entity": "<name>"}.
'''
schema = '{"type": "object", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}'

[variables]
text = "Mitochondria produce energy for the cell."

[[cases]]
name = "dna"
[cases.variables]
text = "DNA carries the genetic instructions of living organisms."

[[cases]]
name = "etna"
[cases.variables]
text = "Mount Etna is a volcano in Sicily, 3357 m high."

[[cases]]
name = "lovelace"
[cases.variables]
text = "Ada Lovelace published the first algorithm in 1843."
"#;

const CASES: [&str; 3] = ["dna", "etna", "lovelace"];

/// The prompt file (in a folder of its own) and its setup on the default local model, greedy.
fn setup(dir: &Path) -> RunSetup {
    super::support::model_file();
    setup_on(dir, None)
}

/// [`setup`] on the local model `model` names (`None`: the default model).
fn setup_on(dir: &Path, model: Option<&str>) -> RunSetup {
    let path = dir.join("warm-prefix.toml");
    std::fs::write(&path, PROMPT).unwrap();
    let overrides = ProviderSettings {
        name: Some("local".into()),
        model: model.map(str::to_string),
        max_tokens: Some(6),
        temperature: Some(0.0),
        ..ProviderSettings::default()
    };
    RunSetup::load(&path, SetupOptions::from_flags(overrides).unwrap()).unwrap()
}

/// A copy of the tiny random-weight qwen3 fixture in `dir`: a model file no other test loads.
fn tiny_model(dir: &Path) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families/qwen3-Q4_K_M.gguf");
    let file = dir.join("tiny.gguf");
    std::fs::copy(&fixture, &file).unwrap();
    file
}

/// Runs `plan` as `run` and `eval` run a case: the provider from the setup, the run engine.
fn run_case(setup: &RunSetup, plan: &RunPlan) -> RunRecord {
    let provider = setup.provider_with(plan.case.as_deref(), &|_| None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(tunebench::run::run(provider.as_ref(), plan, |_| {}))
}

fn token_ids(record: &RunRecord) -> Vec<u32> {
    record.turns[0].transcript.chunks.iter().map(|c| c.token.expect("the local model sends token ids")).collect()
}

fn prompt_tokens(engine: &Engine, request: &Request) -> Vec<u32> {
    engine.tokenizer().encode(&engine.prompt_text(request).unwrap()).unwrap()
}

fn common(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The tokens and reuse of `request` answered from an empty cache.
fn cold(engine: &mut Engine, request: &Request) -> (Vec<u32>, PromptReuse) {
    engine.forget_cache();
    let out = engine.generate(request, &mut |_| true).unwrap();
    (out.tokens, engine.last_prompt().unwrap())
}

/// Answers `request` after the cache holds exactly `before`'s prompt and answer; its tokens and reuse.
fn after(engine: &mut Engine, before: &Request, request: &Request) -> (Vec<u32>, PromptReuse) {
    engine.forget_cache();
    engine.generate(before, &mut |_| true).unwrap();
    let out = engine.generate(request, &mut |_| true).unwrap();
    (out.tokens, engine.last_prompt().unwrap())
}

/// Three cases run one after the other on the model the run factory loads: the second and third
/// reuse the prefix they share with the case before — as many tokens as the rendered prompts have in
/// common, at least all of the text before the variable — and answer exactly as from an empty cache.
#[test]
fn later_cases_run_only_from_their_own_text_and_answer_as_from_cold() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(dir.path());
    let plans: Vec<RunPlan> = CASES.iter().map(|case| setup.plan(Some(case)).unwrap()).collect();
    let local: Local = loaded_local("").unwrap();
    local.with_engine(|engine| engine.forget_cache());
    let records: Vec<RunRecord> = plans.iter().map(|plan| run_case(&setup, plan)).collect();
    local.with_engine(|engine| {
        let prompts: Vec<Vec<u32>> = plans.iter().map(|p| prompt_tokens(engine, &p.request)).collect();
        // The text before the variable, as the model sees it.
        let text = engine.prompt_text(&plans[0].request).unwrap();
        let before_variable = &text[..text.find("<text>\n").unwrap() + "<text>\n".len()];
        let shared_text = engine.tokenizer().encode(before_variable).unwrap().len();
        for (i, (plan, record)) in plans.iter().zip(&records).enumerate() {
            assert!(record.turns[0].error.is_none(), "{record:?}");
            let (tokens, cold_reuse) = cold(engine, &plan.request);
            assert_eq!(
                token_ids(record),
                tokens,
                "case {}: the answer differs from the one from an empty cache",
                i + 1
            );
            assert_eq!(cold_reuse.reused_tokens, 0);
            if i == 0 {
                assert_eq!(record.turns[0].usage.map(|u| u.cached_input_tokens), Some(0), "the first case runs cold");
            }
            if i > 0 {
                // The case as it ran after the one before (the cache as the run left it).
                let (again, reuse) = after(engine, &plans[i - 1].request, &plan.request);
                assert_eq!(again, tokens);
                let shared = common(&prompts[i - 1], &prompts[i]);
                assert_eq!(reuse.reused_tokens, shared, "case {}", i + 1);
                // The run's record says so: the cached tokens are part of its input tokens.
                let usage = record.turns[0].usage.expect("the local model reports its usage");
                assert_eq!((usage.cached_input_tokens, usage.input_tokens), (shared as u64, prompts[i].len() as u64));
                assert!(
                    shared + 1 >= shared_text,
                    "case {}: {shared} tokens shared, {shared_text} before the variable",
                    i + 1
                );
                assert_eq!(reuse.prompt_tokens, prompts[i].len());
            }
        }
    });
}

/// How many tokens a changed request reuses after `base`, and whether its answer is the one from an
/// empty cache; the reuse is exactly the tokens the two rendered prompts have in common.
fn reuse_after(engine: &mut Engine, base: &Request, changed: &Request) -> usize {
    let (cold_tokens, _) = cold(engine, changed);
    let (tokens, reuse) = after(engine, base, changed);
    assert_eq!(tokens, cold_tokens, "the answer after {base:?} differs from the one from an empty cache");
    let prompt = prompt_tokens(engine, changed);
    // The prompt's last token is always run: its logits start the answer.
    assert_eq!(reuse.reused_tokens, common(&prompt_tokens(engine, base), &prompt).min(prompt.len() - 1));
    reuse.reused_tokens
}

/// What a changed request may reuse is what is truly the same: the keys and values of a prompt's
/// token depend only on the model and the tokens up to it. Another system prompt keeps only the chat
/// template's opening (`<|im_start|>system\n`), another constraint only what its prompt shares; a new
/// temperature or seed changes no prompt token (sampling comes after the logits), so the whole
/// prompt but its last token (always run, its logits start the answer) is reused.
#[test]
fn another_system_prompt_or_setting_reuses_only_what_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(dir.path());
    let base = setup.plan(Some("dna")).unwrap().request;
    super::support::local().with_engine(|engine| {
        let opening = engine.tokenizer().encode("<|im_start|>system\n").unwrap().len();
        let mut system = base.clone();
        system.messages[0].content = "Say which entity a text is about.".into();
        assert_eq!(reuse_after(engine, &base, &system), opening, "another system prompt");

        let mut sampled = base.clone();
        (sampled.temperature, sampled.seed) = (Some(0.8), Some(7));
        let whole = prompt_tokens(engine, &base).len();
        assert_eq!(reuse_after(engine, &base, &sampled), whole - 1, "another temperature");

        let mut unconstrained = base.clone();
        unconstrained.structured = StructuredMode::None;
        assert_eq!(reuse_after(engine, &base, &unconstrained), whole - 1, "another constraint, the same prompt");
        let mut any_object = base.clone();
        any_object.structured = StructuredMode::JsonObject;
        assert_eq!(reuse_after(engine, &base, &any_object), whole - 1, "another constraint, the same prompt");
    });
}

/// Another model is another engine, with a cache of its own; the same file changed on disk is loaded
/// again (its numbers are others), so nothing made with the old one is reused.
#[test]
fn another_model_or_a_changed_file_starts_cold() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny_model(dir.path());
    let model = file.to_str().unwrap();
    let request = Request::new("").system("Be brief.").user("Name a colour.").max_tokens(3);
    let first = loaded_local(model).unwrap();
    let answer = |local: &Local| local.with_engine(|engine| after_nothing(engine, &request));
    assert_eq!(answer(&first).reused_tokens, 0);
    assert!(answer(&first).reused_tokens > 0, "the same model and prompt again reuses it");
    // The default model is another engine: its cache never held this prompt.
    let default = loaded_local("").unwrap();
    default.with_engine(|engine| engine.forget_cache());
    assert_eq!(answer(&default).reused_tokens, 0);
    // The file rewritten (another modified time): loaded again, from an empty cache.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&file, bytes).unwrap();
    let reloaded = loaded_local(model).unwrap();
    assert_eq!(reloaded.with_engine(|engine| engine.last_prompt()), None, "a new engine");
    assert_eq!(answer(&reloaded).reused_tokens, 0);
    assert!(first.with_engine(|engine| engine.last_prompt()).is_some(), "the old engine is not the new one");
}

fn after_nothing(engine: &mut Engine, request: &Request) -> PromptReuse {
    engine.generate(request, &mut |_| true).unwrap();
    engine.last_prompt().unwrap()
}

/// A schema is compiled once for every case held to it; another schema, or the same with its keys in
/// another order (its grammar writes them in that order), is compiled on its first use. (On a model
/// of this test's own: the count is the engine's.)
#[test]
fn a_schema_is_compiled_once_for_all_its_cases() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let setup = setup_on(dir.path(), model.to_str());
    let local = loaded_local(model.to_str().unwrap()).unwrap();
    let compiled = || local.with_engine(|engine| engine.grammars_compiled());
    // A schema of this test's own, so no other test compiled it before.
    let schema = serde_json::json!({"type": "object", "properties": {"compiled-once": {"type": "string"}, "n": {"type": "integer"}}});
    let plans: Vec<RunPlan> = CASES
        .iter()
        .map(|case| {
            let mut plan = setup.plan(Some(case)).unwrap();
            plan.request = plan.request.clone().structured(StructuredMode::Constrained, Some(schema.clone()));
            plan
        })
        .collect();
    let start = compiled();
    for plan in &plans {
        let record = run_case(&setup, plan);
        assert!(record.turns[0].error.is_none(), "{record:?}");
    }
    assert_eq!(compiled() - start, 1, "three cases, one schema");
    let reordered = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}, "compiled-once": {"type": "string"}}});
    let mut plan = plans[0].clone();
    plan.request = plan.request.clone().structured(StructuredMode::Constrained, Some(reordered));
    run_case(&setup, &plan);
    assert_eq!(compiled() - start, 2, "the keys in another order are another grammar");
    run_case(&setup, &plans[1]);
    assert_eq!(compiled() - start, 2, "the first schema is still kept");
}
