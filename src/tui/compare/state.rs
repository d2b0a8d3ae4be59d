//! The compare screen's state: the prompt and its json/jsonl twin run side by side, each side's
//! answer and verdicts as they stream, then the comparison (figures, agreement, the shared chart),
//! the cut on the common token axis and the selected agreement row.

use crate::compare::Comparison;
use crate::output::{LineVerdict, Report};
use crate::provider::FinishReason;

/// Side 0 is the json side, side 1 the jsonl side (as `tunebench compare` orders them).
pub const LABELS: [&str; 2] = ["json", "jsonl"];

/// Where the comparison is.
pub type ComparePhase = crate::tui::phase::JobPhase;

/// One side's answer as it streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SideView {
    pub output: String,
    pub chunks: usize,
    /// JSONL verdicts of the current turn (a json side has none: its report says).
    pub verdicts: Vec<LineVerdict>,
    /// The final report of the last turn.
    pub report: Option<Report>,
    pub finish: Option<FinishReason>,
    pub error: Option<String>,
    /// `Some(ok)` once the side's run ended.
    pub ended: Option<bool>,
}

/// The compare screen.
#[derive(Clone, Debug, Default)]
pub struct CompareView {
    /// The number of the latest comparison (news of older ones is ignored).
    pub id: u64,
    pub phase: ComparePhase,
    pub sides: [SideView; 2],
    pub comparison: Option<Box<Comparison>>,
    /// The cut on the chart's token axis (0 ..= axis).
    pub cut: usize,
    /// Selected row of the agreement table.
    pub selected_row: usize,
}

impl CompareView {
    /// Whether the sides are running.
    pub fn running(&self) -> bool {
        self.phase == ComparePhase::Running
    }

    /// The chart's axis length (0 before the comparison is ready).
    pub fn axis(&self) -> usize {
        self.comparison.as_ref().map_or(0, |c| c.chart.axis)
    }
}
