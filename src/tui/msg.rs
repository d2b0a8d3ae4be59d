//! The four enums of the workbench: raw input ([`TermEvent`]), user intents ([`Action`]), everything
//! `update` accepts ([`Msg`]) and everything it asks the outside world to do ([`Effect`]).

use std::path::PathBuf;
use std::sync::Arc;

use ratatui_textarea::Input;

use crate::output::ResponseType;
use crate::prompt::file::{Case, OnDisk, PromptFile};
use crate::prompt::template::Variables;
use crate::run::prompt_tokens::{LocalTokenizer, PromptSize, Tokenizer};
use crate::run::{RunEvent, RunRecord, RunSettings, Target};
use crate::truncate::sweep::Sweep;
use crate::tui::state::SchemaKind;

pub use crate::tui::action::Action;

/// How long typing pauses before the schema is linted and the request's tokens counted again.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// Raw input from the terminal, already read off the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum TermEvent {
    /// A key press (modifiers included); key releases are dropped before this.
    Key(Input),
    /// A mouse button or wheel event at a cell of the screen.
    Mouse(Mouse),
    /// The terminal was resized to (columns, rows).
    Resize(u16, u16),
    /// Text pasted in one piece (bracketed paste).
    Paste(String),
}

/// A mouse event in screen cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mouse {
    pub kind: MouseKind,
    pub column: u16,
    pub row: u16,
}

/// What the mouse did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MouseKind {
    /// The left button went down.
    Click,
    /// The mouse moved with the left button held.
    Drag,
    /// The wheel turned towards the user.
    ScrollDown,
    /// The wheel turned away from the user.
    ScrollUp,
}

/// The router's way to take an action (`tui::update`'s own `act`): a screen handed a key hands the
/// keymap's action back through it, so an action that belongs to another screen or to every screen
/// (quit, save, help, enter a screen) goes where it belongs without the screen importing the router.
pub type Dispatch = fn(&mut super::state::State, Action) -> Vec<Effect>;

/// Everything `update` accepts.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Input from the terminal.
    Term(TermEvent),
    /// An action, from a key binding or from a test.
    Action(Action),
    /// An event of run number `run`; `at_ms` is milliseconds since the run started. Events of an
    /// older (cancelled) run are ignored.
    Run { run: u64, event: Box<RunEvent>, at_ms: u64 },
    /// Run number `run` could not start or stopped outside the engine; the message says why.
    RunFailed { run: u64, message: String },
    /// The run task ended and its record was kept in the history (`kept`: the file, or the sentence
    /// saying why not); the record comes along, so the history pane shows it without reading the file.
    RunRecorded { kept: Result<PathBuf, String>, record: Box<RunRecord> },
    /// The cancelled run's task has stopped.
    RunCancelled,
    /// Run `run` of a case ended and was scored against the case's expected answer and checks (or
    /// the message says why it could not be).
    RunScored { run: u64, score: Result<Box<crate::eval::score::CaseScore>, String> },
    /// The truncation sweep of run `run`'s answer as far as `answer_len` bytes is ready (or why it
    /// is not): the answer so far while it streams, the whole answer at its end.
    SweepReady { run: u64, answer_len: usize, sweep: Result<Box<Sweep>, String> },
    /// Past runs of this prompt, newest first (or why they could not be read).
    HistoryLoaded(Result<Vec<RunRecord>, String>),
    /// The prompt was written to disk (what it holds now), or why not.
    Saved(Result<Box<OnDisk>, SaveFailed>),
    /// A file of this prompt (the prompt file or its schema file) was seen on disk with this text
    /// (polled while the workbench is open; the update compares it with what it last read or wrote).
    OnDisk { path: PathBuf, text: String },
    /// A note from the outside world for the status line (clipboard, recovery file).
    Note(String),
    /// Time passed: `now_ms` since the workbench started.
    Tick { now_ms: u64 },
    /// How far the background fetch of the local model got, or its end (the model's path, or why not).
    ModelFetch(FetchNews),
    /// News of the comparison number `id` (older comparisons' news is ignored).
    Compare { id: u64, news: CompareNews },
    /// Typing paused: no edit came for [`SETTLE`] after edit number `edits` (older ones are ignored).
    Settled { edits: u64 },
    /// The schema lint number `asked` is made (dropped when the schema changed or a newer lint was
    /// asked for since).
    Linted { asked: u64, lint: crate::tui::workbench::state::Lint },
    /// The request's tokens of count number `asked` (dropped when a newer count was asked for).
    TokensCounted { asked: u64, counted: Box<Counted> },
    /// The local model `model` names (empty: the default cached one) has its tokenizer read, or why not.
    TokenizerLoaded { model: String, tokenizer: Result<Arc<LocalTokenizer>, String> },
    /// News of the eval number `id` (older evals' news is ignored).
    Eval { id: u64, news: EvalNews },
    /// The evals of this prompt in the eval store (newest first), or why they could not be listed.
    EvalsListed(Result<Vec<crate::eval::store::Listed>, String>),
    /// News of the optimization number `id` (older optimizations' news is ignored).
    Optimize { id: u64, news: OptimizeNews },
    /// The local models found for the model picker (`Effect::FindModels`).
    ModelsFound(Vec<crate::run::models::FoundModel>),
}

/// What a running optimization reports.
#[derive(Clone, Debug)]
pub enum OptimizeNews {
    /// An event of the optimizer.
    Event(Box<crate::optimize::OptimizeEvent>),
    /// It ended (or was stopped): the record and where it was stored (or why not), or why it could
    /// not run.
    Done(Result<Box<OptimizeDone>, String>),
}

/// A finished (or stopped) optimization.
#[derive(Clone, Debug)]
pub struct OptimizeDone {
    pub record: crate::optimize::Optimization,
    pub saved: Result<PathBuf, String>,
}

/// An optimization to start: the prompt file, the editors' system prompt and template laid over it,
/// the workbench's run choice, and the optimizer's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizeRequest {
    pub id: u64,
    pub path: PathBuf,
    pub edited: crate::optimize::evaluate::Edit,
    pub target: Target,
    pub held_out: f64,
    pub seed: u64,
    pub budget: usize,
    pub max_proposals: usize,
}

/// Why a save wrote nothing.
#[derive(Clone, Debug)]
pub enum SaveFailed {
    /// The file at `path` is no longer what the workbench read: it holds `text` now.
    ChangedOutside { path: PathBuf, text: String },
    /// Any other reason, said.
    Error(String),
}

/// A schema file written beside the prompt: its path (relative to the prompt's folder), its text as
/// last read or written, and the text to write.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaFileSave {
    pub path: PathBuf,
    pub base: String,
    pub text: String,
}

/// What a running eval reports.
#[derive(Clone, Debug)]
pub enum EvalNews {
    /// The rows (cases) and the column (model) about to run, and the baseline they are compared with
    /// (its column that is this one, `None` when it has none).
    Planned {
        rows: Vec<Option<String>>,
        column: String,
        baseline: Option<Box<crate::eval::EvalRecord>>,
        baseline_column: Option<usize>,
    },
    /// An event of the eval pipeline.
    Event(Box<crate::eval::EvalEvent>),
    /// Every cell ended: the record (saved in the eval store, or the warning says why not) and its
    /// deltas, or why the eval could not run.
    Done(Result<Box<EvalDone>, String>),
    /// Row `row` scored again after its expected answer was approved.
    Rescored { row: usize, scored: Box<crate::eval::CellRecord> },
    /// An eval opened from the history, with the eval it is compared against, or why it did not read.
    Opened(Result<Box<OpenedEval>, String>),
    /// The truncation sweep of row `row`'s answer, or why there is none.
    Swept { row: usize, sweep: Result<Box<crate::truncate::sweep::Sweep>, String> },
}

/// An eval read back from the eval store.
#[derive(Clone, Debug)]
pub struct OpenedEval {
    pub record: crate::eval::EvalRecord,
    /// The eval it is compared against (the marked one, else the one before it).
    pub against: Option<crate::eval::EvalRecord>,
}

/// A finished eval.
#[derive(Clone, Debug)]
pub struct EvalDone {
    pub record: crate::eval::EvalRecord,
    /// Against the baseline (the last eval of the saved prompt on this model before this screen ran,
    /// else the screen's first run), when there is one.
    pub baseline: Option<crate::eval::diff::Delta>,
    /// Where the record was saved, or why not.
    pub saved: Result<PathBuf, String>,
    /// The eval's runs kept in the history, newest first (none when the history is off or could not
    /// be written): the history pane lists them without reading the history file again.
    pub runs: Vec<RunRecord>,
}

/// What the background fetch of the local model reports.
#[derive(Clone, Debug, PartialEq)]
pub enum FetchNews {
    Progress(String),
    Done(Result<PathBuf, String>),
}

/// What a running comparison reports.
#[derive(Clone, Debug)]
pub enum CompareNews {
    /// A run event of side 0 (json) or 1 (jsonl).
    Event { side: usize, event: Box<RunEvent> },
    /// Both sides ended and were compared, or why there is no comparison.
    Done(Result<Box<crate::compare::Comparison>, String>),
}

/// What the outside world should do for `update`.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Start a screen's job (a job of the same kind still going is stopped first).
    Start(Start),
    /// Stop the job of this kind: it ends on its own, keeping what it has (a run its partial answer,
    /// an optimization what was scored).
    Cancel(Job),
    /// Write the prompt in place over `base`, the file as last read or written (and an edited schema
    /// file), atomically; a file changed on disk since is not written over.
    Save {
        path: PathBuf,
        base: Box<OnDisk>,
        prompt: Box<PromptFile>,
        /// The inline schema as typed in the schema pane.
        schema_text: Option<String>,
        schema_file: Option<SchemaFileSave>,
    },
    /// Write the unsaved edits to the recovery file.
    WriteRecovery(crate::tui::recovery::Recovery),
    /// Delete the recovery file (saved, or edits discarded on quit).
    ClearRecovery,
    /// Sweep the answer (so far, or finished) at every chunk cut, in the background.
    ComputeSweep(Box<SweepRequest>),
    /// Fetch the local model in the background (progress and the end come back as `Msg::ModelFetch`).
    FetchModel,
    /// Load the local model in the background and run this run's prompt through it, so that the run
    /// starts with the model loaded and its prompt cached (a failure is left for the run to report).
    WarmModel(Box<RunRequest>),
    /// Read this prompt's past runs from the history file, in the background.
    LoadHistory { prompt_id: String },
    /// Put text on the terminal's clipboard (OSC 52) and in a file of the data directory.
    Copy { text: String, file_name: String },
    /// Leave the workbench.
    Quit,
    /// Read the tokenizer of the local model `model` names (its GGUF's header, not its weights), in the
    /// background; it comes back as `Msg::TokenizerLoaded`.
    LoadTokenizer { model: String },
    /// Wait [`SETTLE`], then send `Msg::Settled { edits }` (edit number `edits` was just made).
    Settle { edits: u64 },
    /// Lint the schema editor's text in the background (the newest lint asked for wins); it comes
    /// back as `Msg::Linted`.
    Lint(Box<LintRequest>),
    /// Count the tokens of the request ctrl-r would send in the background (the newest count asked
    /// for wins); it comes back as `Msg::TokensCounted`.
    CountTokens(Box<CountRequest>),
    /// Score one row's run again against the prompt (after approve).
    Rescore(Box<RescoreRequest>),
    /// Write an approved answer into its row of the prompt's dataset (`cases_file`), then score the
    /// row again.
    ApproveInDataset(Box<DatasetApproval>),
    /// List the evals of the prompt file `path` in the eval store, in the background.
    ListEvals { path: PathBuf },
    /// Read the eval record `file` (and `against`, the one it is compared with) for eval screen `id`.
    OpenEval { id: u64, file: PathBuf, against: Option<PathBuf> },
    /// Sweep row `row`'s answer at every chunk cut for the eval screen `id`'s truncation view.
    SweepCell { id: u64, row: usize, sweep: Box<SweepRequest> },
    /// Find the local models (the cache, Ollama's store, the model the prompt file at `prompt`
    /// names) in the background, headers only; they come back as `Msg::ModelsFound`.
    FindModels { prompt: PathBuf },
}

/// The kinds of background job; one of each runs at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Job {
    /// The editing screen's run (ctrl-r).
    Run,
    /// The eval screen's matrix.
    Eval,
    /// The compare screen's two sides.
    Compare,
    /// The optimize screen's optimization.
    Optimize,
}

impl Job {
    /// The job in the user's words (the log).
    pub fn name(self) -> &'static str {
        match self {
            Job::Run => "run",
            Job::Eval => "eval",
            Job::Compare => "comparison",
            Job::Optimize => "optimization",
        }
    }

    /// The news that says job number `id` of this kind could not start, and why: its screen shows
    /// it as the job's end.
    pub fn not_started(self, id: u64, message: String) -> Msg {
        match self {
            Job::Run => Msg::RunFailed { run: id, message },
            Job::Eval => Msg::Eval { id, news: EvalNews::Done(Err(message)) },
            Job::Compare => Msg::Compare { id, news: CompareNews::Done(Err(message)) },
            Job::Optimize => Msg::Optimize { id, news: OptimizeNews::Done(Err(message)) },
        }
    }
}

/// A job to start, with what it needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Start {
    Run(Box<RunRequest>),
    Eval(Box<EvalRequest>),
    Compare(Box<CompareRequest>),
    Optimize(Box<OptimizeRequest>),
}

impl Start {
    pub fn job(&self) -> Job {
        match self {
            Start::Run(_) => Job::Run,
            Start::Eval(_) => Job::Eval,
            Start::Compare(_) => Job::Compare,
            Start::Optimize(_) => Job::Optimize,
        }
    }

    /// The number its news carries (a run's number, a screen's job id).
    pub fn id(&self) -> u64 {
        match self {
            Start::Run(request) => request.run,
            Start::Eval(request) => request.id,
            Start::Compare(request) => request.id,
            Start::Optimize(request) => request.id,
        }
    }
}

/// An eval to start: the saved prompt file under the workbench's run choices.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalRequest {
    pub id: u64,
    pub path: PathBuf,
    /// The workbench's choice (a replay: the recorded answer it plays, each case its own file beside it).
    pub target: Target,
    /// The eval shown before this one (its record as it ran): the baseline when the user `chosen` it
    /// (opened from the history) or when the session keeps no store; else the baseline is `last`.
    pub baseline: Option<Box<crate::eval::EvalRecord>>,
    pub chosen: bool,
}

/// An approve of a dataset row: the saved prompt file, what to write, and the row to score again.
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetApproval {
    pub id: u64,
    pub row: usize,
    pub path: PathBuf,
    pub approval: crate::eval::Approval,
    pub insist: bool,
    /// The row's case as the workbench read it (a row changed on disk since is not written over).
    pub was: Option<Box<crate::prompt::file::Case>>,
    pub cell: Box<crate::eval::CellRecord>,
    pub run: Box<RunRecord>,
}

/// A row scored again: the prompt as approved, the row's cell and run.
#[derive(Clone, Debug, PartialEq)]
pub struct RescoreRequest {
    pub id: u64,
    pub row: usize,
    pub prompt: PromptFile,
    pub path: PathBuf,
    pub cell: Box<crate::eval::CellRecord>,
    pub run: Box<RunRecord>,
}

/// A comparison to start: the prompt as edited (its twin is derived from it) and the run settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRequest {
    pub id: u64,
    pub prompt: PromptFile,
    /// The prompt file (its directory holds `answers/` and resolves `schema_file`).
    pub path: PathBuf,
    pub case: Option<String>,
    /// The workbench's choice.
    pub target: Target,
}

/// One run to start: the prompt as edited, and the run settings chosen in the workbench.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRequest {
    /// The run's number: its events carry it.
    pub run: u64,
    pub prompt: PromptFile,
    /// The prompt file (names it in errors; its directory resolves `schema_file`).
    pub path: PathBuf,
    pub case: Option<String>,
    /// The workbench's choice, and what a replay plays (a transcript file at the runner's pace, or a
    /// history record's transcript, instantly).
    pub target: Target,
    /// `Some(1)` for "run one turn"; else the prompt's.
    pub max_turns: Option<u32>,
}

/// A truncation sweep to compute: the answer, where its chunks ended, and how to read it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRequest {
    /// The run whose answer this is.
    pub run: u64,
    pub answer: String,
    pub chunk_ends: Vec<usize>,
    pub prompt: PromptFile,
    pub path: PathBuf,
}

/// The schema editor's text to lint, numbered `asked` (`State::lint_asked` when it was asked for),
/// with the settings of the next run when the constrained decoder may refuse the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct LintRequest {
    pub asked: u64,
    pub kind: SchemaKind,
    pub text: String,
    /// The next run's settings and the prompt's response type (what the decoder would be asked).
    pub decoder: Option<(RunSettings, ResponseType)>,
}

/// A count to make in the background: the request ctrl-r would send, its prompt the saved one
/// with `edits` still to lay over it (or why it does not render), under `tokenizer`; `counted` is
/// the last count, kept when the request's text is the same.
#[derive(Clone, Debug)]
pub struct CountRequest {
    pub asked: u64,
    pub request: Result<RunRequest, String>,
    pub edits: Edits,
    pub tokenizer: Tokenizer,
    pub counted: Option<(u64, usize)>,
}

/// Counts are told apart by their number.
impl PartialEq for CountRequest {
    fn eq(&self, other: &CountRequest) -> bool {
        self.asked == other.asked
    }
}

/// A count made: the size (or why the request does not render), and the hash and count to keep.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    pub shown: Result<PromptSize, String>,
    /// The request's text hash and its tokens (`None`: it did not render).
    pub counted: Option<(u64, usize)>,
    /// The request was counted (not the same text as the last count).
    pub anew: bool,
}

/// The editors' texts, the variables and the cases as edited: laid over the saved prompt, they are
/// the prompt as edited (copied off the state for a job in the background).
#[derive(Clone, Debug, PartialEq)]
pub struct Edits {
    pub texts: [String; 3],
    pub variables: Variables,
    pub cases: Vec<Case>,
    pub schema_kind: SchemaKind,
}
