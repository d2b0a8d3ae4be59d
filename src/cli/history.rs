//! `tunebench history`: the runs in the history file, live and imported from batches alike, filtered by
//! prompt, batch or verdict; a line per run, or the records as JSON.

use std::process::ExitCode;

use crate::run::{history, RunRecord};
use crate::safe_text::escape_controls;

/// Options of `tunebench history`.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// Only runs of this prompt id.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Only runs imported from this batch: its tag (as in `tb<tag>-...`) or one custom_id.
    #[arg(long)]
    pub batch: Option<String>,
    /// Only runs whose answer failed.
    #[arg(long)]
    pub failed: bool,
    /// Only the last N runs that match.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Print the matching run records as a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let path = history::history_path()?;
    let history = history::read(&path)?;
    for warning in history.warnings(&path) {
        super::note!("tunebench: warning: {warning}");
    }
    let records = history.records;
    let mut matching: Vec<&RunRecord> = records.iter().filter(|record| matches(args, record)).collect();
    if let Some(last) = args.last {
        matching.drain(..matching.len().saturating_sub(last));
    }
    if args.json {
        super::print_json(&matching)?;
    } else {
        for record in &matching {
            super::sayln!("{}", escape_controls(&line(record)));
        }
        super::note!("{} of {} runs in {}", matching.len(), records.len(), path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn matches(args: &HistoryArgs, record: &RunRecord) -> bool {
    let prompt_ok = args.prompt.as_ref().is_none_or(|id| record.prompt == *id);
    let batch_ok = args.batch.as_ref().is_none_or(|wanted| {
        record.batch.as_deref().is_some_and(|id| {
            id == wanted
                || id
                    .strip_prefix("tb")
                    .and_then(|rest| rest.strip_prefix(wanted.as_str()))
                    .is_some_and(|rest| rest.starts_with('-'))
        })
    });
    let failed_ok = !args.failed || !record.ok;
    prompt_ok && batch_ok && failed_ok
}

/// `2026-11-24 16:00:00  ok      extract-topics [economics]  openai gpt-4o-mini  2 items  batch tb…`.
fn line(record: &RunRecord) -> String {
    let verdict = match (record.cancelled, record.ok) {
        (true, _) => "cancelled",
        (false, true) => "ok",
        (false, false) => "FAILED",
    };
    let case = record.case.as_ref().map(|c| format!(" [{c}]")).unwrap_or_default();
    let batch = record.batch.as_ref().map(|id| format!("  batch {id}")).unwrap_or_default();
    format!(
        "{}  {verdict:<9} {}{case}  {} {}  {}{batch}",
        utc(record.started_at_ms),
        record.prompt,
        record.provider,
        record.model,
        record.result_in_words(),
    )
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc(ms: u64) -> String {
    let (date, time) = crate::eval::store::utc(ms);
    format!("{date} {time}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_764_000_000_000), "2025-11-24 16:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
    }

    #[test]
    fn filters_by_prompt_batch_and_verdict() {
        let record: RunRecord = serde_json::from_value(serde_json::json!({
            "prompt": "p", "provider": "openai", "model": "m", "structured": "none", "response_type": "json",
            "profile": "lenient", "ok": false, "result": null, "truncated": false, "repaired": false,
            "mode": {"requested": "none", "used": "none"}, "max_turns": 1, "started_at_ms": 0, "duration_ms": 0,
            "batch": "tbab12-00001-p", "turns": []
        }))
        .unwrap();
        let args = |prompt: Option<&str>, batch: Option<&str>, failed| HistoryArgs {
            prompt: prompt.map(Into::into),
            batch: batch.map(Into::into),
            failed,
            last: None,
            json: false,
        };
        assert!(matches(&args(Some("p"), Some("ab12"), true), &record));
        assert!(matches(&args(None, Some("tbab12-00001-p"), false), &record));
        assert!(!matches(&args(Some("q"), None, false), &record));
        assert!(!matches(&args(None, Some("ab1"), false), &record));
        assert_eq!(line(&record), "1970-01-01 00:00:00  FAILED    p  openai m  no result  batch tbab12-00001-p");
    }
}
