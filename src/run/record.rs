//! The run record (CLI.md's `run --json`): the prompt, provider, model, mode, the result and whether
//! it passed, and every turn with its transcript, usage, timings, finish reason, parse report and the
//! feedback it drew. Truncation and repairs are flagged beside the result, never hidden.
//!
//! A record reads back from the JSON it writes (the history): what a build writes only when it says
//! something (`case`, `warnings`, `cancelled`, ...) and what later builds added reads as its default
//! when missing, so older history lines read too; fields this build does not know are ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::{LineStatus, Profile, Report, ResponseType};
use crate::prompt::template::Variables;
use crate::provider::{FinishReason, ModeReport, ProviderError, Request, StructuredMode, Usage};
use crate::truncate::transcript::Transcript;

/// One run of one prompt (and case), as printed by `run --json` and appended to the history, and read
/// back from it ([`super::history::read`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The prompt's id.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub provider: String,
    pub model: String,
    /// The structured-output mode asked for (`mode` says what was used).
    pub structured: StructuredMode,
    pub response_type: ResponseType,
    pub profile: Profile,
    /// The final answer passed validation and its stream did not fail.
    pub ok: bool,
    /// json: the value; jsonl: the items; text: the text; `null` when there is none.
    pub result: Value,
    /// The final answer was cut off by the max-tokens limit (`finish_reason = length`).
    pub truncated: bool,
    /// The result needed repairs to read (see the last turn's `parse.repairs` or line repairs).
    pub repaired: bool,
    /// What a reader of `result` must know: truncation, repairs, a failed or interrupted stream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// How the last turn's stream failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The `--var` values given on top of the prompt's variables and the case.
    #[serde(default, skip_serializing_if = "Variables::is_empty")]
    pub variables: Variables,
    /// The last turn's mode report (requested, used, schema in prompt, fallbacks with reasons).
    pub mode: ModeReport,
    pub max_turns: u32,
    /// When the run started, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    pub duration_ms: u64,
    /// The run was stopped (the user, a signal, its deadline; `warnings` says which): the last turn
    /// holds the answer as far as it streamed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// The `custom_id` of the provider batch request this run was imported from (`batch import`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The sampling seed sent (given, a repeat's seed + k, or fresh at a temperature above 0):
    /// `run --seed` with it asks for this answer again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub turns: Vec<Turn>,
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// 1-based.
    pub turn: u32,
    /// The answer as received (partial when the stream failed).
    pub output: String,
    /// `None` when the stream failed (see `error`).
    pub finish_reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProviderError>,
    pub usage: Option<Usage>,
    /// Milliseconds from sending the request to the first piece of the answer.
    pub ttft_ms: Option<u64>,
    pub duration_ms: u64,
    /// Output tokens per second after the first token.
    pub tokens_per_s: Option<f64>,
    /// Pieces the answer streamed in.
    pub chunks: usize,
    pub parse: Report,
    /// This answer passed validation and its stream did not fail.
    pub ok: bool,
    /// The feedback this answer drew, sent as the next turn's last user message (`null` when the
    /// answer passed or no turn followed).
    pub feedback: Option<String>,
    /// How the structured-output mode was settled for this turn.
    pub mode: ModeReport,
    /// The request as sent (header, with `request.mode`), every chunk with its time, and the end:
    /// exactly the transcript `--record` writes, so the turn replays.
    pub transcript: Transcript,
    /// Why the client stopped the answer itself (it passed `max_tokens` as we count it, or the
    /// answer-size cap): the turn ends `length` with what came before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_by_client: Option<String>,
    /// The answer came from the response cache (`run::cache`): recorded earlier for the same request,
    /// played instantly, so its times are not the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// What the model thought before this answer (the local model's thinking mode): shown apart,
    /// never parsed, validated or scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
}

/// A turn's thought: its text (without the `<think>` tags) and the tokens the model spent on it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    pub text: String,
    pub tokens: u32,
}

impl Thinking {
    /// The thought of the thinking tokens whose texts, as generated, are `raw` (tags included).
    pub fn of(raw: &str, tokens: u32) -> Self {
        Self { text: crate::engine::thinking::shown(raw), tokens }
    }
}

impl Turn {
    /// The request this turn sent, read back from its transcript header.
    pub fn request(&self) -> Option<Request> {
        serde_json::from_value(self.transcript.header.request.clone()).ok()
    }

    /// The summary a live view shows when the turn ends.
    pub fn summary(&self) -> super::TurnSummary {
        super::TurnSummary {
            turn: self.turn,
            ok: self.ok,
            finish_reason: self.finish_reason.clone(),
            usage: self.usage,
            ttft_ms: self.ttft_ms,
            duration_ms: self.duration_ms,
            tokens_per_s: self.tokens_per_s,
            chunks: self.chunks,
            parse: self.parse.clone(),
        }
    }
}

/// Whether a parse report passes: json needs a valid value, jsonl no invalid or schema-failing line.
pub fn passes(report: &Report) -> bool {
    match report {
        Report::Text(_) => true,
        Report::Json(r) => r.ok,
        Report::Jsonl(r) => r.summary.invalid_json == 0 && r.summary.schema_error == 0,
    }
}

/// What the report hands on: the value, the items, or the text.
pub fn result_of(report: &Report) -> Value {
    match report {
        Report::Text(r) => Value::String(r.text.clone()),
        Report::Json(r) => r.value.clone().unwrap_or(Value::Null),
        Report::Jsonl(r) => Value::Array(r.items.to_values()),
    }
}

/// What was repaired to read the answer, in words (empty when nothing was).
pub fn repairs_of(report: &Report) -> Vec<String> {
    match report {
        Report::Text(_) => Vec::new(),
        Report::Json(r) => r.repairs.iter().map(|repair| format!("{} at byte {}", repair.what, repair.at)).collect(),
        Report::Jsonl(r) => r
            .lines
            .iter()
            .flat_map(|line| line.repairs.iter().map(move |what| format!("line {}: {what}", line.line)))
            .collect(),
    }
}

/// The warnings a record carries for its last turn: truncation beside any repair, a failed or
/// interrupted stream with what was kept.
pub fn warnings_of(turn: &Turn) -> Vec<String> {
    let mut warnings = Vec::new();
    let repairs = repairs_of(&turn.parse);
    if let Some(cut) = &turn.cut_by_client {
        warnings.push(cut.clone());
    }
    match &turn.finish_reason {
        Some(FinishReason::Length) => {
            let limit = turn.request().and_then(|r| r.max_tokens).map(|n| format!(" of {n}")).unwrap_or_default();
            let fate = match &turn.parse {
                Report::Json(r) if r.ok && !repairs.is_empty() => {
                    "the result was repaired from the cut answer and may be missing what was cut".to_string()
                }
                Report::Json(r) if r.ok => "the result parsed but may be missing what was cut".to_string(),
                Report::Jsonl(r) => match r.lines.last().map(|l| (&l.status, l.line)) {
                    Some((LineStatus::InvalidJson { .. }, line)) => {
                        format!("{} complete items kept; line {line} was cut mid-record", r.items.len())
                    }
                    _ => format!("{} items kept; more may have followed", r.items.len()),
                },
                _ => "no usable result".to_string(),
            };
            warnings.push(match &turn.cut_by_client {
                Some(_) => format!("truncated by the client (finish_reason length); {fate}"),
                None => format!("truncated: the answer hit the max-tokens limit{limit} (finish_reason length); {fate}"),
            });
        }
        Some(FinishReason::Interrupted) => warnings
            .push("interrupted: the stream ended without a finish reason; the answer may be incomplete".to_string()),
        Some(FinishReason::ContentFilter) => {
            warnings.push("the provider filtered the answer (finish_reason content_filter)".to_string())
        }
        _ => {}
    }
    if let Some(error @ ProviderError::Batch { .. }) = &turn.error {
        warnings.push(format!("no answer: {error}"));
    } else if let Some(error) = &turn.error {
        warnings.push(format!(
            "the stream failed after {} chunks ({} characters kept as the answer): {error}",
            turn.chunks,
            turn.output.chars().count()
        ));
    }
    let repeats = super::repeats::repeated_lines(&turn.parse);
    if !repeats.is_empty() {
        const LISTED: usize = 10;
        let mut listed: Vec<String> =
            repeats.iter().take(LISTED).map(|(line, first)| format!("line {line} repeats line {first}")).collect();
        if repeats.len() > LISTED {
            listed.push(format!("and {} more", repeats.len() - LISTED));
        }
        warnings.push(format!(
            "{} repeated {} not counted as items: {}",
            repeats.len(),
            if repeats.len() == 1 { "line" } else { "lines" },
            listed.join(", ")
        ));
    }
    if !repairs.is_empty() {
        const LISTED: usize = 10;
        let mut listed = repairs.iter().take(LISTED).cloned().collect::<Vec<_>>().join("; ");
        if repairs.len() > LISTED {
            listed.push_str(&format!("; and {} more", repairs.len() - LISTED));
        }
        warnings.push(format!("repaired: {listed}"));
    }
    warnings
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl RunRecord {
    /// A run a signal or the user stopped before any answer began: it has nothing to keep.
    pub fn never_started(&self) -> bool {
        self.cancelled && self.turns.iter().all(|t| t.chunks == 0)
    }

    /// What the run handed on, in a few words: `3 items`, `1 value` or `no result`.
    pub fn result_in_words(&self) -> String {
        match &self.result {
            Value::Array(items) => format!("{} items", items.len()),
            Value::Null => "no result".into(),
            _ => "1 value".into(),
        }
    }

    /// The run's verdict in one line: turns, verdicts, finish reason, tokens, time to first token, speed.
    pub fn summary_line(&self) -> String {
        let Some(last) = self.turns.last() else { return format!("{}: no turn was run", self.prompt) };
        let verdicts = match &last.parse {
            Report::Text(r) => format!("text, {} characters", r.text.chars().count()),
            Report::Json(r) if r.ok => "json: valid".to_string(),
            Report::Json(r) => {
                let kind = r.error.as_ref().map(|e| serde_json::to_value(e.kind).unwrap_or(Value::Null));
                format!("json: invalid ({})", kind.and_then(|k| k.as_str().map(str::to_string)).unwrap_or_default())
            }
            Report::Jsonl(r) => format!(
                "jsonl: {} valid, {} invalid_json, {} schema_error, {} skipped; {} items",
                r.summary.valid,
                r.summary.invalid_json,
                r.summary.schema_error,
                r.summary.skipped,
                r.items.len()
            ),
        };
        let finish = last.finish_reason.as_ref().map_or("failed".to_string(), |f| f.to_string());
        let tokens = last.usage.map_or("?".to_string(), |u| {
            format!("{} in / {} out{}", u.input_tokens, u.output_tokens, if u.estimated { " (estimated)" } else { "" })
        });
        let timing = if last.cached {
            // Played from the response cache: its times are not the model's.
            "cached".to_string()
        } else {
            let ttft = last.ttft_ms.map_or("-".to_string(), |t| format!("{t} ms"));
            let speed = last.tokens_per_s.map_or("- tokens/s".to_string(), |s| format!("{s:.1} tokens/s"));
            format!("ttft {ttft} · {speed}")
        };
        let case = self.case.as_ref().map(|c| format!(" [{c}]")).unwrap_or_default();
        format!(
            "{}{case}: {} after {} of {} turns · {verdicts} · finish {finish} · tokens {tokens} · {timing}",
            self.prompt,
            if self.ok { "ok" } else { "FAILED" },
            self.turns.len(),
            self.max_turns,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::parse;

    fn turn(answer: &str, finish: Option<FinishReason>) -> Turn {
        let report = parse(ResponseType::Jsonl, Profile::Lenient, None, answer);
        Turn {
            turn: 1,
            output: answer.to_string(),
            finish_reason: finish,
            error: None,
            usage: Some(Usage { input_tokens: 10, output_tokens: 5, estimated: true, cached_input_tokens: 0 }),
            ttft_ms: Some(12),
            duration_ms: 40,
            tokens_per_s: Some(125.0),
            chunks: 3,
            ok: passes(&report),
            parse: report,
            feedback: None,
            mode: ModeReport::default(),
            transcript: Transcript::default(),
            cut_by_client: None,
            cached: false,
            thinking: None,
        }
    }

    #[test]
    fn warnings_say_how_the_answer_ended_and_what_was_repaired() {
        assert!(warnings_of(&turn("{\"a\": 1}\n", Some(FinishReason::Stop))).is_empty());
        let interrupted = warnings_of(&turn("{\"a\": 1}\n", Some(FinishReason::Interrupted)));
        assert!(interrupted[0].starts_with("interrupted:"), "{interrupted:?}");
        let cut = warnings_of(&turn("{\"a\": 1}\n{\"a\": 2}\n{\"a\":", Some(FinishReason::Length)));
        assert!(cut[0].contains("2 complete items kept; line 3 was cut mid-record"), "{cut:?}");
        let commas: String = (0..30).map(|i| format!("{{\"a\": {i},}}\n")).collect();
        let repaired = warnings_of(&turn(&commas, Some(FinishReason::Stop)));
        let last = repaired.last().unwrap();
        assert!(last.starts_with("repaired: line 1: ") && last.ends_with("; and 20 more"), "{repaired:?}");
    }

    #[test]
    fn results_and_verdicts_by_response_type() {
        let report = parse(ResponseType::Json, Profile::Lenient, None, "{\"a\": [1, 2");
        assert_eq!(result_of(&report), serde_json::json!({"a": [1, 2]}));
        assert!(!repairs_of(&report).is_empty());
        let text = parse(ResponseType::Text, Profile::Lenient, None, "hi");
        assert_eq!((result_of(&text), passes(&text)), (Value::String("hi".into()), true));
        let bad = parse(ResponseType::Jsonl, Profile::Lenient, None, "{\"a\": 1}\n{\"a\": }\n");
        assert!(!passes(&bad), "{bad:?}");
        assert_eq!(result_of(&bad), serde_json::json!([{"a": 1}]));
    }
}
