//! The eval screen: the matrix of the open prompt's cases on the current model (verdict, F1, the
//! change against the previous run, the core's one-line reason), its title the pass rate, mean F1
//! and the delta to the baseline; enter opens a case (its answer escaped, the expected items, the
//! differences and failed checks); `a` asks before writing an answer as expected.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::clip;
use crate::eval::diff::Change;
use crate::eval::score::{Difference, Verdict};
use crate::safe_text::escape_controls;
use crate::tui::eval_state::{EvalCell, EvalOverlay, EvalPhase, EvalView};
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Draws the eval screen into `area` (the status bar is drawn by the caller).
pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.eval;
    match &view.overlay {
        EvalOverlay::Case => case(frame, area, state, theme),
        EvalOverlay::None => matrix(frame, area, view, theme),
        EvalOverlay::ConfirmApprove { row, text } => {
            matrix(frame, area, view, theme);
            confirm(frame, area, view, *row, text, theme);
        }
        EvalOverlay::Review => {
            let (bar, rest) = super::eval_review::split(area);
            super::eval_review::bar(frame, bar, view, theme);
            case(frame, rest, state, theme);
        }
        EvalOverlay::Diff(compared) => super::eval_diff::render(frame, area, compared, view.scroll, theme),
        EvalOverlay::Truncation => super::eval_truncation::render(frame, area, view, theme),
        EvalOverlay::ReviewDone => {
            matrix(frame, area, view, theme);
            super::eval_review::summary(frame, area, view, theme);
        }
    }
}

pub(super) fn frame_of<'a>(spans: Vec<Span<'a>>, theme: &Theme) -> Block<'a> {
    Block::default().borders(Borders::ALL).border_style(theme.border_focused).title(Line::from(spans))
}

/// The title's figures: pass rate, mean F1 (from the record's totals once it ended), the baseline delta.
fn title<'a>(view: &EvalView, theme: &Theme) -> Vec<Span<'a>> {
    let column = clip(&escape_controls(&view.column), 24);
    let mut spans = vec![Span::styled(format!(" eval · {column} "), theme.title)];
    let (scored, passed) = view.counts();
    let totals = view.totals.as_ref().or(view.record.as_ref().map(|r| &r.totals)).and_then(|t| t.first());
    match totals {
        Some(t) => {
            spans.push(Span::styled(format!("{passed}/{scored} pass ({:.0}%) ", t.pass_rate * 100.0), theme.text));
            if let Some(f1) = t.mean_f1 {
                spans.push(Span::styled(format!("· mean F1 {f1:.2} "), theme.text));
            }
            if t.cached > 0 {
                spans.push(Span::styled(format!("· {} cached ", t.cached), theme.dim));
            }
        }
        None => spans.push(Span::styled(format!("{passed}/{scored} pass, {} cases ", view.rows.len()), theme.text)),
    }
    match (&view.baseline, &view.phase) {
        (Some(delta), _) => spans.push(Span::styled(
            // The id's time (`YYYYMMDD-HHMMSS`) names the baseline well enough on screen.
            format!(
                "· vs {}: {} improved, {} regressed ",
                escape_controls(&delta.baseline).chars().take(15).collect::<String>(),
                delta.improved,
                delta.regressed
            ),
            if delta.regressed > 0 { theme.warning } else { theme.dim },
        )),
        (None, EvalPhase::Done) => spans.push(Span::styled("· no baseline yet ", theme.dim)),
        _ => {}
    }
    match &view.phase {
        EvalPhase::Running => spans.push(Span::styled("· running ", theme.dim)),
        EvalPhase::Failed(_) => spans.push(Span::styled("· failed ", theme.error)),
        _ => {}
    }
    spans
}

fn verdict_text(cell: &EvalCell) -> (&'static str, Option<f64>) {
    match &cell.scored {
        Some(scored) => (verdict_word(scored.score.verdict), scored.score.f1()),
        None if cell.started => ("running", None),
        None => ("waiting", None),
    }
}

fn verdict_style(cell: &EvalCell, theme: &Theme) -> Style {
    match cell.scored.as_ref().map(|s| s.score.verdict) {
        Some(Verdict::Pass) => theme.valid,
        Some(Verdict::Fail) => theme.invalid,
        Some(Verdict::Truncated) => theme.warning,
        Some(Verdict::Error) => theme.error,
        None => theme.dim,
    }
}

pub(super) fn change_text(change: Option<Change>) -> &'static str {
    match change {
        Some(Change::Improved) => "improved",
        Some(Change::Regressed) => "regressed",
        Some(Change::Changed) => "changed",
        Some(Change::Same) => "same",
        Some(Change::New) => "new",
        Some(Change::Gone) => "gone",
        None => "",
    }
}

fn matrix(frame: &mut Frame, area: Rect, view: &EvalView, theme: &Theme) {
    let block = frame_of(title(view, theme), theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    // The baseline's column (before) when there is a baseline: its verdict and F1 per case.
    let before = view.baseline_record.is_some();
    let case_width = if before { (width / 4).clamp(8, 24) } else { (width / 3).clamp(8, 28) };
    let before_header = if before { format!("{:14} ", "baseline") } else { String::new() };
    let mut lines = vec![Line::from(Span::styled(
        clip(
            &format!("  {:case_width$} {before_header}{:9} {:>4}  {:9} why", "case", "verdict", "F1", "change"),
            width,
        ),
        theme.dim,
    ))];
    if let EvalPhase::Failed(message) = &view.phase {
        if view.rows.is_empty() {
            lines.push(Line::from(Span::styled(escape_controls(message).into_owned(), theme.error)));
        }
    }
    let height = (inner.height as usize).saturating_sub(1);
    let first = view.selected.saturating_sub(height.saturating_sub(1));
    for (row, case) in view.rows.iter().enumerate().skip(first).take(height) {
        let cell = view.cells.get(row).cloned().unwrap_or_default();
        let (verdict, f1) = verdict_text(&cell);
        let name = case.as_deref().unwrap_or("(variables)");
        let name = clip(&escape_controls(name), case_width);
        let f1 = f1.map_or("   –".to_string(), |f| format!("{f:.2}"));
        let change = change_text(view.row_change(row));
        let mut why = cell.scored.as_ref().map(|s| escape_controls(&s.score.reason).into_owned()).unwrap_or_default();
        if view.review.as_ref().is_some_and(|r| r.is_rejected(row)) {
            why = format!("rejected · {why}");
        }
        let selected = row == view.selected;
        let marker = if selected { "▶ " } else { "  " };
        let fixed = 2 + case_width + 1 + 9 + 1 + 4 + 2 + 9 + 1 + if before { 15 } else { 0 };
        let mut spans = vec![Span::styled(
            format!("{marker}{name:case_width$} "),
            if selected { theme.selection } else { theme.text },
        )];
        if before {
            spans.push(baseline_span(view, row, theme));
        }
        spans.extend([
            Span::styled(format!("{verdict:9} "), verdict_style(&cell, theme)),
            Span::styled(format!("{f1:>4}  "), theme.text),
            Span::styled(
                format!("{change:9} "),
                match view.row_change(row) {
                    Some(Change::Improved) => theme.valid,
                    Some(Change::Regressed) => theme.invalid,
                    _ => theme.dim,
                },
            ),
            Span::styled(clip(&why, width.saturating_sub(fixed)), theme.dim),
        ]);
        let mut line = Line::from(spans);
        if selected {
            line = line.style(theme.selection);
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The baseline's verdict and F1 for `row` (`–` when the baseline has no such case).
fn baseline_span<'a>(view: &EvalView, row: usize, theme: &Theme) -> Span<'a> {
    match view.baseline_cell(row) {
        Some(cell) => {
            let cell = EvalCell { scored: Some(Box::new(cell.clone())), ..EvalCell::default() };
            let (verdict, f1) = verdict_text(&cell);
            let f1 = f1.map_or(String::new(), |f| format!("{f:.2}"));
            Span::styled(format!("{:14} ", format!("{verdict} {f1}")), verdict_style(&cell, theme))
        }
        None => Span::styled(format!("{:14} ", "–"), theme.dim),
    }
}

/// The selected case opened: answer on the left; expected items, differences and failed checks right.
pub(super) fn case(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.eval;
    let Some(cell) = view.selected_cell() else { return };
    let name = view.rows.get(view.selected).cloned().flatten().unwrap_or_else(|| "(variables)".into());
    let halves = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(area);
    let (verdict, f1) = verdict_text(cell);
    let mut spans = vec![
        Span::styled(format!(" {} ", escape_controls(&name)), theme.title),
        Span::styled(format!("{verdict} "), verdict_style(cell, theme)),
    ];
    if let Some(f1) = f1 {
        spans.push(Span::styled(format!("F1 {f1:.2} "), theme.text));
    }
    spans.push(Span::styled("· answer ", theme.dim));
    let answer = cell.run.as_ref().and_then(|r| r.turns.last()).map_or(cell.answer.as_str(), |t| t.output.as_str());
    let answer_lines: Vec<Line> =
        answer.lines().skip(view.scroll).map(|l| Line::from(escape_controls(l).into_owned())).collect();
    frame.render_widget(
        Paragraph::new(answer_lines).wrap(Wrap { trim: false }).block(frame_of(spans, theme)),
        halves[0],
    );
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
        .split(halves[1]);
    let expected = state.saved.cases.iter().find(|c| c.name == name).and_then(|c| c.expected.as_ref());
    let expected_lines: Vec<Line> = match expected {
        Some(e) if e.items.is_some() || e.value.is_some() => {
            let values: Vec<&serde_json::Value> = e.items.iter().flatten().chain(e.value.iter()).collect();
            values.iter().map(|v| Line::from(escape_controls(&v.to_string()).into_owned())).collect()
        }
        Some(e) => match &e.expected_file {
            Some(file) => vec![Line::from(format!("in {}", escape_controls(&file.display().to_string())))],
            None => vec![Line::from(Span::styled("(none)", theme.dim))],
        },
        None => vec![Line::from(Span::styled("no expected answer: a approves this one", theme.dim))],
    };
    frame.render_widget(
        Paragraph::new(expected_lines)
            .wrap(Wrap { trim: false })
            .block(frame_of(vec![Span::styled(" expected ", theme.title)], theme)),
        right[0],
    );
    let mut lines = Vec::new();
    if let Some(scored) = &cell.scored {
        let score = &scored.score;
        lines.push(Line::from(Span::styled(escape_controls(&score.reason).into_owned(), theme.text)));
        lines.extend(score.differences.iter().map(|d| difference_line("", d, theme)));
        for check in score.checks.iter().filter(|c| !c.passed) {
            let message = check.message.as_deref().unwrap_or("failed");
            let text = format!("✗ {} ({}): {message}", check.check, check.at);
            lines.push(Line::from(Span::styled(escape_controls(&text).into_owned(), theme.invalid)));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(frame_of(vec![Span::styled(" differences · failed checks ", theme.title)], theme)),
        right[1],
    );
}

/// One field-level difference, escaped, after `lead`.
pub(super) fn difference_line<'a>(lead: &str, difference: &Difference, theme: &Theme) -> Line<'a> {
    let (style, text) = match difference {
        Difference::Missing { key, expected } => (theme.invalid, format!("missing {key}: {expected}")),
        Difference::Extra { key, got } => (theme.warning, format!("extra {key}: {got}")),
        Difference::Field { key, field, expected, got } => {
            (theme.schema_error, format!("{key} {field}: expected {expected}, got {got}"))
        }
    };
    Line::from(Span::styled(format!("{lead}{}", escape_controls(&text)), style))
}

/// A verdict in words.
pub(super) fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Truncated => "truncated",
        Verdict::Error => "error",
    }
}

/// What approve will write, and the keys.
fn confirm(frame: &mut Frame, area: Rect, view: &EvalView, row: usize, text: &str, theme: &Theme) {
    let width = area.width.saturating_sub(8).min(100);
    let height = area.height.saturating_sub(4).min(20);
    let rect = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let name = view.rows.get(row).cloned().flatten().unwrap_or_default();
    let mut lines = vec![
        Line::from(Span::styled(
            format!("case {:?}: this answer becomes its expected answer (the prompt file is saved)", name),
            theme.text,
        )),
        Line::from(Span::styled("y or enter: approve · any other key: cancel", theme.dim)),
        Line::from(""),
    ];
    lines.extend(text.lines().map(|l| Line::from(escape_controls(l).into_owned())));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(frame_of(vec![Span::styled(" approve as expected? ", theme.title)], theme)),
        rect,
    );
}
