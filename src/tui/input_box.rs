//! An open text input (the model picker, the case filter, a variable's or a case's editor): what it edits, its editor
//! and why the last apply was refused, and for the local model the models found to choose from
//! ([`ModelList`]); `tui/input.rs` opens and applies it.

use ratatui_textarea::{CursorMove, TextArea};

use crate::provider::kind::ProviderKind;
use crate::run::models::FoundModel;

/// Where a variable's shown value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The prompt's `[variables]` table.
    Defaults,
    /// The variables of case number `n` (index into the prompt's cases).
    Case(usize),
}

/// What an open input is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// The model of the next run for `provider` (empty: the provider's default; for `local`, the
    /// default cached model); for `local`, the models found to choose from.
    Model { provider: ProviderKind, list: Option<ModelList> },
    /// The value of variable `name` in the table `origin` names; `was` is its value before.
    Variable { name: String, origin: Origin, was: serde_json::Value },
    /// A case to insert at `at` (into `State::cases`), typed as TOML; `copy_of` names the case copied.
    Case { at: usize, copy_of: Option<String> },
    /// The case filter of the variables pane, applied as it is typed (`/`).
    CaseFilter,
}

/// The local models the picker lists (as `tunebench model list` finds them, off the UI thread), and
/// the one chosen among those the typed text matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelList {
    /// `None` while they are being looked for.
    pub found: Option<Vec<FoundModel>>,
    /// The row chosen among the matching ones (`None`: enter takes the text as typed).
    pub selected: Option<usize>,
}

impl ModelList {
    /// The models `typed` matches (in name, family or quantisation, ignoring case; every one when
    /// nothing is typed).
    pub fn matching(&self, typed: &str) -> Vec<&FoundModel> {
        let typed = typed.trim().to_lowercase();
        let fields = |m: &FoundModel| {
            [Some(m.name.as_str()), m.family.as_deref(), m.quantisation.as_deref()]
                .into_iter()
                .flatten()
                .any(|field| field.to_lowercase().contains(&typed))
        };
        self.found.iter().flatten().filter(|m| typed.is_empty() || fields(m)).collect()
    }
}

/// An open text input: what it edits, its editor, and why the last apply was refused.
#[derive(Clone, Debug)]
pub struct InputBox {
    pub kind: InputKind,
    pub area: TextArea<'static>,
    pub error: Option<String>,
}

impl InputBox {
    /// Whether it is typed in the status line, one line (the model, the case filter), not in a box.
    pub fn is_line(&self) -> bool {
        matches!(self.kind, InputKind::Model { .. } | InputKind::CaseFilter)
    }

    /// The text as typed (lines joined by newlines).
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// What the input asks for, shown before it.
    pub fn label(&self) -> String {
        match &self.kind {
            InputKind::Model { provider, .. } => format!("model for {provider}: "),
            InputKind::Variable { name, origin: Origin::Defaults, .. } => format!("{name} ([variables])"),
            InputKind::Variable { name, .. } => format!("{name} (this case's variables)"),
            InputKind::Case { copy_of: None, .. } => "new case".to_string(),
            InputKind::Case { copy_of: Some(from), .. } => format!("copy of case {from}"),
            InputKind::CaseFilter => "cases: /".to_string(),
        }
    }

    /// The title of the box it is edited in.
    pub fn title(&self) -> String {
        match &self.kind {
            InputKind::Case { .. } => format!("{} · name, expect, [variables] as TOML", self.label()),
            _ => format!("edit {}", self.label()),
        }
    }

    /// The hint shown after it.
    pub fn hint(&self) -> &'static str {
        match &self.kind {
            InputKind::Model { provider: ProviderKind::Local, .. } => {
                "↑↓ choose · type to filter, or a .gguf path or ollama:NAME · empty: default · enter/esc"
            }
            InputKind::Model { .. } => "a model name, empty: the server's default · enter/esc",
            InputKind::Variable { was, .. } if was.is_string() => {
                "enter or ctrl-s apply · alt-enter new line · esc cancel"
            }
            InputKind::Variable { .. } => "a JSON value · enter or ctrl-s apply · alt-enter new line · esc cancel",
            InputKind::Case { .. } => "enter or ctrl-s add the case · alt-enter new line · esc cancel",
            InputKind::CaseFilter => {
                "name words, is:failing|passing|changed|pass|fail|truncated|error · enter keeps · esc clears"
            }
        }
    }
}

/// A box editor holding `text`, the cursor at its end: long lines soft-wrap at the box's edge, as in
/// the prompt's editors.
pub fn box_editor(text: &str) -> TextArea<'static> {
    let mut area = crate::tui::editor::area_of(text);
    area.set_cursor_line_style(ratatui::style::Style::default());
    area.move_cursor(CursorMove::Bottom);
    area.move_cursor(CursorMove::End);
    area
}
