//! The eval screen: the matrix of the open prompt's cases on the current model (the baseline's
//! verdict, the verdict, F1, the change against the baseline, the core's one-line reason), its title
//! the pass rate, mean F1, the baseline named with its counts (the same delta as the change column),
//! and "stale" once the prompt was edited since the eval ran; enter opens a case (its answer escaped,
//! the expected items, the differences and failed checks); `a` asks before writing an answer as
//! expected, showing every item it writes.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::eval::diff::Change;
use crate::eval::score::Verdict;
use crate::eval::Approval;
use crate::eval::CellRecord;
use crate::safe_text::escape_controls;
use crate::tui::eval::filter::first_drawn;
use crate::tui::eval::parts::{change_text, frame_of, verdict_word};
use crate::tui::eval::state::{EvalOverlay, EvalPhase, EvalView};
use crate::tui::panes::clip;
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Draws the eval screen into `area` (the status bar is drawn by the caller).
pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.eval;
    match &view.overlay {
        EvalOverlay::Case => case(frame, area, state, theme),
        EvalOverlay::None => matrix(frame, area, state, theme),
        EvalOverlay::ConfirmApprove { row, approval } => {
            matrix(frame, area, state, theme);
            confirm(frame, area, state, *row, approval, theme);
        }
        EvalOverlay::Review => {
            let (bar, rest) = crate::tui::eval::review_view::split(area);
            crate::tui::eval::review_view::bar(frame, bar, view, theme);
            case(frame, rest, state, theme);
        }
        EvalOverlay::Diff(compared) => crate::tui::eval::diff_view::render(frame, area, compared, view.scroll, theme),
        EvalOverlay::Truncation => crate::tui::eval::truncation_view::render(frame, area, view, theme),
        EvalOverlay::ReviewDone => {
            matrix(frame, area, state, theme);
            crate::tui::eval::review_view::summary(frame, area, view, theme);
        }
    }
}

/// The title's figures: pass rate, mean F1 (from the record's totals once it ended), the baseline
/// named with its delta (what the change column shows), and whether the prompt changed since.
fn title<'a>(view: &EvalView, stale: bool, theme: &Theme) -> Vec<Span<'a>> {
    let column = clip(&escape_controls(&view.column), 24);
    let mut spans = vec![Span::styled(format!(" eval · {column} "), theme.title)];
    let (scored, passed) = view.counts();
    let totals = view.record.as_ref().and_then(|r| r.totals.first());
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
    // The id's time (`YYYYMMDD-HHMMSS`) names the baseline well enough on screen.
    let named = |id: &str| escape_controls(id).chars().take(15).collect::<String>();
    match (&view.baseline, &view.baseline_record, &view.phase) {
        (Some(delta), _, _) => {
            let changed = if delta.changed > 0 { format!(", {} changed", delta.changed) } else { String::new() };
            spans.push(Span::styled(
                format!(
                    "· vs baseline {}: {} improved, {} regressed{changed} ",
                    named(&delta.baseline),
                    delta.improved,
                    delta.regressed
                ),
                if delta.regressed > 0 { theme.warning } else { theme.dim },
            ));
        }
        (None, Some(baseline), _) => {
            spans.push(Span::styled(format!("· vs baseline {} ", named(&baseline.id)), theme.dim));
        }
        (None, None, EvalPhase::Done) => spans.push(Span::styled("· no baseline yet ", theme.dim)),
        _ => {}
    }
    let filter = &view.filter;
    if filter.is_on() || filter.typing {
        let name = if filter.typing || !filter.name.is_empty() {
            format!("name ~ \"{}{}\" ", escape_controls(&filter.name), if filter.typing { "▏" } else { "" })
        } else {
            String::new()
        };
        spans.push(Span::styled(
            format!("· shown: {name}{} ({} of {}) ", filter.verdicts.name(), view.shown_rows().len(), view.rows.len()),
            theme.warning,
        ));
    }
    if stale {
        spans.push(Span::styled("· stale: the prompt was edited since, ctrl-r runs it again ", theme.warning));
    }
    match &view.phase {
        EvalPhase::Running => spans.push(Span::styled("· running ", theme.dim)),
        EvalPhase::Failed(_) => spans.push(Span::styled("· failed ", theme.error)),
        _ => {}
    }
    spans
}

/// A cell's verdict and F1 (`started`: its first request went out, when it is not scored yet).
fn verdict_text(scored: Option<&CellRecord>, started: bool) -> (&'static str, Option<f64>) {
    match scored {
        Some(scored) => (verdict_word(scored.score.verdict), scored.score.f1()),
        None if started => ("running", None),
        None => ("waiting", None),
    }
}

fn verdict_style(scored: Option<&CellRecord>, theme: &Theme) -> Style {
    match scored.map(|s| s.score.verdict) {
        Some(Verdict::Pass) => theme.valid,
        Some(Verdict::Fail) => theme.invalid,
        Some(Verdict::Truncated) => theme.warning,
        Some(Verdict::Error) => theme.error,
        None => theme.dim,
    }
}

fn matrix(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.eval;
    let mut spans = title(view, view.stale(state.edits), theme);
    if state.held_out.is_some() {
        // Early in the title (the notes after it may be cut): what the glyph in the case column means.
        spans.insert(1, Span::styled(format!("{HELD_OUT} held out by optimize · "), theme.dim));
    }
    let block = frame_of(spans, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    // The baseline's column (before) when there is a baseline: its verdict and F1 per case.
    let before = view.baseline_record.is_some();
    let case_width = if before { (width / 4).clamp(8, 24) } else { (width / 3).clamp(8, 28) };
    let before_header = if before { format!("{:14} ", "baseline") } else { String::new() };
    let mut lines = vec![Line::from(Span::styled(
        clip(
            &format!("  {:case_width$} {before_header}{:9} {:>4}  {:9} why", "case", "verdict", "F1", "vs base"),
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
    let shown = view.shown_rows();
    if shown.is_empty() && !view.rows.is_empty() {
        lines.push(Line::from(Span::styled("no case is shown: / changes the name filter, v the verdicts", theme.dim)));
    }
    for &row in shown.iter().skip(first_drawn(&shown, view.selected, height)).take(height) {
        let case = &view.rows[row];
        let scored = view.scored(row);
        let (verdict, f1) = verdict_text(scored, view.cells.get(row).is_some_and(|c| c.started));
        let name = case.as_deref().unwrap_or("(variables)");
        // A case an optimization of this session held out carries the glyph (the title says what it means).
        let held = held_out(state, case.as_deref());
        let name = if held {
            format!("{} {HELD_OUT}", clip(&escape_controls(name), case_width.saturating_sub(2)))
        } else {
            clip(&escape_controls(name), case_width)
        };
        let f1 = f1.map_or("   –".to_string(), |f| format!("{f:.2}"));
        let change = change_text(view.row_change(row));
        let mut why = scored.map(|s| escape_controls(&s.score.reason).into_owned()).unwrap_or_default();
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
            Span::styled(format!("{verdict:9} "), verdict_style(scored, theme)),
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

/// The mark of a case held out by an optimization of this session.
const HELD_OUT: &str = "◇";

/// Whether `case` is held out by the last optimization of this session.
fn held_out(state: &State, case: Option<&str>) -> bool {
    case.is_some_and(|case| state.held_out.as_ref().is_some_and(|h| h.holds(case)))
}

/// The baseline's verdict and F1 for `row` (`–` when the baseline has no such case).
fn baseline_span<'a>(view: &EvalView, row: usize, theme: &Theme) -> Span<'a> {
    match view.baseline_cell(row) {
        Some(cell) => {
            let (verdict, f1) = verdict_text(Some(cell), true);
            let f1 = f1.map_or(String::new(), |f| format!("{f:.2}"));
            Span::styled(format!("{:14} ", format!("{verdict} {f1}")), verdict_style(Some(cell), theme))
        }
        None => Span::styled(format!("{:14} ", "–"), theme.dim),
    }
}

/// The selected case opened: answer on the left; expected items, differences and failed checks right.
pub(crate) fn case(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.eval;
    let Some(cell) = view.selected_cell() else { return };
    let name = view.rows.get(view.selected).cloned().flatten().unwrap_or_else(|| "(variables)".into());
    let halves = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(area);
    let scored = view.scored(view.selected);
    let (verdict, f1) = verdict_text(scored, cell.started);
    let mut spans = vec![
        Span::styled(format!(" {} ", escape_controls(&name)), theme.title),
        Span::styled(format!("{verdict} "), verdict_style(scored, theme)),
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
    let (lines, title) = match scored {
        Some(scored) => crate::tui::eval::parts::verdict_lines(&scored.score, theme),
        None => (Vec::new(), " differences · failed checks "),
    };
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(frame_of(vec![Span::styled(title, theme.title)], theme)),
        right[1],
    );
}

/// What approve will write, every item (one per line, wrapped, scrolled by item: the frame says which
/// items are shown of how many), what would be left out, and the keys.
fn confirm(frame: &mut Frame, area: Rect, state: &State, row: usize, approval: &Approval, theme: &Theme) {
    let view = &state.eval;
    let width = area.width.saturating_sub(8).min(100);
    let height = area.height.saturating_sub(4).min(20);
    let rect = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let name = view.rows.get(row).cloned().flatten().unwrap_or_default();
    let count = approval.count();
    // A row of the prompt's dataset is written in its file, the prompt file left alone.
    let saved = &state.saved;
    let dataset_row = saved.dataset.as_ref().and_then(|d| {
        let index = saved.cases.iter().skip(d.first).position(|c| c.name == name)?;
        Some((d.path.display().to_string(), d.lines.get(index).copied()))
    });
    let written = match &dataset_row {
        Some((file, Some(line))) => format!("written into its row of {file}, line {line}"),
        Some((file, None)) => format!("written into its row of {file}"),
        None => "the prompt file is saved".to_string(),
    };
    let mut head = vec![Line::from(Span::styled(
        escape_controls(&format!("case {name:?} expects this answer from now on: {count} ({written})")).into_owned(),
        theme.text,
    ))];
    match approval.refusal() {
        None => head
            .push(Line::from(Span::styled("y, enter or a: approve · ↑/↓ scroll · any other key: cancel", theme.dim))),
        Some(_) => {
            head.push(Line::from(Span::styled(
                format!("refused: {} of the answer not a real answer:", approval.left_out.len()),
                theme.warning,
            )));
            for part in &approval.left_out {
                head.push(Line::from(Span::styled(format!("  ✗ {}", escape_controls(part)), theme.invalid)));
            }
            let rest = match dataset_row {
                Some(_) => "the rest not kept (a dataset row has no left_out)",
                None => "the rest marked in left_out",
            };
            head.push(Line::from(Span::styled(
                format!("a again: write only these {count}, {rest} · any other key: cancel"),
                theme.dim,
            )));
        }
    }
    let items = approval.lines();
    let first = view.scroll.min(items.len().saturating_sub(1));
    let inner_width = usize::from(width.saturating_sub(2)).max(1);
    let head_rows: usize = head.iter().map(|l| l.width().div_ceil(inner_width).max(1)).sum();
    let mut room = usize::from(height.saturating_sub(2)).saturating_sub(head_rows + 1);
    let mut lines = head;
    lines.push(Line::from(""));
    let mut last = first;
    for (index, item) in items.iter().enumerate().skip(first) {
        let text = format!("{}. {}", index + 1, escape_controls(item));
        let rows = text.chars().count().div_ceil(inner_width).max(1);
        if rows > room && index > first {
            break;
        }
        room = room.saturating_sub(rows);
        lines.push(Line::from(Span::styled(text, theme.text)));
        last = index + 1;
    }
    let mut title = vec![Span::styled(format!(" approve as expected: {count} "), theme.title)];
    if items.len() > 1 {
        let more = if last < items.len() { " · ↓ more" } else { "" };
        title.push(Span::styled(format!("· items {}–{last} of {}{more} ", first + 1, items.len()), theme.dim));
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(frame_of(title, theme)), rect);
}
