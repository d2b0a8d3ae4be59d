//! The pieces the eval screen's views share: a frame, a change's and a verdict's words, a
//! difference's line.

use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use crate::eval::diff::Change;
use crate::eval::score::{Difference, Verdict};
use crate::safe_text::escape_controls;
use crate::tui::theme::Theme;

/// A frame of the eval screen with its title spans.
pub fn frame_of<'a>(spans: Vec<Span<'a>>, theme: &Theme) -> Block<'a> {
    Block::default().borders(Borders::ALL).border_style(theme.border_focused).title(Line::from(spans))
}

/// A row's change against the baseline in words (empty: none).
pub fn change_text(change: Option<Change>) -> &'static str {
    match change {
        Some(Change::Improved) => "improved",
        Some(Change::Regressed) => "regressed",
        Some(Change::Changed) => "changed",
        Some(Change::Same) => "same",
        Some(Change::New) => "new",
        Some(Change::Gone) => "gone",
        None => "",
    }
}

/// One field-level difference, escaped, after `lead`.
pub fn difference_line<'a>(lead: &str, difference: &Difference, theme: &Theme) -> Line<'a> {
    let (style, text) = match difference {
        Difference::Missing { key, expected } => (theme.invalid, format!("missing {key}: {expected}")),
        Difference::Extra { key, got } => (theme.warning, format!("extra {key}: {got}")),
        Difference::Field { key, field, expected, got, note, .. } => {
            let note = note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
            (theme.schema_error, format!("{key} {field}: expected {expected}, got {got}{note}"))
        }
        Difference::Fuzzy { .. } => (theme.warning, crate::eval::report::difference_line(difference)),
    };
    Line::from(Span::styled(format!("{lead}{}", escape_controls(&text)), style))
}

/// A verdict in words.
pub fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Truncated => "truncated",
        Verdict::Error => "error",
    }
}
