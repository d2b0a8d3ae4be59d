//! The eval diff on the eval screen: the core's `eval::diff` of two evals (the baseline, or the eval
//! marked in the history, against the one shown), cell by cell: each case that changed with its
//! verdict and F1 before and after, the differences fixed and introduced, the checks whose result
//! changed; then each column's pass rate and the prompt files' edits. Everything escaped.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::eval::diff::{Change, EvalDiff, Side};
use crate::safe_text::escape_controls;
use crate::tui::eval::parts::{change_text, difference_line, frame_of, verdict_word};
use crate::tui::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, compared: &EvalDiff, scroll: usize, theme: &Theme) {
    let title = vec![
        Span::styled(
            format!(" eval diff {} → {} ", escape_controls(&compared.a), escape_controls(&compared.b)),
            theme.title,
        ),
        Span::styled(
            format!("{} improved, {} regressed ", compared.improved, compared.regressed),
            if compared.regressed > 0 { theme.warning } else { theme.text },
        ),
        Span::styled("· ↑/↓ scroll · esc back ", theme.dim),
    ];
    let lines: Vec<Line> = lines(compared, theme).into_iter().skip(scroll).collect();
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(frame_of(title, theme)), area);
}

fn side(side: Option<&Side>) -> String {
    match side {
        Some(side) => {
            let f1 = side.f1.map_or(String::new(), |f| format!(" F1 {f:.2}"));
            format!("{}{f1}", verdict_word(side.verdict))
        }
        None => "–".into(),
    }
}

fn lines<'a>(compared: &EvalDiff, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if compared.cases.is_empty() {
        lines.push(Line::from(Span::styled("no case changed", theme.dim)));
    }
    for case in &compared.cases {
        let delta = &case.delta;
        let name = delta.case.as_deref().unwrap_or("(variables)");
        let style = match delta.change {
            Change::Improved => theme.valid,
            Change::Regressed => theme.invalid,
            _ => theme.text,
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{:9} ", change_text(Some(delta.change))), style),
            Span::styled(format!("{} ", escape_controls(name)), theme.title),
            Span::styled(format!("{} → {}", side(delta.before.as_ref()), side(delta.after.as_ref())), theme.text),
        ]));
        if case.reason_before != case.reason_after {
            if let Some(reason) = &case.reason_after {
                lines.push(Line::from(Span::styled(format!("  now: {}", escape_controls(reason)), theme.dim)));
            }
        }
        lines.extend(case.fixed.iter().map(|d| difference_line("  fixed: ", d, theme).style(theme.valid)));
        lines.extend(case.introduced.iter().map(|d| difference_line("  new: ", d, theme)));
        for check in &case.checks {
            let mark = |r: Option<bool>| match r {
                Some(true) => "✓",
                Some(false) => "✗",
                None => "–",
            };
            let message = check.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
            let text = format!(
                "  check {} ({}) {} → {}{message}",
                check.check,
                check.at,
                mark(check.before),
                mark(check.after)
            );
            let style = if check.after == Some(false) { theme.invalid } else { theme.valid };
            lines.push(Line::from(Span::styled(escape_controls(&text).into_owned(), style)));
        }
    }
    for column in &compared.columns {
        let rate = |r: Option<f64>| r.map_or("–".to_string(), |r| format!("{:.0}%", r * 100.0));
        let changed = if column.changed > 0 { format!(", {} changed", column.changed) } else { String::new() };
        let text = format!(
            "{} ({}): pass rate {} → {} ({} improved, {} regressed{changed}, {} same)",
            column.column,
            column.models(),
            rate(column.pass_rate_before),
            rate(column.pass_rate_after),
            column.improved,
            column.regressed,
            column.same
        );
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(escape_controls(&text).into_owned(), theme.text)));
    }
    for edit in &compared.prompts {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(format!("prompt {} edited:", escape_controls(&edit.prompt)), theme.title)));
        for line in edit.diff.lines() {
            let style = match line.chars().next() {
                Some('+') => theme.valid,
                Some('-') => theme.invalid,
                Some('@') => theme.dim,
                _ => theme.text,
            };
            lines.push(Line::from(Span::styled(escape_controls(line).into_owned(), style)));
        }
    }
    lines
}
