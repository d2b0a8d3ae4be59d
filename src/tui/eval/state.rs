//! The eval screen's state: the open prompt's cases (rows) against the current model, each cell as
//! it runs and as the eval core scored it, the record of the run, its delta to the baseline (the last
//! eval of the saved prompt on this model before this screen ran, else the screen's own first run:
//! the title's counts and the change column both count against it), whether the prompt was edited
//! since it ran, the selection, the drill-down and the approve confirmation. Nothing here scores: the
//! cells come from `eval::pipeline`.

use crate::eval::diff::{Change, Delta, EvalDiff};
use crate::eval::{CellRecord, EvalRecord};
use crate::run::RunRecord;
use crate::tui::run_view::TruncationView;

/// Where the eval is.
pub type EvalPhase = crate::tui::phase::JobPhase;

/// One cell (a case on the current model) as the screen shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvalCell {
    /// Its first request went out.
    pub started: bool,
    /// The answer so far (the last turn's), as it streamed.
    pub answer: String,
    /// The turn under way (a retry restarts the answer).
    pub turn: u32,
    /// The core's score of the cell as it ended while the eval runs; once the eval's record arrives
    /// it holds the scores and this is `None` (read them through [`EvalView::scored`]).
    pub scored: Option<Box<CellRecord>>,
    /// Its run record (what approve writes, what the drill-down shows).
    pub run: Option<Box<RunRecord>>,
}

/// What the screen shows over the matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum EvalOverlay {
    /// The matrix alone.
    #[default]
    None,
    /// The selected case opened: answer, expected items, differences, failed checks.
    Case,
    /// Approve was asked: what will be written as the case's expected answer (every item, scrolled by
    /// `scroll`), and what would be left out (then `y` is refused and a second `a` insists).
    ConfirmApprove { row: usize, approval: Box<crate::eval::Approval> },
    /// Review: the case under review opened, with the review's keys (a accept, r reject, s skip).
    Review,
    /// The review ended: what was accepted, rejected and skipped.
    ReviewDone,
    /// The eval diff of the shown eval against its baseline (the core's `eval::diff`), scrolled by `scroll`.
    Diff(Box<EvalDiff>),
    /// The truncation view of the selected case's answer (see [`CellSweep`]).
    Truncation,
}

/// The truncation view of one cell's answer: which row, where its chunks end, and the truncation
/// chart's one view-model (the editing screen's [`TruncationView`]: the core's sweep, or why there is
/// none, while it is computed, the cut shown, the chart's step lines made once when it arrives).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellSweep {
    pub row: usize,
    /// Where the answer's chunks end (bytes), from the run's transcript.
    pub chunk_ends: Vec<usize>,
    pub chart: TruncationView,
}

/// The verdicts shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdicts {
    #[default]
    All,
    /// Scored, and not a pass (fail, truncated, error).
    Failing,
    Passing,
    /// Improved or regressed against the baseline.
    Changed,
}

impl Verdicts {
    /// The next kind `v` shows.
    pub fn next(self) -> Verdicts {
        match self {
            Verdicts::All => Verdicts::Failing,
            Verdicts::Failing => Verdicts::Passing,
            Verdicts::Passing => Verdicts::Changed,
            Verdicts::Changed => Verdicts::All,
        }
    }

    /// The word a filter types for this kind (the workbench's case filter: `is:failing`).
    pub fn word(self) -> &'static str {
        match self {
            Verdicts::All => "all",
            Verdicts::Failing => "failing",
            Verdicts::Passing => "passing",
            Verdicts::Changed => "changed",
        }
    }

    /// The kind a typed word names ([`Verdicts::word`]), if any.
    pub fn from_word(word: &str) -> Option<Verdicts> {
        [Verdicts::All, Verdicts::Failing, Verdicts::Passing, Verdicts::Changed].into_iter().find(|k| k.word() == word)
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdicts::All => "all",
            Verdicts::Failing => "failing",
            Verdicts::Passing => "passing",
            Verdicts::Changed => "improved or regressed",
        }
    }
}

/// The matrix's filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowFilter {
    /// Shown: the cases whose name holds this, ignoring case (empty: every case).
    pub name: String,
    pub verdicts: Verdicts,
    /// The name is being typed (keys go to it until enter or esc).
    pub typing: bool,
}

impl RowFilter {
    /// Whether anything is filtered out.
    pub fn is_on(&self) -> bool {
        !self.name.is_empty() || self.verdicts != Verdicts::All
    }
}

/// A review of the eval screen's rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Review {
    /// The rows to look at, in the matrix's order.
    pub queue: Vec<usize>,
    /// The position in `queue` of the row shown (`queue.len()`: the review ended).
    pub at: usize,
    pub accepted: Vec<usize>,
    pub rejected: Vec<usize>,
    pub skipped: Vec<usize>,
    /// The row whose approve was refused (parts of its answer are not a real answer): `a` again on it
    /// insists.
    pub insisting: Option<usize>,
}

/// The eval screen.
#[derive(Clone, Debug, Default)]
pub struct EvalView {
    /// The number of the latest eval (news of older ones is ignored).
    pub id: u64,
    pub phase: EvalPhase,
    /// Each row's case (`None`: the prompt's own variables).
    pub rows: Vec<Option<String>>,
    /// The column: the model the cells run on.
    pub column: String,
    /// One cell per row (the screen runs one column, one repeat).
    pub cells: Vec<EvalCell>,
    /// The last finished eval's record (saved in the eval store): once it arrived, the one owner of
    /// the cells' scores and of the totals (an approve's re-score changes its cell and sums it up again).
    pub record: Option<Box<EvalRecord>>,
    /// The scores approves replaced in `record`, by row: put back when the record becomes the
    /// baseline of a re-run (it is compared as it ran).
    pub as_ran: Vec<(usize, crate::eval::score::CaseScore)>,
    /// Against the baseline: the title's counts and each row's change (recounted when a row is
    /// scored again after approve).
    pub baseline: Option<Delta>,
    /// The selected row.
    pub selected: usize,
    /// Which rows the matrix shows (`/` a name, `v` a kind of verdict).
    pub filter: RowFilter,
    pub overlay: EvalOverlay,
    /// First line shown of the drill-down's answer.
    pub scroll: usize,
    /// The baseline record, read before the first run (kept for re-runs).
    pub baseline_record: Option<Box<EvalRecord>>,
    /// The baseline's column that is this screen's column (`eval::diff::counterpart`; `None`: the
    /// baseline has no such column).
    pub baseline_column: Option<usize>,
    /// The workbench's edit count when this eval started: a later edit makes the matrix stale.
    pub edits: u64,
    /// The review under way or last ended (walked by `eval/review.rs`).
    pub review: Option<Review>,
    /// The id of the eval opened from the history (shown read-only until ctrl-r runs it again).
    pub opened: Option<String>,
    /// The truncation view of a case's answer (the last one asked for).
    pub sweep: Option<CellSweep>,
    /// The overlay to go back to when the truncation view closes (the case, or the review).
    pub under: Option<Box<EvalOverlay>>,
}

impl EvalView {
    /// Whether cells are running.
    pub fn running(&self) -> bool {
        self.phase == EvalPhase::Running
    }

    /// The row's change against the baseline (the same delta the title counts).
    pub fn row_change(&self, row: usize) -> Option<Change> {
        let case = self.rows.get(row)?;
        self.baseline.as_ref()?.cells.iter().find(|c| &c.case == case && c.after.is_some()).map(|c| c.change)
    }

    /// The baseline's cell of `row`'s case in this screen's column (its first repeat), when there is one.
    pub fn baseline_cell(&self, row: usize) -> Option<&CellRecord> {
        let case = self.rows.get(row)?;
        let baseline = self.baseline_record.as_deref()?;
        let column = self.baseline_column?;
        baseline.cells.iter().find(|c| &c.case == case && c.column == column && c.repeat <= 1)
    }

    /// Whether the prompt was edited since this eval ran (`edits`: the workbench's edit count now);
    /// an eval opened from the history is of its own prompt, never stale.
    pub fn stale(&self, edits: u64) -> bool {
        self.opened.is_none() && matches!(self.phase, EvalPhase::Running | EvalPhase::Done) && edits != self.edits
    }

    /// The core's score of `row`'s cell: the record's once the eval ended (this screen's column, its
    /// first repeat), else the cell's as it came.
    pub fn scored(&self, row: usize) -> Option<&CellRecord> {
        match self.record.as_deref() {
            Some(record) => record.cells.iter().find(|c| c.row == row && c.column == 0 && c.repeat <= 1),
            None => self.cells.get(row)?.scored.as_deref(),
        }
    }

    /// The record's cell of `row`, to score again.
    pub fn scored_mut(&mut self, row: usize) -> Option<&mut CellRecord> {
        let record = self.record.as_deref_mut()?;
        record.cells.iter_mut().find(|c| c.row == row && c.column == 0 && c.repeat <= 1)
    }

    /// The selected cell.
    pub fn selected_cell(&self) -> Option<&EvalCell> {
        self.cells.get(self.selected)
    }

    /// Cells scored so far, and of those, passed.
    pub fn counts(&self) -> (usize, usize) {
        let scored: Vec<&CellRecord> = (0..self.rows.len()).filter_map(|row| self.scored(row)).collect();
        let passed = scored.iter().filter(|c| c.score.verdict == crate::eval::score::Verdict::Pass).count();
        (scored.len(), passed)
    }
}
