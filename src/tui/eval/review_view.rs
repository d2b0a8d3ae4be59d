//! The review on the eval screen: a bar over the opened case (which case of how many, why it needs a
//! look, the keys, the decisions so far) and, when the review ends, its summary over the matrix.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::tui::eval::parts::frame_of;
use crate::tui::eval::review::{why, Review, KEYS};
use crate::tui::eval::state::EvalView;
use crate::tui::panes::clip;
use crate::tui::theme::Theme;

/// The bar's line at the top and the case below it.
pub fn split(area: Rect) -> (Rect, Rect) {
    let bar = Rect { height: 1.min(area.height), ..area };
    let rest = Rect { y: area.y + bar.height, height: area.height - bar.height, ..area };
    (bar, rest)
}

/// `review 2/5 · fail · case beta · a accept · r reject · s skip · esc stop · 1 accepted, …`.
pub fn bar(frame: &mut Frame, area: Rect, view: &EvalView, theme: &Theme) {
    let Some(review) = &view.review else { return };
    let row = review.row().unwrap_or(view.selected);
    let name = view.rows.get(row).cloned().flatten().unwrap_or_else(|| "(variables)".into());
    let line = Line::from(vec![
        Span::styled(format!(" review {}/{} ", review.at + 1, review.queue.len()), theme.title),
        Span::styled(format!("{} ", why(view, row).unwrap_or("changed")), theme.warning),
        Span::styled(format!("· {} · ", escape_controls(&name)), theme.text),
        Span::styled(
            format!("{} · ", Review::summary(&Review { at: review.queue.len(), ..review.clone() })),
            theme.dim,
        ),
        Span::styled(KEYS, theme.dim),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

/// The box of what the review decided, case by case.
pub fn summary(frame: &mut Frame, area: Rect, view: &EvalView, theme: &Theme) {
    let Some(review) = &view.review else { return };
    let width = area.width.saturating_sub(8).min(70);
    let height = area.height.saturating_sub(4).min(review.queue.len() as u16 + 5);
    let rect = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let mut lines = vec![
        Line::from(Span::styled(review.summary(), theme.text)),
        Line::from(Span::styled("any key: back", theme.dim)),
    ];
    for &row in &review.queue {
        let name = view.rows.get(row).cloned().flatten().unwrap_or_else(|| "(variables)".into());
        let (word, style) = if review.accepted.contains(&row) {
            ("accepted", theme.valid)
        } else if review.rejected.contains(&row) {
            ("rejected", theme.invalid)
        } else if review.skipped.contains(&row) {
            ("skipped", theme.dim)
        } else {
            ("not seen", theme.dim)
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{word:9} "), style),
            Span::styled(clip(&escape_controls(&name), width.saturating_sub(14) as usize), theme.text),
        ]));
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(frame_of(vec![Span::styled(" review done ", theme.title)], theme)),
        rect,
    );
}
