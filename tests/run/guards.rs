//! The guards against runaway lists (issue 19): a jsonl answer that repeats its lines is stopped at
//! the end of the line that made `max_repeats` repeats in a row, each repeat reported and not counted
//! as an item; `max_items` stops an answer once it holds that many items. Both end `stop` at a
//! record's end, say why in `cut_by_client`, and keep the transcript equal to the answer.

use std::time::Duration;

use serde_json::json;
use tunebench::output::{LineStatus, Report};
use tunebench::prompt::file::ProviderSettings;
use tunebench::provider::wire_server::{chunk_frame, Reply, Step};
use tunebench::provider::FinishReason;
use tunebench::run::RunEvent;

use crate::support::*;

fn chunk(content: &str) -> String {
    let event = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
    format!("data: {event}\n\n")
}

fn openai_with(more: ProviderSettings) -> ProviderSettings {
    ProviderSettings { name: Some("openai".into()), ..more }
}

/// One line, then a chunk that ends one record and starts the next, forever: every chunk holds a
/// newline with text after it, so a stop at a line's end falls inside a chunk.
fn endless_repeats() -> Reply {
    Reply::chunked("text/event-stream")
        .chunk(chunk("{\"topic\": \"inflation\", \"definition\": \"Prices rising.\"}\n{\"topic\": "))
        .then(Step::Repeat {
            bytes: chunk_frame(chunk("\"more\", \"definition\": \"again\"}\n{\"topic\": ").as_bytes()),
            every: Duration::ZERO,
        })
}

#[tokio::test]
async fn repeated_lines_stop_the_answer_at_a_line_end_and_are_reported() {
    let server = serve(vec![endless_repeats()]).await;
    let plan = plan_with(&sample("extract-topics"), None, &openai_with(ProviderSettings::default()), None);
    let (record, events) = run(openai(&server).as_ref(), &plan).await;
    let turn = &record.turns[0];
    assert_eq!(turn.finish_reason, Some(FinishReason::Stop));
    assert!(!record.truncated);
    let cut = turn.cut_by_client.as_deref().unwrap_or_default();
    assert!(cut.contains("2 repeated lines in a row") && cut.contains("--max-repeats"), "{cut}");
    // Line 2 is new, lines 3 and 4 repeat it: the answer ends with line 4's newline.
    assert_eq!(turn.output.lines().count(), 4, "{}", turn.output);
    assert!(turn.output.ends_with("\"again\"}\n"), "{:?}", turn.output);
    assert_eq!(turn.transcript.answer(), turn.output, "the transcript holds the answer as kept");
    assert_eq!(streamed(&events), turn.output);
    assert_eq!(turn.transcript.end.as_ref().and_then(|e| e.finish_reason.as_deref()), Some("stop"));
    assert!(record.ok, "{:?}", record.warnings);
    assert_eq!(
        record.result,
        json!([
            {"topic": "inflation", "definition": "Prices rising."},
            {"topic": "more", "definition": "again"}
        ])
    );
    let Report::Jsonl(report) = &turn.parse else { panic!("{:?}", turn.parse) };
    let repeated = LineStatus::Skipped { reason: "repeats line 2".into() };
    assert_eq!(report.lines.iter().filter(|v| v.status == repeated).count(), 2, "{:?}", report.lines);
    assert_eq!((report.summary.valid, report.summary.skipped), (2, 2));
    // The live verdicts are the final ones.
    let live: Vec<_> =
        events.iter().filter_map(|e| if let RunEvent::Line(v) = e { Some(v.clone()) } else { None }).collect();
    assert_eq!(live, report.lines);
    assert!(
        record
            .warnings
            .iter()
            .any(|w| w == "2 repeated lines not counted as items: line 3 repeats line 2, line 4 repeats line 2"),
        "{:?}",
        record.warnings
    );
    assert!(server.wait_for_client_closes(1, Duration::from_secs(10)).await, "the stream was closed");
}

#[tokio::test]
async fn max_items_stops_the_answer_at_its_last_item() {
    let mut reply = Reply::chunked("text/event-stream");
    for n in 1..=10 {
        reply = reply.chunk(chunk(&format!("{{\"topic\": \"t{n}\", \"definition\": \"d{n}\"}}\n")));
    }
    let reply =
        reply.then(Step::Repeat { bytes: chunk_frame(chunk("{\"topic\": ").as_bytes()), every: Duration::ZERO });
    let server = serve(vec![reply]).await;
    let settings = openai_with(ProviderSettings { max_items: Some(3), ..Default::default() });
    let plan = plan_with(&sample("extract-topics"), None, &settings, None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    let turn = &record.turns[0];
    assert_eq!(turn.finish_reason, Some(FinishReason::Stop));
    assert_eq!(record.result.as_array().map(Vec::len), Some(3), "{}", record.result);
    assert_eq!(turn.output.lines().count(), 3);
    let cut = turn.cut_by_client.as_deref().unwrap_or_default();
    assert!(cut.contains("max_items 3") && cut.contains("--max-items"), "{cut}");
    assert!(record.ok && record.warnings.contains(&cut.to_string()), "{:?}", record.warnings);
}

#[tokio::test]
async fn repeats_are_dropped_but_do_not_stop_when_max_repeats_is_0() {
    let lines = ["{\"topic\": \"a\", \"definition\": \"x\"}\n", "{\"definition\": \"x\", \"topic\": \"a\"}\n"];
    let mut reply = Reply::chunked("text/event-stream");
    for n in 0..6 {
        reply = reply.chunk(chunk(lines[n % 2]));
    }
    let reply = reply.chunk("data: [DONE]\n\n").end();
    let server = serve(vec![reply]).await;
    let settings = openai_with(ProviderSettings { max_repeats: Some(0), ..Default::default() });
    let plan = plan_with(&sample("extract-topics"), None, &settings, None);
    let (record, _) = run(openai(&server).as_ref(), &plan).await;
    let turn = &record.turns[0];
    assert_eq!(turn.cut_by_client, None);
    assert_eq!(turn.output.lines().count(), 6);
    assert_eq!(record.result, json!([{"topic": "a", "definition": "x"}]), "key order aside, one item");
    assert!(
        record.warnings.iter().any(|w| w.starts_with("5 repeated lines not counted as items")),
        "{:?}",
        record.warnings
    );
}

#[test]
fn max_items_and_max_repeats_come_from_the_prompt_file_and_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(sample("extract-topics")).unwrap();
    let text = text.replace("[provider]\n", "[provider]\nmax_items = 4\nmax_repeats = 3\nrepeat_penalty = 1.2\n");
    let path = prompt_file(dir.path(), "guarded", &text);
    let prompt = tunebench::prompt::file::PromptFile::load(&path).unwrap();
    let local = ProviderSettings { name: Some("local".into()), ..Default::default() };
    let settings =
        tunebench::run::setup::settings(&prompt, &tunebench::run::SetupOptions::from_flags(local.clone()).unwrap())
            .unwrap();
    assert_eq!((settings.limits.max_items, settings.limits.max_repeats), (Some(4), 3));
    assert_eq!(settings.repeat_penalty, Some(1.2));
    let cli = ProviderSettings { max_items: Some(9), repeat_penalty: Some(1.0), ..local };
    let settings =
        tunebench::run::setup::settings(&prompt, &tunebench::run::SetupOptions::from_flags(cli.clone()).unwrap())
            .unwrap();
    assert_eq!((settings.limits.max_items, settings.repeat_penalty), (Some(9), None), "1 is off");
    let plan = plan_with(&path, None, &cli, None);
    assert_eq!(plan.request.repeat_penalty, None);
    let bad = text.replace("max_items = 4", "max_items = \"four\"");
    let error =
        tunebench::prompt::file::PromptFile::from_toml_str(&bad, &dir.path().join("bad.toml")).unwrap_err().to_string();
    assert!(error.contains("bad.toml:39:") && error.contains("\"four\""), "{error}");
}

/// A prompt that names its key's variable (`[provider] key_env`, as an imported promptfoo config does)
/// is told to set that variable when the key is missing, not the provider's default one.
#[test]
fn a_missing_key_names_the_variable_the_prompt_gives() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("p.toml");
    std::fs::write(
        &prompt,
        "id = \"p\"\ntemplate = \"hi\"\n[provider]\nname = \"openai\"\nmodel = \"gpt-4o-mini\"\nkey_env = \"TEAM_OPENAI_KEY\"\n",
    )
    .unwrap();
    let setup = tunebench::run::RunSetup::load(&prompt, tunebench::run::SetupOptions::default()).unwrap();
    let error = setup.provider_with(None, &|_| None).err().expect("no key: no provider").to_string();
    assert!(error.contains("set TEAM_OPENAI_KEY") && !error.contains("OPENAI_API_KEY"), "{error}");
}
