//! Past evals of this prompt (newest first: when, pass count, model, id; enter opens one in the eval
//! screen, `m` marks one to compare), then its past runs: when, provider, model, case, verdict (or
//! cancelled) and items; enter replays the selected run into the panes.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::eval::store::Listed;
use crate::run::RunRecord;
use crate::tui::panes::{block, clip};
use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let mut extra = vec![Span::styled(format!("{} runs ", state.workbench.history.len()), theme.dim)];
    if !state.workbench.evals.is_empty() {
        extra.insert(0, Span::styled(format!("{} evals · ", state.workbench.evals.len()), theme.dim));
    }
    let frame_block = block(Pane::History, state, theme, extra);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    if state.workbench.history.is_empty() && state.workbench.evals.is_empty() {
        frame.render_widget(Paragraph::new("no runs of this prompt yet").style(theme.dim), inner);
        return;
    }
    let height = inner.height as usize;
    let width = inner.width as usize;
    let first = state.workbench.history_selected.saturating_sub(height.saturating_sub(1));
    let evals = state
        .workbench
        .evals
        .iter()
        .map(|eval| eval_row(eval, state.workbench.eval_marked.as_ref() == Some(&eval.id), theme, width));
    let runs = state.workbench.history.iter().map(|record| row(record, theme, width));
    let rows: Vec<Line> = evals
        .chain(runs)
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(index, line)| {
            if index == state.workbench.history_selected && state.workbench.focus == Pane::History {
                line.style(theme.selection)
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(rows), inner);
}

/// `12:04:33 ◆ eval 3/5 pass gpt-4o-mini 20261125-120433-12ab` (`●` when marked to compare).
pub fn eval_row<'a>(eval: &Listed, marked: bool, theme: &Theme, width: usize) -> Line<'a> {
    let secs = eval.started_at_ms / 1000;
    let time = format!("{:02}:{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let text = format!("{}/{} pass {} {}", eval.passed, eval.cells, eval.columns.join(", "), eval.id);
    Line::from(vec![
        Span::styled(format!("{time} "), theme.dim),
        Span::styled(if marked { "● eval " } else { "◆ eval " }, if marked { theme.warning } else { theme.title }),
        Span::styled(clip(&crate::safe_text::escape_controls(&text), width.saturating_sub(16)), theme.text),
    ])
}

/// `12:04:33 ✓ replay hand-written… astronomy 5 items`.
pub fn row<'a>(record: &RunRecord, theme: &Theme, width: usize) -> Line<'a> {
    let (ok, cancelled) = (record.ok, record.cancelled);
    let secs = record.started_at_ms / 1000;
    let time = format!("{:02}:{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let text = format!(
        "{} {} {} {} {}",
        record.provider,
        record.model,
        record.case.as_deref().unwrap_or(""),
        record.result_in_words(),
        record.turns.len(),
    );
    Line::from(vec![
        Span::styled(format!("{time} "), theme.dim),
        match (cancelled, ok) {
            (true, _) => Span::styled("⊘ cancelled ", theme.warning),
            (false, true) => Span::styled("✓ ", theme.valid),
            (false, false) => Span::styled("✗ ", theme.invalid),
        },
        Span::styled(
            clip(&crate::safe_text::escape_controls(&text), width.saturating_sub(if cancelled { 21 } else { 11 })),
            theme.text,
        ),
    ])
}
