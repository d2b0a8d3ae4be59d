//! One row per JSONL line: its verdict, the union branch or the first error (path and message); the
//! selected row's line is highlighted in the output. A json answer shows its one verdict instead, and
//! under it the case's verdict with each difference from the expected answer. The title counts the
//! JSONL verdicts and, once a case's run ended, says whether the answer is right: the case's verdict
//! against its expected answer and checks (pass / fail, with the reason), beside "valid".

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::eval::report::{difference_line, verdict_name};
use crate::eval::score::Verdict;
use crate::output::{LineStatus, LineVerdict, Report, ResponseType};
use crate::tui::panes::{block, clip};
use crate::tui::state::{counts, State};
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let verdicts = &state.workbench.run.verdicts;
    let jsonl = state.response_type() == ResponseType::Jsonl;
    // Line counts mean something for a JSONL answer only (a json answer has its one verdict below).
    let mut extra = if jsonl { line_counts(verdicts, theme) } else { Vec::new() };
    // The title says the case's verdict; its reason and differences are in the pane (a title is cut).
    match &state.workbench.run.scored {
        Some(Ok(score)) => {
            let style = verdict_style(score.verdict, theme);
            extra.push(Span::styled(format!("· case {} ", verdict_name(score.verdict)), style));
        }
        Some(Err(why)) => {
            extra.push(Span::styled(format!("· case {} ", crate::safe_text::escape_controls(why)), theme.error))
        }
        None => {}
    }
    let frame_block = block(Pane::Lines, state, theme, extra);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let width = inner.width as usize;
    if !jsonl {
        let mut lines = json_verdict(state.workbench.run.report.as_ref(), theme, width);
        lines.extend(case_verdict(state, theme));
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        return;
    }
    if verdicts.is_empty() {
        frame.render_widget(
            Paragraph::new("each JSONL line gets a verdict here as it completes").style(theme.dim),
            inner,
        );
        return;
    }
    // The case's verdict under the lines, in at most half the pane.
    let case = case_verdict(state, theme);
    let case_height = (case.len() as u16).min(inner.height / 2);
    let [inner, below] = Layout::vertical([Constraint::Min(0), Constraint::Length(case_height)]).areas::<2>(inner);
    if case_height > 0 {
        frame.render_widget(Paragraph::new(case).wrap(Wrap { trim: false }), below);
    }
    let height = inner.height as usize;
    let selected = state.workbench.selected_line.min(verdicts.len() - 1);
    // Keep the selection on screen; while streaming with the selection at the top, follow the tail.
    let first = if state.workbench.focus != Pane::Lines && state.workbench.running() {
        verdicts.len().saturating_sub(height)
    } else {
        selected.saturating_sub(height.saturating_sub(1))
    };
    let rows: Vec<Line> = verdicts
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(index, verdict)| {
            let line = row(verdict, theme, width);
            if index == selected && state.workbench.focus == Pane::Lines {
                line.style(theme.selection)
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(rows), inner);
}

/// Under the answer's verdicts, whether it is right: the case's verdict, its reason and each
/// difference from the expected answer (`the answer /from: expected "Leeds", got "Lisle"`).
fn case_verdict<'a>(state: &State, theme: &Theme) -> Vec<Line<'a>> {
    let Some(Ok(score)) = &state.workbench.run.scored else { return Vec::new() };
    let style = verdict_style(score.verdict, theme);
    let escape = |text: &str| crate::safe_text::escape_controls(text).into_owned();
    let head = format!("case {}: {}", verdict_name(score.verdict), escape(&score.reason));
    let mut lines = vec![Line::from(""), Line::from(Span::styled(head, style))];
    lines.extend(score.differences.iter().map(|d| Line::from(Span::styled(escape(&difference_line(d)), theme.text))));
    lines
}

fn verdict_style(verdict: Verdict, theme: &Theme) -> ratatui::style::Style {
    match verdict {
        Verdict::Pass => theme.valid,
        Verdict::Fail => theme.invalid,
        Verdict::Truncated => theme.warning,
        Verdict::Error => theme.error,
    }
}

/// A verdict as one row: `L12 ✓ valid  definition`.
pub fn row<'a>(verdict: &LineVerdict, theme: &Theme, width: usize) -> Line<'a> {
    let at = match verdict.end_line {
        Some(end) => format!("L{}-{}", verdict.line, end),
        None => format!("L{}", verdict.line),
    };
    let (mark, word, style, detail) = match &verdict.status {
        LineStatus::Valid { branch } => ("✓", "valid", theme.valid, branch.clone().unwrap_or_default()),
        LineStatus::InvalidJson { error, column } => ("✗", "invalid", theme.invalid, format!("col {column}: {error}")),
        LineStatus::SchemaError { errors } => (
            "≠",
            "schema",
            theme.schema_error,
            errors
                .first()
                .map_or(String::new(), |e| format!("{}: {}", if e.path.is_empty() { "/" } else { &e.path }, e.message)),
        ),
        LineStatus::Skipped { reason } => ("–", "skipped", theme.skipped, reason.clone()),
    };
    let head = format!("{at:<5} {mark} {word:<7} ");
    let rest = width.saturating_sub(head.chars().count());
    Line::from(vec![
        Span::styled(head, style),
        Span::styled(clip(&crate::safe_text::escape_controls(&detail), rest), theme.text),
    ])
}

/// A json answer's one verdict (its parse status, schema issues and repairs), as rows.
pub fn json_verdict<'a>(report: Option<&Report>, theme: &Theme, width: usize) -> Vec<Line<'a>> {
    match report {
        Some(Report::Json(report)) => {
            let mut lines = vec![if report.ok {
                Line::from(Span::styled(format!("✓ valid {}", report.branch.clone().unwrap_or_default()), theme.valid))
            } else {
                let kind = report.error.as_ref().map_or("schema_error".to_string(), |e| format!("{:?}", e.kind));
                Line::from(Span::styled(format!("✗ {kind}"), theme.invalid))
            }];
            if let Some(error) = &report.error {
                lines.push(Line::from(clip(&error.message, width)));
            }
            for issue in &report.errors {
                lines.push(Line::from(Span::styled(
                    clip(&format!("{}: {}", issue.path, issue.message), width),
                    theme.schema_error,
                )));
            }
            for repair in &report.repairs {
                lines.push(Line::from(Span::styled(clip(&format!("repaired: {}", repair.what), width), theme.warning)));
            }
            lines
        }
        Some(Report::Text(_)) => vec![Line::from("text answer: nothing to validate")],
        _ => vec![Line::from(Span::styled("a json answer gets its verdict here when it completes", theme.dim))],
    }
}

/// A JSONL answer's line counts for a pane title: valid, invalid, schema errors, skipped.
pub(crate) fn line_counts<'a>(verdicts: &[crate::output::LineVerdict], theme: &Theme) -> Vec<Span<'a>> {
    let [valid, invalid, schema, skipped] = counts(verdicts);
    vec![
        Span::styled(format!("✓{valid} "), theme.valid),
        Span::styled(format!("✗{invalid} "), theme.invalid),
        Span::styled(format!("≠{schema} "), theme.schema_error),
        Span::styled(format!("–{skipped} "), theme.skipped),
    ]
}
