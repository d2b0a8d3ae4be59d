//! Variables and test cases: the cases to pick from (enter chooses), the chosen variables' values
//! (enter edits one), and the run settings (provider, model, structured mode, max tokens).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::tui::case_list::Listing;
use crate::tui::panes::{block, block_named, clip};
use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::variables;
use crate::tui::workbench::state::Pane;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let listing = Listing::of(state);
    // Filtered: the pane is called cases and says how many of them it shows (the filter under it).
    let frame_block = if state.workbench.case_filter.is_on() {
        let (shown, of) = listing.shown_of();
        let text = clip(&escape_controls(&state.workbench.case_filter.text), 30);
        let title = vec![Span::styled(format!("{shown} of {of} "), theme.title)];
        block_named(Pane::Variables, "cases", state, theme, title)
            .title_bottom(Line::from(Span::styled(format!(" /{text} "), theme.dim)))
    } else {
        block(Pane::Variables, state, theme, Vec::new())
    };
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
    // Keep the selected row in view: the run line stays, the list scrolls; only the rows in view are
    // made (a dataset of thousands of rows is a screen of lines).
    let height = inner.height as usize;
    let skip = skipped(listing.len(), listing.position_of(state.workbench.selected_variable), height);
    state.drawn.note(|shown| shown.variables = Some((inner, skip)));
    let variables = variables::rows(state);
    let first_variable = state.cases.len() + 1;
    let in_view = skip..listing.len().min(skip + height.saturating_sub(1));
    for row in in_view.filter_map(|at| listing.row_at(at)) {
        let line = match row.checked_sub(first_variable) {
            None => {
                let name = row.checked_sub(1).and_then(|case| state.cases.get(case)).map(|c| c.name.as_str());
                let chosen = name == choice.case.as_deref();
                let text = format!("{} {}", if chosen { "●" } else { "○" }, name.unwrap_or("(default variables)"));
                Line::from(Span::styled(clip(&text, width), if chosen { theme.title } else { theme.text }))
            }
            Some(index) => {
                let Some(variable) = variables.get(index) else { continue };
                let value = match &variable.value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let text = format!("{} = {}", variable.name, escape_controls(&value).replace('\n', "⏎"));
                Line::from(vec![Span::styled(clip(&text, width), theme.dim)])
            }
        };
        let selected = row == state.workbench.selected_variable && state.workbench.focus == Pane::Variables;
        rows.push(if selected { line.style(theme.selection) } else { line });
    }
    frame.render_widget(Paragraph::new(rows), inner);
}

/// How many positions of the list (default variables, cases, variables) are scrolled out of a pane
/// `height` rows high, so that the one at `selected` is in view under the run line.
fn skipped(positions: usize, selected: usize, height: usize) -> usize {
    let rows = 1 + positions;
    let selected = selected + 1;
    if rows > height && selected >= height && height > 1 {
        (selected + 1 - height).min(rows - height)
    } else {
        0
    }
}
