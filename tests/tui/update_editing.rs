//! Transition tests of the editing comforts: soft-wrapped editors (the cursor keys and a click follow
//! the wrapped rows as drawn) and the token count of the request in the status line (the plan's
//! request as the run sends it, recounted only when its text changes, warned when it does not fit).

use std::path::Path;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::run::prompt_tokens::{PromptSize, Tokenizer};
use tunebench::run::{RunSetup, SetupOptions};
use tunebench::tui::msg::{Action, Effect, Mouse, MouseKind, Msg, TermEvent};
use tunebench::tui::panes::layout;
use tunebench::tui::state::State;
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;
use tunebench::tui::view::render;
use tunebench::tui::workbench::state::Pane;
use tunebench::tui::workbench::tokens::status_text;

use super::support::*;

fn draw(state: &State, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(frame, state, &Theme::default())).unwrap();
    terminal
}

#[test]
fn the_cursor_moves_by_wrapped_rows_and_a_click_lands_on_the_character_under_it() {
    let mut state = sample_state();
    let first_line = state.template.area().lines()[0].clone();
    assert!(first_line.chars().count() > 120, "the sample's first template line is long");
    state.workbench.zoom = true;
    draw(&state, 80, 24);
    // Down moves to the next screen row of the same (wrapped) line, not to the next line.
    update(&mut state, special(Key::Down));
    let ratatui_textarea::DataCursor(row, col) = state.template.area().cursor();
    assert_eq!(row, 0, "still on the first line");
    assert!(col > 40 && col < 80, "one wrapped row further: column {col}");
    update(&mut state, special(Key::Up));
    assert_eq!(state.template.area().cursor(), (0, 0));
    assert!(!state.dirty, "moving is no edit");

    // A click on the second screen row of the first line, at the whole layout of 120×40.
    state.workbench.zoom = false;
    let terminal = draw(&state, 120, 40);
    let rect = layout(ratatui::layout::Rect::new(0, 0, 120, 40), &state)
        .panes
        .iter()
        .find(|(pane, _)| *pane == Pane::Template)
        .map(|(_, rect)| *rect)
        .unwrap();
    let (column, row) = (rect.x + 1 + 5, rect.y + 1 + 1);
    let cell = terminal.backend().buffer()[(column, row)].symbol().to_string();
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Click, column, row })));
    let ratatui_textarea::DataCursor(line, at) = state.template.area().cursor();
    assert_eq!(line, 0, "the wrapped row belongs to the first line");
    assert!(at > 5, "past the first row's characters: {at}");
    assert_eq!(first_line.chars().nth(at).map(String::from), Some(cell), "the cursor is on the clicked character");
    // A drag selects from the click to the drag's end.
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Drag, column: column + 4, row })));
    assert_eq!(state.template.area().selection_range(), Some(((0, at), (0, at + 4))));
    // Typing there edits the first line at the clicked place.
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Click, column, row })));
    update(&mut state, key('#'));
    assert_eq!(state.template.area().lines()[0].chars().nth(at), Some('#'));
}

/// The sample's request as `tunebench run` plans it under `provider` and `structured`, counted by o200k.
fn planned_tokens(state: &State, structured: Option<&str>) -> usize {
    let overrides = tunebench::prompt::file::ProviderSettings {
        name: Some(state.choice.provider.name().to_string()),
        structured: structured.map(str::to_string),
        max_tokens: state.choice.max_tokens,
        ..Default::default()
    };
    let setup =
        RunSetup::new(state.saved.clone(), Path::new(SAMPLE), SetupOptions::from_flags(overrides).unwrap()).unwrap();
    Tokenizer::O200k.count(&setup.plan(None).unwrap().request).unwrap()
}

#[test]
fn the_status_line_counts_the_planned_request_and_recounts_only_when_it_changes() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    update(&mut state, Msg::Tick { now_ms: 1 });
    let shown = state.workbench.tokens.shown.clone().unwrap().unwrap();
    assert_eq!(
        shown,
        PromptSize { tokens: planned_tokens(&state, None), exact: false, max_tokens: Some(1024), context: 8192 }
    );
    assert_eq!(
        status_text(&state.workbench.tokens).unwrap(),
        (format!("prompt ≈{} + 1024 max / 8192 ctx", shown.tokens), false)
    );
    let counts = state.workbench.tokens.counts;

    // Ticks, run events, cursor moves and focus changes count nothing again.
    update(&mut state, Msg::Tick { now_ms: 300 });
    update(&mut state, special(Key::Down));
    update(&mut state, Msg::Action(Action::FocusSchema));
    update(&mut state, Msg::Action(Action::FocusTemplate));
    assert_eq!(state.workbench.tokens.counts, counts);
    // The schema of a jsonl prompt sent with no structured mode is not in the request: an edit to it
    // changes nothing to count.
    update(&mut state, Msg::Action(Action::FocusSchema));
    update(&mut state, special(Key::Enter));
    assert!(state.dirty);
    assert_eq!(state.workbench.tokens.counts, counts, "the request's text did not change");
    update(&mut state, ctrl('u'));
    assert!(!state.dirty, "ctrl-u undid it");
    // A word typed in the template: counted once per key, the count grows.
    update(&mut state, Msg::Action(Action::FocusTemplate));
    type_text(&mut state, "Please ");
    assert_eq!(state.workbench.tokens.counts, counts + 7);
    assert!(state.workbench.tokens.shown.clone().unwrap().unwrap().tokens > shown.tokens);
    // json-schema on a jsonl prompt: the plan describes the schema in the system prompt, and counts it.
    let before = state.workbench.tokens.shown.clone().unwrap().unwrap().tokens;
    for _ in 0..3 {
        update(&mut state, alt('m'));
    }
    assert_eq!(state.choice.structured, Some(tunebench::provider::StructuredMode::JsonSchema));
    let with_schema = state.workbench.tokens.shown.clone().unwrap().unwrap().tokens;
    assert!(with_schema > before + 50, "the schema instructions are counted: {before} → {with_schema}");
    // A template that does not render says so.
    type_text(&mut state, "{{");
    assert_eq!(status_text(&state.workbench.tokens), Some(("prompt: does not render".into(), true)));
}

#[test]
fn a_large_prompt_is_counted_in_the_background_once_typing_settles_and_an_older_count_is_dropped() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    // The sample is small (counted on the key): as large as the 7 MB schema that lagged.
    state.workbench.background_bytes = 0;
    let count = |effects: Vec<Effect>| {
        effects.into_iter().find_map(|e| if let Effect::CountTokens(request) = e { Some(request) } else { None })
    };
    // A changed choice asks at once, in the background: nothing is counted in `update`.
    let first = count(update(&mut state, Msg::Tick { now_ms: 1 })).expect("a count is asked for");
    assert!(state.workbench.tokens.shown.is_none());
    let second = count(update(&mut state, alt('='))).expect("a new choice asks again");
    assert!(second.asked > first.asked);
    let (asked, newer) = (second.asked, Box::new(second.count()));
    update(&mut state, Msg::TokensCounted { asked, counted: newer });
    let shown = state.workbench.tokens.shown.clone();
    assert_eq!(shown.clone().unwrap().unwrap().max_tokens, Some(2048));
    // The older count comes back late: dropped.
    let (asked, older) = (first.asked, Box::new(first.count()));
    update(&mut state, Msg::TokensCounted { asked, counted: older });
    assert_eq!(state.workbench.tokens.shown, shown);
    // Keys count nothing; once typing settled, the request as it is now is counted.
    update(&mut state, Msg::Action(Action::FocusTemplate));
    for c in "Please ".chars() {
        let effects = update(&mut state, key(c));
        let edits = state.edits;
        assert_eq!(effects, [Effect::Settle { edits }], "no count on the key");
    }
    assert_eq!(state.workbench.tokens.shown, shown);
    let edits = state.edits;
    let older = count(update(&mut state, Msg::Settled { edits: edits - 1 }));
    assert!(older.is_none(), "an older settling asks for nothing");
    let third = count(update(&mut state, Msg::Settled { edits })).expect("counted once typing settled");
    let asked = third.asked;
    update(&mut state, Msg::TokensCounted { asked, counted: Box::new(third.count()) });
    let now = state.workbench.tokens.shown.clone().unwrap().unwrap();
    assert!(now.tokens > shown.unwrap().unwrap().tokens, "the word typed is counted");
}

#[test]
fn prompt_and_max_tokens_over_the_context_window_warn() {
    let mut state = sample_state();
    for _ in 0..3 {
        update(&mut state, alt('='));
    }
    assert_eq!(state.choice.max_tokens, Some(8192));
    let (text, warn) = status_text(&state.workbench.tokens).unwrap();
    assert!(warn, "{text}");
    assert!(text.ends_with("+ 8192 max > 8192 ctx"), "{text}");
    update(&mut state, alt('-'));
    assert!(!status_text(&state.workbench.tokens).unwrap().1);
}

#[test]
fn the_local_tokenizer_is_asked_for_once_and_o200k_estimates_meanwhile() {
    let mut state = sample_state();
    let effects = update(&mut state, Msg::Action(Action::NextProvider));
    assert!(!effects.iter().any(|e| matches!(e, Effect::LoadTokenizer { .. })), "not local yet: {effects:?}");
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Local {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    assert_eq!(state.workbench.tokens.loading.as_deref(), Some(""), "the default model's tokenizer was asked for");
    let effects = update(&mut state, key('x'));
    assert!(effects.is_empty(), "asked once: {effects:?}");
    let size = state.workbench.tokens.shown.clone().unwrap().unwrap();
    assert!(!size.exact, "o200k estimates until the tokenizer is read");
    assert_eq!(size.max_tokens, Some(1024));
    // The model is missing in the test cache: the estimate stays, nothing is asked again.
    update(&mut state, Msg::TokenizerLoaded { model: String::new(), tokenizer: Err("no model".into()) });
    assert!(state.workbench.tokens.loading.is_none());
    type_text(&mut state, "more");
    assert!(!state.workbench.tokens.shown.clone().unwrap().unwrap().exact);
    // A model fetched later is read then.
    let effects = update(&mut state, Msg::ModelFetch(tunebench::tui::msg::FetchNews::Done(Ok("/m.gguf".into()))));
    assert!(effects.iter().any(|e| matches!(e, Effect::LoadTokenizer { model } if model.is_empty())), "{effects:?}");
}

/// A schema typed into a prompt that had none is the file's inline schema once saved: the pane's title
/// says so (it said "none yet" until the workbench was opened again).
#[test]
fn a_schema_typed_into_an_empty_pane_is_inline_once_saved() {
    without_local_model();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.toml");
    std::fs::write(&path, "# a prompt with no schema yet\nid = \"plain\"\ntemplate = \"Name the colour of {{thing}}.\"\n\n[variables]\nthing = \"grass\"\n").unwrap();
    let mut state = tunebench::tui::setup::state_for(&path).unwrap();
    assert_eq!(state.schema_kind, tunebench::tui::state::SchemaKind::None);
    state.workbench.focus = tunebench::tui::workbench::state::Pane::Schema;
    type_text(&mut state, r#"{"type": "object"}"#);
    let effects = update(&mut state, ctrl('s'));
    let [effect @ Effect::Save { .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let file = save_into(effect, dir.path());
    assert!(file.text.starts_with("# a prompt with no schema yet\n"), "{}", file.text);
    update(&mut state, Msg::Saved(Ok(Box::new(file))));
    assert_eq!(state.schema_kind, tunebench::tui::state::SchemaKind::Inline);
}
