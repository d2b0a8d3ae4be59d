//! The local model picker's list, over the panes just above the status line where the model is
//! typed: a row per model found that the text matches (name, family, parameters, quantisation,
//! "runs here" or why not), the chosen one marked; "looking…" until the models are found.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::tui::input_box::{InputKind, ModelList};
use crate::tui::panes::clip;
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Rows of models shown at most (the list scrolls with the chosen one).
const ROWS: usize = 10;

/// The lines of the list: a note while looking or when nothing matches, else a row per model
/// (`width`: the columns each row may take).
pub fn lines(list: &ModelList, typed: &str, width: usize) -> Vec<(String, bool, bool)> {
    let Some(found) = &list.found else { return vec![("looking for models…".into(), false, false)] };
    if found.is_empty() {
        return vec![("no GGUF found in the cache or Ollama's store: type a .gguf path".into(), false, false)];
    }
    let matching = list.matching(typed);
    if matching.is_empty() {
        return vec![("no model matches: enter takes the text as typed".into(), false, false)];
    }
    let name_width = matching.iter().map(|m| m.name.chars().count()).max().unwrap_or(0).min(width / 2);
    let first = list.selected.unwrap_or(0).saturating_sub(ROWS - 1);
    matching
        .iter()
        .enumerate()
        .skip(first)
        .take(ROWS)
        .map(|(i, m)| {
            let chosen = list.selected == Some(i);
            let verdict = if m.runs_here { "runs here".to_string() } else { format!("no: {}", m.verdict()) };
            let row = format!(
                "{} {:<name_width$}  {:<8} {:>5}  {:<7} {verdict}",
                if chosen { "▸" } else { " " },
                clip(&m.name, name_width),
                m.family.as_deref().unwrap_or("?"),
                m.parameters_shown(),
                m.quantisation.as_deref().unwrap_or("?"),
            );
            (clip(&crate::safe_text::escape_controls(&row), width), chosen, m.runs_here)
        })
        .collect()
}

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let Some(open) = state.input.as_deref() else { return };
    let InputKind::Model { list: Some(list), .. } = &open.kind else { return };
    let width = area.width.saturating_sub(2).min(120);
    let rows = lines(list, &open.text(), width.saturating_sub(2) as usize);
    let height = (rows.len() as u16 + 2).min(area.height);
    let rect = Rect { x: area.x + 1, y: area.y + area.height.saturating_sub(height), width, height };
    let text: Vec<Line> = rows
        .into_iter()
        .map(|(row, chosen, runs)| {
            let style = match (chosen, runs) {
                (true, _) => theme.title,
                (false, true) => theme.text,
                (false, false) => theme.dim,
            };
            Line::from(Span::styled(row, style))
        })
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(" models found (model list) ", theme.title));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(text).block(block), rect);
}
