//! Modal views over the panes: the key help (generated from the keymap, in the columns that fit,
//! scrolled with ↑/↓, with the legend of the output's probability colours), the quit confirmation and the offer of unsaved edits found from an earlier session.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::tui::keymap::Scope;
use crate::tui::panes::clip;
use crate::tui::state::{OutsideChange, Overlay, State};
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
        Overlay::ConfirmDeleteCase { name, .. } => {
            let lines = vec![
                Line::from(Span::styled(
                    format!("Delete the case {}?", crate::safe_text::escape_controls(&format!("{name:?}"))),
                    theme.warning,
                )),
                Line::from("Its name, notes and variables go with it."),
                Line::from(""),
                Line::from(format!(
                    "y  delete it (ctrl-s saves the prompt; {} undoes)",
                    crate::tui::workbench::cases::undo_key(state)
                )),
                Line::from("any other key: keep it"),
            ];
            popup(frame, area, "delete case?", lines, theme, 60, 9);
        }
        Overlay::ChangedOutside(change) => changed_outside(frame, area, change, theme),
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

/// A file of the prompt changed on disk: what the keys do, and the difference once asked for.
fn changed_outside(frame: &mut Frame, area: Rect, change: &OutsideChange, theme: &Theme) {
    let path = change.path.display().to_string();
    let path = crate::safe_text::escape_controls(&path);
    let why = if change.refused_save { "Not saved: " } else { "" };
    let mut lines = vec![
        Line::from(Span::styled(format!("{why}{path} changed on disk since it was read."), theme.warning)),
        Line::from(""),
        Line::from("r  reload it (your unsaved edits are dropped)"),
        Line::from(if change.refused_save {
            "k  keep mine: save them over the file as it is now (its other changes stay)"
        } else {
            "k  keep mine: the next save writes them over the file as it is now"
        }),
        Line::from(match change.diff {
            Some(_) => "d  hide the difference (↑/↓ scroll it)",
            None => "d  show the difference",
        }),
        Line::from("any other key: decide later (a save asks again)"),
    ];
    let height = area.height.saturating_sub(4).max(10);
    if let Some(diff) = &change.diff {
        lines.push(Line::from(""));
        let room = usize::from(height).saturating_sub(lines.len() + 2);
        for line in diff.iter().skip(change.scroll).take(room) {
            let style = match line.chars().next() {
                Some('+') => theme.valid,
                Some('-') => theme.error,
                _ => ratatui::style::Style::default(),
            };
            lines.push(Line::from(Span::styled(line.clone(), style)));
        }
    }
    let height = if change.diff.is_some() { height } else { 10 };
    popup(frame, area, "changed on disk", lines, theme, 96, height);
}

/// The width of the action names in the help.
const NAME_WIDTH: usize = 17;

/// One line of the help: a heading, a key binding, or a blank line between scopes.
enum HelpLine {
    Heading(&'static str),
    Binding {
        keys: String,
        name: String,
        what: &'static str,
    },
    Blank,
    Note(&'static str),
    /// The colours of the output's tokens by probability (the probability toggle).
    Legend,
}

/// The help's lines in reading order: everywhere, then the views, then where to change them.
fn help_lines(state: &State) -> Vec<HelpLine> {
    let rows = state.keymap.help_rows();
    let mut lines = Vec::new();
    for (scope, heading) in [
        (Scope::Global, "everywhere (also while typing)"),
        (Scope::View, "in variables, output, lines, truncation, history"),
        (Scope::Eval, "on the eval screen (alt-e), before the keys above"),
        (Scope::Optimize, "on the optimize screen (o), before the keys above"),
    ] {
        if !lines.is_empty() {
            lines.push(HelpLine::Blank);
        }
        lines.push(HelpLine::Heading(heading));
        for (_, keys, name, what) in rows.iter().filter(|(s, ..)| *s == scope) {
            lines.push(HelpLine::Binding { keys: keys.clone(), name: name.clone(), what });
        }
    }
    lines.push(HelpLine::Blank);
    lines.push(HelpLine::Legend);
    lines.push(HelpLine::Note("keymap.toml in the config directory changes these keys"));
    lines
}

/// How the help fits a screen: how many columns, lines per column, the most it scrolls (in
/// screen lines), and the text of the lines laid out for that column width.
pub struct HelpGeometry<'a> {
    pub columns: usize,
    pub height: usize,
    pub max_scroll: usize,
    pub lines: Vec<Line<'a>>,
}

/// The help on a screen of `size`: in as many columns as hold every line (descriptions wrap under
/// themselves when a column is narrow); when even one column does not hold them, one column that
/// scrolls.
pub fn help_geometry<'a>(size: (u16, u16), state: &State, theme: &Theme) -> HelpGeometry<'a> {
    let lines = help_lines(state);
    let key_width = lines
        .iter()
        .filter_map(|l| match l {
            HelpLine::Binding { keys, .. } => Some(keys.chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(8)
        .min(14);
    let inner_width = size.0.saturating_sub(2) as usize;
    let height = (size.1.saturating_sub(2) as usize).max(1);
    // A column holds the keys, the name and at least a few words of the description.
    let narrowest = key_width + 1 + NAME_WIDTH + 1 + 16;
    let most = (inner_width / narrowest).max(1);
    let layout = |columns: usize| -> Vec<Line<'a>> {
        let width = (inner_width / columns).saturating_sub(1);
        lines.iter().flat_map(|line| help_line(line, key_width, width, theme)).collect()
    };
    for columns in (2..=most).rev() {
        let laid = layout(columns);
        if laid.len() <= columns * height {
            let columns = laid.len().div_ceil(height).max(1);
            return HelpGeometry { columns, height, max_scroll: 0, lines: layout(columns) };
        }
    }
    let laid = layout(1);
    HelpGeometry { columns: 1, height, max_scroll: laid.len().saturating_sub(height), lines: laid }
}

/// The key help, in as many columns as fit the screen; what does not fit scrolls with ↑/↓.
fn help(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let HelpGeometry { columns, height, max_scroll, lines } = help_geometry((area.width, area.height), state, theme);
    let scroll = state.help_scroll.min(max_scroll);
    state.drawn.note(|shown| shown.help = (height, max_scroll));
    frame.render_widget(Clear, area);
    let title = if max_scroll > 0 {
        let last = (scroll + height).min(lines.len());
        format!(" help · ↑/↓ pgup/pgdn scroll · {}–{last} of {} · other keys close ", scroll + 1, lines.len())
    } else {
        " help · any key closes ".to_string()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focused)
        .title(Span::styled(clip(&title, area.width.saturating_sub(2) as usize), theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let column_width = inner.width / columns as u16;
    let shown: Vec<Line> = lines.into_iter().skip(scroll).collect();
    for (column, chunk) in shown.chunks(height).take(columns).enumerate() {
        let rect = Rect { x: inner.x + column as u16 * column_width, width: column_width, ..inner };
        frame.render_widget(Paragraph::new(chunk.to_vec()).style(theme.text), rect);
    }
}

/// A help line laid out in `width` columns: a binding's description wraps under itself.
fn help_line<'a>(line: &HelpLine, key_width: usize, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    match line {
        HelpLine::Heading(text) => vec![Line::from(Span::styled(clip(text, width), theme.border_focused))],
        HelpLine::Note(text) => vec![Line::from(Span::styled(clip(text, width), theme.dim))],
        HelpLine::Blank => vec![Line::from("")],
        HelpLine::Legend => {
            let head = Span::styled("token probability colours: ", theme.dim);
            let mut spans = vec![head];
            spans.extend(crate::tui::panes::output::legend(theme));
            let mut used = 0;
            let fitting = spans.into_iter().take_while(|span| {
                used += span.content.chars().count();
                used <= width
            });
            vec![Line::from(fitting.collect::<Vec<_>>())]
        }
        HelpLine::Binding { keys, name, what } => {
            let indent = key_width + 1 + NAME_WIDTH + 1;
            let rest = width.saturating_sub(indent).max(8);
            wrap(what, rest)
                .into_iter()
                .enumerate()
                .map(|(i, part)| {
                    let head = if i == 0 {
                        vec![
                            Span::styled(format!("{:<key_width$} ", clip(keys, key_width)), theme.cut),
                            Span::styled(format!("{:<NAME_WIDTH$} ", clip(name, NAME_WIDTH)), theme.dim),
                        ]
                    } else {
                        vec![Span::raw(" ".repeat(indent))]
                    };
                    Line::from(head.into_iter().chain([Span::styled(part, theme.text)]).collect::<Vec<_>>())
                })
                .collect()
        }
    }
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let fits = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count() <= width;
        if !fits && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&clip(word, width));
    }
    lines.push(line);
    lines
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
