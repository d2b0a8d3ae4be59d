//! `tunebench parse`: read an answer, validate it, print the report (JSON or a human table).

use std::process::ExitCode;

use super::input::ParseOptions;
use crate::output::{parser_for, JsonReport, JsonlReport, LineStatus, Report};
use crate::safe_text::escape_controls;

/// Options of `tunebench parse`.
#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    #[command(flatten)]
    pub options: ParseOptions,
    /// Exit 1 unless the answer is fully valid (json: a valid value; jsonl: no invalid or schema-failing line).
    #[arg(long)]
    pub strict: bool,
    /// Print only the response type, profile and summary.
    #[arg(long)]
    pub summary: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ParseArgs) -> anyhow::Result<ExitCode> {
    let setup = args.options.setup()?;
    let answer = args.options.read_answer()?;
    let mut parser = parser_for(setup.response_type, setup.profile, setup.check);
    // A transcript is fed as it was streamed: the same machine as the live view.
    match &answer.transcript {
        Some(transcript) => transcript.chunks.iter().for_each(|c| parser.feed(&c.delta)),
        None => parser.feed(&answer.text),
    }
    let report = parser.into_report();
    if args.json {
        print_json_report(&report, args.summary)?;
    } else {
        super::say!("{}", human(&report, args.summary));
    }
    Ok(if args.strict && !passes(&report) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Whether the report counts as a pass for `--strict`.
pub fn passes(report: &Report) -> bool {
    match report {
        Report::Text(_) => true,
        Report::Json(r) => r.ok,
        Report::Jsonl(r) => r.summary.invalid_json == 0 && r.summary.schema_error == 0,
    }
}

fn print_json_report(report: &Report, summary_only: bool) -> anyhow::Result<()> {
    match (report, summary_only) {
        (Report::Jsonl(r), true) => super::print_json(&serde_json::json!({
            "response_type": r.response_type, "profile": r.profile, "summary": r.summary,
        })),
        _ => super::print_json(report),
    }
}

/// The report as a human-readable table.
pub fn human(report: &Report, summary_only: bool) -> String {
    match report {
        Report::Text(r) => format!("{}\n", escape_controls(&r.text)),
        Report::Json(r) => human_json(r),
        Report::Jsonl(r) => human_jsonl(r, summary_only),
    }
}

fn human_jsonl(r: &JsonlReport, summary_only: bool) -> String {
    let mut out = String::new();
    if !summary_only {
        out.push_str("line     status        detail\n");
        for v in &r.lines {
            let lines = match v.end_line {
                Some(end) if end != v.line => format!("{}-{end}", v.line),
                _ => v.line.to_string(),
            };
            let (status, detail) = match &v.status {
                LineStatus::Valid { branch } => ("valid", branch.clone().unwrap_or_default()),
                LineStatus::InvalidJson { error, column } => ("invalid_json", format!("column {column}: {error}")),
                LineStatus::SchemaError { errors } => (
                    "schema_error",
                    errors
                        .iter()
                        .map(|e| format!("{}: {}", display_path(&e.path), e.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                LineStatus::Skipped { reason } => ("skipped", reason.clone()),
            };
            out.push_str(&format!("{lines:<8} {status:<13} {}\n", escape_controls(&detail)));
        }
    }
    let s = r.summary;
    out.push_str(&format!(
        "{} ({}): {} valid, {} invalid_json, {} schema_error, {} skipped; {} item{}\n",
        "jsonl",
        serde_json::to_value(r.profile).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
        s.valid,
        s.invalid_json,
        s.schema_error,
        s.skipped,
        r.items.len(),
        if r.items.len() == 1 { "" } else { "s" }
    ));
    out
}

fn human_json(r: &JsonReport) -> String {
    let mut out = String::new();
    if r.ok {
        let branch = r.branch.as_ref().map(|b| format!(" (branch {b})")).unwrap_or_default();
        out.push_str(&format!("ok: valid JSON{branch}\n"));
    }
    if let Some(e) = &r.error {
        let at = match (e.line, e.column) {
            (Some(l), Some(c)) => format!(" at {l}:{c}"),
            _ => String::new(),
        };
        let kind = serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        out.push_str(&format!("error: {kind}{at}: {}\n", escape_controls(&e.message)));
    }
    for issue in &r.errors {
        out.push_str(&format!("  {}: {}\n", display_path(&issue.path), escape_controls(&issue.message)));
    }
    for repair in &r.repairs {
        out.push_str(&format!("repaired at byte {}: {}\n", repair.at, repair.what));
    }
    if let Some(value) = &r.value {
        out.push_str(&escape_controls(&serde_json::to_string_pretty(value).unwrap_or_default()));
        out.push('\n');
    }
    out
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "(root)"
    } else {
        path
    }
}
