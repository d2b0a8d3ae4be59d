//! The pieces the eval screen's views share: a frame, a change's and a verdict's words, a
//! difference's line, a scored cell's lines (drill-down and review).

use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use crate::eval::diff::Change;
use crate::eval::score::{CaseScore, Difference, Verdict};
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
        Difference::Field { key, field, expected, got, note, score } => {
            // The comparator's words (`similarity 0.82 < 0.90`), else the partial credit it still scored.
            let note = match (note, score) {
                (Some(note), _) => format!(" ({note})"),
                (None, Some(score)) => format!(" (scored {score:.2})"),
                (None, None) => String::new(),
            };
            (theme.schema_error, format!("{key} {field}: expected {expected}, got {got}{note}"))
        }
        Difference::Fuzzy { .. } => (theme.warning, crate::eval::report::difference_line(difference)),
        Difference::Item { .. } => (theme.schema_error, crate::eval::report::difference_line(difference)),
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

/// What a scored cell says, one line each: its reason, its differences (a field's partial score, the
/// items paired by a key only alike and how close), its failed checks with their messages, and the
/// graded checks (`command`, `judge`) that passed with their score and reason, each beside where it
/// is written; and the frame's title (`checks` when a passed one is listed too).
pub fn verdict_lines(score: &CaseScore, theme: &Theme) -> (Vec<Line<'static>>, &'static str) {
    let mut lines = vec![Line::from(Span::styled(escape_controls(&score.reason).into_owned(), theme.text))];
    lines.extend(score.differences.iter().map(|d| difference_line("", d, theme)));
    for check in score.checks.iter().filter(|c| !c.passed) {
        let message = check.message.as_deref().unwrap_or("failed");
        let text = format!("✗ {} ({}): {message}", check.check, check.at);
        lines.push(Line::from(Span::styled(escape_controls(&text).into_owned(), theme.invalid)));
    }
    let mut passed_graded = false;
    for check in score.checks.iter().filter(|c| c.passed) {
        let Some(graded) = &check.graded else { continue };
        passed_graded = true;
        let reason = graded.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        let text = format!("✓ {} ({}): score {:.2}{reason}", check.check, check.at, graded.score);
        lines.push(Line::from(Span::styled(escape_controls(&text).into_owned(), theme.valid)));
    }
    let title = if passed_graded { " differences · checks " } else { " differences · failed checks " };
    (lines, title)
}
