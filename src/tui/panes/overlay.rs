//! Modal views over the panes: the key help (generated from the keymap), the quit confirmation and
//! the offer of unsaved edits found from an earlier session.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::tui::keymap::Scope;
use crate::tui::state::{Overlay, State};
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    match &state.overlay {
        Overlay::None => {}
        Overlay::Help => help(frame, area, state, theme),
        Overlay::ConfirmQuit => {
            let lines = vec![
                Line::from(Span::styled("The prompt has unsaved edits.", theme.warning)),
                Line::from(""),
                Line::from("y  quit without saving (the edits are dropped)"),
                Line::from("s  save, then quit"),
                Line::from("any other key: stay"),
            ];
            popup(frame, area, "quit?", lines, theme, 52, 9);
        }
        Overlay::Recovery(recovery) => {
            let lines = vec![
                Line::from(Span::styled(
                    format!("Unsaved edits of {} from an earlier session were found.", recovery.path.display()),
                    theme.warning,
                )),
                Line::from(""),
                Line::from("r  restore them into the editors"),
                Line::from("d  discard them"),
                Line::from("any other key: decide next time"),
            ];
            popup(frame, area, "recover unsaved edits?", lines, theme, 70, 9);
        }
    }
}

/// The key help in two columns: keys that work everywhere, keys of the views.
fn help(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let rows = state.keymap.help_rows();
    let key_width =
        |scope: Scope| rows.iter().filter(|(s, ..)| *s == scope).map(|(_, k, ..)| k.chars().count()).max().unwrap_or(8);
    let column = |scope: Scope, heading: &str, key_width: usize| -> Vec<Line> {
        std::iter::once(Line::from(Span::styled(heading.to_string(), theme.border_focused)))
            .chain(rows.iter().filter(|(s, ..)| *s == scope).map(|(_, keys, name, what)| {
                Line::from(vec![
                    Span::styled(format!("{keys:<key_width$} "), theme.cut),
                    Span::styled(format!("{name:<17}"), theme.dim),
                    Span::styled(what.to_string(), theme.text),
                ])
            }))
            .collect()
    };
    let width = area.width.min(150);
    let height = area.height;
    let rect = Rect { x: area.x + (area.width - width) / 2, y: area.y, width, height };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(" help: keymap.toml in the config directory changes these; any key closes ", theme.title));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let halves = ratatui::layout::Layout::default()
        .direction(ratatui::layout::Direction::Horizontal)
        .constraints([ratatui::layout::Constraint::Percentage(52), ratatui::layout::Constraint::Percentage(48)])
        .split(inner);
    frame.render_widget(
        Paragraph::new(column(Scope::Global, "everywhere (also while typing)", key_width(Scope::Global)))
            .style(theme.text),
        halves[0],
    );
    frame.render_widget(
        Paragraph::new(column(Scope::View, "in variables, output, lines, truncation, history", key_width(Scope::View)))
            .style(theme.text),
        halves[1],
    );
}

fn popup(frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line>, theme: &Theme, width: u16, height: u16) {
    let height = height.max(lines.len() as u16 + 2).min(area.height);
    let width = width.min(area.width);
    let rect = Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(format!(" {title} "), theme.title));
    frame.render_widget(Paragraph::new(lines).block(block).style(theme.text).wrap(Wrap { trim: false }), rect);
}
