//! The user intents a key binds to ([`Action`]); the keymap file names them, `update` takes them.

/// A user intent a key binds to; the keymap file names them in kebab-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Leave the workbench (asks first when there are unsaved edits).
    Quit,
    /// Write the prompt file atomically.
    Save,
    /// Run the prompt with the current settings.
    Run,
    /// Run one turn only (no retry), with the current settings.
    RunOneTurn,
    /// Stop the running stream; the partial answer stays.
    CancelRun,
    /// Move the focus to the next pane.
    FocusNext,
    /// Move the focus to the previous pane.
    FocusPrev,
    /// Focus the system message editor.
    FocusSystem,
    /// Focus the user template editor.
    FocusTemplate,
    /// Focus the schema editor.
    FocusSchema,
    /// Focus the variables and test cases.
    FocusVariables,
    /// Focus the streamed output.
    FocusOutput,
    /// Focus the per-line verdicts.
    FocusLines,
    /// Focus the truncation view.
    FocusTruncation,
    /// Focus the run history.
    FocusHistory,
    /// Show only the focused pane (again: show all panes).
    ToggleZoom,
    /// Open or close the key help.
    ToggleHelp,
    /// Show the token boundaries in the output (alternating colours).
    ToggleTokens,
    /// Colour the output's tokens by how likely the model thought them (forced tokens apart).
    ToggleProbs,
    /// Show the rendered request instead of the system editor.
    TogglePreview,
    /// Copy the rendered request as a curl command (terminal clipboard, and a file in the data dir).
    CopyCurl,
    /// Next provider: replay, openai, ollama, anthropic, local.
    NextProvider,
    /// Next structured-output mode: none, json-object, json-schema, constrained.
    NextStructured,
    /// Type the model of the next run in the status line (local: empty for the default cached
    /// model, or a `.gguf` path; servers: a model name).
    ChooseModel,
    /// Next test case (the default variables first).
    NextCase,
    /// Raise max tokens (doubles it; none → 256).
    MoreTokens,
    /// Lower max tokens (halves it; below 16 → none).
    FewerTokens,
    /// Move the selection (or the cut) up / back by one.
    Up,
    /// Move the selection (or the cut) down / forward by one.
    Down,
    /// Move the cut back by one unit.
    Left,
    /// Move the cut forward by one unit.
    Right,
    /// A page up (selection, scroll or cut by ten).
    PageUp,
    /// A page down.
    PageDown,
    /// The first row (or cut 0).
    Home,
    /// The last row (or the whole answer); the output follows the tail again.
    End,
    /// Open the selected history entry (replay it into the panes) or choose the selected case.
    Open,
    /// Compare the prompt with its json/jsonl twin side by side (again, or esc: back to editing).
    Compare,
    /// Add a test case: its name and variables typed in the box editor (variables pane).
    AddCase,
    /// Copy the selected case into a new one, edited in the same box first (variables pane).
    CopyCase,
    /// Delete the selected case, after a confirmation that names it (variables pane).
    DeleteCase,
    /// Take back the last change to the variables or cases (variables pane).
    UndoCaseEdit,
    /// Open the eval screen: every case of the prompt on the current model, scored (again, or esc: back).
    Eval,
    /// On the eval screen: write the selected case's answer as its expected answer (after a confirmation).
    Approve,
    /// On the eval screen: walk the failing, truncated and unexpected cases one by one (a accept, r
    /// reject, s skip, esc stop).
    Review,
    /// In the history pane: mark the selected eval (enter on another one then compares the two).
    MarkEval,
    /// On the eval screen: the eval diff of the shown eval against its baseline (or the marked eval).
    EvalDiff,
    /// On the eval screen's case: the truncation view of its answer (every cut swept by the core).
    AnswerTruncation,
    /// On the eval screen: type a name; only the cases whose name holds it are shown (enter keeps
    /// it, esc clears it).
    FilterCases,
    /// On the eval screen: show all cases, then the failing, the passing, the improved or regressed.
    FilterVerdicts,
    /// On the eval screen: open the optimize screen and optimize the prompt as the editors hold it.
    Optimize,
    /// On the optimize screen: put the selected candidate's system prompt and template in the editors
    /// (unsaved; ctrl-s saves, undo-accept takes it back).
    AcceptCandidate,
    /// On the optimize screen: mark the selected candidate rejected (again: not rejected); it is never "best".
    RejectCandidate,
    /// Take back the last accepted candidate: both editors as they were before it, in one step.
    UndoAccept,
}
