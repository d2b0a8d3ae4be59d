//! What survives a cut: the cut position (keys or a mouse drag), the answer up to it, the items each
//! strategy (json, json-repair, jsonl) recovers there with its resilience, and a chart of items
//! recovered against the cut for the three strategies with the cut marked. While the answer streams
//! the chart grows with it (marked `live`) from the run's own sweep: items only, corrupt and
//! resilience once the answer has ended.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

use crate::safe_text::escape_controls;
use crate::truncate::sweep::Sweep;
use crate::tui::panes::{block, clip};
pub use crate::tui::series::ORDER;
use crate::tui::state::{State, TruncationView};
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;

/// Rows above the chart: the cut, three strategies, two lines of the answer.
const HEADER: u16 = 6;
/// Columns of the chart's y-axis labels.
const Y_LABELS: u16 = 5;

/// Where the chart's plotting area is inside the pane (for mouse drags): x from, width.
fn plot_columns(area: Rect) -> Option<(u16, u16, Rect)> {
    let inner = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
    };
    if inner.height <= HEADER + 3 || inner.width <= Y_LABELS + 2 {
        return None;
    }
    let chart = Rect { y: inner.y + HEADER, height: inner.height - HEADER, ..inner };
    Some((chart.x + Y_LABELS + 1, chart.width - Y_LABELS - 1, chart))
}

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.workbench.truncation;
    let total = state.workbench.run.chunk_ends.len();
    let extra = match &view.sweep {
        _ if view.live => vec![
            Span::styled(format!("cut {}/{} chunks ", view.cut, total), theme.cut),
            Span::styled("· live ", theme.warning),
        ],
        Some(_) => vec![Span::styled(format!("cut {}/{} chunks ", view.cut, total), theme.cut)],
        None => vec![],
    };
    let frame_block = block(Pane::Truncation, state, theme, extra);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    state.drawn.note(|drawn| drawn.plot = plot_columns(area));
    let sweep = view.sweep.as_ref().filter(|_| !view.live);
    if sweep.is_none() && !view.live {
        let text = if view.pending {
            "sweeping every cut…".to_string()
        } else if let Some(e) = &view.error {
            format!("no sweep: {e}")
        } else {
            "while a run streams, every cut of its answer so far is swept here: ←/→ move the cut".to_string()
        };
        frame.render_widget(Paragraph::new(text).style(theme.dim).wrap(ratatui::widgets::Wrap { trim: true }), inner);
        return;
    }
    let shown = Shown {
        sweep,
        live: view,
        output: &state.workbench.run.output,
        chunk_ends: &state.workbench.run.chunk_ends,
        cut: view.cut,
        series: &view.series,
    };
    body(frame, area, inner, &shown, theme);
}

/// What the pane's body shows: a finished sweep (or the live figures), the answer and its chunk ends,
/// the cut, the chart's lines. The eval screen shows a case's answer with it too.
pub struct Shown<'a> {
    /// The whole answer's sweep; `None`: the live figures of `live`.
    pub sweep: Option<&'a Sweep>,
    pub live: &'a TruncationView,
    pub output: &'a str,
    pub chunk_ends: &'a [usize],
    pub cut: usize,
    pub series: &'a [Vec<(f64, f64)>; 3],
}

/// The cut line, each strategy's figures, the answer's last lines up to the cut, and the chart, drawn
/// in `inner` (the inside of `area`'s frame).
pub fn body(frame: &mut Frame, area: Rect, inner: Rect, shown: &Shown, theme: &Theme) {
    let (sweep, view, total) = (shown.sweep, shown.live, shown.chunk_ends.len());
    let width = inner.width as usize;
    let cuts = sweep.map_or(total + 1, Sweep::cuts);
    let cut = shown.cut.min(cuts.saturating_sub(1));
    let mut rows = vec![Line::from(vec![
        Span::styled(format!("cut {cut}/{}", cuts.saturating_sub(1)), theme.cut),
        match sweep {
            Some(sweep) => {
                Span::styled(format!("  of {} items (reference: {})", sweep.full_items, sweep.reference), theme.dim)
            }
            None => Span::styled("  items so far (corrupt when the answer ends)", theme.dim),
        },
    ])];
    let styles = [theme.series_json, theme.series_repair, theme.series_jsonl];
    for (at, (strategy, style)) in ORDER.iter().zip(styles).enumerate() {
        let mut spans = vec![Span::styled(format!("{:<11}", strategy.name()), style)];
        match sweep {
            Some(sweep) => {
                let figures = sweep.figures(*strategy).get(cut).copied().unwrap_or_default();
                spans.push(Span::styled(format!("{:>3} items", figures.items), theme.text));
                spans.push(Span::styled(
                    format!(" {:>2} corrupt", figures.corrupt),
                    if figures.corrupt > 0 { theme.warning } else { theme.dim },
                ));
                spans.push(Span::styled(format!("  res {:.2}", sweep.resilience(*strategy)), theme.dim));
            }
            None => {
                spans.push(Span::styled(format!("{:>3} items", view.live_items(at, cut)), theme.text));
                spans.push(Span::styled("  … corrupt", theme.dim));
            }
        }
        rows.push(Line::from(spans));
    }
    let offset = if cut == 0 { 0 } else { shown.chunk_ends.get(cut - 1).copied().unwrap_or(0) };
    let prefix = crate::truncate::strategy::prefix(shown.output, offset);
    let tail_lines: Vec<&str> = prefix.rsplit('\n').take(2).collect();
    for (i, line) in tail_lines.iter().rev().enumerate() {
        let mut spans =
            vec![Span::styled(clip(&escape_controls(&tail(line, width)), width.saturating_sub(1)), theme.dim)];
        if i + 1 == tail_lines.len() {
            spans.push(Span::styled("▌", theme.cut));
        }
        rows.push(Line::from(spans));
    }
    let header = Rect { height: HEADER.min(inner.height), ..inner };
    frame.render_widget(Paragraph::new(rows), header);
    if let Some((_, _, chart_area)) = plot_columns(area) {
        let x_max = sweep.map_or(total, |sweep| sweep.last_cut().unwrap_or(1));
        render_chart(frame, chart_area, shown.series, x_max, cut, theme);
    }
}

/// The last `width` characters of `line` (the part next to the cut).
fn tail(line: &str, width: usize) -> String {
    let count = line.chars().count();
    line.chars().skip(count.saturating_sub(width.saturating_sub(2))).collect()
}

fn render_chart(frame: &mut Frame, area: Rect, series: &[Vec<(f64, f64)>; 3], x_max: usize, cut: usize, theme: &Theme) {
    let x_max = x_max.max(1) as f64;
    let y_max = series.iter().flatten().map(|(_, y)| *y).fold(1.0_f64, f64::max);
    let marker = [(cut as f64, 0.0), (cut as f64, y_max)];
    let styles = [theme.series_json, theme.series_repair, theme.series_jsonl];
    let mut datasets: Vec<Dataset> = ORDER
        .iter()
        .zip(series.iter())
        .zip(styles)
        .map(|((strategy, points), style)| {
            Dataset::default()
                .name(strategy.name())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(style)
                .data(points)
        })
        .collect();
    datasets.push(
        Dataset::default()
            .name("cut")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.cut)
            .data(&marker),
    );
    let label = |v: f64| Span::styled(format!("{v:.0}"), theme.dim);
    let chart = Chart::new(datasets)
        .x_axis(Axis::default().bounds([0.0, x_max]).labels([label(0.0), label(x_max)]).style(theme.dim))
        .y_axis(Axis::default().bounds([0.0, y_max]).labels([label(0.0), label(y_max)]).style(theme.dim))
        .style(Style::default())
        .legend_position(Some(ratatui::widgets::LegendPosition::TopLeft))
        .hidden_legend_constraints((
            ratatui::layout::Constraint::Ratio(1, 2),
            ratatui::layout::Constraint::Ratio(1, 2),
        ));
    frame.render_widget(chart, area);
}
