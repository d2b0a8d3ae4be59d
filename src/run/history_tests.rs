//! The history reads back typed: a record this build appends reads back equal, a line an older build
//! wrote reads with defaults, and a line that is not a record is skipped and named.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::output::{parse, Profile, Report, ResponseType};
use crate::provider::{Fallback, FinishReason, ModeReport, ProviderError, Request, StructuredMode, Usage};
use crate::run::record::{passes, result_of, Turn};
use crate::schema::{Check, CompiledSchema};
use crate::truncate::transcript::{Chunk, End, Header, Transcript};

fn turn(number: u32, response_type: ResponseType, answer: &str, finish: Option<FinishReason>) -> Turn {
    let check: Arc<dyn Check> =
        Arc::new(CompiledSchema::compile(&json!({"type": "object", "required": ["topic"]})).unwrap());
    let report = parse(response_type, Profile::Lenient, Some(check), answer);
    let request = Request::new("gpt-4o-mini").system("Extract topics.").user("Text: prices").max_tokens(64);
    let mode = ModeReport {
        requested: StructuredMode::JsonSchema,
        used: StructuredMode::JsonObject,
        schema_in_prompt: true,
        fallbacks: vec![Fallback {
            from: StructuredMode::JsonSchema,
            to: StructuredMode::JsonObject,
            reason: "HTTP 400: response_format json_schema is not supported".into(),
        }],
    };
    let (first, rest) = answer.split_at(answer.len() / 2);
    Turn {
        turn: number,
        output: answer.to_string(),
        finish_reason: finish.clone(),
        error: None,
        usage: Some(Usage { input_tokens: 31, output_tokens: 17, estimated: number > 1, cached_input_tokens: 0 }),
        ttft_ms: Some(120),
        duration_ms: 480,
        tokens_per_s: Some(47.25),
        chunks: 2,
        ok: passes(&report),
        parse: report,
        feedback: None,
        mode: mode.clone(),
        transcript: Transcript {
            header: Header {
                transcript: 1,
                provider: "openai".into(),
                model: "gpt-4o-mini".into(),
                request: serde_json::to_value(&request).unwrap(),
            },
            chunks: vec![
                Chunk { t_ms: 120, delta: first.into(), token: None, probs: Vec::new() },
                Chunk { t_ms: 300, delta: rest.into(), token: Some(7), probs: Vec::new() },
            ],
            end: Some(End {
                t_ms: 480,
                finish_reason: finish.map(|f| f.to_string()),
                usage: Some(Usage { input_tokens: 31, output_tokens: 17, estimated: false, cached_input_tokens: 0 }),
                error: None,
            }),
        },
        cut_by_client: None,
        cached: false,
        thinking: None,
    }
}

/// A record with every field this build writes set to something, and three kinds of turn.
fn full_record() -> RunRecord {
    let mut first = turn(1, ResponseType::Jsonl, "{\"topic\": \"a\",}\n{\"other\": 1}\n{\"topic\": ", None);
    first.feedback = Some("Line 2: missing `topic`.".into());
    first.error = Some(ProviderError::Broken {
        provider: "openai".into(),
        received_bytes: 512,
        message: "connection reset".into(),
    });
    let mut second =
        turn(2, ResponseType::Jsonl, "{\"topic\": \"a\"}\n{\"topic\": \"b\"}\n", Some(FinishReason::Length));
    second.cut_by_client = Some("the answer passed max_tokens (64) as counted with o200k".into());
    second.cached = true;
    let mut variables = crate::prompt::template::Variables::new();
    variables.insert("text".into(), json!({"body": "prices", "tags": [1, 2.5, null]}));
    let mut record = RunRecord {
        prompt: "extract-topics".into(),
        case: Some("economics".into()),
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
        structured: StructuredMode::JsonSchema,
        response_type: ResponseType::Jsonl,
        profile: Profile::Lenient,
        ok: second.ok,
        result: result_of(&second.parse),
        truncated: true,
        repaired: true,
        warnings: super::super::record::warnings_of(&second),
        error: Some("openai: the connection broke mid-stream".into()),
        variables,
        mode: second.mode.clone(),
        max_turns: 3,
        started_at_ms: 1_764_000_000_123,
        duration_ms: 960,
        cancelled: true,
        batch: Some("tbab12-00001-extract-topics".into()),
        seed: Some(8),
        turns: vec![first, second],
    };
    let json_turn =
        turn(3, ResponseType::Json, "```json\n{\"topic\": [1, 2", Some(FinishReason::Other("end_turn".into())));
    let text_turn = turn(4, ResponseType::Text, "plain \u{1b}[31m text\n", Some(FinishReason::Stop));
    record.turns.extend([json_turn, text_turn]);
    record
}

#[test]
fn a_record_appended_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(HISTORY_FILE);
    let record = full_record();
    let minimal = RunRecord {
        case: None,
        warnings: Vec::new(),
        error: None,
        batch: None,
        seed: None,
        cancelled: false,
        ..record.clone()
    };
    append_to(&path, &record).unwrap();
    append_to(&path, &minimal).unwrap();
    let history = read(&path).unwrap();
    assert!(history.skipped.is_empty(), "{:?}", history.skipped);
    assert_eq!(history.records, vec![record, minimal]);
}

#[test]
fn a_run_stopped_before_its_answer_began_is_not_kept_and_a_cancelled_one_with_an_answer_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(HISTORY_FILE);
    let mut never_started = full_record();
    never_started.cancelled = true;
    for turn in &mut never_started.turns {
        turn.chunks = 0;
    }
    assert!(never_started.never_started());
    assert!(!keep_in(&path, &never_started).unwrap());
    assert!(!path.exists(), "nothing was written");
    let mut partial = full_record();
    partial.cancelled = true;
    assert!(!partial.never_started(), "it streamed {} chunks", partial.turns[0].chunks);
    assert!(keep_in(&path, &partial).unwrap());
    assert_eq!(read(&path).unwrap().records, vec![partial]);
}

/// A record as the first build that kept a history wrote it: no `cancelled`, `batch` or
/// `cut_by_client`, nothing this build adds when it has something to say.
const OLDER_LINE: &str = r#"{"prompt":"extract-definitions","provider":"openai","model":"gpt-4o-mini","structured":"none","response_type":"jsonl","profile":"lenient","ok":true,"result":[{"topic":"inflation"}],"truncated":false,"repaired":false,"mode":{"requested":"none","used":"none","schema_in_prompt":true},"max_turns":2,"started_at_ms":1763800000000,"duration_ms":812,"turns":[{"turn":1,"output":"{\"topic\": \"inflation\"}\n","finish_reason":"stop","usage":{"input_tokens":40,"output_tokens":9},"ttft_ms":210,"duration_ms":812,"tokens_per_s":15.5,"chunks":3,"parse":{"response_type":"jsonl","profile":"lenient","items":[{"topic":"inflation"}],"lines":[{"line":1,"status":"valid"}],"summary":{"valid":1,"invalid_json":0,"schema_error":0,"skipped":0}},"ok":true,"feedback":null,"mode":{"requested":"none","used":"none"},"transcript":{"header":{"transcript":1,"provider":"openai","model":"gpt-4o-mini","request":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Define."}]}},"chunks":[{"t_ms":210,"delta":"{\"topic\": "},{"t_ms":400,"delta":"\"inflation\"}\n"}],"end":{"t_ms":812,"finish_reason":"stop"}}}]}"#;

#[test]
fn an_older_line_reads_and_a_foreign_one_is_skipped_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(HISTORY_FILE);
    let lines = [
        OLDER_LINE,
        r#"{"prompt": "earlier", "pad": "xxxx"}"#,
        "[1, 2, 3]",
        "not json at all",
        "",
        &OLDER_LINE[..OLDER_LINE.len() / 2],
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let history = read(&path).unwrap();
    assert_eq!(history.records.len(), 1);
    let older = &history.records[0];
    assert_eq!((older.prompt.as_str(), older.cancelled, older.batch.as_deref()), ("extract-definitions", false, None));
    assert_eq!((older.turns[0].cut_by_client.as_ref(), older.turns[0].cached), (None, false));
    assert_eq!(older.turns[0].finish_reason, Some(FinishReason::Stop));
    assert!(older.turns[0].request().is_some_and(|r| r.messages.len() == 1));
    assert!(matches!(&older.turns[0].parse, Report::Jsonl(r) if r.items == [json!({"topic": "inflation"})]));
    let skipped: Vec<(usize, &str)> = history.skipped.iter().map(|s| (s.line, s.message.as_str())).collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert_eq!(skipped[0].0, 2);
    assert!(skipped[0].1.starts_with("not a run record: missing field `provider` (column "), "{skipped:?}");
    assert_eq!(skipped[1], (3, "not a run record: not a JSON object"));
    assert_eq!(skipped[2], (4, "not JSON: expected ident (column 2)"));
    assert_eq!(skipped[3], (6, "cut short: an append was interrupted"));
    let warnings = history.warnings(&path);
    assert!(
        warnings[0].ends_with("line 2: skipped (not a run record: missing field `provider` (column 36))"),
        "{warnings:?}"
    );
}
