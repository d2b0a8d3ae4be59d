//! Replay throughput: a recorded JSONL transcript of N chunks played as fast as possible through the
//! whole engine (replay provider → live parsing and validation of every line → events → record).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::plan::{Expected, Reading, RunPlan};
use super::{engine, RunEvent};
use crate::output::{Profile, Report, ResponseType};
use crate::prompt::template::Variables;
use crate::provider::replay::{Pace, Replay};
use crate::provider::{ModeReport, Request};
use crate::schema::CompiledSchema;
use crate::truncate::transcript::{Chunk, End, Header, Transcript, FORMAT_VERSION};

/// Bytes per chunk: about one token of a JSON answer.
const CHUNK_BYTES: usize = 6;

/// Chunks per second of one run of the engine over a `chunks`-chunk JSONL transcript (a
/// discriminated-union answer, validated line by line, every event delivered to a sink).
pub fn replay_throughput(chunks: usize) -> std::io::Result<f64> {
    let transcript = union_transcript(chunks.max(1));
    let chunks = transcript.chunks.len();
    let lines = transcript.answer().lines().count();
    let plan = plan()?;
    let provider = Replay::new(transcript, Pace::Instant);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut deltas = 0usize;
    let mut verdicts = 0usize;
    let started = Instant::now();
    let record = runtime.block_on(engine::run(&provider, &plan, |event| match event {
        RunEvent::Delta(_) => deltas += 1,
        RunEvent::Line(_) => verdicts += 1,
        _ => {}
    }));
    let seconds = started.elapsed().as_secs_f64();
    let valid = match record.turns.first().map(|t| &t.parse) {
        Some(Report::Jsonl(report)) => report.summary.valid,
        _ => 0,
    };
    if !record.ok || deltas != chunks || verdicts != lines || valid != lines {
        return Err(std::io::Error::other(format!(
            "the replay did not go through whole: {deltas} of {chunks} chunks, {verdicts} verdicts and {valid} valid of {lines} lines"
        )));
    }
    Ok(chunks as f64 / seconds)
}

fn plan() -> std::io::Result<RunPlan> {
    let schema = union_schema();
    let compiled = CompiledSchema::compile(&schema).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(RunPlan {
        prompt: "bench-replay".into(),
        case: None,
        variables: Variables::new(),
        reading: Reading {
            response_type: ResponseType::Jsonl,
            profile: Profile::Lenient,
            check: Some(Arc::new(compiled)),
        },
        expected: Expected::Schema(schema),
        request: Request::new("bench").user("Extract definitions and relationships, one JSON object per line."),
        mode: ModeReport::default(),
        max_turns: 1,
        context_tokens: 8192,
        limits: super::Limits::default(),
        live_sweep: None,
    })
}

fn union_schema() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["type", "entity", "definition"],
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}}},
        {"type": "object", "required": ["type", "subject", "predicate", "object"],
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"},
                        "predicate": {"type": "string"}, "object": {"type": "string"}}}
    ]})
}

/// A transcript of at least `chunks` chunks of a union JSONL answer, one chunk per millisecond.
fn union_transcript(chunks: usize) -> Transcript {
    let mut answer = String::new();
    let mut line = 0;
    while answer.len() < chunks * CHUNK_BYTES {
        line += 1;
        let record = if line % 3 == 0 {
            json!({"type": "relationship", "subject": format!("entity {line}"), "predicate": "is part of", "object": format!("entity {}", line - 1)})
        } else {
            json!({"type": "definition", "entity": format!("entity {line}"), "definition": format!("The thing numbered {line} in the text.")})
        };
        answer.push_str(&record.to_string());
        answer.push('\n');
    }
    let bytes = answer.as_bytes();
    let pieces: Vec<Chunk> = bytes
        .chunks(CHUNK_BYTES)
        .enumerate()
        .map(|(i, piece)| Chunk {
            t_ms: i as u64,
            delta: String::from_utf8_lossy(piece).into_owned(),
            token: None,
            probs: Vec::new(),
        })
        .collect();
    let end = End { t_ms: pieces.len() as u64, finish_reason: Some("stop".into()), usage: None, error: None };
    let header =
        Header { transcript: FORMAT_VERSION, provider: "bench".into(), model: "bench".into(), request: Value::Null };
    Transcript { header, chunks: pieces, end: Some(end) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_goes_through_the_engine_whole() {
        let transcript = union_transcript(1000);
        assert!(transcript.chunks.len() >= 1000);
        let rate = replay_throughput(100_000).expect("the replay went through");
        assert!(rate > 0.0);
        eprintln!("replay through the engine: {rate:.0} chunks/s");
    }
}
