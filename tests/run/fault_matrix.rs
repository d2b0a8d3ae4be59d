//! The provider fault matrix, at the level users see: each fault served by a real in-process HTTP server
//! to a whole run (engine, parser, record, history). Every case: no crash, the answer received before
//! the fault kept in the run record (and in the history file, read back), and a message that names what
//! happened.

use std::time::Duration;

use serde_json::json;
use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::http::HttpOptions;
use tunebench::provider::openai::OpenAi;
use tunebench::provider::wire_server::{chunk_frame, Reply, Step};
use tunebench::run::{history, RunEvent, RunRecord};

use crate::support::*;

/// One complete JSONL line and the start of a second, as the fault-free part of every stream.
const PARTIAL: &str = "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n{\"topic\": \"inter";

fn chunk(content: Option<&str>, finish: Option<&str>) -> String {
    let delta = content.map_or(json!({}), |c| json!({"content": c}));
    let event = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {event}\n\n")
}

/// A stream that sends [`PARTIAL`] in two pieces, then does `then`.
fn partial_then(then: Step) -> Reply {
    let (first, second) = PARTIAL.split_at(40);
    Reply::chunked("text/event-stream").chunk(chunk(Some(first), None)).chunk(chunk(Some(second), None)).then(then)
}

fn whole(answer: &str) -> Reply {
    Reply::chunked("text/event-stream")
        .chunk(chunk(Some(answer), None))
        .chunk(chunk(None, Some("stop")))
        .chunk("data: [DONE]\n\n")
        .end()
}

/// Where the redirect fault points: another origin (port 9, discard), which must never be reached.
const ELSEWHERE: &str = "http://127.0.0.1:9/v1/chat/completions";

struct Fault {
    name: &'static str,
    replies: Vec<Reply>,
    options: HttpOptions,
    /// The run's own settings over the prompt's (the client's limits).
    limits: ProviderSettings,
    /// What the record's last turn must hold as the answer (its start, for a stream with no end).
    kept: String,
    /// `kept` is the whole answer, not its start.
    whole: bool,
    /// Words the record's error (or, for a stream without a fault of its own, a warning) must contain.
    says: &'static [&'static str],
    /// Whether the run still passes (a fault the provider recovered from).
    ok: bool,
}

fn options() -> HttpOptions {
    HttpOptions {
        read_timeout: Duration::from_secs(5),
        max_retry_wait: Duration::from_secs(5),
        ..HttpOptions::default()
    }
}

fn matrix() -> Vec<Fault> {
    let json_error = |status: u16, message: &str| {
        Reply::status(status, "application/json", &json!({"error": {"message": message}}).to_string())
    };
    let valid = "{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n";
    let huge = format!("{{\"topic\": \"{}\", \"definition\": \"long\"}}\n", "x".repeat(10 * 1024 * 1024));
    let fault = |name, replies, kept: &str, says, ok| Fault {
        name,
        replies,
        options: options(),
        limits: ProviderSettings::default(),
        kept: kept.into(),
        whole: true,
        says,
        ok,
    };
    // A stream that sends `valid` and then `line` forever, a write every `every`; the client must end it.
    let endless = |line: &str, every: Duration| {
        Reply::chunked("text/event-stream")
            .chunk(chunk(Some(valid), None))
            .then(Step::Repeat { bytes: chunk_frame(chunk(Some(line), None).as_bytes()), every })
    };
    let limited = |fault: Fault, limits: ProviderSettings| Fault { limits, whole: false, ..fault };
    vec![
        fault(
            "400",
            vec![json_error(400, "'messages' is a required property")],
            "",
            &["HTTP 400", "'messages' is a required property"],
            false,
        ),
        fault("401", vec![json_error(401, "Missing bearer token")], "", &["HTTP 401", "set OPENAI_API_KEY"], false),
        fault("404", vec![json_error(404, "Not Found")], "", &["HTTP 404", "/v1/chat/completions"], false),
        fault(
            "429 with Retry-After",
            vec![
                Reply::with_headers(
                    429,
                    &[("content-type", "application/json"), ("retry-after", "1")],
                    r#"{"error":{"message":"Rate limit reached"}}"#,
                ),
                whole(valid),
            ],
            valid,
            &[],
            true,
        ),
        fault(
            "500 with a plain-text body",
            vec![Reply::status(500, "text/plain", "Internal Server Error: CUDA out of memory")],
            "",
            &["HTTP 500", "CUDA out of memory"],
            false,
        ),
        Fault {
            options: HttpOptions { max_retries: 1, ..options() },
            ..fault(
                "503",
                vec![Reply::with_headers(
                    503,
                    &[("content-type", "text/plain"), ("retry-after-ms", "20")],
                    "Service Unavailable: loading model",
                )],
                "",
                &["HTTP 503", "loading model"],
                false,
            )
        },
        fault(
            "connection reset mid-stream",
            vec![partial_then(Step::Reset)],
            PARTIAL,
            &["connection broke mid-stream"],
            false,
        ),
        fault(
            "stream ended without a finish reason",
            vec![partial_then(Step::Write(b"0\r\n\r\n".to_vec()))],
            PARTIAL,
            &["interrupted", "without a finish reason"],
            false,
        ),
        fault(
            "malformed SSE",
            vec![partial_then(Step::Write(b"1a\r\ndata: {\"choices\": [{\"ind\n\n\r\n0\r\n\r\n".to_vec()))],
            PARTIAL,
            &["malformed SSE event", "{\"choices\": [{\"ind"],
            false,
        ),
        Fault {
            options: HttpOptions { read_timeout: Duration::from_millis(300), ..options() },
            ..fault(
                "a stall",
                vec![partial_then(Step::AwaitClose)],
                PARTIAL,
                &["no data from the server for 300 ms", "stalled"],
                false,
            )
        },
        fault("a 10 MB line", vec![whole(&huge)], &huge, &[], true),
        limited(
            fault(
                "an endless stream past max_tokens",
                vec![endless("{\"topic\": \"more\", \"definition\": \"again\"}\n", Duration::ZERO)],
                valid,
                &["cut off by the client", "max_tokens 50"],
                true,
            ),
            ProviderSettings { max_tokens: Some(50), max_repeats: Some(0), ..ProviderSettings::default() },
        ),
        limited(
            fault(
                "an endless stream of one repeated line",
                vec![endless("{\"topic\": \"more\", \"definition\": \"again\"}\n", Duration::ZERO)],
                valid,
                &["stopped by the client", "2 repeated lines in a row", "not counted as items"],
                true,
            ),
            ProviderSettings::default(),
        ),
        limited(
            fault(
                "an endless stream past the answer cap",
                vec![endless("{\"topic\": \"more\", \"definition\": \"again\"}\n", Duration::ZERO)],
                valid,
                &["cut off by the client", "passed 4096 bytes"],
                true,
            ),
            ProviderSettings {
                max_tokens: Some(u32::MAX / 2),
                max_answer_bytes: Some(4096),
                max_repeats: Some(0),
                ..ProviderSettings::default()
            },
        ),
        limited(
            fault(
                "a trickle past the run's deadline",
                vec![endless("{\"topic\": \"drip\", \"definition\": \"drop\"}\n", Duration::from_millis(100))],
                valid,
                &["cancelled", "deadline of 1 s"],
                false,
            ),
            ProviderSettings { timeout: Some(1.0), max_repeats: Some(0), ..ProviderSettings::default() },
        ),
        fault(
            "a redirect to another origin",
            vec![Reply::with_headers(307, &[("location", ELSEWHERE), ("content-type", "text/plain")], "moved")],
            "",
            &["HTTP 307", "another origin", ELSEWHERE],
            false,
        ),
        fault(
            "wrong content-type",
            vec![Reply::status(200, "text/html; charset=utf-8", "<html><body>Please log in</body></html>")],
            "",
            &["expected text/event-stream", "\"text/html\"", "Please log in"],
            false,
        ),
    ]
}

fn message_of(record: &RunRecord) -> String {
    let mut text = record.error.clone().unwrap_or_default();
    text.push('\n');
    text.push_str(&record.warnings.join("\n"));
    text
}

#[tokio::test]
async fn every_fault_keeps_the_partial_answer_and_names_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let history_file = dir.path().join("history.jsonl");
    let faults = matrix();
    let mut summary = Vec::new();
    let mut lengths = Vec::new();
    for fault in &faults {
        let server = serve(fault.replies.clone()).await;
        let provider = OpenAi::new(&format!("{}/v1", server.url()), None, fault.options.clone()).unwrap();
        let settings = ProviderSettings { name: Some("openai".into()), ..fault.limits.clone() };
        let plan = plan_with(&sample("extract-topics"), None, &settings, None);
        let (record, events) = run(&provider, &plan).await;
        let turn = record.turns.last().unwrap_or_else(|| panic!("{}: no turn", fault.name));
        let kept = if fault.whole { turn.output == fault.kept } else { turn.output.starts_with(&fault.kept) };
        assert!(kept, "{}: kept {} bytes, expected {}", fault.name, turn.output.len(), fault.kept.len());
        assert_eq!(record.ok, fault.ok, "{}: {}", fault.name, message_of(&record));
        let message = message_of(&record);
        for words in fault.says {
            assert!(message.contains(words), "{}: {words:?} not in {message}", fault.name);
        }
        if fault.kept == PARTIAL {
            // The complete first line is an item; the cut second line is not.
            assert_eq!(
                record.result,
                json!([{"topic": "inflation", "definition": "Prices rising."}]),
                "{}",
                fault.name
            );
        }
        if fault.name.starts_with("429") {
            assert!(events.iter().any(|e| matches!(e, RunEvent::Waiting { after_ms: 1000, .. })), "{events:?}");
        }
        history::append_to(&history_file, &record).unwrap();
        summary.push((fault.name, record.ok, turn.output.len()));
        lengths.push(turn.output.len());
    }
    let kept = history::read(&history_file).unwrap().records;
    assert_eq!(kept.len(), faults.len());
    for ((fault, line), length) in faults.iter().zip(&kept).zip(&lengths) {
        assert_eq!(line.turns[0].output.len(), *length, "{}: the history keeps it", fault.name);
    }
    assert_eq!(summary.len(), 17, "{summary:?}");
}
