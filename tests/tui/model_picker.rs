//! The local model picker (alt-o on the local provider): it asks for the models to be found off the
//! UI thread, lists what comes back (name, family, parameters, quantisation, runs here or why not),
//! and the arrows and enter choose one, typing filters; a model that does not run here is refused
//! with its reason, a typed path still goes through.
#![cfg(feature = "local")]

use std::path::{Path, PathBuf};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::provider::kind::ProviderKind;
use tunebench::tui::input::InputKind;
use tunebench::tui::msg::{Action, Effect, Msg};
use tunebench::tui::state::State;
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;

use super::support::*;

const FAMILIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");

/// An Ollama store holding `name:tag` → a copy of `fixture` (its architecture renamed to `rename`,
/// a name of the same length).
fn put(store: &Path, name: &str, tag: &str, fixture: &str, rename: Option<&[u8]>) {
    let mut bytes = std::fs::read(Path::new(FAMILIES).join(fixture)).unwrap();
    if let Some(to) = rename {
        let key = b"general.architecture";
        // After the key: the value's type (4 bytes) and length (8), then the name.
        let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len() + 12;
        bytes[at..at + to.len()].copy_from_slice(to);
    }
    let hex = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&bytes));
    std::fs::create_dir_all(store.join("blobs")).unwrap();
    std::fs::write(store.join(format!("blobs/sha256-{hex}")), &bytes).unwrap();
    let manifests = store.join("manifests/registry.ollama.ai/library").join(name);
    std::fs::create_dir_all(&manifests).unwrap();
    let layer = serde_json::json!({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": format!("sha256:{hex}")}]});
    std::fs::write(manifests.join(tag), layer.to_string()).unwrap();
}

fn store(dir: &Path) -> PathBuf {
    let store = dir.join("ollama");
    put(&store, "tiny", "q4", "qwen3-Q4_K_M.gguf", None);
    put(&store, "gem", "q8", "gemma3-Q8_0.gguf", None);
    put(&store, "other", "latest", "qwen2-Q8_0.gguf", Some(b"mamba"));
    store
}

fn screen(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|frame| tunebench::tui::view::render(frame, state, &Theme::default())).unwrap();
    terminal.backend().to_string()
}

fn opened_with_models(dir: &Path) -> State {
    let mut state = sample_state();
    state.choice.provider = ProviderKind::Local;
    let effects = update(&mut state, alt('o'));
    // The models are looked for by the runner, off the UI thread; meanwhile the list says so.
    let asked = effects.iter().find_map(|e| if let Effect::FindModels { prompt } = e { Some(prompt) } else { None });
    assert_eq!(asked, Some(&state.path), "{effects:?}");
    assert!(screen(&state).contains("looking for models"));
    // What the runner sends back: the core's listing of the store.
    let found = tunebench::run::models::in_ollama_store(&store(dir));
    update(&mut state, Msg::ModelsFound(found));
    state
}

#[test]
fn alt_o_lists_the_models_found_and_enter_chooses_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = opened_with_models(dir.path());
    let shown = screen(&state);
    let row =
        |name: &str| shown.lines().find(|l| l.contains(name)).unwrap_or_else(|| panic!("{name}:\n{shown}")).to_string();
    assert!(row("ollama:tiny:q4").contains("qwen3") && row("ollama:tiny:q4").contains("Q4_K_M"), "{shown}");
    assert!(row("ollama:tiny:q4").contains("runs here"), "{shown}");
    assert!(row("ollama:gem:q8").contains("gemma3") && row("ollama:gem:q8").contains("Q8_0"), "{shown}");
    assert!(row("ollama:other:latest").contains("no: general.architecture is \"mamba\""), "{shown}");
    // Sorted by name: gem, other, tiny. Down twice and up once: the second; down twice: the last.
    for key in [Key::Down, Key::Down, Key::Up, Key::Down, Key::Down] {
        update(&mut state, special(key));
    }
    assert!(screen(&state).lines().any(|l| l.contains("▸ ollama:tiny:q4")), "{}", screen(&state));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none(), "{:?}", state.input.as_ref().map(|i| &i.error));
    assert_eq!(state.choice.model.as_deref(), Some("ollama:tiny:q4"));
    assert!(!screen(&state).contains("models found"), "the list closes with the input");
}

#[test]
fn typing_filters_the_list_and_a_model_that_does_not_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = opened_with_models(dir.path());
    type_text(&mut state, "gemma");
    let shown = screen(&state);
    assert!(shown.contains("▸ ollama:gem:q8") && !shown.contains("ollama:tiny:q4"), "{shown}");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model.as_deref(), Some("ollama:gem:q8"));
    // One that does not run: the input stays open with the reason.
    update(&mut state, Msg::Action(Action::ChooseModel));
    let found = tunebench::run::models::in_ollama_store(&dir.path().join("ollama"));
    update(&mut state, Msg::ModelsFound(found));
    erase(&mut state, "ollama:gem:q8");
    type_text(&mut state, "other");
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("refused: the input stays open");
    assert!(open.error.as_deref().unwrap_or("").contains("ollama:other:latest does not run here"), "{:?}", open.error);
    assert_eq!(state.choice.model.as_deref(), Some("ollama:gem:q8"));
    // A path matching no model is taken as typed.
    erase(&mut state, "other");
    type_text(&mut state, "/models/mine.gguf");
    assert!(screen(&state).contains("no model matches"), "{}", screen(&state));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model.as_deref(), Some("/models/mine.gguf"));
}

/// The picker lists a fetched model by its short name (`gemma-3-270m`), so that name is taken back,
/// chosen or typed; a bare name that is no fetched model, path or `ollama:NAME` is refused, naming it.
#[test]
fn a_fetched_models_short_name_is_taken_and_an_unknown_name_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = opened_with_models(dir.path());
    type_text(&mut state, "gemma-3-270m");
    assert!(screen(&state).contains("no model matches"), "{}", screen(&state));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none(), "{:?}", state.input.as_ref().map(|i| &i.error));
    assert_eq!(state.choice.model.as_deref(), Some("gemma-3-270m"));
    update(&mut state, Msg::Action(Action::ChooseModel));
    update(&mut state, Msg::ModelsFound(Vec::new()));
    erase(&mut state, "gemma-3-270m");
    type_text(&mut state, "gemma");
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("refused: the input stays open");
    assert!(open.error.as_deref().unwrap_or("").contains("\"gemma\" is not a .gguf file"), "{:?}", open.error);
    assert_eq!(state.choice.model.as_deref(), Some("gemma-3-270m"));
}

/// Opened again, the picker holds the current model selected: enter keeps it, typing replaces it.
#[test]
fn reopened_the_current_model_is_kept_by_enter_and_replaced_by_typing() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = opened_with_models(dir.path());
    type_text(&mut state, "tiny");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model.as_deref(), Some("ollama:tiny:q4"));
    let found = || tunebench::run::models::in_ollama_store(&dir.path().join("ollama"));
    update(&mut state, Msg::Action(Action::ChooseModel));
    update(&mut state, Msg::ModelsFound(found()));
    assert_eq!(state.input.as_ref().unwrap().text(), "ollama:tiny:q4");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model.as_deref(), Some("ollama:tiny:q4"), "enter keeps the current model");
    update(&mut state, Msg::Action(Action::ChooseModel));
    update(&mut state, Msg::ModelsFound(found()));
    type_text(&mut state, "gemma");
    assert_eq!(state.input.as_ref().unwrap().text(), "gemma", "typing replaces the current model");
    assert!(screen(&state).contains("▸ ollama:gem:q8"), "{}", screen(&state));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model.as_deref(), Some("ollama:gem:q8"));
}

#[test]
fn other_providers_keep_the_typed_input() {
    let mut state = sample_state();
    state.choice.provider = ProviderKind::Ollama;
    let effects = update(&mut state, alt('o'));
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(state.input.as_ref().unwrap().kind, InputKind::Model { provider: ProviderKind::Ollama, list: None });
    assert!(!screen(&state).contains("models found"));
}
