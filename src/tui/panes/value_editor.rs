//! The editor of a variable's value: a ratatui-textarea in a box over the panes, titled with the
//! variable and its table, the keys (or why the value was refused) along its bottom.

use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Clear};
use ratatui::Frame;

use super::clip;
use crate::tui::input::{InputBox, InputKind};
use crate::tui::state::State;
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let Some(open) = state.input.as_deref().filter(|open| matches!(open.kind, InputKind::Variable { .. })) else {
        return;
    };
    let width = area.width.saturating_sub(4).clamp(20.min(area.width), 100);
    let lines = open.area.lines().len() as u16;
    let height = (lines + 2).clamp(5, area.height.saturating_sub(4).max(5)).min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(&editor(open, theme, width as usize), rect);
}

fn editor(open: &InputBox, theme: &Theme, width: usize) -> ratatui_textarea::TextArea<'static> {
    let (hint, hint_style) = match &open.error {
        Some(error) => (error.as_str(), theme.warning),
        None => (open.hint(), theme.dim),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(clip(&format!(" edit {} ", open.label()), width.saturating_sub(2)), theme.title))
        .title_bottom(Span::styled(clip(&format!(" {hint} "), width.saturating_sub(2)), hint_style));
    let mut area = open.area.clone();
    area.set_block(block);
    area.set_style(theme.text);
    area.set_cursor_line_style(theme.text);
    area.set_cursor_style(theme.cut.add_modifier(ratatui::style::Modifier::REVERSED));
    area
}
