//! Transition tests of the one-off inputs: the model picker (`choose-model`) in the status line.

use ratatui_textarea::Key;
use tunebench::tui::input::InputKind;
use tunebench::tui::msg::{Action, Effect, Msg, TermEvent};
use tunebench::tui::update::update;

use super::support::*;

fn model_of_next_run(state: &mut tunebench::tui::state::State) -> Option<String> {
    let effects = update(state, Msg::Action(Action::Run));
    let [Effect::StartRun(request)] = effects.as_slice() else { panic!("{effects:?}") };
    request.model.clone()
}

#[test]
fn a_typed_model_name_is_used_by_the_next_run() {
    let mut state = sample_state();
    state.choice.provider = "openai".into();
    state.choice.model = Some("gpt-old".into());
    update(&mut state, alt('o'));
    let open = state.input.as_ref().expect("alt-o opens the model input");
    assert_eq!(open.kind, InputKind::Model { provider: "openai".into() });
    assert_eq!(open.text(), "gpt-old", "prefilled with the current model");
    // Typing does not go to the template behind it.
    let template = state.texts()[1].clone();
    for _ in 0..3 {
        update(&mut state, special(Key::Backspace));
    }
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
    state.choice.provider = "ollama".into();
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
    state.choice.provider = "local".into();
    update(&mut state, Msg::Action(Action::ChooseModel));
    assert_eq!(state.input.as_ref().unwrap().text(), "", "no model: the default cached one");
    type_text(&mut state, "gpt-4o");
    update(&mut state, special(Key::Enter));
    let open = state.input.as_ref().expect("a name that is no .gguf is refused, the input stays open");
    assert!(open.error.as_deref().unwrap_or("").contains("\"gpt-4o\" is not a .gguf"), "{:?}", open.error);
    assert_eq!(state.choice.model, None);
    // A pasted path (newline dropped) is taken.
    for _ in 0.."gpt-4o".len() {
        update(&mut state, special(Key::Backspace));
    }
    update(&mut state, Msg::Term(TermEvent::Paste("/models/tiny.Q8_0.gguf\n".into())));
    update(&mut state, special(Key::Enter));
    assert!(state.input.is_none());
    assert_eq!(state.choice.model.as_deref(), Some("/models/tiny.Q8_0.gguf"));
    assert_eq!(model_of_next_run(&mut state).as_deref(), Some("/models/tiny.Q8_0.gguf"));
    // Emptied: back to the default cached model.
    let mut state = sample_state();
    state.choice.provider = "local".into();
    state.choice.model = Some("/models/tiny.gguf".into());
    update(&mut state, alt('o'));
    for _ in 0.."/models/tiny.gguf".len() {
        update(&mut state, special(Key::Backspace));
    }
    update(&mut state, special(Key::Enter));
    assert_eq!(state.choice.model, None);
    assert!(state.note.as_deref().unwrap_or("").contains("default cached model"), "{:?}", state.note);
}

#[test]
fn the_replay_provider_has_no_model_to_choose() {
    let mut state = sample_state();
    assert_eq!(state.choice.provider, "replay");
    update(&mut state, alt('o'));
    assert!(state.input.is_none());
    assert!(state.note.as_deref().unwrap_or("").contains("alt-p"), "{:?}", state.note);
}
