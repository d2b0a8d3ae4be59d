//! The compare screen: the json side and the jsonl side of the prompt run side by side — two output
//! panes (escaped, following the tail, each side's figures in its title), two line panes (jsonl
//! verdicts; the json side's parse status), and below them the shared truncation chart and the
//! agreement table ([`crate::tui::compare::chart`], which also frames every pane of the screen).

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::output::ResponseType;
use crate::safe_text::escape_controls;
use crate::tui::compare::chart::{self, frame_of};
use crate::tui::compare::state::{ComparePhase, SideView, LABELS};
use crate::tui::panes::lines::{json_verdict, line_counts, row};
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Draws the compare screen into `area` (the status bar is drawn by the caller).
pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let rows =
        split(Direction::Vertical, area, &[Constraint::Percentage(32), Constraint::Percentage(22), Constraint::Min(0)]);
    let tops = split(Direction::Horizontal, rows[0], &[Constraint::Percentage(50), Constraint::Percentage(50)]);
    let mids = split(Direction::Horizontal, rows[1], &[Constraint::Percentage(50), Constraint::Percentage(50)]);
    let bottom = split(Direction::Horizontal, rows[2], &[Constraint::Percentage(55), Constraint::Percentage(45)]);
    for side in 0..2 {
        output(frame, tops[side], state, side, theme);
        lines(frame, mids[side], state, side, theme);
    }
    chart::chart(frame, bottom[0], state, theme);
    chart::agreement(frame, bottom[1], state, theme);
}

fn split(direction: Direction, area: Rect, constraints: &[Constraint]) -> Vec<Rect> {
    Layout::default().direction(direction).constraints(constraints.to_vec()).split(area).to_vec()
}

/// Side `side`'s prompt id, once the comparison is ready.
fn prompt_of(state: &State, side: usize) -> String {
    state.compare.comparison.as_ref().map(|c| format!(" ({})", c.sides[side].prompt)).unwrap_or_default()
}

fn output(frame: &mut Frame, area: Rect, state: &State, side: usize, theme: &Theme) {
    let view = &state.compare;
    let pane = &view.sides[side];
    let mut extra = vec![Span::styled(format!("{} chunks ", pane.chunks), theme.dim)];
    if let Some(c) = &view.comparison {
        let f = &c.sides[side].figures;
        extra.push(Span::styled(format!("· {} items, {} valid ", f.items, f.valid_items), theme.text));
    }
    if let Some(finish) = &pane.finish {
        extra.push(Span::styled(format!("· {finish} "), theme.dim));
    }
    let block = frame_of(format!("{} output", LABELS[side]), theme, extra);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if pane.output.is_empty() {
        let hint = match &view.phase {
            ComparePhase::Failed(message) => Line::from(Span::styled(message.clone(), theme.error)),
            ComparePhase::Running => Line::from(Span::styled("waiting for the first token…", theme.dim)),
            _ => Line::from(Span::styled("(empty answer)", theme.dim)),
        };
        frame.render_widget(Paragraph::new(hint).wrap(Wrap { trim: true }), inner);
        return;
    }
    // Follow the tail: the last lines that fit, each cut to the pane's width.
    let width = inner.width as usize;
    let height = inner.height as usize;
    let text = escape_controls(&pane.output);
    let all: Vec<&str> = text.split('\n').collect();
    let shown: Vec<Line> = all[all.len().saturating_sub(height)..]
        .iter()
        .map(|line| Line::from(Span::styled(crate::tui::panes::clip(line, width), theme.text)))
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
}

fn lines(frame: &mut Frame, area: Rect, state: &State, side: usize, theme: &Theme) {
    let pane: &SideView = &state.compare.sides[side];
    let jsonl =
        state.compare.comparison.as_ref().map_or(side == 1, |c| c.sides[side].response_type == ResponseType::Jsonl);
    let extra = if jsonl { line_counts(&pane.verdicts, theme) } else { Vec::new() };
    let what = if jsonl { "lines" } else { "parse" };
    let title = format!("{} {what}{}", LABELS[side], prompt_of(state, side));
    let block = frame_of(title, theme, extra);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut shown: Vec<Line> = if jsonl {
        let height = inner.height as usize;
        let first = pane.verdicts.len().saturating_sub(height);
        pane.verdicts[first..].iter().map(|v| row(v, theme, width)).collect()
    } else {
        json_verdict(pane.report.as_ref(), theme, width)
    };
    if let Some(error) = &pane.error {
        shown.insert(
            0,
            Line::from(Span::styled(
                crate::tui::panes::clip(&escape_controls(&format!("stream failed: {error}")), width),
                theme.error,
            )),
        );
    }
    frame.render_widget(Paragraph::new(shown), inner);
}
