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

    /// The report of `record` in this format, written to `out` (JUnit and CSV as they are made; the
    /// others as their text).
    pub fn write(self, record: &EvalRecord, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Self::Junit => junit_to(record, out),
            Self::Csv => csv_to(record, out),
            other => out.write_all(other.text(record).map_err(std::io::Error::from)?.as_bytes()),
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

/// One cell as a JSONL line: its case and column by name, then the cell as the record keeps it.
#[derive(Serialize)]
struct CellLine<'a> {
    eval: &'a str,
    case_name: &'a str,
    column_label: &'a str,
    #[serde(flatten)]
    cell: &'a CellRecord,
}

/// The record's cells, one JSON object a line.
pub fn jsonl(record: &EvalRecord) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for cell in &record.cells {
        let line = CellLine {
            eval: &record.id,
            case_name: record.row_name(cell.row),
            column_label: record.column_label(cell.column),
            cell,
        };
        out.push_str(&escape_json_text(&serde_json::to_string(&line)?));
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
}
