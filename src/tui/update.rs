//! `update(&mut State, Msg) -> Vec<Effect>`: every change of the workbench, pure (no IO, no await).
//! Keys become actions through the keymap (or typing in the focused editor); run events fill the
//! live view; effects ask the loop to run, save, sweep, write the recovery file or quit.

use ratatui_textarea::{Input, Key};

use super::compare_update;
use super::edit::{self, edited, relint};
use super::msg::{Action, Effect, Msg, ReplaySource, RunRequest, SweepRequest, TermEvent};
use super::panes;
use super::state::{Overlay, Pane, RunPhase, State};
use crate::run::RunEvent;
use crate::truncate::sweep::Sweep;

/// How often unsaved edits go to the recovery file, at most.
pub const RECOVERY_EVERY_MS: u64 = 1000;
/// The providers `next-provider` cycles through.
pub const PROVIDERS: [&str; 5] = ["replay", "openai", "ollama", "anthropic", "local"];
const STRUCTURED: [Option<&str>; 4] = [None, Some("json-object"), Some("json-schema"), Some("constrained")];

/// Applies `msg` to `state`; returns what the outside world must do.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Term(TermEvent::Key(input)) if state.input.is_some() => super::input::key(state, input),
        Msg::Term(TermEvent::Paste(text)) if state.input.is_some() => {
            super::input::paste(state, &text);
            Vec::new()
        }
        Msg::Term(TermEvent::Mouse(_)) if state.input.is_some() => Vec::new(),
        Msg::Term(TermEvent::Key(input)) if state.compare.open && state.overlay == Overlay::None => {
            compare_update::key(state, &input)
        }
        Msg::Term(TermEvent::Key(input)) => key(state, input),
        Msg::Term(TermEvent::Mouse(_)) if state.compare.open => Vec::new(),
        Msg::Term(TermEvent::Mouse(mouse)) => super::mouse::mouse(state, mouse),
        Msg::Term(TermEvent::Resize(columns, rows)) => {
            state.size = (columns, rows);
            Vec::new()
        }
        Msg::Term(TermEvent::Paste(text)) => {
            if state.overlay == Overlay::None && editable(state) {
                if let Some(area) = editor_mut(state) {
                    area.insert_str(text.replace("\r\n", "\n").replace('\r', "\n"));
                }
                after_edit(state);
            }
            Vec::new()
        }
        Msg::Action(action) if state.compare.open => compare_update::act(state, action),
        Msg::Action(action) => act(state, action),
        Msg::Compare { id, news } => compare_update::news(state, id, news),
        Msg::Run { run, event, at_ms } => {
            if run != state.run_id {
                return Vec::new();
            }
            run_event(state, *event, at_ms)
        }
        Msg::RunFailed { run, message } => {
            if run == state.run_id {
                state.phase = RunPhase::Failed(message.clone());
                state.note = Some(message);
            }
            Vec::new()
        }
        Msg::RunRecorded(result) => {
            state.note = Some(match result {
                Ok(path) if state.phase == RunPhase::Cancelled => format!(
                    "cancelled run saved to the history with its partial answer ({}): alt-8, enter replays it",
                    path.display()
                ),
                Ok(path) => format!("run saved to the history ({})", path.display()),
                Err(e) => format!("the run was not added to the history: {e}"),
            });
            vec![Effect::LoadHistory { prompt_id: state.saved.id.clone() }]
        }
        Msg::RunCancelled => {
            if state.phase == RunPhase::Cancelling {
                state.phase = RunPhase::Cancelled;
                state.note =
                    Some(format!("cancelled: the partial answer ({} chunks) stays", state.run.chunk_ends.len()));
            }
            sweep_effect(state)
        }
        Msg::SweepReady { run, answer_len, sweep } => {
            sweep_ready(state, run, answer_len, sweep);
            Vec::new()
        }
        Msg::HistoryLoaded(result) => {
            match result {
                Ok(runs) => {
                    state.history = runs;
                    state.history_selected = state.history_selected.min(state.history.len().saturating_sub(1));
                }
                Err(e) => state.note = Some(e),
            }
            Vec::new()
        }
        Msg::Saved(result) => {
            let pending = state.pending_save.take();
            match result {
                Ok(path) => {
                    if let Some(saved) = pending {
                        let (prompt, texts) = *saved;
                        state.saved = prompt;
                        state.saved_texts = texts;
                    }
                    state.dirty = edit::is_dirty(state);
                    state.note = Some(format!("saved {}", path.display()));
                    if !state.dirty {
                        return vec![Effect::ClearRecovery];
                    }
                }
                Err(e) => state.note = Some(format!("not saved: {e}")),
            }
            Vec::new()
        }
        Msg::ModelFetch(news) => super::fetch_update::model_fetch(state, news),
        Msg::Note(note) => {
            state.note = Some(note);
            Vec::new()
        }
        Msg::Tick { now_ms } => {
            state.now_ms = now_ms;
            let due = now_ms.saturating_sub(state.last_recovery_ms) >= RECOVERY_EVERY_MS;
            if state.dirty && state.edits != state.recovery_written && due {
                state.recovery_written = state.edits;
                state.last_recovery_ms = now_ms;
                return vec![Effect::WriteRecovery(edit::recovery(state, 0))];
            }
            Vec::new()
        }
    }
}

/// Whether typing goes into an editor now.
fn editable(state: &State) -> bool {
    state.focus.is_editor() && !(state.preview && state.focus == Pane::System)
}

fn editor_mut(state: &mut State) -> Option<&mut ratatui_textarea::TextArea<'static>> {
    match state.focus {
        Pane::System => Some(&mut state.system),
        Pane::Template => Some(&mut state.template),
        Pane::Schema => Some(&mut state.schema),
        _ => None,
    }
}

fn after_edit(state: &mut State) {
    if state.focus == Pane::Schema {
        relint(state);
    }
    edited(state);
}

fn key(state: &mut State, input: Input) -> Vec<Effect> {
    if input.key == Key::Null {
        return Vec::new();
    }
    match state.overlay.clone() {
        Overlay::None => {}
        Overlay::Help => {
            help_key(state, &input);
            return Vec::new();
        }
        Overlay::ConfirmQuit => {
            return match input.key {
                Key::Char('y') => {
                    state.quit = true;
                    vec![Effect::ClearRecovery, Effect::Quit]
                }
                Key::Char('s') => {
                    state.overlay = Overlay::None;
                    let mut effects = save(state);
                    if state.pending_save.is_some() {
                        state.quit = true;
                        effects.push(Effect::Quit);
                    }
                    effects
                }
                _ => {
                    state.overlay = Overlay::None;
                    state.note = Some("not quitting".into());
                    Vec::new()
                }
            };
        }
        Overlay::Recovery(recovery) => {
            state.overlay = Overlay::None;
            return match input.key {
                Key::Char('r') => {
                    edit::restore(state, &recovery);
                    state.note = Some("unsaved edits restored (ctrl-s saves them)".into());
                    Vec::new()
                }
                Key::Char('d') => {
                    state.note = Some("unsaved edits of the last session discarded".into());
                    vec![Effect::ClearRecovery]
                }
                _ => {
                    state.note = Some("unsaved edits kept in the recovery file for next time".into());
                    Vec::new()
                }
            };
        }
    }
    if let Some(action) = state.keymap.action(&input, !editable(state)) {
        return act(state, action);
    }
    if editable(state) {
        if let Some(area) = editor_mut(state) {
            if area.input(input) {
                after_edit(state);
            }
        }
    }
    Vec::new()
}

/// A key over the help: the view's up/down/page/home/end keys scroll it (when it does not fit the
/// screen), any other key closes it.
fn help_key(state: &mut State, input: &Input) {
    let geometry = panes::overlay::help_geometry(state.size, state, &super::theme::Theme::default());
    let (height, max_scroll) = (geometry.height, geometry.max_scroll);
    let at = state.help_scroll.min(max_scroll);
    state.help_scroll = match state.keymap.action(input, true) {
        Some(Action::Up) => at.saturating_sub(1),
        Some(Action::Down) => (at + 1).min(max_scroll),
        Some(Action::PageUp) => at.saturating_sub(height),
        Some(Action::PageDown) => (at + height).min(max_scroll),
        Some(Action::Home) => 0,
        Some(Action::End) => max_scroll,
        _ => {
            state.overlay = Overlay::None;
            return;
        }
    };
}

/// Applies one action.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => {
            if state.dirty {
                state.overlay = Overlay::ConfirmQuit;
                Vec::new()
            } else {
                state.quit = true;
                vec![Effect::Quit]
            }
        }
        Action::Save => save(state),
        Action::Run => start_run(state, None, None),
        Action::RunOneTurn => start_run(state, Some(1), None),
        Action::CancelRun => {
            if state.overlay != Overlay::None {
                state.overlay = Overlay::None;
                return Vec::new();
            }
            if state.running() {
                state.phase = RunPhase::Cancelling;
                return vec![Effect::CancelRun];
            }
            Vec::new()
        }
        Action::FocusNext | Action::FocusPrev => {
            let at = Pane::ALL.iter().position(|p| *p == state.focus).unwrap_or(0);
            let n = Pane::ALL.len();
            let next = if action == Action::FocusNext { (at + 1) % n } else { (at + n - 1) % n };
            state.focus = Pane::ALL[next];
            Vec::new()
        }
        Action::FocusSystem => focus(state, Pane::System),
        Action::FocusTemplate => focus(state, Pane::Template),
        Action::FocusSchema => focus(state, Pane::Schema),
        Action::FocusVariables => focus(state, Pane::Variables),
        Action::FocusOutput => focus(state, Pane::Output),
        Action::FocusLines => focus(state, Pane::Lines),
        Action::FocusTruncation => focus(state, Pane::Truncation),
        Action::FocusHistory => focus(state, Pane::History),
        Action::ToggleZoom => {
            state.zoom = !state.zoom;
            Vec::new()
        }
        Action::ToggleHelp => {
            state.overlay = if state.overlay == Overlay::Help { Overlay::None } else { Overlay::Help };
            state.help_scroll = 0;
            Vec::new()
        }
        Action::ToggleTokens => {
            state.show_tokens = !state.show_tokens;
            Vec::new()
        }
        Action::TogglePreview => {
            state.preview = !state.preview;
            if state.preview {
                state.focus = Pane::System;
            }
            Vec::new()
        }
        Action::CopyCurl => match panes::preview::curl(state) {
            Ok(text) => vec![Effect::Copy { text, file_name: "last-request.curl.sh".into() }],
            Err(e) => {
                state.note = Some(e);
                Vec::new()
            }
        },
        Action::NextProvider => {
            let at = PROVIDERS.iter().position(|p| *p == state.choice.provider).map_or(0, |i| i + 1);
            state.choice.provider = PROVIDERS[at % PROVIDERS.len()].to_string();
            state.note = Some(format!("provider: {}", state.choice.provider));
            Vec::new()
        }
        Action::NextStructured => {
            let at = STRUCTURED.iter().position(|s| *s == state.choice.structured.as_deref()).map_or(0, |i| i + 1);
            state.choice.structured = STRUCTURED[at % STRUCTURED.len()].map(str::to_string);
            state.choice.structured_by_default = false;
            state.note = Some(format!("structured: {}", state.choice.structured.as_deref().unwrap_or("none")));
            Vec::new()
        }
        Action::ChooseModel => super::input::open_model_picker(state),
        Action::NextCase => {
            let names: Vec<Option<String>> =
                std::iter::once(None).chain(state.saved.cases.iter().map(|c| Some(c.name.clone()))).collect();
            let at = names.iter().position(|n| *n == state.choice.case).map_or(0, |i| i + 1);
            state.choice.case = names[at % names.len()].clone();
            state.selected_variable = at % names.len();
            state.note = Some(format!("case: {}", state.choice.case.as_deref().unwrap_or("(default variables)")));
            Vec::new()
        }
        Action::MoreTokens => {
            state.choice.max_tokens = Some(state.choice.max_tokens.map_or(256, |n| n.saturating_mul(2)));
            Vec::new()
        }
        Action::FewerTokens => {
            state.choice.max_tokens = state.choice.max_tokens.map(|n| n / 2).filter(|n| *n >= 16);
            Vec::new()
        }
        Action::Up => step(state, -1),
        Action::Down => step(state, 1),
        Action::Left => cut_by(state, -1),
        Action::Right => cut_by(state, 1),
        Action::PageUp => step(state, -10),
        Action::PageDown => step(state, 10),
        Action::Home => step(state, i64::MIN / 2),
        Action::End => {
            if state.focus == Pane::Output {
                state.output_scroll = None;
                return Vec::new();
            }
            step(state, i64::MAX / 2)
        }
        Action::Open => open(state),
        Action::Compare => compare_update::enter(state),
    }
}

fn focus(state: &mut State, pane: Pane) -> Vec<Effect> {
    state.focus = pane;
    Vec::new()
}

fn save(state: &mut State) -> Vec<Effect> {
    match edit::prompt_for_save(state) {
        Ok((prompt, schema_file)) => {
            state.pending_save = Some(Box::new((prompt.clone(), state.texts())));
            vec![Effect::Save { path: state.path.clone(), prompt: Box::new(prompt), schema_file }]
        }
        Err(e) => {
            state.note = Some(format!("not saved: {e}"));
            Vec::new()
        }
    }
}

fn start_run(state: &mut State, max_turns: Option<u32>, replay: Option<ReplaySource>) -> Vec<Effect> {
    if state.running() {
        state.note = Some("a run is going: esc cancels it".into());
        return Vec::new();
    }
    let prompt = match edit::prompt_for_run(state) {
        Ok(prompt) => prompt,
        Err(e) => {
            state.note = Some(format!("cannot run: {e}"));
            return Vec::new();
        }
    };
    let replay = replay.or_else(|| {
        (state.choice.provider == "replay").then(|| state.choice.transcript.clone().map(ReplaySource::File)).flatten()
    });
    let provider = if replay.is_some() { "replay".to_string() } else { state.choice.provider.clone() };
    if provider == "replay" && replay.is_none() {
        state.note = Some(
            "cannot run: the replay provider needs a recorded transcript and this prompt has none in answers/; \
             alt-p picks another provider"
                .into(),
        );
        return Vec::new();
    }
    state.phase = RunPhase::Starting;
    state.run.clear_answer();
    state.run.turn = 0;
    state.selected_line = 0;
    state.output_scroll = None;
    state.truncation = Default::default();
    state.note = None;
    state.run_prompt = Some(Box::new(prompt.clone()));
    state.run_id += 1;
    state.run.provider = provider.clone();
    state.run.model = state.choice.model.clone().unwrap_or_default();
    state.run.mode = None;
    state.run.asked_mode = state.choice.structured.clone().unwrap_or_else(|| "none".into());
    state.run.mode_by_default = state.choice.structured_by_default;
    vec![Effect::StartRun(Box::new(RunRequest {
        run: state.run_id,
        prompt,
        path: state.path.clone(),
        case: state.choice.case.clone(),
        provider,
        model: state.choice.model.clone(),
        structured: state.choice.structured.clone(),
        max_tokens: state.choice.max_tokens,
        max_turns,
        replay,
    }))]
}

fn run_event(state: &mut State, event: RunEvent, at_ms: u64) -> Vec<Effect> {
    let run = &mut state.run;
    run.last_at_ms = at_ms;
    match event {
        RunEvent::TurnStarted { turn, max_turns, request } => {
            if turn > 1 {
                run.clear_answer();
                state.selected_line = 0;
                state.truncation = Default::default();
            }
            run.turn = turn;
            run.max_turns = max_turns;
            if !request.model.is_empty() {
                run.model = request.model;
            }
            state.phase = RunPhase::Running;
        }
        RunEvent::Mode(mode) => {
            if let Some(fallback) = mode.fallbacks.last() {
                state.note = Some(format!(
                    "structured mode fell back from {} to {}: {}",
                    fallback.from, fallback.to, fallback.reason
                ));
            }
            run.mode = Some(mode);
        }
        RunEvent::Waiting { attempt, after_ms, reason } => {
            state.note = Some(format!("server busy ({reason}): attempt {attempt} in {after_ms} ms"));
        }
        RunEvent::Delta(text) => {
            let at = at_ms;
            let ttft = *run.ttft_ms.get_or_insert(at_ms);
            run.push_chunk(&text);
            let bucket = (at_ms.saturating_sub(ttft) / 100) as usize;
            if bucket < 10_000 {
                if run.rate.len() <= bucket {
                    run.rate.resize(bucket + 1, 0);
                }
                run.rate[bucket] += 1;
            }
            let secs = at_ms.saturating_sub(ttft) as f64 / 1000.0;
            if secs > 0.05 {
                run.tokens_per_s = Some(run.chunk_ends.len() as f64 / secs);
            }
            return live_sweep(state, at);
        }
        RunEvent::Line(verdict) => run.verdicts.push(verdict),
        RunEvent::Usage(usage) => run.usage = Some(usage),
        RunEvent::Finish(reason) => run.finish = Some(reason),
        RunEvent::StreamError(error) => run.error = Some(error.to_string()),
        RunEvent::TurnEnded(summary) => {
            let summary = *summary;
            run.report = Some(summary.parse);
            run.tokens_per_s = summary.tokens_per_s.or(run.tokens_per_s);
            run.ttft_ms = summary.ttft_ms.or(run.ttft_ms);
            run.usage = summary.usage.or(run.usage);
        }
        RunEvent::Feedback { turn, .. } => {
            state.note = Some(format!("turn {turn} failed validation: retrying with the errors as feedback"));
        }
        RunEvent::RunEnded { ok, .. } => {
            if !matches!(state.phase, RunPhase::Cancelling | RunPhase::Cancelled) {
                state.phase = RunPhase::Done { ok };
            }
            return sweep_effect(state);
        }
    }
    Vec::new()
}

/// How often, at most, the answer so far is swept again while it streams (a frame; one sweep at a time).
pub const LIVE_SWEEP_EVERY_MS: u64 = 16;

/// While the answer streams: the sweep of the answer so far, when none is being computed and the last
/// one was asked for a frame ago or more (never once per token).
fn live_sweep(state: &mut State, at_ms: u64) -> Vec<Effect> {
    let view = &state.truncation;
    let due = view.last_live_ms.is_none_or(|last| at_ms >= last.saturating_add(LIVE_SWEEP_EVERY_MS));
    if view.pending || !due {
        return Vec::new();
    }
    state.truncation.last_live_ms = Some(at_ms);
    sweep_effect(state)
}

/// A sweep arrived: shown if it is of this run and not older than the one shown; the cut follows the
/// end of the answer unless it was moved back.
fn sweep_ready(state: &mut State, run: u64, answer_len: usize, sweep: Result<Box<Sweep>, String>) {
    let view = &mut state.truncation;
    if run != state.run_id || answer_len > state.run.output.len() || answer_len < view.swept_len {
        return;
    }
    if answer_len >= view.requested_len {
        view.pending = false;
    }
    match sweep {
        Ok(sweep) => {
            let following = view.sweep.as_ref().is_none_or(|shown| view.cut + 1 >= shown.cuts.len());
            if following {
                view.cut = sweep.cuts.len().saturating_sub(1);
            }
            view.series = panes::truncation::series(&sweep);
            view.sweep = Some(*sweep);
            view.error = None;
            view.swept_len = answer_len;
            view.live =
                answer_len < state.run.output.len() || matches!(state.phase, RunPhase::Starting | RunPhase::Running);
        }
        Err(e) => view.error = Some(e),
    }
}

/// The sweep of the answer on screen, when there is one.
fn sweep_effect(state: &mut State) -> Vec<Effect> {
    if state.run.output.is_empty() {
        return Vec::new();
    }
    let prompt = match &state.run_prompt {
        Some(prompt) => (**prompt).clone(),
        None => state.saved.clone(),
    };
    state.truncation.pending = true;
    state.truncation.requested_len = state.run.output.len();
    vec![Effect::ComputeSweep(Box::new(SweepRequest {
        run: state.run_id,
        answer: state.run.output.clone(),
        chunk_ends: state.run.chunk_ends.clone(),
        prompt,
        path: state.path.clone(),
    }))]
}

/// Moves the focused pane's selection, scroll or cut by `by`.
fn step(state: &mut State, by: i64) -> Vec<Effect> {
    let clamp = |at: usize, len: usize| -> usize {
        let at = (at as i64).saturating_add(by);
        at.clamp(0, len.saturating_sub(1) as i64) as usize
    };
    match state.focus {
        Pane::Lines => state.selected_line = clamp(state.selected_line, state.run.verdicts.len()),
        Pane::History => state.history_selected = clamp(state.history_selected, state.history.len()),
        Pane::Variables => state.selected_variable = clamp(state.selected_variable, super::variables::row_count(state)),
        Pane::Output => {
            let lines = state.run.line_count();
            let from = state.output_scroll.unwrap_or_else(|| lines.saturating_sub(1));
            state.output_scroll = Some(clamp(from, lines));
        }
        Pane::Truncation => return cut_by(state, by),
        _ => {}
    }
    Vec::new()
}

fn cut_by(state: &mut State, by: i64) -> Vec<Effect> {
    if state.focus != Pane::Truncation {
        return Vec::new();
    }
    let total = state.run.chunk_ends.len() as i64;
    state.truncation.cut = (state.truncation.cut as i64).saturating_add(by).clamp(0, total) as usize;
    Vec::new()
}

/// Sets the cut (from a mouse drag).
pub fn set_cut(state: &mut State, cut: usize) {
    state.truncation.cut = cut.min(state.run.chunk_ends.len());
}

fn open(state: &mut State) -> Vec<Effect> {
    match state.focus {
        Pane::History => {
            let Some(record) = state.history.get(state.history_selected) else { return Vec::new() };
            let transcript = record["turns"].as_array().and_then(|turns| turns.last()).map(|t| t["transcript"].clone());
            match transcript {
                Some(transcript) if transcript.is_object() => {
                    start_run(state, Some(1), Some(ReplaySource::Record(Box::new(transcript))))
                }
                _ => {
                    state.note = Some("this history entry has no transcript to replay".into());
                    Vec::new()
                }
            }
        }
        Pane::Variables if state.selected_variable > state.saved.cases.len() => {
            super::input::open_variable_editor(state)
        }
        Pane::Variables => {
            state.choice.case = match state.selected_variable {
                0 => None,
                n => state.saved.cases.get(n - 1).map(|c| c.name.clone()),
            };
            state.note = Some(format!("case: {}", state.choice.case.as_deref().unwrap_or("(default variables)")));
            Vec::new()
        }
        Pane::Lines => {
            if let Some(verdict) = state.run.verdicts.get(state.selected_line) {
                state.output_scroll = Some(verdict.line.saturating_sub(1));
                state.focus = Pane::Output;
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}
