//! The status bar: the run's phase, the request's token count against the context window and max
//! tokens (warned when they do not fit), provider and model (and why replay is used), the structured
//! mode used (and any fallback), time to first token, tokens/s with a
//! sparkline, tokens in/out, finish reason, turn k of n, the run's phase, unsaved edits; then the
//! last note and the main keys.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::input::InputBox;
use crate::tui::panes::clip;
use crate::tui::state::{Screen, State};
use crate::tui::theme::Theme;
use crate::tui::workbench::state::RunPhase;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The last `width` rate buckets as bar characters.
pub fn sparkline(rate: &[u64], width: usize) -> String {
    let shown = &rate[rate.len().saturating_sub(width)..];
    let max = shown.iter().copied().max().unwrap_or(0).max(1);
    shown.iter().map(|&n| BARS[((n * 7) / max) as usize]).collect()
}

/// The structured mode as the run reported it: the mode used, each step down the ladder when the
/// provider fell back (`json-schema→json-object (fallback)`), `(default on local)` when the workbench
/// chose it; before the run reports it, the mode asked for.
pub fn mode_text(state: &State) -> String {
    let run = &state.workbench.run;
    let default = if run.mode_by_default { " (default on local)" } else { "" };
    match &run.mode {
        Some(mode) if !mode.fallbacks.is_empty() => {
            let steps: Vec<String> = std::iter::once(mode.requested.to_string())
                .chain(mode.fallbacks.iter().map(|f| f.to.to_string()))
                .collect();
            format!("{} (fallback)", steps.join("→"))
        }
        Some(mode) => format!("{}{default}", mode.used),
        None if state.workbench.phase == RunPhase::Idle => {
            let (asked, by_default) = state.choice.asked_mode(state.saved.response_type);
            let default = if by_default { " (default on local)" } else { "" };
            format!("asked {asked}{default}")
        }
        None => format!("asked {}{default}", run.asked_mode),
    }
}

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let run = &state.workbench.run;
    let provider = run.provider.unwrap_or(state.choice.provider).name();
    let model = if run.model.is_empty() { state.choice.model.as_deref().unwrap_or("") } else { run.model.as_str() };
    let phase = match &state.workbench.phase {
        RunPhase::Idle => "idle".to_string(),
        RunPhase::Starting => "starting".to_string(),
        RunPhase::Running => "streaming".to_string(),
        RunPhase::Cancelling => "cancelling".to_string(),
        RunPhase::Done { ok: true } => "done ✓".to_string(),
        RunPhase::Done { ok: false } => "done ✗".to_string(),
        RunPhase::Cancelled => "cancelled".to_string(),
        RunPhase::Failed(_) => "failed".to_string(),
    };
    let parts = [
        format!("{provider} {model}"),
        mode_text(state),
        format!("ttft {}", run.ttft_ms.map_or("-".into(), |t| format!("{t}ms"))),
        format!("{} tok/s {}", run.tokens_per_s.map_or("-".into(), |t| format!("{t:.0}")), sparkline(&run.rate, 8)),
        format!(
            "in {} out {}",
            run.usage.map_or("-".into(), |u| match u.cached_input_tokens {
                0 => u.input_tokens.to_string(),
                cached => format!("{} ({cached} cached)", u.input_tokens),
            }),
            run.usage.map_or(run.chunk_ends.len().to_string(), |u| u.output_tokens.to_string())
        ),
        run.finish.as_ref().map_or("finish -".to_string(), |f| f.as_str().to_string()),
        format!("turn {}/{}", run.turn, run.max_turns.max(1)),
    ];
    let width = area.width as usize;
    // The phase, then the size of the request ctrl-r sends (warned when it does not fit), then the run.
    let mut room = width.saturating_sub(12);
    let mut first = Vec::new();
    let mut push = |text: String, style| {
        let text = clip(&text, room);
        room = room.saturating_sub(text.chars().count());
        first.push(Span::styled(text, style));
    };
    push(format!(" {phase} · "), theme.status);
    if let Some((text, warn)) = crate::tui::workbench::tokens::status_text(&state.workbench.tokens) {
        push(text, if warn { theme.status_warn } else { theme.status });
        push(" · ".into(), theme.status);
    }
    push(parts.join(" · "), theme.status);
    if state.dirty {
        first.push(Span::styled(" ● unsaved ", theme.status_warn));
    } else {
        first.push(Span::styled(" saved ", theme.status));
    }
    let note = state
        .note
        .clone()
        .or_else(|| run.error.as_ref().map(|e| format!("stream error: {e}")))
        .or_else(|| {
            (state.choice.provider == crate::provider::kind::ProviderKind::Replay)
                .then(|| state.replay_reason.clone())
                .flatten()
        })
        .unwrap_or_default();
    frame.render_widget(Paragraph::new(Line::from(first).style(theme.status)), Rect { height: 1, ..area });
    let second_row = Rect { y: area.y + 1, height: area.height.saturating_sub(1), ..area };
    if let Some(open) = state.input.as_deref().filter(|open| open.is_line()) {
        inline_input(frame, second_row, open, theme);
        return;
    }
    let keys = if state.screen == Screen::Compare {
        "←/→ cut · ↑/↓ row · esc back · F1 help · ctrl-q quit"
    } else {
        "F1 help · ctrl-r run · esc stop · ctrl-s save · ctrl-q quit"
    };
    let room = width.saturating_sub(keys.chars().count() + 1);
    let second = Line::from(vec![
        Span::styled(format!("{:<room$}", clip(&crate::safe_text::escape_controls(&note), room)), theme.warning),
        Span::styled(format!(" {keys}"), theme.dim),
    ]);
    frame.render_widget(Paragraph::new(second), second_row);
}

/// An input typed in the status line: its label, the one-line editor, then the hint (or why the
/// last value was refused).
fn inline_input(frame: &mut Frame, area: Rect, open: &InputBox, theme: &Theme) {
    let label = open.label();
    let hint = open.error.as_deref().unwrap_or(open.hint());
    let label_width = (label.chars().count() as u16).min(area.width / 3);
    // The hint gets its room, the editor at least 40 columns.
    let hint_width = (hint.chars().count() as u16 + 1).min(area.width.saturating_sub(label_width + 40));
    let editor_width = area.width.saturating_sub(label_width + hint_width);
    let at = |x: u16, width: u16| Rect { x: area.x + x, width, height: area.height.min(1), ..area };
    frame.render_widget(Paragraph::new(Span::styled(label, theme.title)), at(0, label_width));
    let mut editor = open.area.clone();
    editor.set_style(theme.text);
    editor.set_cursor_line_style(theme.text);
    editor.set_cursor_style(theme.cut.add_modifier(ratatui::style::Modifier::REVERSED));
    frame.render_widget(&editor, at(label_width, editor_width));
    let style = if open.error.is_some() { theme.warning } else { theme.dim };
    frame.render_widget(
        Paragraph::new(Span::styled(format!(" {}", clip(hint, hint_width.saturating_sub(1) as usize)), style)),
        at(label_width + editor_width, hint_width),
    );
}
