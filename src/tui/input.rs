//! One-off text inputs over the panes (pure, part of `update`): the model picker in the status line
//! (`choose-model`; for the local model, a list of the models found, chosen with the arrows and
//! enter, filtered by what is typed) and the case filter (`/` in the variables pane), the editor of a variable's value (enter on a variable) and of a case being added
//! or copied (its TOML). Enter or ctrl-s applies, esc cancels, alt-enter starts a new line in a box;
//! while one is open every key goes to it.

use ratatui_textarea::{CursorMove, Input, Key, TextArea};

use crate::provider::kind::ProviderKind;
use crate::tui::msg::Effect;
use crate::tui::state::State;
use crate::tui::variables;

pub use crate::tui::input_box::{box_editor, InputBox, InputKind, ModelList};

/// A one-line editor holding `text`, the cursor at its end.
fn line_editor(text: &str) -> TextArea<'static> {
    let mut area = TextArea::new(vec![text.replace(['\n', '\r'], " ")]);
    area.move_cursor(CursorMove::End);
    area
}

/// `choose-model`: opens the model input, prefilled with the current model. For the local model, whose
/// input filters a list, that text is selected: enter keeps it and typing replaces it (a filter typed
/// after a model's path matched nothing); a server's model name is edited in place.
pub fn open_model_picker(state: &mut State) -> Vec<Effect> {
    let provider = state.choice.provider;
    if provider == ProviderKind::Replay {
        state.note = Some(
            "the replay provider plays a recorded answer with its recorded model: alt-p picks another provider first"
                .into(),
        );
        return Vec::new();
    }
    let current = state.choice.model.clone().unwrap_or_default();
    let mut area = line_editor(&current);
    if provider == ProviderKind::Local && !current.is_empty() {
        area.select_all();
    }
    area.set_placeholder_text(if provider == ProviderKind::Local {
        "(default cached model)"
    } else {
        "(server default)"
    });
    // The local model's picker lists the models found; they are looked for off the UI thread.
    let local = provider == ProviderKind::Local;
    let list = local.then(ModelList::default);
    state.input = Some(Box::new(InputBox { kind: InputKind::Model { provider, list }, area, error: None }));
    if local {
        return vec![Effect::FindModels { prompt: state.path.clone() }];
    }
    Vec::new()
}

/// The models found for the local model's picker (dropped when it was closed since).
pub fn models_found(state: &mut State, found: Vec<crate::run::models::FoundModel>) -> Vec<Effect> {
    if let Some(open) = state.input.as_deref_mut() {
        let typed = open.text();
        if let InputKind::Model { list: Some(list), .. } = &mut open.kind {
            list.found = Some(found);
            reselect(list, &typed);
        }
    }
    Vec::new()
}

/// After the typed text changed: the first model it matches is chosen (none when nothing is typed,
/// so that enter on an empty text keeps meaning the default model).
fn reselect(list: &mut ModelList, typed: &str) {
    list.selected = (!typed.trim().is_empty() && !list.matching(typed).is_empty()).then_some(0);
}

/// Up and down in the local model's list (`true`: the key was one of them).
fn move_in_list(open: &mut InputBox, key: Key) -> bool {
    let typed = open.text();
    let InputKind::Model { list: Some(list), .. } = &mut open.kind else { return false };
    let rows = list.matching(&typed).len();
    let step: isize = match key {
        Key::Up => -1,
        Key::Down => 1,
        _ => return false,
    };
    if rows > 0 {
        list.selected = Some(match list.selected {
            None if step > 0 => 0,
            None => rows - 1,
            Some(at) => at.saturating_add_signed(step).min(rows - 1),
        });
    }
    true
}

/// `filter-cases` in the variables pane: the case filter, typed in the status line, applied as typed.
pub fn open_case_filter(state: &mut State) -> Vec<Effect> {
    if state.workbench.focus != crate::tui::workbench::state::Pane::Variables {
        state.note = Some("filtering cases works in the variables pane (alt-4) and on the eval screen".into());
        return Vec::new();
    }
    let mut area = line_editor(&state.workbench.case_filter.text);
    area.set_placeholder_text("(every case)");
    state.input = Some(Box::new(InputBox { kind: InputKind::CaseFilter, area, error: None }));
    Vec::new()
}

/// The typed case filter put to work (a text that does not read keeps the last filter, and says why).
fn filter_as_typed(state: &mut State) -> Result<(), String> {
    let Some(open) = state.input.as_deref() else { return Ok(()) };
    let filter = crate::tui::case_list::CaseFilter::parse(&open.text())?;
    state.workbench.case_filter = filter;
    let (shown, of) = crate::tui::case_list::Listing::of(state).shown_of();
    state.note = Some(format!("{shown} of {of} cases shown"));
    Ok(())
}

/// Enter on a variable row: opens its value in an editor.
pub fn open_variable_editor(state: &mut State) -> Vec<Effect> {
    let Some(row) = variables::selected(state) else { return Vec::new() };
    let area = box_editor(&variables::text_of(&row.value));
    let kind = InputKind::Variable { name: row.name, origin: row.origin, was: row.value };
    state.input = Some(Box::new(InputBox { kind, area, error: None }));
    Vec::new()
}

/// A key while an input is open: enter applies, esc cancels, the rest edits.
pub fn key(state: &mut State, input: Input) -> Vec<Effect> {
    let Some(open) = state.input.as_mut() else { return Vec::new() };
    let apply = match input.key {
        Key::Esc => {
            let what = match &open.kind {
                InputKind::Model { .. } => "model unchanged".to_string(),
                InputKind::Variable { name, .. } => format!("{name} unchanged"),
                InputKind::Case { .. } => "no case added".to_string(),
                InputKind::CaseFilter => {
                    state.workbench.case_filter = Default::default();
                    "every case shown".to_string()
                }
            };
            state.input = None;
            state.note = Some(what);
            return Vec::new();
        }
        Key::Enter if !input.alt && !input.shift => true,
        Key::Char('s') if input.ctrl => true,
        // A model name is one line: nothing else makes a new line in it.
        Key::Enter | Key::Char('\n' | '\r') if is_model(open) => return Vec::new(),
        Key::Char('m') if input.ctrl && is_model(open) => return Vec::new(),
        Key::Up | Key::Down if move_in_list(open, input.key) => return Vec::new(),
        _ => false,
    };
    if apply {
        return self::apply(state);
    }
    if open.area.input(input) {
        open.error = None;
        let typed = open.text();
        if let InputKind::Model { list: Some(list), .. } = &mut open.kind {
            reselect(list, &typed);
        }
        if open.kind == InputKind::CaseFilter {
            refilter(state);
        }
    }
    Vec::new()
}

/// The case filter applied as typed so far; a text that does not read is said in the input.
fn refilter(state: &mut State) {
    if let Err(error) = filter_as_typed(state) {
        if let Some(open) = state.input.as_mut() {
            open.error = Some(error);
        }
    }
}

fn is_model(open: &InputBox) -> bool {
    open.is_line()
}

/// Pasted text goes into the open input (one line for a model).
pub fn paste(state: &mut State, text: &str) {
    if let Some(open) = state.input.as_mut() {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        if open.kind == InputKind::CaseFilter {
            open.area.insert_str(text.replace('\n', " "));
        } else if is_model(open) {
            open.area.insert_str(text.replace('\n', " ").trim());
            let typed = open.text();
            if let InputKind::Model { list: Some(list), .. } = &mut open.kind {
                reselect(list, &typed);
            }
        } else {
            open.area.insert_str(text);
        }
        open.error = None;
        if open.kind == InputKind::CaseFilter {
            refilter(state);
        }
    }
}

/// Applies the open input; a refused value keeps it open with the reason.
fn apply(state: &mut State) -> Vec<Effect> {
    if state.input.as_ref().is_some_and(|open| open.kind == InputKind::CaseFilter) {
        match filter_as_typed(state) {
            Ok(()) => {
                state.input = None;
                // A selected case the filter hides gives way to the next one shown.
                let listing = crate::tui::case_list::Listing::of(state);
                if !listing.shows(state.workbench.selected_variable) {
                    state.workbench.selected_variable =
                        listing.row_at(listing.position_of(state.workbench.selected_variable)).unwrap_or(0);
                }
            }
            Err(error) => {
                state.note = Some(error.clone());
                if let Some(open) = state.input.as_mut() {
                    open.error = Some(error);
                }
            }
        }
        return Vec::new();
    }
    let Some(open) = state.input.take() else { return Vec::new() };
    let text = open.text();
    let result = match &open.kind {
        InputKind::Model { provider, list } => match chosen(list.as_ref(), &text) {
            Some(Ok(name)) => apply_model(state, *provider, &name),
            Some(Err(why)) => Err(why),
            None => apply_model(state, *provider, text.trim()),
        },
        InputKind::Variable { name, origin, was } => variables::value_of(name, was, &text).map(|value| {
            crate::tui::workbench::cases::remember(state, format!("the change of {name}"));
            variables::set(state, name, *origin, value);
            crate::tui::edit::edited(state);
            state.note = Some(format!("{name} changed (ctrl-s saves the prompt; the next run uses it)"));
        }),
        InputKind::Case { at, copy_of } => crate::tui::workbench::cases::add(state, *at, copy_of.as_deref(), &text),
        // Applied before the input was taken (it reads the text there).
        InputKind::CaseFilter => Ok(()),
    };
    if let Err(error) = result {
        state.note = Some(error.clone());
        state.input = Some(Box::new(InputBox { error: Some(error), ..*open }));
    }
    Vec::new()
}

/// The name of the model chosen in the list (`None`: none is, the text counts as typed); a model
/// this build does not run is refused with its reason.
fn chosen(list: Option<&ModelList>, typed: &str) -> Option<Result<String, String>> {
    let list = list?;
    let model = *list.matching(typed).get(list.selected?)?;
    Some(match &model.why_not {
        None => Ok(model.name.clone()),
        Some(why) => Err(format!("{} does not run here: {why}", model.name)),
    })
}

/// The model of the next run: for `local`, empty (the default cached model), a `.gguf` path or
/// `ollama:NAME[:TAG]`; for a server, any name (empty: the server's default).
fn apply_model(state: &mut State, provider: ProviderKind, model: &str) -> Result<(), String> {
    if provider == ProviderKind::Local && !model.is_empty() && !crate::run::models::names_a_local_model(model) {
        return Err(format!(
            "{model:?} is not a .gguf file: the local provider runs a GGUF model, ollama:NAME or a model tunebench fetches (smollm2, gemma-3-270m; leave it empty for the default cached model)"
        ));
    }
    state.choice.model = (!model.is_empty()).then(|| model.to_string());
    state.note = Some(match (&state.choice.model, provider) {
        (None, ProviderKind::Local) => "model: the default cached model (the next run uses it)".to_string(),
        (None, _) => format!("model: {provider}'s default (the next run uses it)"),
        (Some(model), _) => format!("model: {model} (the next run uses it)"),
    });
    Ok(())
}
