//! Everything the workbench shows, in one place: the prompt being edited, the run as it streams, the
//! truncation view, the history, the overlays. `update` changes it; panes only read it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::tui::editor::Editor;

use crate::output::ResponseType;
use crate::prompt::file::{Case, OnDisk, PromptFile};
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::provider::StructuredMode;
use crate::run::prompt_tokens::{LocalTokenizer, PromptSize};
use crate::run::{RunRecord, Target};
use crate::tui::keymap::Keymap;
use crate::tui::recovery::Recovery;

pub use crate::tui::run_view::{counts, ChunkProb, RunView, TruncationView};

/// The panes, in focus order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pane {
    System,
    Template,
    Schema,
    Variables,
    Output,
    Lines,
    Truncation,
    History,
}

impl Pane {
    pub const ALL: [Pane; 8] = [
        Pane::System,
        Pane::Template,
        Pane::Schema,
        Pane::Variables,
        Pane::Output,
        Pane::Lines,
        Pane::Truncation,
        Pane::History,
    ];

    /// Whether typing goes to a text editor in this pane.
    pub fn is_editor(self) -> bool {
        matches!(self, Pane::System | Pane::Template | Pane::Schema)
    }

    pub fn title(self) -> &'static str {
        match self {
            Pane::System => "system",
            Pane::Template => "template",
            Pane::Schema => "schema",
            Pane::Variables => "variables & cases",
            Pane::Output => "output",
            Pane::Lines => "lines",
            Pane::Truncation => "truncation",
            Pane::History => "history",
        }
    }
}

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

/// The live lint of the schema editor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lint {
    /// Empty when the schema compiles.
    pub issues: Vec<String>,
    /// What was linted (`JSON Schema`, `signature`).
    pub what: &'static str,
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

/// Where the run is.
#[derive(Clone, Debug, PartialEq)]
pub enum RunPhase {
    /// Nothing has run yet in this session.
    Idle,
    /// Asked to start; no event yet.
    Starting,
    /// Streaming.
    Running,
    /// Cancel was asked; the task is stopping.
    Cancelling,
    /// The run ended (`ok`: the final answer passed).
    Done { ok: bool },
    /// Cancelled by the user; the partial answer stays.
    Cancelled,
    /// The run could not start or failed; the message says why.
    Failed(String),
}

/// The run settings chosen in the workbench.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub provider: ProviderKind,
    pub model: Option<String>,
    /// `None`: the prompt's, else the provider's default.
    pub structured: Option<StructuredMode>,
    pub max_tokens: Option<u32>,
    /// `None`: the prompt's default variables.
    pub case: Option<String>,
    /// The recorded answer the replay provider plays (the sample's transcript).
    pub transcript: Option<PathBuf>,
}

impl Choice {
    /// The structured mode a run of this choice asks for, and whether it is the provider's default
    /// (none chosen: the core's [`crate::run::plan::default_structured`], as `tunebench run` decides it).
    pub fn asked_mode(&self, response_type: ResponseType) -> (String, bool) {
        match self.structured {
            Some(mode) => (mode.to_string(), false),
            None => {
                let mode = crate::run::plan::default_structured(self.provider, response_type);
                (mode.to_string(), mode != StructuredMode::None)
            }
        }
    }

    /// What a run of this choice is aimed at (the run setup lays it over the prompt's `[provider]`);
    /// nothing replayed yet.
    pub fn target(&self) -> Target {
        Target {
            provider: Some(self.provider),
            model: self.model.clone(),
            base_url: None,
            structured: self.structured,
            max_tokens: self.max_tokens,
            key_env: None,
            key: None,
            replay: None,
        }
    }

    /// The choice a prompt's `[provider]` makes (no name: the replay, until the start-up picks one);
    /// an unknown provider or structured mode is an error naming it, before the workbench opens.
    pub fn of(prompt: &PromptFile) -> Result<Self, String> {
        let settings = &prompt.provider;
        let provider = match settings.name.as_deref() {
            None => ProviderKind::Replay,
            Some(name) => ProviderKind::parse(name)
                .ok_or_else(|| format!("[provider] name {name:?} is not a provider: {}", ProviderKind::names()))?,
        };
        let structured = match settings.structured.as_deref() {
            None => None,
            Some(text) => Some(StructuredMode::parse(text.trim()).ok_or_else(|| {
                format!("[provider] structured {text:?} is not a structured mode: none, json-object, json-schema, constrained")
            })?),
        };
        Ok(Self {
            provider,
            model: settings.model.clone(),
            structured,
            max_tokens: settings.max_tokens,
            case: None,
            transcript: None,
        })
    }
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
    pub lint: Lint,
    /// The lint shown is not of the schema as it is now (a newer one is asked for, or will be when
    /// typing settles).
    pub schema_unlinted: bool,
    /// Bumped by each lint asked for and each schema edit: a lint back with another number is of
    /// older text or choices, and dropped.
    pub lint_asked: u64,
    /// A lint is to be asked for at the end of this message (`lint::relint`).
    pub lint_due: bool,
    /// From this size of the editors' texts on ([`BACKGROUND_BYTES`]), the schema's lint and the
    /// request's token count are made in the background once typing settles (see [`State::heavy`]).
    pub background_bytes: usize,
    /// Edits since the last save.
    pub dirty: bool,
    /// Bumped on every edit; the recovery file is written when it moved.
    pub edits: u64,
    pub recovery_written: u64,
    pub last_recovery_ms: u64,
    pub focus: Pane,
    pub zoom: bool,
    pub overlay: Overlay,
    pub preview: bool,
    pub show_tokens: bool,
    /// The output is coloured by token probability.
    pub show_probs: bool,
    pub choice: Choice,
    pub phase: RunPhase,
    pub run: RunView,
    /// Selected JSONL verdict (index into `run.verdicts`).
    pub selected_line: usize,
    /// First output line shown; `None` follows the tail.
    pub output_scroll: Option<usize>,
    pub truncation: TruncationView,
    /// Past runs of this prompt, newest first.
    pub history: Vec<RunRecord>,
    /// The selected history entry: the evals of this prompt first, then its runs.
    pub history_selected: usize,
    /// The evals of this prompt in the eval store, newest first (listed above the runs).
    pub evals: Vec<crate::eval::store::Listed>,
    /// The eval marked in the history pane (enter on another compares the two).
    pub eval_marked: Option<String>,
    pub selected_variable: usize,
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
    /// The local model arrived while the example replay was playing: its run starts when the replay ends.
    pub model_run_due: bool,
    /// The prompt and texts a save in flight writes (they become the saved ones when it succeeds).
    pub pending_save: Option<Box<(PromptFile, [String; 3])>>,
    /// The prompt the current run was started with (the sweep reads its answer the same way).
    pub run_prompt: Option<Box<PromptFile>>,
    /// The number of the latest run (events of older runs are ignored).
    pub run_id: u64,
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
    /// Which cases the variables pane lists (`/` types it).
    pub case_filter: crate::tui::case_filter::CaseFilter,
    /// The variables and cases before each change made in the variables pane, newest last (undo).
    pub case_undo: Vec<Snapshot>,
    /// The rendered request's token count for the status line (recounted only when it changes).
    pub tokens: TokenView,
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
            path,
            saved_texts: [system.clone(), template.clone(), schema_text.clone()],
            system: editor(&system),
            template: editor(&template),
            schema: editor(&schema_text),
            saved: prompt,
            saved_text,
            schema_kind,
            lint: Lint::default(),
            schema_unlinted: false,
            lint_asked: 0,
            lint_due: false,
            background_bytes: BACKGROUND_BYTES,
            dirty: false,
            edits: 0,
            recovery_written: 0,
            last_recovery_ms: 0,
            focus: Pane::Template,
            zoom: false,
            overlay: Overlay::None,
            preview: false,
            show_tokens: false,
            show_probs: false,
            choice,
            phase: RunPhase::Idle,
            run: RunView { line_starts: vec![0], ..RunView::default() },
            selected_line: 0,
            output_scroll: None,
            truncation: TruncationView::default(),
            history: Vec::new(),
            history_selected: 0,
            evals: Vec::new(),
            eval_marked: None,
            selected_variable: 0,
            note: None,
            keymap: Keymap::default(),
            size: (120, 40),
            drawn: Drawn::default(),
            now_ms: 0,
            quit: false,
            replay_reason: None,
            fetch_model: false,
            model_run_due: false,
            pending_save: None,
            run_prompt: None,
            run_id: 0,
            compare: Default::default(),
            eval: Default::default(),
            optimize: Default::default(),
            held_out: None,
            accept_undo: None,
            input: None,
            help_scroll: 0,
            variables: prompt_variables,
            cases,
            case_filter: Default::default(),
            variables_changed: false,
            case_undo: Vec::new(),
            tokens: Default::default(),
            env: crate::run::env_var,
        }
    }

    /// Whether the editors hold more than `background_bytes`: then a key lints and counts nothing
    /// (that waits for typing to settle, and is made in the background); smaller texts are linted
    /// and counted on the key, as they are cheap.
    pub fn heavy(&self) -> bool {
        [&self.system, &self.template, &self.schema].iter().map(|editor| editor.bytes() + 1).sum::<usize>()
            > self.background_bytes
    }

    /// The texts of the three editors.
    pub fn texts(&self) -> [String; 3] {
        [self.system.text(), self.template.text(), self.schema.text()]
    }

    pub fn response_type(&self) -> ResponseType {
        self.saved.response_type
    }

    /// Whether a run is streaming or about to.
    pub fn running(&self) -> bool {
        matches!(self.phase, RunPhase::Starting | RunPhase::Running | RunPhase::Cancelling)
    }
}

/// The editors' size from which their lint and token count go to the background: a lint grows with
/// the text, and 64 kB is 1/120 of the 7.6 MB bench schema whose one lint takes about a second in a
/// dev build (`tunebench bench --tui-only`), so under it a key stays well inside its 50 ms.
pub const BACKGROUND_BYTES: usize = 64 * 1024;

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

/// The variables pane before a change, and what the change was (for the undo's note).
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub what: String,
    pub variables: Variables,
    pub cases: Vec<Case>,
    pub case: Option<String>,
    pub selected: usize,
}

/// Reads the providers' variables (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, ...): the process environment
/// ([`crate::run::env_var`]) but in tests.
pub type Env = fn(&str) -> Option<String>;

/// What the status line shows of the request's size, and what it was made from.
#[derive(Clone, Debug, Default)]
pub struct TokenView {
    /// The inputs of the last look (a new look only when they change).
    pub inputs: Option<TokenInputs>,
    /// The hash of the request text and tokenizer last counted, and its count.
    pub counted: Option<(u64, usize)>,
    /// The size shown, or why the request does not render.
    pub shown: Option<Result<PromptSize, String>>,
    /// The local tokenizer read for the model the choice names (empty: the default), or why not.
    pub local: Option<(String, Result<Arc<LocalTokenizer>, String>)>,
    /// A local tokenizer asked for and not back yet (for this model).
    pub loading: Option<String>,
    /// Times the request was counted (a bench figure: once per change, never per frame).
    pub counts: usize,
    /// Counts asked for so far: the number of the newest (an answer to an older one is dropped).
    pub asked: u64,
    /// The number of the count shown.
    pub shown_for: u64,
    /// The editors changed since the last ask: a count is asked for when typing settles.
    pub waiting: bool,
}

/// What the count depends on, cheap to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenInputs {
    pub edits: u64,
    pub choice: Choice,
    pub local: Option<(String, bool)>,
}
