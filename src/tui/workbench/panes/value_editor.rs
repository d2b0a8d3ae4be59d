//! The box editor over the panes: a variable's value, or a case being added (its name and variables
//! as TOML). A ratatui-textarea in a box titled with what it edits, the keys (or why the text was
//! refused) along its bottom; long lines soft-wrap at the box's edge.

use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Clear};
use ratatui::Frame;

use crate::tui::panes::clip;
use crate::tui::state::State;
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let Some(open) = state.input.as_deref().filter(|open| !open.is_line()) else {
        return;
    };
    let width = area.width.saturating_sub(4).clamp(20.min(area.width), 100);
    let rows = wrapped_rows(open.area.lines(), width.saturating_sub(2) as usize) as u16;
    let height = (rows + 2).clamp(5, area.height.saturating_sub(4).max(5)).min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let (hint, hint_style) = match &open.error {
        Some(error) => (error.as_str(), theme.warning),
        None => (open.hint(), theme.dim),
    };
    let width = width as usize;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(clip(&format!(" {} ", open.title()), width.saturating_sub(2)), theme.title))
        .title_bottom(Span::styled(clip(&format!(" {hint} "), width.saturating_sub(2)), hint_style));
    let inner = block.inner(rect);
    frame.render_widget(Clear, rect);
    frame.render_widget(block, rect);
    frame.buffer_mut().set_style(inner, theme.text);
    // The editor itself is drawn (not a copy): it keeps the box's width and scroll, so the cursor
    // keys move by the wrapped rows on screen.
    frame.render_widget(&open.area, inner);
}

/// About how many rows `lines` take wrapped at `width` columns (the box grows with them).
fn wrapped_rows(lines: &[String], width: usize) -> usize {
    let width = width.max(1);
    lines.iter().map(|line| line.chars().count().div_ceil(width).max(1)).sum()
}
