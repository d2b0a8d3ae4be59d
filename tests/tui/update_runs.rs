//! Transition tests of what a run shows and leaves: the structured mode in the status bar (used,
//! fallback, default on local), cancelled runs in the history, the truncation chart growing live.

use tunebench::provider::{Fallback, ModeReport, StructuredMode};
use tunebench::run::ReplayFrom;
use tunebench::run::RunEvent;
use tunebench::tui::msg::{Action, Effect, Job, Msg, Start};
use tunebench::tui::panes::status::mode_text;
use tunebench::tui::state::State;
use tunebench::tui::update::update;

use super::support::*;

fn mode_event(state: &mut State, mode: ModeReport) {
    let run = state.workbench.run_id;
    update(state, Msg::Run { run, event: Box::new(RunEvent::Mode(mode)), at_ms: 5 });
}

#[test]
fn the_status_bar_says_constrained_was_chosen_by_default_on_local() {
    let mut state = sample_state();
    tunebench::tui::workbench::fetch::use_local_model(&mut state);
    assert_eq!(mode_text(&state), "asked constrained (default on local)");
    let effects = update(&mut state, Msg::Action(Action::Run));
    assert!(matches!(effects.as_slice(), [Effect::Start(Start::Run(_)), Effect::LoadTokenizer { .. }]), "{effects:?}");
    assert_eq!(mode_text(&state), "asked constrained (default on local)", "not reported yet");
    let used = StructuredMode::Constrained;
    mode_event(&mut state, ModeReport { requested: used, used, ..ModeReport::default() });
    assert_eq!(mode_text(&state), "constrained (default on local)");
    // Chosen by the user (alt-m cycles back round to constrained): no "default".
    let mut state = sample_state();
    tunebench::tui::workbench::fetch::use_local_model(&mut state);
    for _ in 0..4 {
        update(&mut state, alt('m'));
    }
    assert_eq!(state.choice.structured, Some(tunebench::provider::StructuredMode::Constrained));
    update(&mut state, Msg::Action(Action::Run));
    mode_event(&mut state, ModeReport { requested: used, used, ..ModeReport::default() });
    assert_eq!(mode_text(&state), "constrained");
}

#[test]
fn a_fallback_shows_each_step_and_its_reason() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    state.choice.structured = Some(tunebench::provider::StructuredMode::JsonSchema);
    update(&mut state, Msg::Action(Action::Run));
    assert_eq!(mode_text(&state), "asked json-schema");
    let reason = "the server refused response_format json_schema (400)".to_string();
    let fallback = Fallback { from: StructuredMode::JsonSchema, to: StructuredMode::JsonObject, reason };
    let report = ModeReport {
        requested: StructuredMode::JsonSchema,
        used: StructuredMode::JsonObject,
        schema_in_prompt: true,
        fallbacks: vec![fallback],
    };
    mode_event(&mut state, report);
    assert_eq!(mode_text(&state), "json-schema→json-object (fallback)");
    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains("fell back from json-schema to json-object") && note.contains("(400)"), "{note}");
    // The next run starts without the old report.
    let run = state.workbench.run_id;
    update(&mut state, Msg::Run { run, event: Box::new(RunEvent::RunEnded { ok: true, turns: 1 }), at_ms: 9 });
    update(&mut state, Msg::Action(Action::Run));
    assert_eq!(mode_text(&state), "asked json-schema");
}

#[test]
fn a_cancelled_run_stays_cancelled_when_its_record_arrives() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    feed(&mut state, sample_events(Some(40)));
    let partial = state.workbench.run.output.clone();
    assert_eq!(update(&mut state, Msg::Action(Action::CancelRun)), [Effect::Cancel(Job::Run)]);
    update(&mut state, Msg::RunCancelled);
    // The engine still ends the run (its turn, the interrupted finish), then its record is written.
    let run = state.workbench.run_id;
    let finish = RunEvent::Finish(tunebench::provider::FinishReason::Interrupted);
    update(&mut state, Msg::Run { run, event: Box::new(finish), at_ms: 50 });
    update(&mut state, Msg::Run { run, event: Box::new(RunEvent::RunEnded { ok: false, turns: 1 }), at_ms: 50 });
    assert_eq!(state.workbench.phase, tunebench::tui::workbench::state::RunPhase::Cancelled);
    assert_eq!(state.workbench.run.output, partial);
    let record = Box::new(history_record());
    let effects = update(&mut state, Msg::RunRecorded { kept: Ok("/data/history.jsonl".into()), record });
    assert!(effects.is_empty(), "the record came with the message: {effects:?}");
    assert!(state.note.as_deref().unwrap_or("").starts_with("cancelled run saved to the history"), "{:?}", state.note);
}

/// Runs every sweep the effects ask for (as the runner does, on this thread) and hands it back.
fn deliver_sweeps(state: &mut State, effects: Vec<Effect>) -> usize {
    let mut count = 0;
    for effect in effects {
        if let Effect::ComputeSweep(request) = effect {
            let sweep = tunebench::tui::runner::compute_sweep(&request).map(Box::new);
            let (run, answer_len) = (request.run, request.answer.len());
            update(state, Msg::SweepReady { run, answer_len, sweep });
            count += 1;
        }
    }
    count
}

#[test]
fn the_truncation_chart_grows_from_the_runs_own_sweep() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let run = state.workbench.run_id;
    let events = sample_events(None);
    let deltas = events.iter().filter(|(e, _)| matches!(e, RunEvent::Delta(_))).count();
    let cuts = events.iter().filter(|(e, _)| matches!(e, RunEvent::Cut { .. })).count();
    let mut ends = Vec::new();
    for (event, at_ms) in events {
        let swept = matches!(event, RunEvent::Swept(_));
        let effects = update(&mut state, Msg::Run { run, event: Box::new(event), at_ms });
        assert!(effects.is_empty(), "nothing is swept here: {effects:?}");
        if state.workbench.run.chunk_ends.is_empty() || swept || state.workbench.truncation.sweep.is_some() {
            continue;
        }
        assert!(state.workbench.truncation.live, "the answer so far is marked live");
        assert_eq!(state.workbench.truncation.cut, state.workbench.run.chunk_ends.len(), "the cut follows the end");
        ends.push(state.workbench.truncation.series[2].last().unwrap().0 as usize);
    }
    assert!(cuts >= 5, "the items changed as lines completed: {cuts}");
    assert!(ends.windows(2).all(|w| w[0] <= w[1]) && ends.last() == Some(&deltas), "{ends:?}");
    assert_eq!(state.workbench.truncation.live_cuts, cuts);
    // The run's sweep of the whole answer ends it: no longer live, the cut at its end.
    assert!(!state.workbench.truncation.live);
    let sweep = state.workbench.truncation.sweep.as_ref().unwrap();
    assert_eq!(sweep.cuts(), deltas + 1);
    assert_eq!(state.workbench.truncation.cut, deltas);
    assert!(!state.workbench.truncation.pending);
}

#[test]
fn live_items_are_the_final_sweeps_at_every_cut() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let events = sample_events(None);
    let (stream, end): (Vec<_>, Vec<_>) = events.into_iter().partition(|(e, _)| !matches!(e, RunEvent::Swept(_)));
    feed(&mut state, stream.into_iter().filter(|(e, _)| !matches!(e, RunEvent::RunEnded { .. })).collect());
    assert!(state.workbench.truncation.live);
    let Some((RunEvent::Swept(sweep), _)) = end.first() else { panic!("no sweep") };
    for (at, strategy) in tunebench::tui::panes::truncation::ORDER.iter().enumerate() {
        for (cut, figures) in sweep.figures(*strategy).iter().enumerate() {
            assert_eq!(state.workbench.truncation.live_items(at, cut), figures.items, "{strategy} at {cut}");
        }
    }
}

#[test]
fn a_cut_moved_back_stays_while_the_chart_grows() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let run = state.workbench.run_id;
    let events = sample_events(None);
    let (first, rest) = events.split_at(60);
    feed(&mut state, first.to_vec());
    let following = state.workbench.truncation.cut;
    assert!(following > 10);
    update(&mut state, Msg::Action(Action::FocusTruncation));
    update(&mut state, Msg::Action(Action::Home));
    assert_eq!(state.workbench.truncation.cut, 0);
    for (event, at_ms) in rest.iter().cloned() {
        let ended = matches!(event, RunEvent::Swept(_));
        update(&mut state, Msg::Run { run, event: Box::new(event), at_ms: at_ms + 100 });
        if !ended && state.workbench.truncation.live {
            assert_eq!(state.workbench.truncation.cut, 0, "the cut the user moved stays");
        }
    }
    assert!(state.workbench.truncation.sweep.as_ref().unwrap().cuts() > following + 1, "it grew");
    assert_eq!(state.workbench.truncation.cut, 0, "the cut the user moved stays");
    // A sweep of another run, or older than the one shown, is dropped.
    let shown = state.workbench.truncation.swept_len;
    let stale = tunebench::truncate::sweep::sweep("", &[(0, 0)], Default::default(), None);
    update(&mut state, Msg::SweepReady { run: run + 7, answer_len: 1, sweep: Ok(Box::new(stale.clone())) });
    update(&mut state, Msg::SweepReady { run, answer_len: shown - 1, sweep: Ok(Box::new(stale)) });
    assert_eq!(state.workbench.truncation.swept_len, shown);
    // A stream without the run's sweep is swept here once, at its end.
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let effects = feed(&mut state, without_sweep(sample_events(None)));
    assert_eq!(deliver_sweeps(&mut state, effects), 1);
    assert_eq!(state.workbench.truncation.swept_len, state.workbench.run.output.len());
}

/// A history line as `history.jsonl` holds it: one turn, replayable from its transcript.
const HISTORY_LINE: &str = r#"{"prompt":"agent-kg-extract","case":"astronomy","provider":"openai","model":"gpt-4o-mini","structured":"none","response_type":"jsonl","profile":"lenient","ok":true,"result":[{"a":1},{"a":2}],"truncated":false,"repaired":false,"mode":{"requested":"none","used":"none"},"max_turns":2,"started_at_ms":45073000,"duration_ms":80,"turns":[{"turn":1,"output":"{\"a\":1}\n{\"a\":2}\n","finish_reason":"stop","usage":null,"ttft_ms":null,"duration_ms":80,"tokens_per_s":null,"chunks":1,"parse":{"response_type":"jsonl","profile":"lenient","items":[{"a":1},{"a":2}],"lines":[{"line":1,"status":"valid"},{"line":2,"status":"valid"}],"summary":{"valid":2,"invalid_json":0,"schema_error":0,"skipped":0}},"ok":true,"feedback":null,"mode":{"requested":"none","used":"none"},"transcript":{"header":{"transcript":1,"provider":"openai","model":"gpt-4o-mini"},"chunks":[{"t_ms":5,"delta":"{\"a\":1}\n{\"a\":2}\n"}],"end":{"t_ms":80,"finish_reason":"stop"}}}]}"#;

/// The record of `HISTORY_LINE` (a run of the sample prompt).
fn history_record() -> tunebench::run::RunRecord {
    serde_json::from_str(HISTORY_LINE).expect("the history line reads")
}

/// A kept run comes back as a message with its record: the history pane shows it at once, newest
/// first, and the whole history file is not read again; a run that was not kept is not listed.
#[test]
fn a_kept_run_is_listed_from_its_message_without_reading_the_history_again() {
    let mut state = sample_state();
    let older = history_record();
    update(&mut state, Msg::HistoryLoaded(Ok(vec![older.clone()])));
    let mut newer = history_record();
    newer.started_at_ms += 1000;
    let kept = Ok("/data/history.jsonl".into());
    let effects = update(&mut state, Msg::RunRecorded { kept, record: Box::new(newer.clone()) });
    assert!(effects.is_empty(), "nothing is read again: {effects:?}");
    assert_eq!(state.workbench.history, [newer, older.clone()]);
    assert_eq!(state.note.as_deref(), Some("run saved to the history (/data/history.jsonl)"));
    let why = "the run was not added to the history: disk full".to_string();
    update(&mut state, Msg::RunRecorded { kept: Err(why.clone()), record: Box::new(older) });
    assert_eq!(state.workbench.history.len(), 2, "a run not kept is not listed");
    assert_eq!(state.note, Some(why));
}

#[test]
fn a_history_record_is_listed_and_replays_its_last_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    std::fs::write(&path, format!("{HISTORY_LINE}\n")).unwrap();
    let history = tunebench::run::history::read(&path).unwrap();
    assert!(history.skipped.is_empty(), "{:?}", history.skipped);
    let record = history.records[0].clone();
    let mut state = sample_state();
    update(&mut state, Msg::HistoryLoaded(Ok(history.records)));
    let theme = tunebench::tui::theme::Theme::default();
    let row = tunebench::tui::workbench::panes::history::row(&state.workbench.history[0], &theme, 60).to_string();
    assert_eq!(row, "12:31:13 ✓ openai gpt-4o-mini astronomy 2 items 1");
    update(&mut state, Msg::Action(Action::FocusHistory));
    let effects = update(&mut state, Msg::Action(Action::Open));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    let Some(ReplayFrom::Transcript(transcript)) = &request.target.replay else {
        panic!("{:?}", request.target.replay)
    };
    assert_eq!(**transcript, record.turns[0].transcript);
    assert_eq!(request.max_turns, Some(1));
}

/// Changing the provider resets what was chosen for the old one: a model typed for a server is not
/// sent to the local model (the eval ran `local:canned` and failed), and the local model's default
/// mode does not follow the user to a server; the prompt's own model comes back with its provider.
#[test]
fn a_provider_switch_does_not_carry_a_model_or_mode_that_does_not_fit() {
    let mut state = sample_state();
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Openai {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    state.choice.model = Some("canned".into());
    update(&mut state, Msg::Action(Action::NextProvider));
    assert_eq!(state.choice.model, None);
    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains("\"canned\" was chosen for another provider"), "{note}");
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Local {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    assert_eq!(state.choice.model, None, "the default cached model");
    assert_eq!(mode_text(&state), "asked constrained (default on local)");
    let effects = update(&mut state, Msg::Action(Action::Run));
    let Some(Effect::Start(Start::Run(request))) = effects.first() else { panic!("{effects:?}") };
    assert_eq!(
        (request.target.provider, request.target.model.as_deref()),
        (Some(tunebench::provider::kind::ProviderKind::Local), None)
    );
    // Back to a server: no mode follows from the local model.
    update(&mut state, Msg::Action(Action::CancelRun));
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Openai {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    assert_eq!(state.choice.asked_mode(state.saved.response_type), ("none".into(), false));
    // A prompt that names its provider and model gets its model back with the provider.
    let mut own = sample_state();
    own.saved.provider.name = Some("ollama".into());
    own.saved.provider.model = Some("qwen2.5".into());
    own.choice.model = Some("typed".into());
    while own.choice.provider != tunebench::provider::kind::ProviderKind::Ollama {
        update(&mut own, Msg::Action(Action::NextProvider));
    }
    assert_eq!(own.choice.model.as_deref(), Some("qwen2.5"));
}

/// The workbench's run goes through the core's run job on the job bridge: its record is kept in the
/// data directory's history by the one rule and comes back in its message, so the history pane lists
/// it without reading the file again.
#[test]
fn the_workbench_run_is_kept_by_the_run_job_and_its_record_comes_back_in_its_message() {
    let dir = super::eval::folder();
    let data = tempfile::tempdir().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut runner = tunebench::tui::runner::Runner::new(tx, Some(data.path().to_path_buf())).unwrap();
    runner.pace = tunebench::provider::replay::Pace::Instant;
    without_local_model();
    let mut state = tunebench::tui::setup::state_for(&dir.path().join("definitions.toml")).unwrap();
    let effects = update(&mut state, ctrl('r'));
    assert!(matches!(effects.first(), Some(Effect::Start(Start::Run(_)))), "{effects:?}");
    for effect in effects {
        for msg in runner.execute(effect) {
            update(&mut state, msg);
        }
    }
    let (kept, record) = loop {
        let msg = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the run is kept within a minute");
        if let Msg::RunRecorded { kept, record } = &msg {
            let recorded = (kept.clone(), record.clone());
            update(&mut state, msg);
            break recorded;
        }
        update(&mut state, msg);
    };
    let file = data.path().join(tunebench::run::history::HISTORY_FILE);
    assert_eq!(kept, Ok(file.clone()));
    let history = tunebench::run::history::read(&file).unwrap();
    assert_eq!(history.records.len(), 1, "kept once, by the run job");
    assert_eq!(history.records[0].started_at_ms, record.started_at_ms);
    assert_eq!(state.workbench.history.len(), 1, "listed from the message");
    assert_eq!(state.workbench.history[0].started_at_ms, record.started_at_ms);
    assert!(
        matches!(state.workbench.phase, tunebench::tui::workbench::state::RunPhase::Done { .. }),
        "{:?}",
        state.workbench.phase
    );
}
