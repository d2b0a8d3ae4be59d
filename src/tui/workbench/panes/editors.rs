//! The three editors (system, template, schema): ratatui-textarea widgets in a pane frame, long lines
//! soft-wrapped at its edge; the schema pane shows its live lint under the text.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use crate::tui::panes::block;
use crate::tui::state::{SchemaKind, State};
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;

pub fn render(frame: &mut Frame, area: Rect, pane: Pane, state: &State, theme: &Theme) {
    let (area_widget, extra) = match pane {
        Pane::System => (state.system.area(), vec![]),
        Pane::Template => {
            (state.template.area(), vec![Span::styled(format!("({}) ", response_type_name(state)), theme.dim)])
        }
        _ => {
            let kind = match &state.schema_kind {
                SchemaKind::Inline => "inline JSON Schema".to_string(),
                SchemaKind::File(path) => format!("file {}", path.display()),
                SchemaKind::Signature => "signature".to_string(),
                SchemaKind::None => "none yet: type a JSON Schema".to_string(),
            };
            (state.schema.area(), vec![Span::styled(format!("({kind}) "), theme.dim)])
        }
    };
    let frame_block = block(pane, state, theme, extra);
    frame.render_widget(frame_block, area);
    let [text, lint] = parts(area, pane, state);
    state.drawn.note(|shown| shown.editor_text.push((pane, text)));
    frame.render_widget(area_widget, text);
    if pane != Pane::Schema {
        return;
    }
    let issues = &state.workbench.lint.issues;
    let lines: Vec<Line> = if state.workbench.lint.what.is_empty() {
        // A large schema's first lint is on its way (made in the background).
        vec![Line::from(Span::styled("linting the schema…", theme.dim))]
    } else if issues.is_empty() {
        vec![Line::from(Span::styled(
            if state.workbench.lint.what == "no schema" {
                "no schema: items are not checked".to_string()
            } else {
                format!("✓ {} compiles", state.workbench.lint.what)
            },
            theme.valid,
        ))]
    } else {
        std::iter::once(Line::from(Span::styled(format!("✗ {} errors:", state.workbench.lint.what), theme.invalid)))
            .chain(issues.iter().map(|i| Line::from(Span::styled(i.clone(), theme.error))))
            .collect()
    };
    frame.render_widget(Paragraph::new(lines), lint);
}

/// The text and (schema only) the lint under it, inside the pane's frame.
fn parts(area: Rect, pane: Pane, state: &State) -> [Rect; 2] {
    let inner = Block::default().borders(Borders::ALL).inner(area);
    if pane != Pane::Schema {
        return [inner, Rect { height: 0, ..inner }];
    }
    let issues = &state.workbench.lint.issues;
    let lint_height = if issues.is_empty() { 1 } else { (issues.len() as u16 + 1).min(inner.height / 2).max(2) };
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(1), Constraint::Length(lint_height)])
        .split(inner);
    [parts[0], parts[1]]
}

/// The prompt's response type as the prompt file writes it.
pub fn response_type_name(state: &State) -> &'static str {
    match state.saved.response_type {
        crate::output::ResponseType::Text => "text",
        crate::output::ResponseType::Json => "json",
        crate::output::ResponseType::Jsonl => "jsonl",
    }
}
