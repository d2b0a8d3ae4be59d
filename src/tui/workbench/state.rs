//! The editing screen's own state: which pane has the focus, the run as it streams, the truncation
//! view, the history pane, the variables pane's filter and undo, the schema pane's lint and the
//! request's token count. `State::workbench` holds it while another screen is shown; what every
//! screen shares (the prompt, its editors, the run choice, the overlays) stays in `tui::state`.

use std::sync::Arc;

use crate::prompt::file::{Case, PromptFile};
use crate::prompt::template::Variables;
use crate::run::prompt_tokens::{LocalTokenizer, PromptSize};
use crate::run::RunRecord;
use crate::tui::choice::Choice;
use crate::tui::run_view::{RunView, TruncationView};

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

/// The editing screen, kept while another screen is shown.
#[derive(Debug)]
pub struct WorkbenchView {
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
    pub focus: Pane,
    pub zoom: bool,
    pub preview: bool,
    pub show_tokens: bool,
    /// The output is coloured by token probability.
    pub show_probs: bool,
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
    /// The local model arrived while the example replay was playing: its run starts when the replay ends.
    pub model_run_due: bool,
    /// The prompt the current run was started with (the sweep reads its answer the same way).
    pub run_prompt: Option<Box<PromptFile>>,
    /// The number of the latest run (events of older runs are ignored).
    pub run_id: u64,
    /// Which cases the variables pane lists (`/` types it).
    pub case_filter: crate::tui::case_filter::CaseFilter,
    /// The variables and cases before each change made in the variables pane, newest last (undo).
    pub case_undo: Vec<Snapshot>,
    /// The rendered request's token count for the status line (recounted only when it changes).
    pub tokens: TokenView,
}

impl WorkbenchView {
    /// The screen as it opens: the template focused, nothing run yet.
    pub fn new() -> WorkbenchView {
        WorkbenchView {
            lint: Lint::default(),
            schema_unlinted: false,
            lint_asked: 0,
            lint_due: false,
            background_bytes: BACKGROUND_BYTES,
            focus: Pane::Template,
            zoom: false,
            preview: false,
            show_tokens: false,
            show_probs: false,
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
            model_run_due: false,
            run_prompt: None,
            run_id: 0,
            case_filter: Default::default(),
            case_undo: Vec::new(),
            tokens: Default::default(),
        }
    }

    /// Whether a run is streaming or about to.
    pub fn running(&self) -> bool {
        matches!(self.phase, RunPhase::Starting | RunPhase::Running | RunPhase::Cancelling)
    }
}

impl Default for WorkbenchView {
    fn default() -> Self {
        Self::new()
    }
}

/// The editors' size from which their lint and token count go to the background: a lint grows with
/// the text, and 64 kB is 1/120 of the 7.6 MB bench schema whose one lint takes about a second in a
/// dev build (`tunebench bench --tui-only`), so under it a key stays well inside its 50 ms.
pub const BACKGROUND_BYTES: usize = 64 * 1024;

/// The live lint of the schema editor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lint {
    /// Empty when the schema compiles.
    pub issues: Vec<String>,
    /// What was linted (`JSON Schema`, `signature`).
    pub what: &'static str,
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

/// The variables pane before a change, and what the change was (for the undo's note).
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub what: String,
    pub variables: Variables,
    pub cases: Vec<Case>,
    pub case: Option<String>,
    pub selected: usize,
}

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
