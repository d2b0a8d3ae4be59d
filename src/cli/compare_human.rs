//! The human tables of `tunebench compare`: both sides' figures, the agreement, the truncation
//! curves (with a one-line chart each) and, for a batch, a row per case and the totals. Model text
//! is escaped before it reaches the terminal.

use serde_json::Value;

use crate::compare::cases::Totals;
use crate::compare::{Chart, Comparison, RowStatus};
use crate::safe_text::escape_controls;

/// Columns of a curve's one-line chart.
const CHART_WIDTH: usize = 48;
/// Rows of the agreement table shown before "… and N more".
const MAX_ROWS: usize = 20;

/// One case: figures, agreement, truncation.
pub fn comparison(comparison: &Comparison) -> String {
    let [a, b] = &comparison.sides;
    let mut out = String::new();
    let label = |side: &crate::compare::Side| format!("{} ({})", side.label, side.prompt);
    out.push_str(&format!("{:<14}{:<34}{}\n", "", label(a), label(b)));
    let row = |out: &mut String, name: &str, x: String, y: String| out.push_str(&format!("{name:<14}{x:<34}{y}\n"));
    let (fa, fb) = (&a.figures, &b.figures);
    row(&mut out, "items", fa.items.to_string(), fb.items.to_string());
    row(&mut out, "valid items", fa.valid_items.to_string(), fb.valid_items.to_string());
    let tokens = |f: &crate::compare::SideFigures| {
        f.tokens_out.map_or("-".into(), |t| format!("{t}{}", if f.tokens_estimated { " (estimated)" } else { "" }))
    };
    row(&mut out, "tokens out", tokens(fa), tokens(fb));
    let ms = |t: Option<u64>| t.map_or("-".to_string(), |t| format!("{t} ms"));
    row(&mut out, "ttft", ms(fa.ttft_ms), ms(fb.ttft_ms));
    row(&mut out, "total time", ms(Some(fa.total_ms)), ms(Some(fb.total_ms)));
    let finish = |f: &crate::compare::SideFigures| f.finish_reason.clone().unwrap_or_else(|| "-".into());
    row(&mut out, "finish", finish(fa), finish(fb));
    row(
        &mut out,
        "turns",
        format!("{} of {}", fa.turns_used, fa.max_turns),
        format!("{} of {}", fb.turns_used, fb.max_turns),
    );
    row(&mut out, "valid answer", yes(fa.ok), yes(fb.ok));
    out.push('\n');
    out.push_str(&agreement(comparison));
    out.push('\n');
    out.push_str(&chart(&comparison.chart));
    out
}

fn yes(ok: bool) -> String {
    if ok { "yes" } else { "no" }.to_string()
}

fn agreement(comparison: &Comparison) -> String {
    let agreement = &comparison.agreement;
    let [a, b] = [&comparison.sides[0].label, &comparison.sides[1].label];
    let key = agreement.key.as_ref().map_or("whole items".to_string(), |k| format!("{k:?}"));
    let mut out = format!(
        "agreement on {key}: {} in both ({} same, {} differ), {} only in {a}, {} only in {b}\n",
        agreement.both, agreement.same, agreement.differ, agreement.only_a, agreement.only_b
    );
    let shown: Vec<_> = agreement.rows.iter().filter(|r| r.status != RowStatus::Same).collect();
    for row in shown.iter().take(MAX_ROWS) {
        let key = short(&row.key, 24);
        let what = match row.status {
            RowStatus::Same => continue,
            RowStatus::OnlyA => format!("only in {a}"),
            RowStatus::OnlyB => format!("only in {b}"),
            RowStatus::Differ => {
                let fields: Vec<String> = row
                    .fields
                    .iter()
                    .map(|f| {
                        let side = |v: &Option<Value>| v.as_ref().map_or("(none)".to_string(), |v| short(v, 36));
                        format!("{}: {} | {}", f.field, side(&f.a), side(&f.b))
                    })
                    .collect();
                format!("differ  {}", fields.join("; "))
            }
        };
        out.push_str(&format!("  {key:<26}{what}\n"));
    }
    if shown.len() > MAX_ROWS {
        out.push_str(&format!("  … and {} more (see --json)\n", shown.len() - MAX_ROWS));
    }
    out
}

/// A value on one line, escaped, at most `max` characters.
fn short(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let text = escape_controls(&text).into_owned();
    if text.chars().count() <= max {
        return text;
    }
    format!("{}…", text.chars().take(max.saturating_sub(1)).collect::<String>())
}

fn chart(chart: &Chart) -> String {
    let mut out =
        format!("truncation ({} tokens, cuts 0..{}): items recovered at each cut\n", chart.tokens, chart.axis);
    out.push_str(&format!(
        "{:<20}{:>14}{:>12}{:>10}{:>16}  chart 0..{}\n",
        "curve", "first item at", "resilience", "at end", "corrupt cuts", chart.axis
    ));
    let most = chart.curves.iter().flat_map(|c| c.steps.iter().map(|s| s[1])).max().unwrap_or(0);
    for curve in &chart.curves {
        let first = curve.first_yield.map_or("never".to_string(), |t| format!("token {t}"));
        let end = curve.at(chart.axis)[0];
        let corrupt = format!("{} (max {})", curve.corrupt_cuts, curve.max_corrupt);
        out.push_str(&format!(
            "{:<20}{:>14}{:>12.3}{:>10}{:>16}  {}\n",
            escape_controls(&curve.label),
            first,
            curve.resilience,
            end,
            corrupt,
            sparkline(curve, chart.axis, most)
        ));
    }
    if chart.crossings.is_empty() {
        out.push_str("the curves do not cross\n");
    }
    for crossing in &chart.crossings {
        out.push_str(&format!(
            "at token {}: {} overtakes {}\n",
            crossing.at,
            escape_controls(&crossing.ahead),
            escape_controls(&crossing.behind)
        ));
    }
    out
}

/// Items recovered across the axis, one block character per column (higher: more items; `·` none).
fn sparkline(curve: &crate::compare::Curve, axis: usize, most: usize) -> String {
    const BLOCKS: [char; 9] = ['·', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let width = CHART_WIDTH.min(axis + 1).max(1);
    (0..width)
        .map(|column| {
            let cut = if width == 1 { axis } else { column * axis / (width - 1) };
            let items = curve.at(cut)[0];
            if most == 0 {
                return BLOCKS[0];
            }
            BLOCKS[(items * 8).div_ceil(most).min(8)]
        })
        .collect()
}

/// A batch: one row per case, then the totals.
pub fn batch(comparisons: &[Comparison], totals: &Totals) -> String {
    let Some(first) = comparisons.first() else { return "no cases\n".to_string() };
    let [a, b] = [&first.sides[0].label, &first.sides[1].label];
    let curves: Vec<&str> = first.chart.curves.iter().map(|c| c.label.as_str()).collect();
    let mut out = format!(
        "{:<24}{:>12}{:>12}{:>10}{:>10}{:>7}{:>7}{:>7}{:>7}",
        "case",
        format!("{a} items"),
        format!("{b} items"),
        format!("{a} end"),
        format!("{b} end"),
        "both",
        "differ",
        "only A",
        "only B"
    );
    for curve in &curves {
        out.push_str(&format!("{:>18}", escape_controls(curve)));
    }
    out.push('\n');
    for comparison in comparisons {
        let [x, y] = [&comparison.sides[0].figures, &comparison.sides[1].figures];
        let agreement = &comparison.agreement;
        let end = |f: &crate::compare::SideFigures| f.finish_reason.clone().unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<24}{:>12}{:>12}{:>10}{:>10}{:>7}{:>7}{:>7}{:>7}",
            escape_controls(comparison.case.as_deref().unwrap_or("(default)")),
            format!("{}/{}", x.valid_items, x.items),
            format!("{}/{}", y.valid_items, y.items),
            end(x),
            end(y),
            agreement.both,
            agreement.differ,
            agreement.only_a,
            agreement.only_b
        ));
        for curve in &comparison.chart.curves {
            out.push_str(&format!("{:>18.3}", curve.resilience));
        }
        out.push('\n');
    }
    let [ta, tb] = [&totals.sides[0], &totals.sides[1]];
    out.push_str(&format!(
        "{:<24}{:>12}{:>12}{:>10}{:>10}{:>7}{:>7}{:>7}{:>7}",
        format!("total ({} cases)", totals.cases),
        format!("{}/{}", ta.valid_items, ta.items),
        format!("{}/{}", tb.valid_items, tb.items),
        format!("{} cut", ta.cut_off_cases),
        format!("{} cut", tb.cut_off_cases),
        totals.both,
        totals.differ,
        totals.only_a,
        totals.only_b
    ));
    for mean in &totals.resilience {
        out.push_str(&format!("{:>18.3}", mean.resilience));
    }
    out.push('\n');
    out.push_str(&format!(
        "valid answers: {a} {} of {}, {b} {} of {}; tokens out: {a} {}, {b} {}; time: {a} {} ms, {b} {} ms\n",
        ta.ok_cases, totals.cases, tb.ok_cases, totals.cases, ta.tokens_out, tb.tokens_out, ta.total_ms, tb.total_ms
    ));
    out.push_str("(items: valid/all; resilience columns: the mean per curve in the total row)\n");
    out
}
