//! An eval record as one self-contained HTML page for people who will not open a terminal: the
//! columns with their pass rates (and the change against the baseline), the matrix of cases ×
//! columns (each table scrolling in its own box when wider than the page), then every case with its
//! input variables and every cell with its verdict, reason, failed checks, differences, the answer, and for
//! a truncated answer its truncation chart (an inline SVG of the core's sweep). No script, no
//! network: inline CSS only, and a Content-Security-Policy that allows nothing else. Every string
//! from the record goes through [`html_escape`].

use std::collections::HashMap;
use std::fmt::Write as _;

use super::diff::{CellDelta, Change, ColumnDelta};
use super::record::{CellRecord, EvalRecord};
use super::report::{difference_line, verdict_name};
use super::score::Verdict;
use super::totals::CellGroup;
use crate::compare::chart::strategies_of;
use crate::output::{Profile, ResponseType};
use crate::safe_text::escape_controls;
use crate::truncate::points::Points;
use crate::truncate::sweep::sweep_points;

/// `text` safe as HTML text or a quoted attribute value: control characters (C0 but newline and
/// tab, C1, bidirectional overrides) written as visible escapes (ESC as `\u{1b}`), then `&`, `<`, `>`,
/// `"` and `'` as entities.
pub fn html_escape(text: &str) -> String {
    let visible = escape_controls(text);
    let mut out = String::with_capacity(visible.len());
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1em;margin:.2em 0}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f2f2f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.v-pass{background:#e3f6e5}.v-fail{background:#fde4e1}.v-truncated{background:#fff0d6}.v-error{background:#e9e9ec}
.up{color:#177a2b}.down{color:#b3261e}.beside{color:#8a5a00}.meta{color:#555}
section.case{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;margin:.8em 0}
div.cell{padding:.4em .6em;margin:.4em 0;border-radius:4px}
pre{white-space:pre-wrap;word-break:break-all;background:#fafafa;border:1px solid #e3e3e3;padding:.5em;margin:.3em 0;max-height:30em;overflow:auto}
ul{margin:.2em 0 .2em 1.2em;padding:0}svg text{font:11px system-ui,sans-serif}
div.scroll{max-width:100%;overflow-x:auto}table.vars td pre{margin:0;max-height:12em}";

/// The whole page.
pub fn html(record: &EvalRecord) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = html_to(record, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The HTML report of `record`, written to `out` as it is made: a row of the matrix, a case at a
/// time (a 20,000-case report is never held whole).
pub fn html_to(record: &EvalRecord, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let id = html_escape(&record.id);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>tunebench eval {id}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>tunebench eval {id}</h1>\n"
    )?;
    out.write_all(summary(record).as_bytes())?;
    out.write_all(columns(record).as_bytes())?;
    matrix(record, out)?;
    cases(record, out)?;
    out.write_all(b"</body>\n</html>\n")
}

/// When, how many cells, how many passed, and the baseline's counts.
fn summary(record: &EvalRecord) -> String {
    let (date, time) = super::store::utc(record.started_at_ms);
    let repeat = if record.repeat > 1 { format!(" × {} runs", record.repeat) } else { String::new() };
    let passed = record.cells.iter().filter(|c| c.score.verdict == Verdict::Pass).count();
    let mut out = format!(
        "<p class=\"meta\">{date} {time} UTC · {} cells ({} cases × {} columns{repeat}) · {:.1} s{}{}</p>\n",
        record.cells.len(),
        record.rows.len(),
        record.columns.len(),
        record.duration_ms as f64 / 1000.0,
        if record.cancelled { " · cancelled: cells not run are errors" } else { "" },
        record.batch.as_ref().map(|tag| format!(" · provider batch {}", html_escape(tag))).unwrap_or_default(),
    );
    let _ = writeln!(
        out,
        "<p id=\"summary\"><strong>{passed} of {} cells passed ({})</strong></p>",
        record.cells.len(),
        percent(if record.cells.is_empty() { 0.0 } else { passed as f64 / record.cells.len() as f64 })
    );
    if let Some(delta) = &record.delta {
        let same = delta.cells.iter().filter(|c| c.change == Change::Same).count();
        let _ = writeln!(
            out,
            "<p id=\"delta\">against eval {}: <span class=\"up\">{} improved</span>, <span class=\"down\">{} regressed</span>, \
             <span class=\"beside\">{} changed</span> (fail ↔ truncated), {same} same</p>",
            html_escape(&delta.baseline),
            delta.improved,
            delta.regressed,
            delta.changed
        );
    }
    out
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn f1(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.2}"))
}

/// `+12 pts` / `−0.10`: after − before, marked up or down.
fn change_of(before: Option<f64>, after: Option<f64>, scale: f64, unit: &str) -> String {
    match (before, after) {
        (Some(before), Some(after)) => {
            let change = (after - before) * scale;
            let class = if change > 1e-9 {
                "up"
            } else if change < -1e-9 {
                "down"
            } else {
                "same"
            };
            let digits = if unit.is_empty() { 2 } else { 0 };
            format!("<span class=\"{class}\">{change:+.digits$}{unit}</span>")
        }
        (None, Some(_)) => "new".to_string(),
        _ => "-".to_string(),
    }
}

/// A table row per column: its model, its totals, and its change against the baseline.
fn columns(record: &EvalRecord) -> String {
    let deltas: HashMap<&str, &ColumnDelta> =
        record.delta.iter().flat_map(|d| d.columns.iter()).map(|c| (c.column.as_str(), c)).collect();
    let mut out = String::from(
        "<h2>Columns</h2>\n<div class=\"scroll\"><table id=\"columns\">\n<tr><th>#</th><th>column</th><th>model</th><th>passed</th>\
         <th>pass rate</th><th>mean F1</th>",
    );
    if record.delta.is_some() {
        out.push_str("<th>pass rate before</th><th>Δ pass rate</th><th>Δ mean F1</th>");
    }
    out.push_str(
        "<th>items</th><th>tokens in / out</th><th>time</th><th>truncated</th><th>no answer</th><th>cached</th>\
         <th>right</th><th>valid but wrong</th><th>invalid</th></tr>\n",
    );
    for totals in &record.totals {
        let column = record.columns.get(totals.column);
        let label = record.column_label(totals.column);
        let _ = write!(
            out,
            "<tr data-column=\"{}\"><td>[{}]</td><td>{}</td><td>{}</td><td class=\"num\">{}/{}</td>\
             <td class=\"num pass-rate\">{}</td><td class=\"num\">{}</td>",
            totals.column + 1,
            totals.column + 1,
            html_escape(label),
            html_escape(&column.map(|c| c.model_and_mode()).unwrap_or_default()),
            totals.passed,
            totals.cells,
            percent(totals.pass_rate),
            f1(totals.mean_f1)
        );
        if record.delta.is_some() {
            let delta = deltas.get(label);
            let before = delta.and_then(|d| d.pass_rate_before);
            let _ = write!(
                out,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                before.map_or("-".to_string(), percent),
                change_of(before, delta.and_then(|d| d.pass_rate_after), 100.0, " pts"),
                change_of(delta.and_then(|d| d.mean_f1_before), delta.and_then(|d| d.mean_f1_after), 1.0, "")
            );
        }
        let _ = writeln!(
            out,
            "<td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{:.1} s</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num right\">{}</td><td class=\"num valid-wrong\">{}</td><td class=\"num invalid\">{}</td></tr>",
            totals.valid_items,
            totals.tokens_in,
            totals.tokens_out,
            totals.duration_ms as f64 / 1000.0,
            totals.truncations,
            totals.errors,
            totals.cached,
            totals.passed,
            totals.valid_wrong,
            totals.invalid
        );
    }
    out.push_str("</table></div>\n");
    out
}

/// `▲ improved` and the others, as a matrix cell marks its change against the baseline.
fn mark(change: Change) -> &'static str {
    match change {
        Change::Improved => " <span class=\"up\" title=\"improved\">▲</span>",
        Change::Regressed => " <span class=\"down\" title=\"regressed\">▼</span>",
        Change::Changed => " <span class=\"beside\" title=\"changed (fail ↔ truncated)\">↔</span>",
        Change::New => " <span title=\"new: not in the baseline\">+</span>",
        Change::Same | Change::Gone => "",
    }
}

/// What a matrix cell says: the verdict (k/N with repeats) and F1.
fn group_text(group: &CellGroup) -> String {
    let f1 = group.f1.map(|f| format!(" {f:.2}")).unwrap_or_default();
    if group.runs > 1 {
        let flaky = if group.flaky { " flaky" } else { "" };
        return format!("{}{f1}{flaky}", group.passes_text());
    }
    format!("{}{f1}", verdict_name(group.verdict))
}

/// The cases × columns table, a row at a time; each cell links to its case below.
fn matrix(record: &EvalRecord, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    let groups: HashMap<(usize, usize), &CellGroup> = record.groups.iter().map(|g| ((g.row, g.column), g)).collect();
    let changes: HashMap<(&str, Option<&str>), &CellDelta> =
        record.delta.iter().flat_map(|d| d.cells.iter()).map(|c| ((c.column.as_str(), c.case.as_deref()), c)).collect();
    let mut out = String::from("<h2>Matrix</h2>\n<div class=\"scroll\"><table id=\"matrix\">\n<tr><th>case</th>");
    for (index, column) in record.columns.iter().enumerate() {
        let _ = write!(out, "<th title=\"{}\">[{}]</th>", html_escape(&column.label), index + 1);
    }
    out.push_str("</tr>\n");
    for row in 0..record.rows.len() {
        to.write_all(out.as_bytes())?;
        out.clear();
        let _ = write!(out, "<tr><th class=\"case-name\">{}</th>", html_escape(record.row_name(row)));
        for column in 0..record.columns.len() {
            let Some(group) = groups.get(&(row, column)) else {
                out.push_str("<td>·</td>");
                continue;
            };
            let case = record.rows.get(row).and_then(Option::as_deref);
            let change = changes.get(&(record.column_label(column), case)).map_or("", |c| mark(c.change));
            let verdict = verdict_name(group.verdict);
            let _ = write!(
                out,
                "<td class=\"v-{verdict}\" data-verdict=\"{verdict}\"><a href=\"#cell-{row}-{column}\">{}</a>{change}</td>",
                group_text(group)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    to.write_all(out.as_bytes())
}

/// Every row × column, one at a time: each run's verdict, reason, failed checks, differences, answer
/// and chart.
fn cases(record: &EvalRecord, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut by_cell: HashMap<(usize, usize), Vec<&CellRecord>> = HashMap::new();
    for cell in &record.cells {
        by_cell.entry((cell.row, cell.column)).or_default().push(cell);
    }
    let mut out = String::from("<h2>Cases</h2>\n");
    for group in &record.groups {
        to.write_all(out.as_bytes())?;
        out.clear();
        let (row, column) = (group.row, group.column);
        let _ = writeln!(
            out,
            "<section class=\"case\" id=\"cell-{row}-{column}\">\n<h3>{} × [{}] {}</h3>",
            html_escape(record.row_name(row)),
            column + 1,
            html_escape(record.column_label(column))
        );
        let response_type = record.columns.get(column).map_or(ResponseType::Text, |c| c.response_type);
        let cells = by_cell.get(&(row, column)).map_or(&[][..], Vec::as_slice);
        if let Some(cell) = cells.iter().find(|c| !c.run.variables.is_empty()) {
            out.push_str(&variables_html(&cell.run.variables));
        }
        for cell in cells {
            out.push_str(&cell_html(cell, record.repeat > 1, response_type));
        }
        out.push_str("</section>\n");
    }
    to.write_all(out.as_bytes())
}

/// The case's input variables, a row each: its name and its value (text as written, else JSON).
fn variables_html(variables: &crate::prompt::template::Variables) -> String {
    let mut out = String::from("<p>input variables:</p><table class=\"vars\">");
    for (name, value) in variables {
        let value = match value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let _ = write!(out, "<tr><th>{}</th><td><pre>{}</pre></td></tr>", html_escape(name), html_escape(&value));
    }
    out.push_str("</table>\n");
    out
}

fn cell_html(cell: &CellRecord, repeats: bool, response_type: ResponseType) -> String {
    let verdict = verdict_name(cell.score.verdict);
    let run = if repeats { format!("run {}: ", cell.repeat) } else { String::new() };
    let scores = cell
        .score
        .items
        .as_ref()
        .map(|s| match s.one_value {
            true => format!(" · field accuracy {:.2}", s.field_accuracy),
            false => format!(
                " · F1 {:.2} (precision {:.2}, recall {:.2}), field accuracy {:.2}",
                s.f1, s.precision, s.recall, s.field_accuracy
            ),
        })
        .unwrap_or_default();
    let mut out = format!(
        "<div class=\"cell v-{verdict}\" data-verdict=\"{verdict}\">\n<p>{run}<strong class=\"verdict\">{verdict}</strong>{scores} — {}</p>\n",
        html_escape(&cell.score.reason)
    );
    let failed: Vec<String> = cell
        .score
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            let message = c.message.as_deref().unwrap_or("failed");
            format!("check {} ({}): {message}", c.check, c.at)
        })
        .collect();
    list(&mut out, "failed checks", "checks", &failed);
    let differences: Vec<String> = cell.score.differences.iter().map(difference_line).collect();
    list(&mut out, "differences", "differences", &differences);
    let recovered: Vec<String> = cell
        .score
        .recovered
        .iter()
        .map(|r| {
            let f1 = r.scores.as_ref().map(|s| format!(" (F1 {:.2})", s.f1)).unwrap_or_default();
            format!("a cut keeps: {} {} items{f1}", r.strategy, r.items)
        })
        .collect();
    list(&mut out, "what a cut keeps", "recovered", &recovered);
    if let Some(error) = &cell.run.error {
        let _ = writeln!(out, "<p class=\"error\">error: {}</p>", html_escape(error));
    }
    if !cell.run.answer.is_empty() {
        let _ = writeln!(
            out,
            "<details{}><summary>answer ({} characters{})</summary>\n<pre class=\"answer\">{}</pre></details>",
            if cell.score.verdict == Verdict::Pass { "" } else { " open" },
            cell.run.answer.chars().count(),
            if cell.run.cached { ", from the response cache" } else { "" },
            html_escape(&cell.run.answer)
        );
    }
    if cell.run.truncated {
        out.push_str(&truncation_chart(&cell.run.answer, response_type));
    }
    out.push_str("</div>\n");
    out
}

fn list(out: &mut String, title: &str, class: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = write!(out, "<p>{title}:</p><ul class=\"{class}\">");
    for line in lines {
        let _ = write!(out, "<li>{}</li>", html_escape(line));
    }
    out.push_str("</ul>\n");
}

const WIDTH: f64 = 480.0;
const HEIGHT: f64 = 140.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 22.0;

/// The items each strategy recovers at every cut of `answer` (in characters), as step curves: the
/// core's one-pass sweep, read with the lenient profile and without the schema's item check (the
/// record keeps neither), so an item counts once it parses.
fn truncation_chart(answer: &str, response_type: ResponseType) -> String {
    let strategies = strategies_of(response_type);
    if answer.is_empty() || strategies.is_empty() {
        return String::new();
    }
    let sweep = sweep_points(answer, Points::Chars, Profile::Lenient, None);
    let total = answer.chars().count().max(1);
    let curves: Vec<(&str, Vec<[usize; 3]>)> = strategies.iter().map(|s| (s.name(), sweep.steps(*s))).collect();
    let top = curves.iter().flat_map(|(_, steps)| steps.iter().map(|s| s[1])).max().unwrap_or(0).max(1);
    let x = |cut: usize| LEFT + (WIDTH - LEFT - 8.0) * cut as f64 / total as f64;
    let y = |items: usize| (HEIGHT - BOTTOM) - (HEIGHT - BOTTOM - 8.0) * items as f64 / top as f64;
    let mut out = format!(
        "<figure class=\"truncation\"><figcaption>truncation: items recovered at each cut (0..{total} characters)</figcaption>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\">\n\
         <line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\"/><line x1=\"{LEFT}\" y1=\"8\" x2=\"{LEFT}\" y2=\"{:.1}\" stroke=\"#888\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{top}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{total}</text>\n",
        HEIGHT - BOTTOM,
        WIDTH - 8.0,
        HEIGHT - BOTTOM,
        HEIGHT - BOTTOM,
        LEFT - 4.0,
        y(top) + 4.0,
        LEFT - 4.0,
        HEIGHT - BOTTOM,
        WIDTH - 8.0,
        HEIGHT - 6.0,
    );
    const COLOURS: [&str; 3] = ["#1f6feb", "#d1242f", "#1a7f37"];
    for (index, (name, steps)) in curves.iter().enumerate() {
        let colour = COLOURS.get(index).copied().unwrap_or("#555");
        let mut path = format!("M{:.1} {:.1}", x(0), y(0));
        for step in steps {
            let _ = write!(path, " H{:.1} V{:.1}", x(step[0]), y(step[1]));
        }
        let _ = write!(path, " H{:.1}", x(total));
        let end = steps.last().map_or(0, |s| s[1]);
        let _ = writeln!(
            out,
            "<path d=\"{path}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"><title>{name}: {end} items at the end</title></path>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{name}: {end} at the end</text>",
            LEFT + 6.0 + 150.0 * index as f64,
            HEIGHT - 6.0
        );
    }
    out.push_str("</svg></figure>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_markup_and_controls_as_text() {
        assert_eq!(html_escape("<script>x='1'&\"</script>"), "&lt;script&gt;x=&#39;1&#39;&amp;&quot;&lt;/script&gt;");
        assert_eq!(html_escape("\u{1b}[31mred\u{7}"), "\\u{1b}[31mred\\u{7}");
        assert_eq!(html_escape("line\nnext\ttab"), "line\nnext\ttab");
    }

    #[test]
    fn a_jsonl_answer_cut_off_draws_its_curve() {
        let answer = "{\"a\": 1}\n{\"a\": 2}\n{\"a\": ";
        let chart = truncation_chart(answer, ResponseType::Jsonl);
        assert!(chart.contains("<svg") && chart.contains("jsonl: 2 at the end"), "{chart}");
        assert!(truncation_chart(answer, ResponseType::Text).is_empty());
    }
}
