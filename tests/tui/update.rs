//! Transition tests of `update`: keys and run events in, state and effects out. No IO, no terminal.

use ratatui_textarea::Key;
use tunebench::output::LineStatus;
use tunebench::tui::msg::{Action, Effect, FetchNews, Job, Mouse, MouseKind, Msg, Start, TermEvent};
use tunebench::tui::state::Overlay;
use tunebench::tui::update::update;
use tunebench::tui::workbench::state::Pane;
use tunebench::tui::workbench::state::RunPhase;

use super::support::*;

#[test]
fn typing_in_the_template_marks_unsaved_and_save_writes_the_edit() {
    let mut state = sample_state();
    assert_eq!(state.workbench.focus, Pane::Template);
    assert!(!state.dirty);
    type_text(&mut state, "Be brief. ");
    assert!(state.dirty);
    assert!(state.texts()[1].starts_with("Be brief. "), "{}", state.texts()[1]);
    let effects = update(&mut state, ctrl('s'));
    let [effect @ Effect::Save { prompt, path, schema_file: None, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(path, &state.path);
    assert!(prompt.template.starts_with("Be brief. "));
    let effects = update(&mut state, saved(effect));
    assert_eq!(effects, [Effect::ClearRecovery]);
    assert!(!state.dirty);
    assert_eq!(state.saved.template, state.texts()[1]);
    // Undo back to the saved text is not "unsaved" any more; typing again is.
    type_text(&mut state, "x");
    assert!(state.dirty);
}

#[test]
fn schema_is_linted_as_typed_with_line_and_column() {
    let mut state = sample_state();
    assert!(state.workbench.lint.issues.is_empty(), "{:?}", state.workbench.lint);
    update(&mut state, Msg::Action(Action::FocusSchema));
    type_text(&mut state, "}");
    assert_eq!(state.workbench.lint.issues.len(), 1, "{:?}", state.workbench.lint);
    assert!(state.workbench.lint.issues[0].starts_with("1:1:"), "{:?}", state.workbench.lint.issues);
    update(&mut state, special(Key::Backspace));
    assert!(state.workbench.lint.issues.is_empty(), "{:?}", state.workbench.lint);
    // A schema error names its path.
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::FocusSchema));
    state.schema = tunebench::tui::state::editor(r#"{"type": "objekt"}"#);
    type_text(&mut state, " ");
    assert!(state.workbench.lint.issues.iter().any(|i| i.contains("/type")), "{:?}", state.workbench.lint.issues);
    // Running with a schema that is not JSON says so and starts nothing.
    state.schema = tunebench::tui::state::editor("{");
    assert!(update(&mut state, ctrl('r')).is_empty());
    assert!(state.note.as_deref().unwrap_or("").contains("not JSON"), "{:?}", state.note);
}

#[test]
fn what_the_local_models_decoder_refuses_is_linted_at_its_path() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::FocusSchema));
    state.schema = tunebench::tui::state::editor(
        r#"{"type": "object", "properties": {"code": {"type": "string", "pattern": "^(?=.*[A-Z]).+$"}}}"#,
    );
    type_text(&mut state, " ");
    assert!(state.workbench.lint.issues.is_empty(), "a replay holds the answer to nothing: {:?}", state.workbench.lint);
    // On the local model, constrained: what its decoder refuses is a schema problem, at its path.
    tunebench::tui::workbench::fetch::use_local_model(&mut state);
    let [issue] = state.workbench.lint.issues.as_slice() else { panic!("{:?}", state.workbench.lint) };
    assert!(issue.starts_with("at \"/properties/code/pattern\":") && issue.contains("look-around"), "{issue}");
    // Another provider holds no answer to it.
    while state.choice.provider != tunebench::provider::kind::ProviderKind::Openai {
        update(&mut state, Msg::Action(Action::NextProvider));
    }
    assert!(state.workbench.lint.issues.is_empty(), "{:?}", state.workbench.lint);
}

#[test]
fn a_key_in_the_schema_asks_for_a_lint_in_the_background_and_a_stale_lint_is_dropped() {
    let mut state = sample_state();
    // The sample is small (linted on the key): as large as the 7 MB schema that lagged.
    state.workbench.background_bytes = 0;
    update(&mut state, Msg::Action(Action::FocusSchema));
    let shown = state.workbench.lint.clone();
    assert!(shown.issues.is_empty(), "{shown:?}");
    // The key edits the text and lints nothing: it asks to hear when typing settles.
    let effects = update(&mut state, key('}'));
    let edits = state.edits;
    assert_eq!(state.workbench.lint, shown, "not linted on the key");
    assert!(state.workbench.schema_unlinted);
    assert_eq!(effects, [Effect::Settle { edits }], "no lint and no token count on the key");
    // Typing settled: the schema as it is now is to be linted in the background.
    let effects = update(&mut state, Msg::Settled { edits });
    let stale = one_lint(&effects);
    assert!(stale.text.starts_with('}'), "{}", stale.text);
    // Another key before that lint is back: the lint of the older text is dropped when it comes.
    update(&mut state, key(' '));
    update(&mut state, Msg::Linted { asked: stale.asked, lint: stale.lint() });
    assert_eq!(state.workbench.lint, shown, "a lint of text that changed since is dropped");
    assert!(state.workbench.schema_unlinted);
    // An older settling asks for nothing; the newer one's lint is shown.
    assert!(lint_requests(&update(&mut state, Msg::Settled { edits })).is_empty());
    let edits = state.edits;
    let newer = one_lint(&update(&mut state, Msg::Settled { edits }));
    assert!(newer.text.starts_with("} "), "{}", newer.text);
    // A change of provider asks for a lint at once; the one asked for before it is dropped.
    let newest = one_lint(&update(&mut state, Msg::Action(Action::NextProvider)));
    update(&mut state, Msg::Linted { asked: newer.asked, lint: newer.lint() });
    assert_eq!(state.workbench.lint, shown, "a lint asked for before a newer one is dropped");
    update(&mut state, Msg::Linted { asked: newest.asked, lint: newest.lint() });
    assert!(!state.workbench.schema_unlinted);
    assert!(state.workbench.lint.issues.first().is_some_and(|i| i.starts_with("1:1:")), "{:?}", state.workbench.lint);
}

fn lint_requests(effects: &[Effect]) -> Vec<&tunebench::tui::workbench::lint::LintRequest> {
    effects.iter().filter_map(|e| if let Effect::Lint(request) = e { Some(&**request) } else { None }).collect()
}

/// The one lint `effects` ask for.
fn one_lint(effects: &[Effect]) -> tunebench::tui::workbench::lint::LintRequest {
    let [request] = lint_requests(effects)[..] else { panic!("one lint asked for: {effects:?}") };
    request.clone()
}

#[test]
fn run_streams_into_output_and_lines_and_its_sweep_into_the_chart() {
    let mut state = sample_state();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Replay);
    let effects = update(&mut state, ctrl('r'));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(request.target.provider, Some(tunebench::provider::kind::ProviderKind::Replay));
    assert!(
        matches!(&request.target.replay, Some(tunebench::run::ReplayFrom::File(p, _)) if p.ends_with("answers/agent-kg-extract.jsonl"))
    );
    assert_eq!(state.workbench.phase, RunPhase::Starting);
    // A second run while one goes is refused.
    assert!(update(&mut state, ctrl('r')).is_empty());

    let effects = feed(&mut state, sample_events(None));
    assert_eq!(state.workbench.phase, RunPhase::Done { ok: false });
    assert!(state.workbench.run.output.contains("RNA polymerase"));
    assert_eq!(state.workbench.run.chunk_ends.len(), 209);
    let statuses: Vec<&str> = state
        .workbench
        .run
        .verdicts
        .iter()
        .map(|v| match v.status {
            LineStatus::Valid { .. } => "valid",
            LineStatus::InvalidJson { .. } => "invalid",
            LineStatus::SchemaError { .. } => "schema",
            LineStatus::Skipped { .. } => "skipped",
        })
        .collect();
    assert_eq!(statuses, ["skipped", "valid", "valid", "schema", "valid", "valid", "invalid"]);
    // The figures are the turn summary's (the core measures them once), not the workbench's own.
    assert_eq!(state.workbench.run.ttft_ms, Some(220));
    let speed = state.workbench.run.tokens_per_s.unwrap();
    let Some(tunebench::run::RunEvent::TurnEnded(summary)) =
        sample_events(None).into_iter().map(|(e, _)| e).find(|e| matches!(e, tunebench::run::RunEvent::TurnEnded(_)))
    else {
        panic!("the sample's events end their turn")
    };
    assert_eq!(Some(speed), summary.tokens_per_s);
    // The run's own sweep fed the chart and ended it: nothing is swept here.
    assert!(effects.is_empty(), "{effects:?}");
    assert!(!state.workbench.truncation.live);
    assert_eq!(state.workbench.truncation.sweep.as_ref().unwrap().cuts(), 210);
    // A stream that brings no sweep (a front end's events without it) is swept here at its end.
    let mut state = sample_state();
    update(&mut state, ctrl('r'));
    let effects = feed(&mut state, without_sweep(sample_events(None)));
    let [Effect::ComputeSweep(sweep)] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(sweep.answer, state.workbench.run.output);
    assert_eq!(sweep.chunk_ends.len(), 209);
}

#[test]
fn cancel_keeps_the_partial_answer_and_ignores_the_old_runs_events() {
    let mut state = sample_state();
    update(&mut state, ctrl('r'));
    feed(&mut state, sample_events(Some(60)));
    assert_eq!(state.workbench.phase, RunPhase::Running);
    let partial = state.workbench.run.output.clone();
    assert!(!partial.is_empty());
    let effects = update(&mut state, special(Key::Esc));
    assert_eq!(effects, [Effect::Cancel(Job::Run)]);
    assert_eq!(state.workbench.phase, RunPhase::Cancelling);
    let effects = update(&mut state, Msg::RunCancelled);
    assert_eq!(state.workbench.phase, RunPhase::Cancelled);
    assert_eq!(state.workbench.run.output, partial);
    // The run's own sweep of the partial answer comes as its turn ends.
    assert!(effects.is_empty(), "{effects:?}");
    // A new run; a late event of the cancelled one changes nothing.
    let old = state.workbench.run_id;
    update(&mut state, ctrl('r'));
    update(
        &mut state,
        Msg::Run { run: old, event: Box::new(tunebench::run::RunEvent::Delta("late".into())), at_ms: 1 },
    );
    assert_eq!(state.workbench.run.output, "");
}

#[test]
fn quitting_with_unsaved_edits_asks_first() {
    let mut state = sample_state();
    assert_eq!(update(&mut state, ctrl('q')), [Effect::Quit], "nothing to lose: quits at once");
    let mut state = sample_state();
    type_text(&mut state, "edit");
    assert!(update(&mut state, ctrl('q')).is_empty());
    assert_eq!(state.overlay, Overlay::ConfirmQuit);
    update(&mut state, key('n'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(!state.quit);
    update(&mut state, ctrl('q'));
    let effects = update(&mut state, key('s'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Quit]), "{effects:?}");
    let mut state = sample_state();
    type_text(&mut state, "edit");
    update(&mut state, ctrl('q'));
    assert_eq!(update(&mut state, key('y')), [Effect::ClearRecovery, Effect::Quit]);
}

#[test]
fn unsaved_edits_go_to_the_recovery_file_once_a_second() {
    let mut state = sample_state();
    assert!(update(&mut state, Msg::Tick { now_ms: 1500 }).is_empty(), "no edits, no file");
    type_text(&mut state, "a");
    let effects = update(&mut state, Msg::Tick { now_ms: 1600 });
    let [Effect::WriteRecovery(recovery)] = effects.as_slice() else { panic!("{effects:?}") };
    assert!(recovery.template.starts_with('a'));
    type_text(&mut state, "b");
    assert!(update(&mut state, Msg::Tick { now_ms: 2000 }).is_empty(), "at most once a second");
    assert!(matches!(update(&mut state, Msg::Tick { now_ms: 2700 }).as_slice(), [Effect::WriteRecovery(_)]));
    assert!(update(&mut state, Msg::Tick { now_ms: 4000 }).is_empty(), "nothing new");
}

#[test]
fn the_recovery_file_is_written_off_the_loop_and_its_last_job_is_done_before_exit() {
    use tunebench::tui::recovery;
    use tunebench::tui::runner::Runner;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let prompt = dir.path().join("p.toml");
    let mut state = sample_state();
    type_text(&mut state, "a");
    let mut edits = tunebench::tui::edit::recovery(&state, 0);
    edits.path = prompt.clone();
    let (tx, _rx) = std::sync::mpsc::channel();
    // Written by the worker; the runner's end waits for it.
    let mut runner = Runner::new(tx.clone(), Some(data.clone())).unwrap();
    runner.prompt_path = Some(prompt.clone());
    assert!(runner.execute(Effect::WriteRecovery(edits.clone())).is_empty());
    drop(runner);
    let read = recovery::read(&data, &prompt).unwrap().expect("written before the runner ended");
    assert!(read.template.starts_with('a'));
    // A write then a clear (quit without saving): the clear is the last word, done before `Quit` returns.
    let mut runner = Runner::new(tx, Some(data.clone())).unwrap();
    runner.prompt_path = Some(prompt.clone());
    runner.execute(Effect::WriteRecovery(edits));
    runner.execute(Effect::ClearRecovery);
    runner.execute(Effect::Quit);
    assert_eq!(recovery::read(&data, &prompt).unwrap(), None);
}

#[test]
fn recovered_edits_are_offered_and_restored() {
    let mut state = sample_state();
    let mut edits = tunebench::tui::edit::recovery(&state, 0);
    edits.template = "recovered template".into();
    state.overlay = Overlay::Recovery(Box::new(edits));
    update(&mut state, key('r'));
    assert_eq!(state.overlay, Overlay::None);
    assert_eq!(state.texts()[1], "recovered template");
    assert!(state.dirty);
}

#[test]
fn help_opens_from_f1_and_question_mark_types_in_editors() {
    let mut state = sample_state();
    update(&mut state, key('?'));
    assert_eq!(state.overlay, Overlay::None);
    assert!(state.texts()[1].starts_with('?'));
    update(&mut state, special(Key::F(1)));
    assert_eq!(state.overlay, Overlay::Help);
    update(&mut state, key('x'));
    assert_eq!(state.overlay, Overlay::None);
    update(&mut state, Msg::Action(Action::FocusLines));
    update(&mut state, key('?'));
    assert_eq!(state.overlay, Overlay::Help, "? opens help outside the editors");
}

#[test]
fn the_cut_moves_by_keys_within_the_answer() {
    let mut state = sample_state();
    update(&mut state, ctrl('r'));
    feed(&mut state, sample_events(None));
    state.workbench.truncation.cut = 209;
    update(&mut state, alt('7'));
    assert_eq!(state.workbench.focus, Pane::Truncation);
    update(&mut state, special(Key::Left));
    assert_eq!(state.workbench.truncation.cut, 208);
    update(&mut state, special(Key::PageUp));
    assert_eq!(state.workbench.truncation.cut, 198);
    update(&mut state, key('g'));
    assert_eq!(state.workbench.truncation.cut, 0);
    update(&mut state, special(Key::Left));
    assert_eq!(state.workbench.truncation.cut, 0);
    update(&mut state, special(Key::End));
    assert_eq!(state.workbench.truncation.cut, 209);
    update(&mut state, key(']'));
    assert_eq!(state.workbench.truncation.cut, 209);
}

#[test]
fn click_focuses_and_lines_selection_highlights_in_output() {
    let mut state = sample_state();
    update(&mut state, Msg::Term(TermEvent::Resize(120, 40)));
    // Nothing is drawn yet: a click finds no pane (the mouse reads what the last frame drew).
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Click, column: 55, row: 30 })));
    assert_ne!(state.workbench.focus, Pane::Lines);
    // The lines pane sits in the bottom middle at 120×40.
    super::eval::draw(&state, 120, 40);
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Click, column: 55, row: 30 })));
    assert_eq!(state.workbench.focus, Pane::Lines);
    update(&mut state, ctrl('r'));
    feed(&mut state, sample_events(None));
    update(&mut state, key('j'));
    update(&mut state, key('j'));
    assert_eq!(state.workbench.selected_line, 2);
    update(&mut state, special(Key::Enter));
    assert_eq!(state.workbench.focus, Pane::Output);
    assert_eq!(state.workbench.output_scroll, Some(2), "line 3 of the answer at the top");
}

#[test]
fn settings_cycle_from_the_keyboard() {
    let mut state = sample_state();
    update(&mut state, alt('p'));
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Openai);
    // From the provider's default: none said outright, then each mode.
    update(&mut state, alt('m'));
    assert_eq!(state.choice.structured, Some(tunebench::provider::StructuredMode::None));
    update(&mut state, alt('m'));
    assert_eq!(state.choice.structured, Some(tunebench::provider::StructuredMode::JsonObject));
    let cases = state.saved.cases.len();
    assert!(cases > 0);
    update(&mut state, alt('c'));
    assert_eq!(state.choice.case.as_deref(), Some(state.saved.cases[0].name.as_str()));
    let before = state.choice.max_tokens;
    update(&mut state, alt('='));
    assert_eq!(state.choice.max_tokens, Some(before.map_or(256, |n| n * 2)));
    let effects = update(&mut state, special(Key::F(6)));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(request.target.provider, Some(tunebench::provider::kind::ProviderKind::Openai));
    assert_eq!(request.max_turns, Some(1));
    assert!(request.target.replay.is_none());
}

/// Without the local model the sample runs on its recorded answer and asks for a fetch; when the
/// fetch ends, runs move to the local model (a run starts at once), unless the user picked a provider.
#[test]
fn a_fetched_local_model_takes_over_from_the_recorded_answer() {
    let mut state = sample_state();
    assert!(state.fetch_model, "the model is missing in the test cache: a fetch is due");
    assert!(state.replay_reason.as_deref().unwrap_or("").contains("not fetched yet"), "{:?}", state.replay_reason);
    let progress = FetchNews::Progress("extracting the model 40%".into());
    assert!(update(&mut state, Msg::ModelFetch(progress)).is_empty());
    assert_eq!(state.note.as_deref(), Some("local model: extracting the model 40%"));
    let effects = update(&mut state, Msg::ModelFetch(FetchNews::Done(Ok("/cache/model.gguf".into()))));
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Local);
    assert!(state.replay_reason.is_none());
    // The run starts, and the local model's tokenizer is asked for (the status line's token count).
    let [Effect::Start(Start::Run(request)), Effect::LoadTokenizer { model }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(request.target.provider, Some(tunebench::provider::kind::ProviderKind::Local));
    // No mode chosen: the run setup's default for a jsonl prompt on the local model, constrained.
    assert_eq!(request.target.structured, None);
    assert_eq!(state.choice.asked_mode(state.saved.response_type), ("constrained".into(), true));
    assert_eq!(model, "", "the default cached model");

    let mut picked = sample_state();
    picked.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    let effects = update(&mut picked, Msg::ModelFetch(FetchNews::Done(Ok("/cache/model.gguf".into()))));
    assert!(effects.is_empty());
    assert_eq!(picked.choice.provider, tunebench::provider::kind::ProviderKind::Openai);

    let mut failed = sample_state();
    assert!(update(&mut failed, Msg::ModelFetch(FetchNews::Done(Err("pip: not found".into())))).is_empty());
    assert_eq!(failed.choice.provider, tunebench::provider::kind::ProviderKind::Replay);
    assert!(failed.note.as_deref().unwrap_or("").contains("pip: not found"));
}

/// The first start: the model arrives while the example answer is still replaying. The replay plays
/// to its end, then the model's run starts by itself (no key); a replay the user cancels does not.
#[test]
fn a_model_fetched_during_the_example_replay_runs_when_the_replay_ends() {
    let mut state = sample_state();
    let effects = update(&mut state, ctrl('r'));
    let [Effect::Start(Start::Run(replay))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(replay.target.provider, Some(tunebench::provider::kind::ProviderKind::Replay));
    let mut events = sample_events(None);
    let rest = events.split_off(events.len() / 2);
    assert!(feed(&mut state, events).is_empty());
    assert!(state.workbench.running());

    let effects = update(&mut state, Msg::ModelFetch(FetchNews::Done(Ok("/cache/model.gguf".into()))));
    // No run starts yet: the model is loaded and the prompt run through it while the replay plays on
    // (the run that follows finds both ready), and its tokenizer read for the status line's token count.
    assert!(
        effects.iter().all(|e| matches!(e, Effect::LoadTokenizer { .. } | Effect::WarmModel(_))),
        "the replay plays on: {effects:?}"
    );
    let warm = effects.iter().find_map(|e| if let Effect::WarmModel(r) = e { Some(r) } else { None });
    let warm = warm.expect("the model is warmed while the example plays");
    assert_eq!(
        (warm.target.provider, warm.target.structured),
        (Some(tunebench::provider::kind::ProviderKind::Local), None),
        "the default: constrained"
    );
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Local);
    assert!(state.note.as_deref().unwrap_or("").contains("runs when the example ends"), "{:?}", state.note);
    let replay_run = state.workbench.run_id;

    let effects = feed(&mut state, rest);
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(
        (request.target.provider, request.target.structured),
        (Some(tunebench::provider::kind::ProviderKind::Local), None)
    );
    assert!(state.workbench.run_id > replay_run && state.workbench.running());
    // The model's own end starts nothing more.
    let run = state.workbench.run_id;
    let end = Msg::Run { run, event: Box::new(tunebench::run::RunEvent::RunEnded { ok: true, turns: 1 }), at_ms: 9 };
    assert!(!update(&mut state, end).iter().any(|e| matches!(e, Effect::Start(Start::Run(_)))));

    // Cancelled by the user: the model waits for ctrl-r.
    let mut cancelled = sample_state();
    update(&mut cancelled, ctrl('r'));
    update(&mut cancelled, Msg::ModelFetch(FetchNews::Done(Ok("/cache/model.gguf".into()))));
    update(&mut cancelled, Msg::Action(Action::CancelRun));
    update(&mut cancelled, Msg::RunCancelled);
    let run = cancelled.workbench.run_id;
    let end = Msg::Run { run, event: Box::new(tunebench::run::RunEvent::RunEnded { ok: false, turns: 1 }), at_ms: 9 };
    assert!(!update(&mut cancelled, end).iter().any(|e| matches!(e, Effect::Start(Start::Run(_)))));
    assert!(cancelled.note.as_deref().unwrap_or("").contains("ctrl-r runs it"), "{:?}", cancelled.note);
    let effects = update(&mut cancelled, ctrl('r'));
    let [Effect::Start(Start::Run(request))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!(request.target.provider, Some(tunebench::provider::kind::ProviderKind::Local));
}

/// Choosing another case with the local model runs its prompt through the model in the background
/// (ctrl-r then finds it ready); with another provider, or while a run goes, nothing is warmed.
#[test]
fn choosing_a_case_on_the_local_model_warms_its_prompt() {
    let mut state = sample_state();
    state.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    let warms = |effects: Vec<Effect>| -> Vec<Box<tunebench::tui::msg::RunRequest>> {
        effects.into_iter().filter_map(|e| if let Effect::WarmModel(r) = e { Some(r) } else { None }).collect()
    };
    let warmed = warms(update(&mut state, Msg::Action(Action::NextCase)));
    let [request] = warmed.as_slice() else { panic!("one warm: {warmed:?}") };
    assert_eq!(request.target.provider, Some(tunebench::provider::kind::ProviderKind::Local));
    assert!(request.case.is_some(), "the chosen case: {:?}", request.case);
    assert_eq!(request.case, state.choice.case);

    let mut replay = sample_state();
    assert!(warms(update(&mut replay, Msg::Action(Action::NextCase))).is_empty(), "the replay provider loads nothing");

    let mut running = sample_state();
    update(&mut running, ctrl('r'));
    assert!(running.workbench.running());
    running.choice.provider = tunebench::provider::kind::ProviderKind::Local;
    assert!(warms(update(&mut running, Msg::Action(Action::NextCase))).is_empty(), "a run is going");
}
