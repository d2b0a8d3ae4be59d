//! The workbench's token count on the local model is what the model reads: the tokenizer and chat
//! template read from the GGUF's header (not its weights) count exactly the prompt the engine feeds.

use std::path::Path;
use std::sync::Arc;

use tunebench::run::prompt_tokens::{LocalTokenizer, Tokenizer};
use tunebench::tui::msg::Msg;
use tunebench::tui::update::update;

use super::support::{generate, jsonl_request, local, model_file};

#[test]
fn the_local_count_is_the_prompt_the_engine_reads() {
    // The tokenizer is read from the default model in the cache directory: fetched first when it is not there.
    model_file();
    let tokenizer = LocalTokenizer::open("").unwrap();
    let request = jsonl_request(1);
    let counted = Tokenizer::Local(Arc::clone(&tokenizer)).count(&request).unwrap();
    let engine = local().with_engine(|e| e.tokenizer().encode(&e.prompt_text(&request).unwrap()).unwrap().len());
    assert_eq!(counted, engine);
    let (generated, _) = generate(&request);
    assert_eq!(counted, generated.prompt_tokens, "the prompt a generation reports");
    assert!(counted > Tokenizer::O200k.count(&request).unwrap(), "the chat template's own tokens are counted too");
    assert!(tokenizer.context >= 2048, "the model's context length: {}", tokenizer.context);
    assert!(Arc::ptr_eq(&tokenizer, &LocalTokenizer::open("").unwrap()), "read once per process");
    let error = LocalTokenizer::open("/nowhere/model.gguf").unwrap_err();
    assert!(error.contains("/nowhere/model.gguf"), "{error}");
}

#[test]
fn the_workbench_counts_with_the_local_tokenizer_once_it_is_read() {
    model_file();
    let mut state = tunebench::tui::setup::state_for(Path::new("sample-prompts/extract-topics.toml")).unwrap();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    update(&mut state, Msg::Tick { now_ms: 1 });
    let estimate = state.workbench.tokens.shown.clone().unwrap().unwrap();
    assert!(!estimate.exact);
    update(&mut state, Msg::TokenizerLoaded { model: String::new(), tokenizer: LocalTokenizer::open("") });
    let size = state.workbench.tokens.shown.clone().unwrap().unwrap();
    assert!(size.exact, "{size:?}");
    assert_eq!(size.max_tokens, Some(1024), "the prompt's max tokens");
    let model = LocalTokenizer::open("").unwrap().context;
    assert_eq!(size.context, model.min(4096), "the positions the workbench loads the model with");
    let (_, plan) = tunebench::tui::workbench::request::preview_plan(&state).unwrap();
    let engine = local().with_engine(|e| e.tokenizer().encode(&e.prompt_text(&plan.request).unwrap()).unwrap().len());
    assert_eq!(size.tokens, engine);
    let (text, warn) = tunebench::tui::workbench::tokens::status_text(&state.workbench.tokens).unwrap();
    assert_eq!(text, format!("prompt {engine} + 1024 max / {} ctx", size.context));
    assert!(!warn);
}
