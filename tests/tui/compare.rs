//! The compare screen: entering and leaving it, both sides' events (from the real runner replaying
//! the two recorded transcripts of extract-definitions) landing in their own panes, the cut keys,
//! a twin without a recorded answer, and a snapshot of the finished screen at 120×40.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::compare::RowStatus;
use tunebench::output::{LineStatus, Report};
use tunebench::truncate::transcript::Transcript;
use tunebench::tui::compare::state::ComparePhase;
use tunebench::tui::msg::{Action, CompareNews, Effect, Job, Msg, Start};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Screen, State};
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;
use tunebench::tui::view::render;

use super::support::*;

const PROMPT: &str = "sample-prompts/extract-definitions.toml";

fn answer_of(path: &str) -> String {
    Transcript::parse(&std::fs::read_to_string(path).unwrap()).unwrap().answer()
}

/// Executes `effects` on a real runner and feeds every message back until the comparison is done.
fn drive(state: &mut State, effects: Vec<Effect>) {
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, None).unwrap();
    runner.record_history = false;
    let mut done = false;
    for effect in effects {
        for msg in runner.execute(effect) {
            done |= matches!(msg, Msg::Compare { news: CompareNews::Done(_), .. });
            update(state, msg);
        }
    }
    while !done {
        let msg = rx.recv_timeout(Duration::from_secs(120)).expect("the comparison reports within two minutes");
        done = matches!(msg, Msg::Compare { news: CompareNews::Done(_), .. });
        update(state, msg);
    }
}

/// extract-definitions compared with its twin, both sides replayed from answers/ to the end.
fn compared() -> State {
    let mut state = {
        super::support::without_local_model();
        state_for(Path::new(PROMPT)).unwrap()
    };
    let effects = update(&mut state, alt('x'));
    assert!(state.screen == Screen::Compare, "alt-x opens the compare screen");
    assert!(
        matches!(effects.as_slice(), [Effect::Start(Start::Compare(r))] if r.target.provider == Some(tunebench::provider::kind::ProviderKind::Replay) && r.id == 1)
    );
    drive(&mut state, effects);
    state
}

fn screen(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|frame| render(frame, state, &Theme::default())).unwrap();
    terminal.backend().to_string()
}

#[test]
fn each_sides_events_land_in_its_own_panes() {
    let state = compared();
    let view = &state.compare;
    assert_eq!(view.phase, ComparePhase::Done);
    assert_eq!(view.sides[0].output, answer_of("sample-prompts/answers/extract-definitions-json.jsonl"));
    assert_eq!(view.sides[1].output, answer_of("sample-prompts/answers/extract-definitions.jsonl"));
    assert!(view.sides[0].verdicts.is_empty(), "a json side has no line verdicts");
    assert_eq!(view.sides[1].verdicts.len(), 5, "the jsonl side's four complete lines and the cut one");
    assert!(matches!(view.sides[1].verdicts[4].status, LineStatus::InvalidJson { .. }));
    assert!(matches!(&view.sides[0].report, Some(Report::Json(r)) if !r.ok), "the cut json answer fails");
    assert_eq!([view.sides[0].ended, view.sides[1].ended], [Some(false), Some(false)]);
    let comparison = view.comparison.as_ref().unwrap();
    assert_eq!(
        [comparison.sides[0].prompt.as_str(), comparison.sides[1].prompt.as_str()],
        ["extract-definitions-json", "extract-definitions"]
    );
    let agreement = &comparison.agreement;
    assert_eq!((agreement.both, agreement.same, agreement.only_a, agreement.only_b), (3, 3, 0, 1));
    assert_eq!(agreement.rows.iter().filter(|r| r.status == RowStatus::OnlyB).count(), 1);
    assert_eq!(view.cut, comparison.chart.axis, "the cut starts at the whole answer");
    assert_eq!(comparison.chart.axis, 136);
    // the editing state is untouched: no run took place on the edit screen
    assert!(state.workbench.run.output.is_empty());
}

#[test]
fn cut_and_row_keys_move_within_the_axis_and_the_table() {
    let mut state = compared();
    let axis = state.compare.axis();
    assert!(update(&mut state, special(Key::Right)).is_empty());
    assert_eq!(state.compare.cut, axis, "the cut stops at the end of the axis");
    update(&mut state, special(Key::Left));
    assert_eq!(state.compare.cut, axis - 1);
    update(&mut state, special(Key::Home));
    assert_eq!(state.compare.cut, 0);
    update(&mut state, special(Key::Left));
    assert_eq!(state.compare.cut, 0, "the cut stops at 0");
    update(&mut state, special(Key::PageDown));
    update(&mut state, key('l'));
    assert_eq!(state.compare.cut, 11);
    update(&mut state, special(Key::End));
    assert_eq!(state.compare.cut, axis);
    let rows = state.compare.comparison.as_ref().unwrap().agreement.rows.len();
    for _ in 0..rows + 3 {
        update(&mut state, special(Key::Down));
    }
    assert_eq!(state.compare.selected_row, rows - 1);
    update(&mut state, special(Key::Up));
    assert_eq!(state.compare.selected_row, rows - 2);
    // keys that edit do nothing here: the template is untouched
    let before = state.texts();
    update(&mut state, key('x'));
    assert_eq!(state.texts(), before);
}

#[test]
fn esc_or_the_same_key_goes_back_and_a_running_comparison_is_cancelled() {
    let mut state = compared();
    assert!(update(&mut state, special(Key::Esc)).is_empty());
    assert!(state.screen != Screen::Compare);
    update(&mut state, alt('x'));
    assert!(state.screen == Screen::Compare && state.compare.running() && state.compare.id == 2);
    let effects = update(&mut state, alt('x'));
    assert_eq!(effects, vec![Effect::Cancel(Job::Compare)]);
    assert!(state.screen != Screen::Compare && !state.compare.running());
    // late news of the cancelled comparison, or of an older one, changes nothing
    let late = CompareNews::Event { side: 0, event: Box::new(tunebench::run::RunEvent::Delta("late".into())) };
    update(&mut state, Msg::Compare { id: 2, news: late.clone() });
    update(&mut state, Msg::Compare { id: 1, news: late });
    assert!(state.compare.sides[0].output.is_empty());
}

#[test]
fn a_twin_without_a_recorded_answer_says_so_in_the_view() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("answers")).unwrap();
    std::fs::copy(PROMPT, dir.path().join("extract-definitions.toml")).unwrap();
    std::fs::copy(
        "sample-prompts/answers/extract-definitions.jsonl",
        dir.path().join("answers/extract-definitions.jsonl"),
    )
    .unwrap();
    let mut state = {
        super::support::without_local_model();
        state_for(&dir.path().join("extract-definitions.toml")).unwrap()
    };
    let effects = update(&mut state, Msg::Action(Action::Compare));
    drive(&mut state, effects);
    let ComparePhase::Failed(message) = &state.compare.phase else { panic!("{:?}", state.compare.phase) };
    assert!(message.contains("no recorded answer for the json side (`extract-definitions-json`)"), "{message}");
    assert!(message.contains("extract-definitions-json.jsonl"), "{message}");
    assert!(screen(&state).contains("no recorded answer"));
}

#[test]
fn the_finished_compare_screen_at_120x40() {
    let mut state = compared();
    update(&mut state, special(Key::Home));
    for _ in 0..82 {
        update(&mut state, special(Key::Right));
    }
    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Down));
    insta::assert_snapshot!("compare_120x40", screen(&state));
}
