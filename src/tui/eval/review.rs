//! The eval screen's review: the cases that fail, are truncated, end in error or have no expected
//! answer yet, walked one by one as `cargo insta review` walks snapshots (a accept, r reject, s skip),
//! and what was decided. Which cases need a look is read off the core's verdicts; nothing is scored here.

use crate::eval::score::Verdict;
use crate::tui::eval::state::EvalView;
pub use crate::tui::eval::state::Review;

/// The review's keys, as the bar and the status line show them.
pub const KEYS: &str = "a accept · r reject · s skip · t truncation · esc stop";

impl Review {
    /// A review of `view`'s rows that need a look (empty when none does).
    pub fn of(view: &EvalView) -> Review {
        let queue = (0..view.rows.len()).filter(|&row| why(view, row).is_some()).collect();
        Review { queue, ..Review::default() }
    }

    /// The row under review.
    pub fn row(&self) -> Option<usize> {
        self.queue.get(self.at).copied()
    }

    /// Whether `row` was rejected in this review.
    pub fn is_rejected(&self, row: usize) -> bool {
        self.rejected.contains(&row)
    }

    /// `3 accepted, 1 rejected, 2 skipped` (rows not reached count as skipped).
    pub fn summary(&self) -> String {
        let unseen = self.queue.len().saturating_sub(self.at);
        format!(
            "{} accepted, {} rejected, {} skipped",
            self.accepted.len(),
            self.rejected.len(),
            self.skipped.len() + unseen
        )
    }
}

/// Why `row` needs a look: its verdict is not a pass, or its case has no expected answer yet.
pub fn why(view: &EvalView, row: usize) -> Option<&'static str> {
    let score = &view.scored(row)?.score;
    match score.verdict {
        Verdict::Fail => Some("fail"),
        Verdict::Truncated => Some("truncated"),
        Verdict::Error => Some("error"),
        Verdict::Pass if score.items.is_none() && view.rows.get(row).is_some_and(Option::is_some) => {
            Some("no expected answer")
        }
        Verdict::Pass => None,
    }
}
