//! Transition tests of the one-off inputs: the model picker (`choose-model`) in the status line and
//! the editor of a variable's value (enter in the variables pane), with its save round trip.

use ratatui_textarea::Key;
use tunebench::tui::input::InputKind;
use tunebench::tui::msg::{Action, Effect, Msg, Start, TermEvent};
use tunebench::tui::update::update;

use super::support::*;

fn model_of_next_run(state: &mut tunebench::tui::state::State) -> Option<String> {
    let effects = update(state, Msg::Action(Action::Run));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    request.target.model.clone()
}

#[test]
fn a_typed_model_name_is_used_by_the_next_run() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    state.choice.model = Some("gpt-old".into());
    update(&mut state, alt('o'));
    let open = state.input.as_ref().expect("alt-o opens the model input");
    assert_eq!(open.kind, InputKind::Model { provider: tunebench::provider::kind::ProviderKind::Openai, list: None });
    assert_eq!(open.text(), "gpt-old", "prefilled with the current model");
    // Typing does not go to the template behind it.
    let template = state.texts()[1].clone();
    erase(&mut state, "old");
    type_text(&mut state, "new");
    assert_eq!(state.input.as_ref().unwrap().text(), "gpt-new");
    assert_eq!(state.texts()[1], template);
    assert!(!state.dirty, "choosing a model is not an edit of the prompt");
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none());
    assert_eq!(state.choice.model.as_deref(), Some("gpt-new"));
    assert_eq!(model_of_next_run(&mut state).as_deref(), Some("gpt-new"));
}

#[test]
fn esc_cancels_and_keeps_the_model() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Ollama;
    state.choice.model = Some("llama3".into());
    update(&mut state, alt('o'));
    type_text(&mut state, "-typo");
    let effects = update(&mut state, special(Key::Esc));
    assert!(effects.is_empty(), "esc closes the input, it does not cancel a run: {effects:?}");
    assert!(state.input.is_none());
    assert_eq!(state.choice.model.as_deref(), Some("llama3"));
    assert_eq!(state.note.as_deref(), Some("model unchanged"));
}

#[test]
fn local_takes_the_default_cached_model_or_a_gguf_path() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    update(&mut state, Msg::Action(Action::ChooseModel));
    assert_eq!(state.input.as_ref().unwrap().text(), "", "no model: the default cached one");
    type_text(&mut state, "gpt-4o");
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("a name that is no .gguf is refused, the input stays open");
    assert!(open.error.as_deref().unwrap_or("").contains("\"gpt-4o\" is not a .gguf"), "{:?}", open.error);
    assert_eq!(state.choice.model, None);
    // A pasted path (newline dropped) is taken.
    erase(&mut state, "gpt-4o");
    update(&mut state, Msg::Term(TermEvent::Paste("/models/tiny.Q8_0.gguf\n".into())));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none());
    assert_eq!(state.choice.model.as_deref(), Some("/models/tiny.Q8_0.gguf"));
    assert_eq!(model_of_next_run(&mut state).as_deref(), Some("/models/tiny.Q8_0.gguf"));
    // Emptied: back to the default cached model.
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    state.choice.model = Some("/models/tiny.gguf".into());
    update(&mut state, alt('o'));
    erase(&mut state, "/models/tiny.gguf");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model, None);
    assert!(state.note.as_deref().unwrap_or("").contains("default cached model"), "{:?}", state.note);
}

#[test]
fn the_replay_provider_has_no_model_to_choose() {
    let mut state = sample_state();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Replay);
    update(&mut state, alt('o'));
    assert!(state.input.is_none());
    assert!(state.note.as_deref().unwrap_or("").contains("alt-p"), "{:?}", state.note);
}

/// Focuses the variables pane and selects the first variable row (after the default row and cases).
fn select_first_variable(state: &mut tunebench::tui::state::State) {
    update(state, Msg::Action(Action::FocusVariables));
    for _ in 0..=state.saved.cases.len() {
        update(state, key('j'));
    }
}

#[test]
fn enter_on_a_variable_edits_its_value_and_marks_the_prompt_unsaved() {
    let mut state = sample_state();
    select_first_variable(&mut state);
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("enter on a variable opens its editor");
    assert!(matches!(&open.kind, InputKind::Variable { name, .. } if name == "text"), "{:?}", open.kind);
    assert!(open.text().starts_with("Deoxyribonucleic acid"), "{}", open.text());
    // Esc cancels: nothing changes.
    update(&mut state, special(Key::Esc));
    assert!(state.input.is_none());
    assert!(!state.dirty);
    assert!(state.variables["text"].as_str().unwrap().starts_with("Deoxyribonucleic"));
    // A new two-line value: ctrl-a/ctrl-k would be editor keys; select all and type over it instead.
    update(&mut state, special(Key::Enter));
    let lines = state.input.as_ref().unwrap().area.lines().len();
    assert_eq!(lines, 1);
    state.input.as_mut().unwrap().area.select_all();
    update(&mut state, special(Key::Backspace));
    type_text(&mut state, "Ribosomes read mRNA.");
    update(
        &mut state,
        Msg::Term(TermEvent::Key(ratatui_textarea::Input { key: Key::Enter, alt: true, ..Default::default() })),
    );
    type_text(&mut state, "Second line.");
    assert!(state.input.is_some(), "alt-enter makes a new line, it does not apply");
    update(&mut state, ctrl('s'));
    assert!(state.input.is_none(), "ctrl-s applies");
    assert_eq!(state.variables["text"], "Ribosomes read mRNA.\nSecond line.");
    assert!(state.dirty, "an edited variable is an unsaved edit");
    // The next run renders it.
    let effects = update(&mut state, Msg::Action(Action::Run));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    let rendered = request.prompt.render(None, &Default::default()).unwrap();
    assert!(rendered.user.contains("Ribosomes read mRNA.\nSecond line."), "{}", rendered.user);
}

#[test]
fn an_edited_variable_is_saved_into_the_prompt_file_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = sample_state();
    select_first_variable(&mut state);
    update(&mut state, special(Key::Enter));
    state.input.as_mut().unwrap().area.select_all();
    update(&mut state, special(Key::Backspace));
    type_text(&mut state, "Saved value \"quoted\".");
    update(&mut state, special(Key::Enter));
    let effects = update(&mut state, ctrl('s'));
    let [effect @ Effect::Save { prompt, schema_file: None, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(prompt.cases, state.saved.cases, "the cases are untouched");
    // Written as the runner writes it (in place, temp file + rename), then read back by the prompt loader.
    let file = save_into(effect, dir.path());
    let path = dir.path().join("agent-kg-extract.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("[variables]"), "{text}");
    let back = tunebench::prompt::file::PromptFile::load(&path).unwrap();
    assert_eq!(back.variables["text"], "Saved value \"quoted\".");
    assert_eq!(back.cases, state.saved.cases);
    assert_eq!(update(&mut state, Msg::Saved(Ok(Box::new(file)))), [Effect::ClearRecovery]);
    assert!(!state.dirty, "saved: nothing unsaved any more");
    // The unsaved value also goes to the recovery file, and comes back from it.
    let mut state = sample_state();
    state.variables.insert("text".into(), "recovered".into());
    tunebench::tui::edit::edited(&mut state);
    let edits = tunebench::tui::edit::recovery(&state, 0);
    let mut fresh = sample_state();
    tunebench::tui::edit::restore(&mut fresh, &edits);
    assert_eq!(fresh.variables["text"], "recovered");
    assert!(fresh.dirty);
}

#[test]
fn a_case_variable_is_edited_in_its_case_and_json_values_must_stay_json() {
    let mut state = sample_state();
    update(&mut state, alt('c'));
    let case = state.choice.case.clone().unwrap();
    select_first_variable(&mut state);
    update(&mut state, special(Key::Enter));
    state.input.as_mut().unwrap().area.select_all();
    update(&mut state, special(Key::Backspace));
    type_text(&mut state, "case text");
    update(&mut state, special(Key::Enter));
    assert_eq!(state.cases[0].variables["text"], "case text", "the case sets it: the edit goes there");
    assert!(state.variables["text"].as_str().unwrap().starts_with("Deoxyribonucleic"));
    let effects = update(&mut state, ctrl('s'));
    let [Effect::Save { prompt, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(prompt.case(&case).unwrap().variables["text"], "case text");

    // A value that is not a string is edited as JSON; text that is not JSON is refused, named.
    let mut state = sample_state();
    state.variables.insert("limit".into(), serde_json::json!(5));
    select_first_variable(&mut state);
    update(&mut state, key('j'));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.input.as_ref().unwrap().text(), "5");
    type_text(&mut state, "x");
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("refused: stays open");
    assert!(open.error.as_deref().unwrap_or("").starts_with("limit holds JSON and 1:"), "{:?}", open.error);
    update(&mut state, special(Key::Backspace));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none());
    assert_eq!(state.variables["limit"], serde_json::json!(5));
}

/// The provider and structured mode the prompt names are typed where the workbench opens on it: an
/// unknown one is refused then, naming the file and the value (not deep in a run).
#[test]
fn an_unknown_provider_or_mode_in_the_prompt_is_refused_when_the_workbench_opens() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let with = |name: &str, line: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text.replacen("[provider]\n", &format!("[provider]\n{line}\n"), 1)).unwrap();
        path
    };
    let gpt = with("gpt.toml", "name = \"gpt\"");
    let error = tunebench::tui::setup::state_for(&gpt).map(|_| ()).unwrap_err().to_string();
    assert!(error.contains("gpt.toml") && error.contains("\"gpt\" is not a provider"), "{error}");
    let strict = with("strict.toml", "structured = \"strict\"");
    let error = tunebench::tui::setup::state_for(&strict).map(|_| ()).unwrap_err().to_string();
    assert!(error.contains("\"strict\" is not a structured mode"), "{error}");
    let ollama = with("ollama.toml", "name = \"ollama\"\nstructured = \"json-schema\"");
    let state = tunebench::tui::setup::state_for(&ollama).unwrap();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Ollama);
    assert_eq!(state.choice.structured, Some(tunebench::provider::StructuredMode::JsonSchema));
}
