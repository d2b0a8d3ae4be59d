//! Variables and test cases: the cases to pick from (enter chooses), the chosen variables' values
//! (enter edits one), and the run settings (provider, model, structured mode, max tokens).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::tui::panes::{block, clip};
use crate::tui::state::{Pane, State};
use crate::tui::theme::Theme;
use crate::tui::variables;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let frame_block = block(Pane::Variables, state, theme, vec![]);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let width = inner.width as usize;
    let choice = &state.choice;
    let (mode, _) = choice.asked_mode(state.saved.response_type);
    let mut rows = vec![Line::from(vec![
        Span::styled("run ", theme.dim),
        Span::styled(
            clip(
                &format!(
                    "{} {} · {} · max {}",
                    choice.provider,
                    choice.model.as_deref().unwrap_or(""),
                    mode,
                    choice.max_tokens.map_or("-".to_string(), |n| n.to_string())
                ),
                width.saturating_sub(4),
            ),
            theme.text,
        ),
    ])];
    let names: Vec<Option<&str>> =
        std::iter::once(None).chain(state.cases.iter().map(|c| Some(c.name.as_str()))).collect();
    for (index, name) in names.iter().enumerate() {
        let chosen = *name == choice.case.as_deref();
        let text = format!("{} {}", if chosen { "●" } else { "○" }, name.unwrap_or("(default variables)"));
        let mut line = Line::from(Span::styled(clip(&text, width), if chosen { theme.title } else { theme.text }));
        if index == state.selected_variable && state.focus == Pane::Variables {
            line = line.style(theme.selection);
        }
        rows.push(line);
    }
    let first_variable = names.len();
    for (index, row) in variables::rows(state).into_iter().enumerate() {
        let value = match row.value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        let text = format!("{} = {}", row.name, escape_controls(&value).replace('\n', "⏎"));
        let mut line = Line::from(vec![Span::styled(clip(&text, width), theme.dim)]);
        if first_variable + index == state.selected_variable && state.focus == Pane::Variables {
            line = line.style(theme.selection);
        }
        rows.push(line);
    }
    // Keep the selected row in view: the run line stays, the list scrolls.
    let skip = skipped(state, inner.height as usize);
    state.drawn.note(|shown| shown.variables = Some((inner, skip)));
    rows.drain(1..1 + skip.min(rows.len().saturating_sub(1)));
    frame.render_widget(Paragraph::new(rows), inner);
}

/// How many rows of the list (default variables, cases, variables) are scrolled out of a pane
/// `height` rows high, so that the selected one is in view under the run line.
fn skipped(state: &State, height: usize) -> usize {
    let rows = 1 + variables::row_count(state);
    let selected = state.selected_variable + 1;
    if rows > height && selected >= height && height > 1 {
        (selected + 1 - height).min(rows - height)
    } else {
        0
    }
}
