//! `tunebench eval`'s human output: the matrix (a row per case, a column per prompt version × model,
//! a cell's verdict and F1, k/N with repeats, ▲/▼/↔ against a baseline), the totals, the failures with
//! their differences, a baseline's summary, `eval list` lines and `eval diff`. Text only: the caller
//! writes it through the escaping writers.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::eval::diff::{CellDelta, Change, Delta, EvalDiff};
use crate::eval::plan::EvalPlan;
use crate::eval::record::{CellRecord, EvalRecord};
use crate::eval::report::{difference_line, verdict_name};
use crate::eval::score::Verdict;
use crate::eval::store::{utc, Listed};
use crate::eval::totals::CellGroup;
use crate::safe_text::escape_controls;

/// `running 12 cells (3 cases × 2 columns × 2 runs), 4 at once` on stderr.
pub fn plan_line(plan: &EvalPlan, concurrency: usize) {
    let repeat = if plan.repeat > 1 { format!(" × {} runs", plan.repeat) } else { String::new() };
    super::note!(
        "running {} cells ({} cases × {} columns{repeat}), {concurrency} at once",
        plan.cells.len(),
        plan.rows.len(),
        plan.columns.len()
    );
}

/// One cell's end on stderr: `[3/12] astronomy × extract-definitions: pass (F1 1.00)`.
pub fn progress(column: &str, repeats: bool, done: usize, total: usize, cell: &CellRecord) {
    let case = cell.case.as_deref().unwrap_or("(default)");
    let run = if repeats { format!(" run {}", cell.repeat) } else { String::new() };
    let f1 = cell.score.f1().map(|f| format!(" (F1 {f:.2})")).unwrap_or_default();
    super::note!("[{done}/{total}] {case} × {column}{run}: {}{f1}", verdict_name(cell.score.verdict));
}

/// The whole report: the matrix, the totals, the baseline's summary, the failures.
pub fn report(record: &EvalRecord) -> String {
    let mut out = matrix(record, record.delta.as_ref());
    out.push('\n');
    out.push_str(&totals(record));
    if let Some(delta) = &record.delta {
        out.push('\n');
        out.push_str(&delta_summary(delta));
    }
    let failures = failures(record);
    if !failures.is_empty() {
        out.push('\n');
        out.push_str(&failures);
    }
    let unjudged = record.not_evaluated();
    if !unjudged.is_empty() {
        let code = super::eval::EXIT_NOT_EVALUATED;
        let _ = writeln!(out, "\nnot evaluated ({} checks; their cells are errors, exit {code}):", unjudged.len());
        for item in &unjudged {
            let (case, check, at) =
                (escape_controls(&item.case), escape_controls(&item.check), escape_controls(&item.at));
            let _ = writeln!(out, "  {case}: {check} ({at})");
        }
    }
    out
}

/// What a cell of the matrix shows.
/// A cell: its verdict (k/N with repeats) and the figure that decided it: the F1 of its items, or
/// `fields 0.50` when the expected answer is one object (which has no F1).
fn cell_text(group: &CellGroup) -> String {
    let f1 = match (group.f1, group.fields) {
        (Some(f1), _) => format!(" {f1:.2}"),
        (None, Some(fields)) => format!(" fields {fields:.2}"),
        (None, None) => String::new(),
    };
    if group.runs > 1 {
        let flaky = if group.flaky { " ~" } else { "" };
        return format!("{}{f1}{flaky}", group.passes_text());
    }
    let name = match group.verdict {
        Verdict::Truncated => "trunc",
        other => verdict_name(other),
    };
    format!("{name}{f1}")
}

/// ▲ improved, ▼ regressed, ↔ changed beside (fail ↔ truncated), + new, nothing when the same.
fn mark(change: Change) -> &'static str {
    match change {
        Change::Improved => " ▲",
        Change::Regressed => " ▼",
        Change::Changed => " ↔",
        Change::New => " +",
        Change::Same | Change::Gone => "",
    }
}

/// The matrix: the columns named, then one table per set of columns that share their cases.
pub fn matrix(record: &EvalRecord, delta: Option<&Delta>) -> String {
    let mut out = String::from("columns:\n");
    for (index, column) in record.columns.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {}  ({})", index + 1, column.label, column.model_label());
    }
    // Each row × column's group and change, found without reading them all again.
    let mut groups: HashMap<(usize, usize), &CellGroup> = HashMap::with_capacity(record.groups.len());
    for group in &record.groups {
        groups.entry((group.row, group.column)).or_insert(group);
    }
    let mut changes: HashMap<(&str, Option<&str>), &CellDelta> = HashMap::new();
    for cell in delta.map_or(&[][..], |d| d.cells.as_slice()) {
        changes.entry((cell.column.as_str(), cell.case.as_deref())).or_insert(cell);
    }
    // Columns that share exactly the same cases share a table.
    let mut tables: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for column in 0..record.columns.len() {
        let mut rows: Vec<usize> = record.groups.iter().filter(|g| g.column == column).map(|g| g.row).collect();
        rows.sort_unstable();
        match tables.iter_mut().find(|(r, _)| *r == rows) {
            Some((_, columns)) => columns.push(column),
            None => tables.push((rows, vec![column])),
        }
    }
    for (rows, columns) in tables.iter().filter(|(rows, _)| !rows.is_empty()) {
        out.push('\n');
        let texts: Vec<Vec<String>> = rows
            .iter()
            .map(|&row| {
                columns
                    .iter()
                    .map(|&column| {
                        let Some(group) = groups.get(&(row, column)) else {
                            return "·".to_string();
                        };
                        let case = record.rows.get(row).and_then(Option::as_deref);
                        let change = changes.get(&(record.column_label(column), case));
                        format!("{}{}", cell_text(group), change.map_or("", |c| mark(c.change)))
                    })
                    .collect()
            })
            .collect();
        let case_width = rows.iter().map(|&r| record.row_name(r).chars().count()).max().unwrap_or(4).max(4);
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let header = format!("[{}]", column + 1).chars().count();
                texts.iter().map(|row| row.get(i).map_or(0, |t| t.chars().count())).max().unwrap_or(0).max(header)
            })
            .collect();
        let _ = write!(out, "{:<case_width$}", "case");
        for (column, width) in columns.iter().zip(&widths) {
            let _ = write!(out, "  {:<width$}", format!("[{}]", column + 1));
        }
        out.truncate(out.trim_end_matches(' ').len());
        out.push('\n');
        for (row, cells) in rows.iter().zip(&texts) {
            let _ = write!(out, "{:<case_width$}", record.row_name(*row));
            for (text, width) in cells.iter().zip(&widths) {
                let _ = write!(out, "  {text:<width$}");
            }
            out.truncate(out.trim_end_matches(' ').len());
            out.push('\n');
        }
    }
    out
}

/// The totals, a line per column (and one more with repeats).
pub fn totals(record: &EvalRecord) -> String {
    let mut out = String::from("totals:\n");
    // Columns in several structured modes (`--structured a,b`): what forcing the schema costs or buys.
    let mut modes: Vec<_> = record.columns.iter().filter_map(|c| c.structured).collect();
    modes.dedup();
    let several_modes = modes.len() > 1;
    for totals in &record.totals {
        let f1 = totals.mean_f1.map(|f| format!(" · mean F1 {f:.2}")).unwrap_or_default();
        let truncated =
            if totals.truncations > 0 { format!(" · {} truncated", totals.truncations) } else { String::new() };
        let errors = if totals.errors > 0 { format!(" · {} no answer", totals.errors) } else { String::new() };
        let cached = if totals.cached > 0 { format!(" · {} cached", totals.cached) } else { String::new() };
        let _ = writeln!(
            out,
            "  [{}] {}/{} passed ({:.0}%){f1} · {} items · tokens {} in / {} out · {:.1} s{truncated}{errors}{cached}",
            totals.column + 1,
            totals.passed,
            totals.cells,
            totals.pass_rate * 100.0,
            totals.valid_items,
            totals.tokens_in,
            totals.tokens_out,
            totals.duration_ms as f64 / 1000.0,
        );
        if several_modes {
            let _ = writeln!(
                out,
                "      answers: {} right · {} valid but wrong · {} invalid{}",
                totals.passed,
                totals.valid_wrong,
                totals.invalid,
                if totals.errors > 0 { format!(" · {} no answer", totals.errors) } else { String::new() }
            );
        }
        if let Some(pass_all) = totals.pass_all {
            let _ = writeln!(
                out,
                "      over {} runs per case: pass^{} {pass_all:.2} · {} flaky",
                record.repeat, record.repeat, totals.flaky
            );
        }
    }
    out
}

/// `against eval ID: 2 improved, 1 regressed, 5 same`, and each column (with its model on each
/// side) and its figures before → after.
pub fn delta_summary(delta: &Delta) -> String {
    let same = delta.cells.iter().filter(|c| c.change == Change::Same).count();
    let changed = match delta.changed {
        0 => String::new(),
        n => format!(", {n} changed (fail ↔ truncated)"),
    };
    let mut out = format!(
        "against eval {}: {} improved, {} regressed{changed}, {same} same\n",
        delta.baseline, delta.improved, delta.regressed
    );
    let percent = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
    let f1 = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for column in &delta.columns {
        let _ = writeln!(
            out,
            "  {} ({}): pass rate {} → {}, mean F1 {} → {}",
            column.column,
            column.models(),
            percent(column.pass_rate_before),
            percent(column.pass_rate_after),
            f1(column.mean_f1_before),
            f1(column.mean_f1_after)
        );
    }
    for cell in delta.cells.iter().filter(|c| c.change == Change::Regressed) {
        let _ = writeln!(out, "  regressed: {} × {}", cell.case.as_deref().unwrap_or("(default)"), cell.column);
    }
    out
}

/// Every cell that did not pass: its reason, failed checks, differences and what a cut kept.
pub fn failures(record: &EvalRecord) -> String {
    let failing: Vec<&CellRecord> = record.cells.iter().filter(|c| c.score.verdict != Verdict::Pass).collect();
    if failing.is_empty() {
        return String::new();
    }
    let mut out = String::from("failures:\n");
    for cell in failing {
        let run = if record.repeat > 1 { format!(" run {}", cell.repeat) } else { String::new() };
        let _ = writeln!(
            out,
            "  {} × [{}] {}{run}: {} — {}",
            record.row_name(cell.row),
            cell.column + 1,
            record.column_label(cell.column),
            verdict_name(cell.score.verdict),
            cell.score.reason
        );
        for check in cell.score.checks.iter().filter(|c| !c.passed) {
            let message = check.message.as_deref().unwrap_or("failed");
            let _ = writeln!(out, "    check {} ({}): {message}", check.check, check.at);
        }
        for difference in &cell.score.differences {
            let _ = writeln!(out, "    {}", difference_line(difference));
        }
        for recovered in &cell.score.recovered {
            let f1 = recovered.scores.as_ref().map(|s| format!(" (F1 {:.2})", s.f1)).unwrap_or_default();
            let _ = writeln!(out, "    a cut keeps: {} {} items{f1}", recovered.strategy, recovered.items);
        }
        if let Some(error) = &cell.run.error {
            let _ = writeln!(out, "    error: {error}");
        }
    }
    out
}

/// `eval list`: `20261124-160000-123a7  2026-11-24 16:00:00  5/6 passed  extract-definitions  [2 columns]`.
pub fn listed_line(eval: &Listed) -> String {
    let (date, time) = utc(eval.started_at_ms);
    let batch = eval.batch.as_ref().map(|tag| format!("  batch {tag}")).unwrap_or_default();
    // The columns are named only when they say more than the prompts (a model, a twin).
    let columns =
        if eval.columns == eval.prompts { String::new() } else { format!("  [{}]", first_few(&eval.columns, " | ")) };
    format!(
        "{}  {date} {time}  {}/{} passed  {}{columns}{batch}",
        eval.id,
        eval.passed,
        eval.cells,
        first_few(&eval.prompts, ", "),
    )
}

/// The models an eval ran on, each once: `local, constrained; openai:gpt-4o-mini, json-schema`.
fn models(record: &EvalRecord) -> String {
    let mut models: Vec<String> = Vec::new();
    for model in record.columns.iter().map(crate::eval::plan::Column::model_and_mode) {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    models.join("; ")
}

/// The first three names joined, and how many more there are.
fn first_few(names: &[String], separator: &str) -> String {
    let shown = names.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(separator);
    match names.len().saturating_sub(3) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// `eval diff A B`: the prompts' edits, each column's figures, then every case that changed.
pub fn eval_diff(a: &EvalRecord, b: &EvalRecord, diff: &EvalDiff) -> String {
    let (date_a, time_a) = utc(a.started_at_ms);
    let (date_b, time_b) = utc(b.started_at_ms);
    let mut out = format!(
        "A: eval {} ({date_a} {time_a}) on {}\nB: eval {} ({date_b} {time_b}) on {}\n",
        diff.a,
        models(a),
        diff.b,
        models(b)
    );
    for edit in &diff.prompts {
        let only = if edit.scoring_only { " (only its [eval] settings: how answers are scored)" } else { "" };
        let _ = write!(out, "\nprompt {} changed{only}:\n{}", edit.prompt, edit.diff);
    }
    if diff.scoring_only() {
        out.push_str("\nonly the comparator changed: the answers are the same, scored differently\n");
    }
    let summary = Delta {
        baseline: diff.a.clone(),
        cells: Vec::new(),
        columns: diff.columns.clone(),
        improved: diff.improved,
        regressed: diff.regressed,
        changed: diff.changed,
    };
    out.push('\n');
    let summary = delta_summary(&summary);
    let columns = summary.split_once('\n').map_or("", |(_, rest)| rest);
    let changed = match diff.changed {
        0 => String::new(),
        n => format!(", {n} changed (fail ↔ truncated)"),
    };
    let _ = write!(out, "B against A: {} improved, {} regressed{changed}\n{columns}", diff.improved, diff.regressed);
    if diff.cases.is_empty() {
        out.push_str("no case changed\n");
    }
    for case in &diff.cases {
        let name = case.delta.case.as_deref().unwrap_or("(default)");
        let side = |side: &Option<crate::eval::diff::Side>| {
            side.as_ref().map_or("-".to_string(), |s| {
                let f1 = s.f1.map(|f| format!(" {f:.2}")).unwrap_or_default();
                if s.runs > 1 {
                    format!("{}/{}{f1}", s.passes, s.runs)
                } else {
                    format!("{}{f1}", verdict_name(s.verdict))
                }
            })
        };
        let change = format!("{:?}", case.delta.change).to_lowercase();
        let _ = writeln!(
            out,
            "\n{name} × {}: {change}: {} → {}",
            case.delta.column,
            side(&case.delta.before),
            side(&case.delta.after)
        );
        if case.same_answer {
            out.push_str("  the same answer: only its scoring changed\n");
        }
        if case.reason_before != case.reason_after {
            if let Some(reason) = &case.reason_after {
                let _ = writeln!(out, "  now: {reason}");
            }
        }
        for check in &case.checks {
            let state = |passed: Option<bool>| match passed {
                Some(true) => "passed",
                Some(false) => "failed",
                None => "not run",
            };
            let message = check.message.as_ref().map(|m| format!(": {m}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  check {} ({}): {} → {}{message}",
                check.check,
                check.at,
                state(check.before),
                state(check.after)
            );
        }
        for difference in &case.fixed {
            let _ = writeln!(out, "  fixed: {}", difference_line(difference));
        }
        for difference in &case.introduced {
            let _ = writeln!(out, "  new: {}", difference_line(difference));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(verdict: Verdict, f1: Option<f64>, fields: Option<f64>) -> CellGroup {
        CellGroup { row: 0, column: 0, runs: 1, passes: 0, verdict, f1, fields, pass_all: 0.0, flaky: false }
    }

    /// Beside a verdict, the figure that decided it: a one-object prompt's failed fields, never the
    /// 1.00 F1 that only says the object paired.
    #[test]
    fn a_cell_shows_the_figure_that_decided_it() {
        assert_eq!(cell_text(&group(Verdict::Fail, None, Some(0.0))), "fail fields 0.00");
        assert_eq!(cell_text(&group(Verdict::Fail, Some(0.5), None)), "fail 0.50");
        assert_eq!(cell_text(&group(Verdict::Error, None, None)), "error");
    }
}
