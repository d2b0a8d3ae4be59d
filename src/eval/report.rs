//! An eval record as files for other tools: JUnit XML (a `testsuite` per column, a `testcase` per row ×
//! column, `failure` / `error` with a message, as CI dashboards read it) and CSV (a line per cell,
//! RFC 4180 quoting), each written to its file as it is made.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use super::record::{CellRecord, EvalRecord};
use super::score::{Difference, Verdict};
use super::totals::CellGroup;
use crate::safe_text::escape_controls;

/// `text` made safe inside XML 1.0 text and attribute values: the five special characters as
/// entities, and every character XML 1.0 cannot hold (controls other than tab, newline and carriage
/// return; lone surrogates cannot occur in a `str`; U+FFFE and U+FFFF) written `\u{..}`.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Kept as character references so attribute values keep them too.
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A difference in one line: `missing aspirin`, `extra codeine`, `ibuprofen /dose: expected 200, got 400`,
/// `aspirin /note: expected "…", got "…" (similarity 0.82 < 0.90)`, `Espresso machine ~ One Espresso
/// machine: paired by key similarity 0.80`.
pub fn difference_line(difference: &Difference) -> String {
    match difference {
        Difference::Missing { key, .. } => format!("missing {key}"),
        Difference::Extra { key, .. } => format!("extra {key}"),
        Difference::Field { key, field, expected, got, note, .. } => {
            let note = note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
            format!("{key} {field}: expected {expected}, got {got}{note}")
        }
        Difference::Fuzzy { key, got_key, similarity } => {
            format!("{key} ~ {got_key}: paired by key similarity {similarity:.2}")
        }
        Difference::Item { key, got_key, note, .. } if key == got_key => format!("{key} (the whole item): {note}"),
        Difference::Item { key, got_key, note, .. } => format!("{key} ~ {got_key} (the whole item): {note}"),
    }
}

/// Everything a failed cell says: its reason, failed checks and differences, one per line.
pub fn failure_text(cell: &CellRecord) -> String {
    let mut lines = vec![cell.score.reason.clone()];
    for check in cell.score.checks.iter().filter(|c| !c.passed) {
        let message = check.message.as_deref().unwrap_or("failed");
        lines.push(format!("check {} ({}): {message}", check.check, check.at));
    }
    lines.extend(cell.score.differences.iter().map(difference_line));
    if let Some(error) = &cell.run.error {
        lines.push(format!("error: {error}"));
    }
    lines.join("\n")
}

/// The record as JUnit XML: one `testsuite` per column (named by its label), one `testcase` per row ×
/// column (named by the case; with repeats, failing unless every run passed), `failure` for `fail` and
/// `truncated` (its type says which), `error` when no run got an answer.
pub fn junit(record: &EvalRecord) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = junit_to(record, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// One testcase's verdict: its cells that did not pass, and whether no run got an answer.
struct Outcome<'a> {
    cells: &'a [&'a CellRecord],
    failing: Vec<&'a CellRecord>,
    all_errors: bool,
    ms: u64,
}

impl<'a> Outcome<'a> {
    fn of(cells: &'a [&'a CellRecord]) -> Self {
        let failing: Vec<&CellRecord> = cells.iter().copied().filter(|c| c.score.verdict != Verdict::Pass).collect();
        let all_errors = failing.len() == cells.len() && failing.iter().all(|c| c.score.verdict == Verdict::Error);
        Self { cells, failing, all_errors, ms: cells.iter().map(|c| c.run.duration_ms).sum() }
    }
}

/// [`junit`] written to `out` as it is made (a 20,000-case report is never held as text): each
/// suite's figures counted first, then its cases written.
pub fn junit_to(record: &EvalRecord, out: &mut dyn Write) -> std::io::Result<()> {
    // Each row × column's cells, in the record's order, found without reading every cell again.
    let mut by_cell: HashMap<(usize, usize), Vec<&CellRecord>> = HashMap::new();
    for cell in &record.cells {
        by_cell.entry((cell.column, cell.row)).or_default().push(cell);
    }
    let cells_of = |column: usize, group: &CellGroup| by_cell.get(&(column, group.row)).map_or(&[][..], Vec::as_slice);
    let groups_of = |column: usize| record.groups.iter().filter(move |g| g.column == column);
    // Per suite: tests, failures, errors, milliseconds.
    let mut suites = Vec::with_capacity(record.columns.len());
    for index in 0..record.columns.len() {
        let (mut tests, mut failures, mut errors, mut ms) = (0, 0, 0, 0u64);
        for group in groups_of(index) {
            let outcome = Outcome::of(cells_of(index, group));
            tests += 1;
            ms += outcome.ms;
            match (outcome.failing.is_empty(), outcome.all_errors) {
                (true, _) => {}
                (false, true) => errors += 1,
                (false, false) => failures += 1,
            }
        }
        suites.push((tests, failures, errors, ms));
    }
    let sum = |pick: fn(&(usize, usize, usize, u64)) -> usize| suites.iter().map(pick).sum::<usize>();
    let (tests, failures, errors) = (sum(|s| s.0), sum(|s| s.1), sum(|s| s.2));
    writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>")?;
    writeln!(
        out,
        "<testsuites name=\"tunebench eval {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
        xml_escape(&record.id),
        record.duration_ms as f64 / 1000.0
    )?;
    for ((index, column), (tests, failures, errors, ms)) in record.columns.iter().enumerate().zip(&suites) {
        let label = xml_escape(&column.label);
        writeln!(
            out,
            "  <testsuite name=\"{label}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{:.3}\">",
            *ms as f64 / 1000.0,
        )?;
        for group in groups_of(index) {
            let outcome = Outcome::of(cells_of(index, group));
            let name = xml_escape(record.row_name(group.row));
            write!(
                out,
                "    <testcase name=\"{name}\" classname=\"{label}\" time=\"{:.3}\"",
                outcome.ms as f64 / 1000.0
            )?;
            let Some(first) = outcome.failing.first() else {
                out.write_all(b"/>\n")?;
                continue;
            };
            out.write_all(b">\n")?;
            let several = outcome.cells.len() > 1;
            let head =
                if several { format!("{} of {} runs passed; ", group.passes, group.runs) } else { String::new() };
            let message = xml_escape(&format!("{head}{}", first.score.reason));
            let body: Vec<String> = outcome
                .failing
                .iter()
                .map(|c| {
                    let run = if several { format!("run {}: ", c.repeat) } else { String::new() };
                    format!("{run}{}", failure_text(c))
                })
                .collect();
            let kind = verdict_name(first.score.verdict);
            let tag = if outcome.all_errors { "error" } else { "failure" };
            writeln!(
                out,
                "      <{tag} message=\"{message}\" type=\"{kind}\">{}</{tag}>",
                xml_escape(&body.join("\n\n"))
            )?;
            out.write_all(b"    </testcase>\n")?;
        }
        out.write_all(b"  </testsuite>\n")?;
    }
    out.write_all(b"</testsuites>\n")
}

/// `pass`, `fail`, `truncated` or `error`.
pub fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Truncated => "truncated",
        Verdict::Error => "error",
    }
}

/// One CSV field: control characters other than newline and tab written as visible escapes (ESC as
/// `\u{1b}`, as the terminal output does: `cat` of the file runs no escape sequence), then quoted when
/// it holds a comma, a quote, a line break or leading/trailing spaces (quotes doubled). A text field
/// starting with `=`, `+`, `-` or `@` (also after leading spaces or tabs, which spreadsheets skip), or
/// with a tab or a carriage return, gets a leading `'` so a spreadsheet does not run it as a formula
/// (numbers are written as numbers).
pub fn csv_field(text: &str) -> String {
    let text = escape_controls(text);
    let formula =
        text.trim_start_matches([' ', '\t']).starts_with(['=', '+', '-', '@']) || text.starts_with(['\t', '\r']);
    let guarded = if formula { format!("'{text}") } else { text.into_owned() };
    if guarded.contains([',', '"', '\n', '\r']) || guarded.starts_with(' ') || guarded.ends_with(' ') {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// The CSV columns, in order.
pub const CSV_HEADER: [&str; 21] = [
    "case",
    "column",
    "prompt",
    "response_type",
    "provider",
    "model",
    "repeat",
    "verdict",
    "f1",
    "precision",
    "recall",
    "field_accuracy",
    "checks_failed",
    "differences",
    "items",
    "tokens_in",
    "tokens_out",
    "duration_ms",
    "truncated",
    "reason",
    "fuzzy_pairs",
];

/// The record as CSV: the header, then one line per cell (CRLF line ends, as RFC 4180 writes them).
pub fn csv(record: &EvalRecord) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = csv_to(record, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`csv`] written to `out` a line at a time.
pub fn csv_to(record: &EvalRecord, out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, "{}\r\n", CSV_HEADER.join(","))?;
    let number = |value: Option<f64>| value.map(|v| format!("{v:.4}")).unwrap_or_default();
    for cell in &record.cells {
        let column = record.columns.get(cell.column);
        let items = cell.score.items.as_ref();
        let fields = [
            csv_field(record.row_name(cell.row)),
            csv_field(record.column_label(cell.column)),
            csv_field(column.map_or("", |c| c.prompt.as_str())),
            column.map_or("", |c| super::plan::type_name(c.response_type)).to_string(),
            csv_field(column.map_or("", |c| c.provider.as_str())),
            csv_field(column.map_or("", |c| c.model.as_str())),
            cell.repeat.to_string(),
            verdict_name(cell.score.verdict).to_string(),
            number(cell.score.f1()),
            number(cell.score.f1().and(items.map(|s| s.precision))),
            number(cell.score.f1().and(items.map(|s| s.recall))),
            number(items.map(|s| s.field_accuracy)),
            cell.score.checks.iter().filter(|c| !c.passed).count().to_string(),
            cell.score.differences.len().to_string(),
            cell.run.items.to_string(),
            cell.run.tokens_in.to_string(),
            cell.run.tokens_out.to_string(),
            cell.run.duration_ms.to_string(),
            cell.run.truncated.to_string(),
            csv_field(&cell.score.reason),
            items.map(|s| s.fuzzy.to_string()).unwrap_or_default(),
        ];
        write!(out, "{}\r\n", fields.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_and_csv_escaping() {
        assert_eq!(xml_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
        assert_eq!(xml_escape("bell\u{7} nul\u{0}\n"), "bell\\u{7} nul\\u{0}&#10;");
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\"\nbye"), "\"say \"\"hi\"\"\nbye\"");
        assert_eq!(csv_field("=SUM(A1)"), "'=SUM(A1)");
        // Spreadsheets skip leading spaces and tabs before a formula; a leading tab is guarded too.
        assert_eq!(csv_field(" =SUM(A1)"), "' =SUM(A1)");
        assert_eq!(csv_field("\t@cmd"), "'\t@cmd");
        assert_eq!(csv_field("\tplain"), "'\tplain");
        assert_eq!(csv_field("a -b"), "a -b");
        assert_eq!(csv_field(" padded"), "\" padded\"");
        assert_eq!(csv_field("\u{1b}]0;pwned\u{7}"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(csv_field("csi\u{9b}2J, cr\r"), "\"csi\\u{9b}2J, cr\\r\"");
    }
}
