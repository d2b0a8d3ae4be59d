//! The answer as it streams: follows the tail (or scrolls), token boundaries on a toggle, tokens
//! coloured by probability on another (forced tokens apart), the lines of the selected JSONL record
//! highlighted; a thinking model's thought above the answer, dim and apart (its last lines, in at most
//! a third of the pane). Model output is escaped before it reaches the terminal.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::tui::panes::block;
use crate::tui::state::{ChunkProb, State};
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;
use crate::tui::workbench::state::RunPhase;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let run = &state.workbench.run;
    let mut extra = vec![Span::styled(format!("{} chunks ", run.chunk_ends.len()), theme.dim)];
    if state.workbench.show_tokens {
        extra.push(Span::styled("tokens shown ", theme.token_alt));
    }
    if state.workbench.show_probs {
        extra.extend(legend(theme));
    }
    if state.workbench.output_scroll.is_none() && state.workbench.running() {
        extra.push(Span::styled("following ", theme.dim));
    }
    let frame_block = block(Pane::Output, state, theme, extra);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let inner = if run.thinking_tokens > 0 { render_thought(frame, inner, state, theme) } else { inner };
    if run.output.is_empty() {
        let hint = match &state.workbench.phase {
            RunPhase::Idle => "ctrl-r runs the prompt; the answer streams here".to_string(),
            RunPhase::Starting | RunPhase::Running => "waiting for the first token…".to_string(),
            RunPhase::Failed(e) => format!("run failed: {e}"),
            _ => "(empty answer)".to_string(),
        };
        frame.render_widget(Paragraph::new(hint).style(theme.dim).wrap(ratatui::widgets::Wrap { trim: true }), inner);
        return;
    }
    let height = inner.height as usize;
    let width = inner.width as usize;
    let total = run.line_count();
    let first = match state.workbench.output_scroll {
        Some(at) => at.min(total.saturating_sub(1)),
        None => total.saturating_sub(height),
    };
    let highlighted =
        state.workbench.run.verdicts.get(state.workbench.selected_line).map(|v| (v.line, v.end_line.unwrap_or(v.line)));
    let lines: Vec<Line> = (first..(first + height).min(total))
        .map(|index| {
            let number = index + 1;
            let mut line = render_line(state, index, width, theme);
            if highlighted.is_some_and(|(from, to)| (from..=to).contains(&number)) {
                line = line.style(theme.highlight);
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).style(theme.text), inner);
}

/// The thought in the top of `area` (a title line, then its last lines, dim, at most a third of the
/// height); returns the area left for the answer.
fn render_thought(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) -> Rect {
    let run = &state.workbench.run;
    if area.height < 3 {
        return area;
    }
    let text = crate::engine::thinking::shown(&run.thinking);
    let lines: Vec<&str> = text.lines().collect();
    let room = (area.height / 3).max(2).min(area.height.saturating_sub(1)) as usize;
    let shown = lines.len().min(room.saturating_sub(1));
    let width = area.width as usize;
    let title =
        format!("thinking · {} tokens{}", run.thinking_tokens, if shown < lines.len() { " (last lines)" } else { "" });
    let mut rows = vec![Line::from(Span::styled(clip_escaped(&title, width), theme.dim))];
    rows.extend(
        lines[lines.len() - shown..].iter().map(|line| Line::from(Span::styled(clip_escaped(line, width), theme.dim))),
    );
    let height = rows.len() as u16;
    let top = Rect { height, ..area };
    frame.render_widget(Paragraph::new(rows), top);
    Rect { y: area.y + height, height: area.height - height, ..area }
}

/// One output line, at most `width` characters, escaped, split at token boundaries when shown.
fn render_line<'a>(state: &'a State, index: usize, width: usize, theme: &Theme) -> Line<'a> {
    let run = &state.workbench.run;
    let start = run.line_starts.get(index).copied().unwrap_or(0);
    let text = run.line(index);
    // Never more than a screen's width of bytes goes through the escaper.
    let mut end = text.len().min(width.saturating_mul(4));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = &text[..end];
    if !state.workbench.show_tokens && !state.workbench.show_probs {
        return Line::from(clip_escaped(text, width));
    }
    let mut spans = Vec::new();
    let mut chunk = run.chunk_ends.partition_point(|&e| e <= start);
    let mut at = 0;
    let mut used = 0;
    while at < text.len() && used < width {
        let chunk_end = run.chunk_ends.get(chunk).map_or(text.len(), |&e| e.saturating_sub(start).min(text.len()));
        let mut piece_end = chunk_end.max(at + 1).min(text.len());
        while !text.is_char_boundary(piece_end) {
            piece_end += 1;
        }
        let piece = clip_escaped(&text[at..piece_end], width - used);
        used += piece.chars().count();
        let style = if state.workbench.show_probs {
            prob_style(run.chunk_probs.get(chunk).copied().flatten(), theme)
        } else if chunk % 2 == 1 {
            theme.token_alt
        } else {
            theme.text
        };
        spans.push(Span::styled(piece, style));
        at = piece_end;
        chunk += 1;
    }
    Line::from(spans)
}

/// The style of a chunk by how sure the model was of it (no probability known: plain text).
pub fn prob_style(prob: Option<ChunkProb>, theme: &Theme) -> ratatui::style::Style {
    match prob {
        None => theme.text,
        Some(ChunkProb { forced: true, .. }) | Some(ChunkProb { p: None, .. }) => theme.prob_forced,
        Some(ChunkProb { p: Some(p), .. }) if p >= 0.9 => theme.prob_high,
        Some(ChunkProb { p: Some(p), .. }) if p >= 0.5 => theme.prob_mid,
        Some(ChunkProb { p: Some(p), .. }) if p >= 0.2 => theme.prob_low,
        Some(_) => theme.prob_very_low,
    }
}

/// The probability colours, as the pane's title shows them (the help says the same in words).
pub fn legend(theme: &Theme) -> Vec<Span<'static>> {
    vec![
        Span::styled("≥90% ", theme.prob_high),
        Span::styled("≥50% ", theme.prob_mid),
        Span::styled("≥20% ", theme.prob_low),
        Span::styled("<20% ", theme.prob_very_low),
        Span::styled("forced ", theme.prob_forced),
    ]
}

/// `text` escaped (control characters and escape sequences made visible), tabs as spaces, cut to `width`.
fn clip_escaped(text: &str, width: usize) -> String {
    let escaped = escape_controls(text).replace('\t', "  ");
    escaped.chars().take(width).collect()
}
