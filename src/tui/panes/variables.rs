//! Variables and test cases: the cases to pick from (enter chooses), the chosen variables' values,
//! and the run settings (provider, model, structured mode, max tokens).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{block, clip};
use crate::safe_text::escape_controls;
use crate::tui::state::{Pane, State};
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let frame_block = block(Pane::Variables, state, theme, vec![]);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let width = inner.width as usize;
    let choice = &state.choice;
    let mut rows = vec![Line::from(vec![
        Span::styled("run ", theme.dim),
        Span::styled(
            clip(
                &format!(
                    "{} {} · {} · max {}",
                    choice.provider,
                    choice.model.as_deref().unwrap_or(""),
                    choice.structured.as_deref().unwrap_or("none"),
                    choice.max_tokens.map_or("-".to_string(), |n| n.to_string())
                ),
                width.saturating_sub(4),
            ),
            theme.text,
        ),
    ])];
    let names: Vec<Option<&str>> =
        std::iter::once(None).chain(state.saved.cases.iter().map(|c| Some(c.name.as_str()))).collect();
    for (index, name) in names.iter().enumerate() {
        let chosen = *name == choice.case.as_deref();
        let text = format!("{} {}", if chosen { "●" } else { "○" }, name.unwrap_or("(default variables)"));
        let mut line = Line::from(Span::styled(clip(&text, width), if chosen { theme.title } else { theme.text }));
        if index == state.selected_variable && state.focus == Pane::Variables {
            line = line.style(theme.selection);
        }
        rows.push(line);
    }
    let shown = match choice.case.as_deref() {
        None => state.saved.variables_for(None),
        Some(name) => state.saved.variables_for(Some(name)),
    };
    if let Ok(vars) = shown {
        for (name, value) in vars {
            let value = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            let text = format!("{name} = {}", escape_controls(&value).replace('\n', "⏎"));
            rows.push(Line::from(vec![Span::styled(clip(&text, width), theme.dim)]));
        }
    }
    frame.render_widget(Paragraph::new(rows), inner);
}
