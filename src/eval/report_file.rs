//! Which report a file asks for by its extension (`eval -o FILE`: `.json`, `.jsonl`, `.csv`, `.xml`,
//! `.html`), and its text: one writer per format (the JUnit and CSV writers of [`super::report`], the
//! page of [`super::report_html`]).

use std::path::Path;

use serde::Serialize;

use super::record::{CellRecord, EvalRecord};
use super::report::{csv, csv_to, junit, junit_to};
use super::report_html::html;
use crate::safe_text::escape_json_text;

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// `.json`: the whole eval record, as `--json` prints it.
    Json,
    /// `.jsonl`: one line per cell, its case and column named.
    Jsonl,
    /// `.csv`: one line per cell.
    Csv,
    /// `.xml`: JUnit XML.
    Junit,
    /// `.html`: one self-contained page.
    Html,
}

/// The extensions known, as an error lists them.
pub const EXTENSIONS: &str = ".json, .jsonl, .csv, .xml (JUnit) or .html";

impl ReportFormat {
    /// The format `path`'s extension names (case ignored); an error names the path and its extension.
    pub fn of(path: &Path) -> Result<Self, String> {
        let extension = path.extension().map(|e| e.to_string_lossy().to_lowercase());
        match extension.as_deref() {
            Some("json") => Ok(Self::Json),
            Some("jsonl") => Ok(Self::Jsonl),
            Some("csv") => Ok(Self::Csv),
            Some("xml") => Ok(Self::Junit),
            Some("html" | "htm") => Ok(Self::Html),
            Some(other) => Err(format!(
                "-o {}: unknown report extension \".{other}\"; use {EXTENSIONS}",
                crate::safe_text::escape_controls(&path.display().to_string())
            )),
            None => Err(format!(
                "-o {}: the file has no extension to pick a report format by; use {EXTENSIONS}",
                crate::safe_text::escape_controls(&path.display().to_string())
            )),
        }
    }

    /// The report of `record` in this format, written to `out` as it is made (never held whole).
    pub fn write(self, record: &EvalRecord, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Self::Junit => junit_to(record, out),
            Self::Csv => csv_to(record, out),
            Self::Json => json_to(record, out),
            Self::Jsonl => jsonl_to(record, out),
            Self::Html => super::report_html::html_to(record, out),
        }
    }

    /// The report of `record` in this format.
    pub fn text(self, record: &EvalRecord) -> Result<String, serde_json::Error> {
        Ok(match self {
            Self::Json => format!("{}\n", escape_json_text(&serde_json::to_string_pretty(record)?)),
            Self::Jsonl => jsonl(record)?,
            Self::Csv => csv(record),
            Self::Junit => junit(record),
            Self::Html => html(record),
        })
    }
}

/// How much of an existing file is read to tell whether it holds a report.
const SNIFFED: u64 = 64 * 1024;

impl ReportFormat {
    /// Whether `head` (the first bytes of a file) is a report of this format as tunebench writes it:
    /// the one kind of file a report may replace (besides an empty one).
    pub fn holds_report(self, head: &str) -> bool {
        let text = head.trim_start_matches('\u{feff}').trim_start();
        match self {
            // A record's first key is `eval` (its format); a large one's `cells` lie past the head.
            Self::Json => {
                let first_key = text.strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"eval\""));
                text.starts_with('{') && (first_key || text.contains("\"cells\"")) && text.contains("\"id\"")
            }
            Self::Jsonl => {
                let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                let first = lines.next().and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
                first.is_some_and(|line| line.get("eval").is_some() && line.get("case_name").is_some())
            }
            Self::Csv => text.lines().next().is_some_and(|l| l.trim_end() == super::report::CSV_HEADER.join(",")),
            Self::Junit => text.starts_with("<?xml") && text.contains("<testsuites name=\"tunebench eval"),
            Self::Html => text.contains("<title>tunebench eval"),
        }
    }

    /// Whether a report may be written at `path`: nothing there, an empty file, or a regular file that
    /// holds a report of this format. A folder, a FIFO, a device (or a link to one), or a file holding
    /// anything else (a prompt file, a dataset, a config the shell's glob handed over) is refused,
    /// naming the flag and what is there.
    pub fn may_replace(self, flag: &str, path: &Path) -> Result<(), String> {
        let shown = crate::safe_text::escape_controls(&path.display().to_string()).into_owned();
        let Ok(metadata) = std::fs::metadata(path) else { return Ok(()) };
        if !metadata.is_file() {
            let what = if metadata.is_dir() { "a folder" } else { "not a regular file (a FIFO, a device or a socket)" };
            return Err(format!("{flag} {shown}: that is {what}; a report is written to a regular file"));
        }
        if metadata.len() == 0 {
            return Ok(());
        }
        use std::io::Read;
        let mut head = Vec::new();
        let read = std::fs::File::open(path).and_then(|f| f.take(SNIFFED).read_to_end(&mut head));
        let holds = read.is_ok() && self.holds_report(&String::from_utf8_lossy(&head));
        if holds {
            Ok(())
        } else {
            Err(format!(
                "{flag} {shown}: the file exists and is not a {} report tunebench wrote; a report never replaces another file (remove it, or name a new one)",
                self.name()
            ))
        }
    }

    /// The format as a message names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::Jsonl => "JSONL",
            Self::Csv => "CSV",
            Self::Junit => "JUnit XML",
            Self::Html => "HTML",
        }
    }
}

/// One cell as a JSONL line: its case and column by name, then the cell as the record keeps it.
#[derive(Serialize)]
struct CellLine<'a> {
    eval: &'a str,
    case_name: &'a str,
    column_label: &'a str,
    #[serde(flatten)]
    cell: &'a CellRecord,
}

impl<'a> CellLine<'a> {
    /// `cell` of `record`, named.
    fn of(record: &'a EvalRecord, cell: &'a CellRecord) -> Self {
        CellLine {
            eval: &record.id,
            case_name: record.row_name(cell.row),
            column_label: record.column_label(cell.column),
            cell,
        }
    }
}

/// The whole record as `--json` prints it, serialized straight into `out` (never held as text).
pub fn json_to(record: &EvalRecord, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut escaping = crate::safe_text::JsonEscaping::new(out);
    serde_json::to_writer_pretty(&mut escaping, record).map_err(std::io::Error::from)?;
    let out = escaping.into_inner()?;
    out.write_all(b"\n")
}

/// The record's cells, one JSON object a line, each written into `out` as it is made.
pub fn jsonl_to(record: &EvalRecord, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut escaping = crate::safe_text::JsonEscaping::new(out);
    for cell in &record.cells {
        serde_json::to_writer(&mut escaping, &CellLine::of(record, cell)).map_err(std::io::Error::from)?;
        std::io::Write::write_all(&mut escaping, b"\n")?;
    }
    escaping.into_inner()?;
    Ok(())
}

/// The record's cells, one JSON object a line.
pub fn jsonl(record: &EvalRecord) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for cell in &record.cells {
        out.push_str(&escape_json_text(&serde_json::to_string(&CellLine::of(record, cell))?));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format_and_an_unknown_one_is_named() {
        let of = |name: &str| ReportFormat::of(Path::new(name));
        assert_eq!(of("out/r.json"), Ok(ReportFormat::Json));
        assert_eq!(of("r.JSONL"), Ok(ReportFormat::Jsonl));
        assert_eq!(of("r.csv"), Ok(ReportFormat::Csv));
        assert_eq!(of("r.xml"), Ok(ReportFormat::Junit));
        assert_eq!(of("r.html"), Ok(ReportFormat::Html));
        let error = of("report.pdf").unwrap_err();
        assert!(error.contains("report.pdf") && error.contains("\".pdf\"") && error.contains(".html"), "{error}");
        assert!(of("report").unwrap_err().contains("no extension"));
    }

    #[test]
    fn a_large_json_report_is_known_by_its_head_though_its_cells_lie_past_it() {
        let rows: String = (0..20_000).map(|i| format!("    \"case {i}\",\n")).collect();
        let head = format!("{{\n  \"eval\": 1,\n  \"id\": \"20260101-000000-00000\",\n  \"rows\": [\n{rows}");
        let head = &head[..SNIFFED as usize];
        assert!(ReportFormat::Json.holds_report(head));
        assert!(!ReportFormat::Json.holds_report("{\"name\": \"a config\", \"id\": 1}"));
        assert!(!ReportFormat::Json.holds_report("[{\"eval\": 1, \"id\": 2}]"));
    }
}
