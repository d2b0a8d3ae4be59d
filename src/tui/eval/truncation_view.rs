//! The truncation view of an eval case's answer: the truncation pane's body (cut, each strategy's
//! items, the answer up to the cut, the chart) over the core's sweep of that answer.

use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::tui::eval::parts::frame_of;
use crate::tui::eval::state::EvalView;
use crate::tui::panes::truncation::{body, Shown};
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, view: &EvalView, theme: &Theme) {
    let Some(shown) = &view.sweep else { return };
    let name = view.rows.get(shown.row).cloned().flatten().unwrap_or_else(|| "(variables)".into());
    let total = shown.chunk_ends.len();
    let block = frame_of(
        vec![
            Span::styled(format!(" {} ", escape_controls(&name)), theme.title),
            Span::styled("· truncation of the answer ", theme.text),
            Span::styled(format!("cut {}/{total} chunks ", shown.chart.cut.min(total)), theme.cut),
            Span::styled("· ←/→ cut · esc back ", theme.dim),
        ],
        theme,
    );
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let output = view
        .cells
        .get(shown.row)
        .and_then(|c| c.run.as_deref())
        .and_then(|r| r.turns.last())
        .map_or("", |t| t.output.as_str());
    let chart = &shown.chart;
    match (&chart.sweep, &chart.error) {
        (Some(sweep), _) => {
            let shown = Shown {
                sweep: Some(sweep),
                live: chart,
                output,
                chunk_ends: &shown.chunk_ends,
                cut: chart.cut,
                series: &chart.series,
            };
            body(frame, area, inner, &shown, theme);
        }
        (None, Some(e)) => frame.render_widget(
            Paragraph::new(format!("no sweep: {}", escape_controls(e))).style(theme.error).wrap(Wrap { trim: true }),
            inner,
        ),
        (None, None) => frame.render_widget(Paragraph::new("sweeping every cut…").style(theme.dim), inner),
    }
}
