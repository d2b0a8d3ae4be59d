//! Transition tests of what a run shows and leaves: the structured mode in the status bar (used,
//! fallback, default on local), cancelled runs in the history, the truncation chart growing live.

use tunebench::provider::{Fallback, ModeReport, StructuredMode};
use tunebench::run::RunEvent;
use tunebench::tui::msg::{Action, Effect, Msg};
use tunebench::tui::panes::status::mode_text;
use tunebench::tui::state::State;
use tunebench::tui::update::update;

use super::support::*;

fn mode_event(state: &mut State, mode: ModeReport) {
    let run = state.run_id;
    update(state, Msg::Run { run, event: Box::new(RunEvent::Mode(mode)), at_ms: 5 });
}

#[test]
fn the_status_bar_says_constrained_was_chosen_by_default_on_local() {
    let mut state = sample_state();
    tunebench::tui::fetch_update::use_local_model(&mut state);
    assert_eq!(mode_text(&state), "asked constrained (default on local)");
    let effects = update(&mut state, Msg::Action(Action::Run));
    assert!(matches!(effects.as_slice(), [Effect::StartRun(_)]), "{effects:?}");
    assert_eq!(mode_text(&state), "asked constrained (default on local)", "not reported yet");
    let used = StructuredMode::Constrained;
    mode_event(&mut state, ModeReport { requested: used, used, ..ModeReport::default() });
    assert_eq!(mode_text(&state), "constrained (default on local)");
    // Chosen by the user (alt-m cycles back round to constrained): no "default".
    let mut state = sample_state();
    tunebench::tui::fetch_update::use_local_model(&mut state);
    for _ in 0..4 {
        update(&mut state, alt('m'));
    }
    assert_eq!(state.choice.structured.as_deref(), Some("constrained"));
    update(&mut state, Msg::Action(Action::Run));
    mode_event(&mut state, ModeReport { requested: used, used, ..ModeReport::default() });
    assert_eq!(mode_text(&state), "constrained");
}

#[test]
fn a_fallback_shows_each_step_and_its_reason() {
    let mut state = sample_state();
    state.choice.provider = "openai".into();
    state.choice.structured = Some("json-schema".into());
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
    let run = state.run_id;
    update(&mut state, Msg::Run { run, event: Box::new(RunEvent::RunEnded { ok: true, turns: 1 }), at_ms: 9 });
    update(&mut state, Msg::Action(Action::Run));
    assert_eq!(mode_text(&state), "asked json-schema");
}

#[test]
fn a_cancelled_run_stays_cancelled_when_its_record_arrives() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    feed(&mut state, sample_events(Some(40)));
    let partial = state.run.output.clone();
    assert_eq!(update(&mut state, Msg::Action(Action::CancelRun)), [Effect::CancelRun]);
    update(&mut state, Msg::RunCancelled);
    // The engine still ends the run (its turn, the interrupted finish), then its record is written.
    let run = state.run_id;
    let finish = RunEvent::Finish(tunebench::provider::FinishReason::Interrupted);
    update(&mut state, Msg::Run { run, event: Box::new(finish), at_ms: 50 });
    update(&mut state, Msg::Run { run, event: Box::new(RunEvent::RunEnded { ok: false, turns: 1 }), at_ms: 50 });
    assert_eq!(state.phase, tunebench::tui::state::RunPhase::Cancelled);
    assert_eq!(state.run.output, partial);
    let effects = update(&mut state, Msg::RunRecorded(Ok("/data/history.jsonl".into())));
    assert!(matches!(effects.as_slice(), [Effect::LoadHistory { .. }]), "{effects:?}");
    assert!(state.note.as_deref().unwrap_or("").starts_with("cancelled run saved to the history"), "{:?}", state.note);
}
