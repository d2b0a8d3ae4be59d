//! What every screen shares: the screen shown, the prompt being edited (its editors, variables, cases,
//! the saved file), the run choice, the overlays and the status note; and each screen's own state
//! (`workbench`, `eval`, `compare`, `optimize`), kept while another is shown. `update` changes it;
//! panes only read it.

use std::path::PathBuf;

use crate::tui::editor::Editor;

use crate::output::ResponseType;
use crate::prompt::file::{OnDisk, PromptFile};
use crate::provider::kind::ProviderKind;
use crate::tui::keymap::Keymap;
use crate::tui::recovery::Recovery;

use crate::tui::choice::Choice;
pub use crate::tui::run_view::{counts, ChunkProb, RunView, TruncationView};
use crate::tui::workbench::state::{Pane, WorkbenchView};

/// What the schema editor holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaKind {
    /// An inline JSON Schema.
    Inline,
    /// A JSON Schema file next to the prompt (saved to that file).
    File(PathBuf),
    /// A PtcRunner signature.
    Signature,
    /// No schema yet: what is typed becomes an inline schema.
    None,
}

/// A modal view over the panes.
#[derive(Clone, Debug, PartialEq)]
pub enum Overlay {
    None,
    /// The key help.
    Help,
    /// Quit was asked with unsaved edits.
    ConfirmQuit,
    /// Unsaved edits of this prompt were found from an earlier session.
    Recovery(Box<Recovery>),
    /// A file of this prompt changed on disk while it had unsaved edits, or a save found it changed.
    ChangedOutside(Box<OutsideChange>),
    /// Delete was asked for the case at `index` (into `State::cases`) named `name`.
    ConfirmDeleteCase {
        index: usize,
        name: String,
    },
}

/// A file of the prompt that changed on disk, and what the overlay shows of it.
#[derive(Clone, Debug, PartialEq)]
pub struct OutsideChange {
    pub path: PathBuf,
    /// What the file holds now.
    pub text: String,
    /// A save found it (the author asked to write); otherwise the watch noticed it.
    pub refused_save: bool,
    /// The difference from what the workbench last read or wrote (unified, a few lines of context),
    /// once asked for.
    pub diff: Option<Vec<String>>,
    pub scroll: usize,
}

/// Which screen is shown; each keeps its state in [`State`] while another is (a new screen is a
/// folder beside `tui/eval/` with its state, update and view, a variant here, and its arms in the
/// router `tui/update.rs` and in `tui/view.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Screen {
    /// The editing screen: editors, variables, the run, truncation, history.
    #[default]
    Workbench,
    /// The eval screen (`tui/eval/`).
    Eval,
    /// The compare screen (`tui/compare/`).
    Compare,
    /// The optimize screen (`tui/optimize/`).
    Optimize,
}

/// What the last frame drew where, for the mouse and the help's scroll: the views note it as they
/// draw, and the pure update reads it as data (it calls no pane code). Empty until a frame is drawn.
#[derive(Debug, Default)]
pub struct Drawn(std::cell::RefCell<Shown>);

/// The places a frame drew (see [`Drawn`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shown {
    /// The editing screen's panes where the layout put them.
    pub panes: Vec<(Pane, ratatui::layout::Rect)>,
    /// Each editor's text area (inside its frame, past its gutter).
    pub editor_text: Vec<(Pane, ratatui::layout::Rect)>,
    /// The variables pane's inside, and the list row drawn on its second line (the first is the run's).
    pub variables: Option<(ratatui::layout::Rect, usize)>,
    /// The truncation chart: its plot's first column and width, and the chart's area.
    pub plot: Option<(u16, u16, ratatui::layout::Rect)>,
    /// The help: lines per page and the most it scrolls.
    pub help: (usize, usize),
}

impl Drawn {
    /// What the last frame drew.
    pub fn shown(&self) -> Shown {
        self.0.try_borrow().map(|s| s.clone()).unwrap_or_default()
    }

    /// A view notes what it drew (a borrow already held is left alone: nothing is noted).
    pub fn note(&self, change: impl FnOnce(&mut Shown)) {
        if let Ok(mut shown) = self.0.try_borrow_mut() {
            change(&mut shown);
        }
    }
}

/// The whole workbench.
pub struct State {
    /// The screen shown.
    pub screen: Screen,
    /// The editing screen's state, kept while another screen is shown.
    pub workbench: WorkbenchView,
    pub path: PathBuf,
    /// The prompt as last loaded or saved.
    pub saved: PromptFile,
    /// The prompt file's text as last loaded or saved: what a save edits in place, and what a change
    /// made outside the workbench is noticed against.
    pub saved_text: String,
    pub system: Editor,
    pub template: Editor,
    pub schema: Editor,
    pub schema_kind: SchemaKind,
    /// The schema text as last loaded or saved (dirty tracking).
    pub saved_texts: [String; 3],
    /// Edits since the last save.
    pub dirty: bool,
    /// Bumped on every edit; the recovery file is written when it moved.
    pub edits: u64,
    pub recovery_written: u64,
    pub last_recovery_ms: u64,
    pub overlay: Overlay,
    pub choice: Choice,
    /// The last note for the status line.
    pub note: Option<String>,
    pub keymap: Keymap,
    /// Columns, rows of the terminal.
    pub size: (u16, u16),
    /// What the last frame drew where (the mouse and the help's scroll read it).
    pub drawn: Drawn,
    pub now_ms: u64,
    pub quit: bool,
    /// Why the replay provider is used when nothing else was chosen (shown in the status bar).
    pub replay_reason: Option<String>,
    /// The local model is missing and may be fetched in the background (the start-up asks for it).
    pub fetch_model: bool,
    /// The prompt and texts a save in flight writes (they become the saved ones when it succeeds).
    pub pending_save: Option<Box<(PromptFile, [String; 3])>>,
    /// The compare screen's state (json vs jsonl side by side), kept while another screen is shown.
    pub compare: crate::tui::compare::state::CompareView,
    /// The eval screen's state, kept while another screen is shown.
    pub eval: crate::tui::eval::state::EvalView,
    /// The optimize screen's state, kept while another screen is shown.
    pub optimize: crate::tui::optimize::state::OptimizeView,
    /// The cases the last optimization of this session held out (the eval matrix marks them).
    pub held_out: Option<HeldOut>,
    /// The editors before and after the last accepted candidate (undo-accept puts them back).
    pub accept_undo: Option<Box<crate::tui::optimize::state::AcceptUndo>>,
    /// The prompt's `[variables]` as edited.
    pub variables: crate::prompt::template::Variables,
    /// The cases as edited: names, notes and variables, added, copied or deleted ones too (saved with
    /// the prompt by ctrl-s).
    pub cases: Vec<crate::prompt::file::Case>,
    /// Whether the variables or the cases differed from the saved ones when last compared (on each
    /// change of them or of the saved prompt: `edit::recheck`).
    pub variables_changed: bool,
    /// Lines the help overlay is scrolled by (when it does not fit the screen).
    pub help_scroll: usize,
    /// An open text input (the model picker, a variable's editor): it takes every key.
    pub input: Option<Box<crate::tui::input_box::InputBox>>,
    /// Reads the providers' variables for the request preview (the process environment).
    pub env: Env,
}

impl State {
    /// The workbench on the prompt file read from `path`.
    pub fn new(path: PathBuf, file: OnDisk, schema_text: String, schema_kind: SchemaKind) -> State {
        let OnDisk { text: saved_text, prompt } = file;
        let system = prompt.system.clone().unwrap_or_default();
        let template = prompt.template.clone();
        let prompt_variables = prompt.variables.clone();
        let cases = prompt.cases.clone();
        // The start-up refuses a prompt whose choice cannot be read (`setup::state_for`); one made
        // here without it runs on the replay with the prompt's model.
        let choice = Choice::of(&prompt).unwrap_or_else(|_| Choice {
            provider: ProviderKind::Replay,
            model: prompt.provider.model.clone(),
            structured: None,
            max_tokens: prompt.provider.max_tokens,
            case: None,
            transcript: None,
        });
        State {
            screen: Screen::Workbench,
            workbench: WorkbenchView::new(),
            path,
            saved_texts: [system.clone(), template.clone(), schema_text.clone()],
            system: editor(&system),
            template: editor(&template),
            schema: editor(&schema_text),
            saved: prompt,
            saved_text,
            schema_kind,
            dirty: false,
            edits: 0,
            recovery_written: 0,
            last_recovery_ms: 0,
            overlay: Overlay::None,
            choice,
            note: None,
            keymap: Keymap::default(),
            size: (120, 40),
            drawn: Drawn::default(),
            now_ms: 0,
            quit: false,
            replay_reason: None,
            fetch_model: false,
            pending_save: None,
            compare: Default::default(),
            eval: Default::default(),
            optimize: Default::default(),
            held_out: None,
            accept_undo: None,
            input: None,
            help_scroll: 0,
            variables: prompt_variables,
            cases,
            variables_changed: false,
            env: crate::run::env_var,
        }
    }

    /// Whether the editors hold more than `background_bytes`: then a key lints and counts nothing
    /// (that waits for typing to settle, and is made in the background); smaller texts are linted
    /// and counted on the key, as they are cheap.
    pub fn heavy(&self) -> bool {
        [&self.system, &self.template, &self.schema].iter().map(|editor| editor.bytes() + 1).sum::<usize>()
            > self.workbench.background_bytes
    }

    /// The texts of the three editors.
    pub fn texts(&self) -> [String; 3] {
        [self.system.text(), self.template.text(), self.schema.text()]
    }

    pub fn response_type(&self) -> ResponseType {
        self.saved.response_type
    }
}

/// An editor pane holding `text` (see [`Editor`]: long lines soft-wrap unless the text is large, and
/// a very large text is edited through a window).
pub fn editor(text: &str) -> Editor {
    Editor::new(text)
}

/// The cases held out by an optimization of this prompt in this session: the eval matrix marks them
/// so the user does not tune on them by hand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeldOut {
    /// The optimization's id (`None` while it runs).
    pub optimization: Option<String>,
    pub cases: Vec<String>,
}

impl HeldOut {
    pub fn holds(&self, case: &str) -> bool {
        self.cases.iter().any(|c| c == case)
    }
}

/// Reads the providers' variables (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, ...): the process environment
/// ([`crate::run::env_var`]) but in tests.
pub type Env = fn(&str) -> Option<String>;
