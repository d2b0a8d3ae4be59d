//! Shared helpers: the sample prompt's state, keys, and the run events its recorded answer produces.

use std::path::Path;
use std::sync::Arc;

use ratatui_textarea::{Input, Key};
use tunebench::output::jsonl::JsonlParser;
use tunebench::output::LineVerdict;
use tunebench::run::RunEvent;
use tunebench::schema::Check;
use tunebench::truncate::sweep::Live;
use tunebench::truncate::transcript::Transcript;
use tunebench::tui::msg::{Msg, TermEvent};
use tunebench::tui::setup::state_for;
use tunebench::tui::state::State;
use tunebench::tui::update::update;

pub const SAMPLE: &str = "sample-prompts/agent-kg-extract.toml";
pub const SAMPLE_ANSWER: &str = "sample-prompts/answers/agent-kg-extract.jsonl";

pub fn sample_state() -> State {
    without_local_model();
    state_for(Path::new(SAMPLE)).expect("the sample prompt loads")
}

/// These tests run on recorded answers: the local model is looked for in a cache directory that has
/// none, whatever this machine has fetched.
pub fn without_local_model() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("TUNEBENCH_CACHE_DIR", std::env::temp_dir().join("tunebench-tests-no-model")));
}

/// The runner's answer to a save effect when the file is as the workbench read it: what the file holds
/// after the in-place save (nothing is written).
pub fn saved(effect: &tunebench::tui::msg::Effect) -> Msg {
    let tunebench::tui::msg::Effect::Save { path, base, prompt, schema_text, .. } = effect else {
        panic!("not a save: {effect:?}")
    };
    let text = base.edited(prompt, schema_text.as_deref()).expect("the save edits the file");
    let prompt = tunebench::prompt::file::PromptFile::from_toml_str(&text, path).expect("the saved file reads back");
    Msg::Saved(Ok(Box::new(tunebench::prompt::file::OnDisk { text, prompt })))
}

/// Writes a save effect as the runner does, over a copy of the file as the workbench read it in `dir`;
/// returns what the file holds then.
pub fn save_into(effect: &tunebench::tui::msg::Effect, dir: &Path) -> tunebench::prompt::file::OnDisk {
    let tunebench::tui::msg::Effect::Save { path, base, prompt, schema_text, .. } = effect else {
        panic!("not a save: {effect:?}")
    };
    let copy = dir.join(path.file_name().unwrap());
    std::fs::write(&copy, &base.text).unwrap();
    base.save(&copy, prompt, schema_text.as_deref()).expect("saved")
}

pub fn key(c: char) -> Msg {
    Msg::Term(TermEvent::Key(Input { key: Key::Char(c), ..Input::default() }))
}

pub fn special(key: Key) -> Msg {
    Msg::Term(TermEvent::Key(Input { key, ..Input::default() }))
}

pub fn ctrl(c: char) -> Msg {
    Msg::Term(TermEvent::Key(Input { key: Key::Char(c), ctrl: true, ..Input::default() }))
}

pub fn alt(c: char) -> Msg {
    Msg::Term(TermEvent::Key(Input { key: Key::Char(c), alt: true, ..Input::default() }))
}

pub fn type_text(state: &mut State, text: &str) {
    for c in text.chars() {
        let msg = if c == '\n' { special(Key::Enter) } else { key(c) };
        update(state, msg);
    }
}

/// Backspace over `text` (the characters last typed) in the focused input or editor.
pub fn erase(state: &mut State, text: &str) {
    for _ in text.chars() {
        update(state, special(Key::Backspace));
    }
}

/// The events a run of the sample emits for its first `chunks` chunks (all with `None`), judged by
/// the real JSONL parser against the sample's schema, and swept live as the engine does for the
/// workbench (a `Cut` where the items change; the `Swept` answer at its end).
pub fn sample_events(chunks: Option<usize>) -> Vec<(RunEvent, u64)> {
    let text = std::fs::read_to_string(SAMPLE_ANSWER).unwrap();
    let transcript = Transcript::parse(&text).unwrap();
    let state = sample_state();
    let schema = state.saved.resolve_schema(Path::new("sample-prompts")).unwrap().unwrap();
    let check: Arc<dyn Check> = Arc::new(tunebench::schema::CompiledSchema::compile(&schema).unwrap());
    let mut parser = JsonlParser::new(Default::default(), Some(check));
    let setup = tunebench::prompt::reading::setup_for_prompt(
        &state.saved,
        Path::new(SAMPLE),
        Path::new("sample-prompts"),
        None,
    )
    .unwrap();
    let mut live = Live::new(setup.profile, setup.item_check);
    let mut events = vec![(
        RunEvent::TurnStarted {
            turn: 1,
            max_turns: 1,
            request: tunebench::provider::Request::new("hand-written example answer"),
        },
        0,
    )];
    let count = chunks.unwrap_or(transcript.chunks.len());
    for chunk in transcript.chunks.iter().take(count) {
        events.push((RunEvent::Delta(chunk.delta.clone()), chunk.t_ms));
        let before = live.items();
        let items = live.push(&chunk.delta);
        if items != before {
            events.push((RunEvent::Cut { cut: live.cuts() - 1, items }, chunk.t_ms));
        }
        tunebench::output::OutputParser::feed(&mut parser, &chunk.delta);
        let lines: Vec<LineVerdict> = parser.take_new_lines();
        events.extend(lines.into_iter().map(|v| (RunEvent::Line(v), chunk.t_ms)));
    }
    if chunks.is_none() {
        let end = transcript.end.clone().unwrap();
        let usage = end.usage.unwrap();
        events.push((RunEvent::Usage(usage), end.t_ms));
        events.push((RunEvent::Finish(tunebench::provider::FinishReason::Length), end.t_ms));
        events.push((RunEvent::Swept(Box::new(live.finish())), end.t_ms));
        // The turn's summary, with the figures the core measures (here: the recording's times).
        let first = transcript.chunks.first().map_or(0, |c| c.t_ms);
        let summary = tunebench::run::TurnSummary {
            turn: 1,
            ok: false,
            finish_reason: Some(tunebench::provider::FinishReason::Length),
            usage: Some(usage),
            ttft_ms: Some(first),
            duration_ms: end.t_ms,
            tokens_per_s: Some(usage.output_tokens as f64 * 1000.0 / (end.t_ms - first) as f64),
            chunks: transcript.chunks.len(),
            parse: tunebench::output::OutputParser::report(&parser),
        };
        events.push((RunEvent::TurnEnded(Box::new(summary)), end.t_ms));
        events.push((RunEvent::RunEnded { ok: false, turns: 1 }, end.t_ms));
    }
    events
}

/// Feeds run events of run `run` to `state`; returns the effects.
/// The same events without the run's sweep (a stream the workbench must sweep itself at its end).
pub fn without_sweep(events: Vec<(RunEvent, u64)>) -> Vec<(RunEvent, u64)> {
    events.into_iter().filter(|(e, _)| !matches!(e, RunEvent::Cut { .. } | RunEvent::Swept(_))).collect()
}

pub fn feed(state: &mut State, events: Vec<(RunEvent, u64)>) -> Vec<tunebench::tui::msg::Effect> {
    let run = state.workbench.run_id;
    events
        .into_iter()
        .flat_map(|(event, at_ms)| update(state, Msg::Run { run, event: Box::new(event), at_ms }))
        .collect()
}
