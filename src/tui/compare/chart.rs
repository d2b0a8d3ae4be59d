//! The lower half of the compare screen: the shared truncation chart (items recovered against the
//! cut on the common token axis: json and json-repair of the json side, jsonl of the jsonl side, the
//! cut marked, the figures at the cut and where the curves cross) and the agreement table (a row per
//! key: both / only in one side / differ, and the differing fields of the selected row).

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

use crate::compare::{Curve, RowStatus};
use crate::safe_text::escape_controls;
use crate::truncate::strategy::Strategy;
use crate::tui::compare::state::{ComparePhase, LABELS};
use crate::tui::panes::clip;
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// A curve's step line: a point wherever its items change, held to the end of the axis.
pub fn points(curve: &Curve, axis: usize) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut last = 0usize;
    for (i, [cut, items, _]) in curve.steps.iter().copied().enumerate() {
        if i > 0 {
            points.push((cut as f64, last as f64));
        }
        points.push((cut as f64, items as f64));
        last = items;
    }
    points.push((axis as f64, last as f64));
    points
}

fn style_of(strategy: Strategy, theme: &Theme) -> Style {
    match strategy {
        Strategy::Json => theme.series_json,
        Strategy::JsonRepair => theme.series_repair,
        Strategy::Jsonl => theme.series_jsonl,
    }
}

/// The shared chart with the figures at the cut above it.
pub fn chart(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.compare;
    let Some(comparison) = &view.comparison else {
        let block = frame_of("truncation, both sides".into(), theme, Vec::new());
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let text = match &view.phase {
            ComparePhase::Failed(message) => Span::styled(format!("no comparison: {message}"), theme.error),
            _ => Span::styled("when both sides end, each answer is swept at every token cut here", theme.dim),
        };
        frame.render_widget(Paragraph::new(Line::from(text)).wrap(Wrap { trim: true }), inner);
        return;
    };
    let shared = &comparison.chart;
    let cut = view.cut.min(shared.axis);
    let extra = vec![Span::styled(format!("cut {cut}/{} {} tokens ", shared.axis, shared.tokens), theme.cut)];
    let block = frame_of("truncation, both sides".into(), theme, extra);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut rows: Vec<Line> = shared
        .curves
        .iter()
        .map(|curve| {
            let [items, corrupt] = curve.at(cut);
            let first = curve.first_yield.map_or("never".to_string(), |at| format!("from {at}"));
            Line::from(vec![
                Span::styled(format!("{:<17}", curve.label), style_of(curve.strategy, theme)),
                Span::styled(format!("{items:>3} items"), theme.text),
                Span::styled(format!(" {corrupt:>2} corrupt"), if corrupt > 0 { theme.warning } else { theme.dim }),
                Span::styled(format!("  res {:.2}  {first}", curve.resilience), theme.dim),
            ])
        })
        .collect();
    let crossings: Vec<String> =
        shared.crossings.iter().map(|c| format!("at {}: {} overtakes {}", c.at, c.ahead, c.behind)).collect();
    rows.push(Line::from(Span::styled(
        clip(&if crossings.is_empty() { "no crossing".to_string() } else { crossings.join("; ") }, width),
        theme.dim,
    )));
    let header = rows.len() as u16;
    frame.render_widget(Paragraph::new(rows), Rect { height: header.min(inner.height), ..inner });
    if inner.height <= header + 3 {
        return;
    }
    let plot = Rect { y: inner.y + header, height: inner.height - header, ..inner };
    let x_max = shared.axis.max(1) as f64;
    let series: Vec<Vec<(f64, f64)>> = shared.curves.iter().map(|c| points(c, shared.axis)).collect();
    let y_max = series.iter().flatten().map(|(_, y)| *y).fold(1.0_f64, f64::max);
    let marker = [(cut as f64, 0.0), (cut as f64, y_max)];
    let mut datasets: Vec<Dataset> = shared
        .curves
        .iter()
        .zip(&series)
        .map(|(curve, data)| {
            Dataset::default()
                .name(curve.label.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(style_of(curve.strategy, theme))
                .data(data)
        })
        .collect();
    datasets
        .push(Dataset::default().marker(Marker::Braille).graph_type(GraphType::Line).style(theme.cut).data(&marker));
    let label = |v: f64| Span::styled(format!("{v:.0}"), theme.dim);
    let widget = Chart::new(datasets)
        .x_axis(Axis::default().bounds([0.0, x_max]).labels([label(0.0), label(x_max)]).style(theme.dim))
        .y_axis(Axis::default().bounds([0.0, y_max]).labels([label(0.0), label(y_max)]).style(theme.dim))
        .legend_position(None);
    frame.render_widget(widget, plot);
}

/// The agreement table and the selected row's field differences.
pub fn agreement(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.compare;
    let Some(comparison) = &view.comparison else {
        let block = frame_of("agreement".into(), theme, Vec::new());
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let text = "when both sides end, their valid items are matched on a key here";
        frame.render_widget(Paragraph::new(text).style(theme.dim).wrap(Wrap { trim: true }), inner);
        return;
    };
    let agreement = &comparison.agreement;
    let key = agreement.key.clone().unwrap_or_else(|| "(whole item)".into());
    let block = frame_of(format!("agreement on {key:?}"), theme, Vec::new());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut rows = vec![Line::from(Span::styled(
        clip(
            &format!(
                "both {} ({} same, {} differ) · only {} {}, {} {}",
                agreement.both,
                agreement.same,
                agreement.differ,
                LABELS[0],
                agreement.only_a,
                LABELS[1],
                agreement.only_b
            ),
            width,
        ),
        theme.text,
    ))];
    let selected = view.selected_row.min(agreement.rows.len().saturating_sub(1));
    let details = agreement.rows.get(selected).map_or(0, |r| r.fields.len().min(4) + 1);
    let room = (inner.height as usize).saturating_sub(1 + details).max(1);
    let first = selected.saturating_sub(room.saturating_sub(1));
    for (index, row) in agreement.rows.iter().enumerate().skip(first).take(room) {
        let (word, style) = match row.status {
            RowStatus::Same => ("both", theme.valid),
            RowStatus::Differ => ("differ", theme.schema_error),
            RowStatus::OnlyA => ("only json", theme.warning),
            RowStatus::OnlyB => ("only jsonl", theme.warning),
        };
        let key = row.key.as_str().map_or_else(|| row.key.to_string(), str::to_string);
        let key = escape_controls(&key).into_owned();
        let line = Line::from(vec![
            Span::styled(format!("{word:<11}"), style),
            Span::styled(clip(&key, width.saturating_sub(11)), theme.text),
        ]);
        rows.push(if index == selected { line.style(theme.selection) } else { line });
    }
    if let Some(row) = agreement.rows.get(selected) {
        if row.fields.is_empty() {
            let note = if row.status == RowStatus::Same { "the same on both sides" } else { "on one side only" };
            rows.push(Line::from(Span::styled(note, theme.dim)));
        } else {
            rows.push(Line::from(Span::styled("fields that differ (json → jsonl):", theme.dim)));
            for change in row.fields.iter().take(4) {
                let show =
                    |v: &Option<serde_json::Value>| v.as_ref().map_or("(missing)".to_string(), |v| v.to_string());
                let text = format!("{}: {} → {}", change.field, show(&change.a), show(&change.b));
                rows.push(Line::from(Span::styled(clip(&escape_controls(&text), width), theme.schema_error)));
            }
        }
    }
    frame.render_widget(Paragraph::new(rows), inner);
}

/// A compare pane's frame: its title and extra spans.
pub fn frame_of<'a>(title: String, theme: &Theme, extra: Vec<Span<'a>>) -> Block<'a> {
    let mut spans = vec![Span::styled(format!(" {title} "), theme.title)];
    spans.extend(extra);
    Block::default().borders(Borders::ALL).border_style(theme.border).title(Line::from(spans))
}
