//! The eval screen: alt-e opens it on a prompt whose cases the replay provider answers from their
//! recorded transcripts (the real runner, `eval::pipeline`); cells fill in, a failing case opens
//! with its differences, approve writes its answer as expected and the cell passes; ctrl-r re-runs
//! with the change per row; snapshots of the matrix and the drill-down at 80×24 and 120×40.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::eval::diff::Change;
use tunebench::eval::score::Verdict;
use tunebench::provider::wire_server::Reply;
use tunebench::tui::eval::state::{EvalOverlay, EvalPhase};
use tunebench::tui::msg::{Effect, EvalNews, Job, Msg, Start};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Screen, State};
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;
use tunebench::tui::view::render;

use super::support::*;

pub const PROMPT: &str = r#"id = "definitions"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}'''

[variables]
text = "nothing"

[eval]
match = "entity"

[[cases]]
name = "alpha"
variables = { text = "ALPHA-TEXT" }
[cases.expected]
items = [{ entity = "Alpha", definition = "The first letter." }]

[[cases]]
name = "beta"
variables = { text = "BETA-TEXT" }
[cases.expected]
items = [
  { entity = "Beta", definition = "The second letter." },
  { entity = "Gamma", definition = "The third letter." },
]
"#;

pub fn transcript(answer: &str) -> String {
    let mut text = String::from(
        "{\"transcript\": 1, \"provider\": \"example\", \"model\": \"recorded\", \"request\": {\"prompt\": \"definitions\"}}\n",
    );
    for (i, line) in answer.split_inclusive('\n').enumerate() {
        text.push_str(&format!("{}\n", serde_json::json!({"t_ms": i * 10, "delta": line})));
    }
    text.push_str(
        "{\"t_ms\": 100, \"finish_reason\": \"stop\", \"usage\": {\"input_tokens\": 20, \"output_tokens\": 12}}\n",
    );
    text
}

/// The prompt in a fresh folder, each case's recorded answer beside it: alpha right, beta missing Gamma.
pub fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("definitions.toml"), PROMPT).unwrap();
    let answers = dir.path().join("answers");
    std::fs::create_dir(&answers).unwrap();
    let alpha = "{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}\n";
    let beta = "{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n";
    std::fs::write(answers.join("definitions.jsonl"), transcript(alpha)).unwrap();
    std::fs::write(answers.join("definitions.alpha.jsonl"), transcript(alpha)).unwrap();
    std::fs::write(answers.join("definitions.beta.jsonl"), transcript(beta)).unwrap();
    dir
}

/// Executes `effects` on a real runner and feeds every message back until the eval is done.
pub fn drive(state: &mut State, effects: Vec<Effect>) {
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, None).unwrap();
    runner.record_history = false;
    drive_on(state, effects, &mut runner, &rx);
}

/// As [`drive`], on `runner` (whose data directory keeps the eval records).
pub fn drive_on(state: &mut State, effects: Vec<Effect>, runner: &mut Runner, rx: &mpsc::Receiver<Msg>) {
    let mut done = false;
    for effect in effects {
        for msg in runner.execute(effect) {
            done |= matches!(msg, Msg::Eval { news: EvalNews::Done(_) | EvalNews::Rescored { .. }, .. });
            update(state, msg);
        }
    }
    while !done {
        let msg = rx.recv_timeout(Duration::from_secs(120)).expect("the eval reports within two minutes");
        done = matches!(msg, Msg::Eval { news: EvalNews::Done(_) | EvalNews::Rescored { .. }, .. });
        update(state, msg);
    }
}

pub fn verdict(state: &State, row: usize) -> Option<Verdict> {
    state.eval.scored(row).map(|c| c.score.verdict)
}

pub fn evaluated(dir: &Path) -> State {
    without_local_model();
    let mut state = state_for(&dir.join("definitions.toml")).unwrap();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Replay);
    let effects = update(&mut state, alt('e'));
    assert!(state.screen == Screen::Eval, "alt-e opens the eval screen");
    assert!(matches!(effects.as_slice(), [Effect::Start(Start::Eval(r))] if r.id == 1));
    drive(&mut state, effects);
    assert_eq!(state.eval.phase, EvalPhase::Done, "{:?}", state.note);
    state
}

pub fn draw(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(frame, state, &Theme::named("mono").unwrap())).unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| (0..width).map(|x| buffer[(x, y)].symbol().to_string()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_matrix_fills_in_a_case_opens_and_approve_makes_it_pass() {
    let dir = folder();
    let mut state = evaluated(dir.path());
    assert_eq!(state.eval.rows, [Some("alpha".to_string()), Some("beta".to_string())]);
    assert_eq!(verdict(&state, 0), Some(Verdict::Pass));
    assert_eq!(verdict(&state, 1), Some(Verdict::Fail), "beta's answer misses Gamma");
    let matrix = draw(&state, 80, 24);
    assert!(matrix.contains("1/2 pass (50%)"), "{matrix}");

    update(&mut state, special(Key::Down));
    update(&mut state, special(Key::Enter));
    assert_eq!(state.eval.overlay, EvalOverlay::Case);
    let case = draw(&state, 120, 40);
    assert!(case.contains("missing"), "the drill-down lists the missing item:\n{case}");
    assert!(case.contains("Gamma"), "{case}");
    insta::assert_snapshot!("eval_case_120x40", case);
    insta::assert_snapshot!("eval_case_80x24", draw(&state, 80, 24));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.eval.overlay, EvalOverlay::None, "esc closes the case first");
    insta::assert_snapshot!("eval_matrix_120x40", draw(&state, 120, 40));
    insta::assert_snapshot!("eval_matrix_80x24", draw(&state, 80, 24));

    // Approve: a confirmation showing what is written, then the save and the row scored again.
    assert!(update(&mut state, key('a')).is_empty());
    assert!(
        matches!(&state.eval.overlay, EvalOverlay::ConfirmApprove { row: 1, approval } if approval.lines()[0].contains("Beta"))
    );
    let effects = update(&mut state, key('y'));
    assert!(matches!(effects.as_slice(), [Effect::Save { .. }, Effect::Rescore(_)]), "{effects:?}");
    drive(&mut state, effects);
    assert_eq!(verdict(&state, 1), Some(Verdict::Pass), "{:?}", state.note);
    let saved = std::fs::read_to_string(dir.path().join("definitions.toml")).unwrap();
    let reread =
        tunebench::prompt::file::PromptFile::from_toml_str(&saved, &dir.path().join("definitions.toml")).unwrap();
    let beta = reread.cases.iter().find(|c| c.name == "beta").unwrap();
    assert_eq!(beta.expected.as_ref().and_then(|e| e.items.as_ref()).map(Vec::len), Some(1), "{saved}");
    assert!(!state.dirty, "the approved prompt is the saved one");
    // A later ctrl-s keeps the approved answer (the edited cases carry it too).
    let effects = update(&mut state, ctrl('s'));
    let [Effect::Save { prompt: again, .. }] = effects.as_slice() else { panic!("{effects:?}") };
    let beta_again = again.cases.iter().find(|c| c.name == "beta").unwrap();
    assert_eq!(beta_again.expected, beta.expected, "ctrl-s writes the approved expectation back");

    // ctrl-r re-runs the matrix against the first run (there was no earlier eval): beta improved.
    let effects = update(&mut state, ctrl('r'));
    assert!(matches!(effects.as_slice(), [Effect::Start(Start::Eval(r))] if r.baseline.is_some()));
    drive(&mut state, effects);
    assert_eq!(state.eval.row_change(1), Some(Change::Improved));
    assert_eq!(state.eval.row_change(0), Some(Change::Same));
    let note = state.note.clone().unwrap_or_default();
    assert!(note.contains("1 improved, 0 regressed, 1 same"), "{note}");

    update(&mut state, special(Key::Esc));
    assert!(state.screen != Screen::Eval, "esc closes the screen");
}

#[test]
fn a_click_selects_a_row_and_esc_cancels_a_running_eval() {
    let dir = folder();
    without_local_model();
    let mut state = state_for(&dir.path().join("definitions.toml")).unwrap();
    update(&mut state, special(Key::F(8)));
    assert!(state.eval.running());
    update(
        &mut state,
        Msg::Eval {
            id: 1,
            news: EvalNews::Planned {
                rows: vec![Some("a".into()), Some("b".into())],
                column: "x".into(),
                baseline: None,
                baseline_column: None,
            },
        },
    );
    update(&mut state, Msg::Eval { id: 7, news: EvalNews::Done(Err("an older eval".into())) });
    assert!(state.eval.running(), "news of another eval is ignored");
    use tunebench::tui::msg::{Mouse, MouseKind, TermEvent};
    update(&mut state, Msg::Term(TermEvent::Mouse(Mouse { kind: MouseKind::Click, column: 5, row: 3 })));
    assert_eq!(state.eval.selected, 1);
    let effects = update(&mut state, special(Key::Esc));
    assert_eq!(effects, vec![Effect::Cancel(Job::Eval)]);
    assert!(state.screen != Screen::Eval);
}

/// On a real server: the first run asks for every case; ctrl-r with nothing edited asks for none (every
/// cell `cached`, the same verdicts); an edit to one case's text asks for that case only.
#[test]
fn a_rerun_asks_the_server_only_for_changed_cases() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = vec![
        (
            "ALPHA-TEXT".to_string(),
            Reply::chat_stream("{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}\n", "stop", None),
        ),
        (
            "BETA-TEXT".to_string(),
            Reply::chat_stream("{\"entity\": \"Beta\", \"definition\": \"The second letter.\"}\n", "stop", None),
        ),
    ];
    let server = runtime.block_on(tunebench::provider::wire_server::WireServer::start_routed(routes)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("definitions.toml");
    // A template no earlier test run sent (the response cache outlives the test).
    let nonce = format!("{:?}", std::time::SystemTime::now());
    let text = PROMPT.replace("Define every entity in:", &format!("Define every entity ({nonce}) in:"))
        + &format!("\n[provider]\nname = \"openai\"\nbase_url = \"{}/v1\"\n", server.url());
    std::fs::write(&path, text).unwrap();
    without_local_model();
    let mut state = state_for(&path).unwrap();
    assert_eq!(state.choice.provider, tunebench::provider::kind::ProviderKind::Openai);
    let effects = update(&mut state, alt('e'));
    drive(&mut state, effects);
    assert_eq!(state.eval.phase, EvalPhase::Done, "{:?}", state.note);
    assert_eq!(server.received().len(), 2);
    let cached = |state: &State| -> Vec<bool> {
        (0..state.eval.rows.len()).map(|row| state.eval.scored(row).is_some_and(|s| s.run.cached)).collect()
    };
    assert_eq!(cached(&state), [false, false]);
    assert_eq!((verdict(&state, 0), verdict(&state, 1)), (Some(Verdict::Pass), Some(Verdict::Fail)));

    let effects = update(&mut state, ctrl('r'));
    drive(&mut state, effects);
    assert_eq!(server.received().len(), 2, "nothing changed: every answer from the cache");
    assert_eq!(cached(&state), [true, true]);
    assert_eq!((verdict(&state, 0), verdict(&state, 1)), (Some(Verdict::Pass), Some(Verdict::Fail)));
    let screen = draw(&state, 120, 40);
    assert!(screen.contains("· 2 cached"), "the title says the answers came from the cache:\n{screen}");

    // Beta's text is edited on disk (as the variables pane would save it): one request, for beta.
    let edited = std::fs::read_to_string(&path).unwrap().replace("\"BETA-TEXT\"", "\"BETA-TEXT, again\"");
    std::fs::write(&path, edited).unwrap();
    let mut state = state_for(&path).unwrap();
    let effects = update(&mut state, alt('e'));
    drive(&mut state, effects);
    assert_eq!(server.received().len(), 3);
    assert!(server.received()[2].body.contains("BETA-TEXT, again"));
    assert_eq!(cached(&state), [true, false]);
}

/// A scored cell with `verdict` (only what the matrix and its filter read).
pub(super) fn scored(row: usize, verdict: Verdict) -> tunebench::tui::eval::state::EvalCell {
    let score = tunebench::eval::score::CaseScore {
        verdict,
        items: None,
        differences: Vec::new(),
        checks: Vec::new(),
        recovered: Vec::new(),
        field_judges: Vec::new(),
        reason: format!("{verdict:?}"),
    };
    let record = tunebench::eval::CellRecord {
        row,
        column: 0,
        repeat: 1,
        case: Some(format!("case-{row:05}")),
        score,
        run: Default::default(),
    };
    tunebench::tui::eval::state::EvalCell { started: true, scored: Some(Box::new(record)), ..Default::default() }
}

#[test]
fn ten_thousand_dataset_rows_are_filtered_by_name_and_verdict_and_drawn_a_screen_at_a_time() {
    let mut state = sample_state();
    state.size = (120, 40);
    let rows = 10_000;
    state.screen = Screen::Eval;
    state.eval.phase = EvalPhase::Done;
    state.eval.rows = (0..rows).map(|row| Some(format!("case-{row:05}"))).collect();
    // Every seventh case fails.
    state.eval.cells =
        (0..rows).map(|row| scored(row, if row % 7 == 0 { Verdict::Fail } else { Verdict::Pass })).collect();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let draw = |terminal: &mut Terminal<TestBackend>, state: &State| {
        terminal.draw(|frame| render(frame, state, &Theme::default())).unwrap();
        terminal.backend().to_string()
    };

    // `/` and a name: only the cases whose name holds it; the selection moves among them.
    update(&mut state, key('/'));
    for c in "case-0990".chars() {
        update(&mut state, key(c));
    }
    update(&mut state, special(Key::Enter));
    assert_eq!(state.eval.shown_rows(), (9900..9910).collect::<Vec<_>>());
    let screen = draw(&mut terminal, &state);
    assert!(screen.contains("name ~ \"case-0990\" all (10 of 10000)"), "{screen}");
    assert!(screen.contains("case-09909") && !screen.contains("case-00000"), "{screen}");
    update(&mut state, special(Key::Down));
    assert_eq!(state.eval.selected, 9901, "from the hidden first row to the second shown one");
    // `v`: the failing ones among them (9905 = 7 × 1415).
    update(&mut state, key('v'));
    assert_eq!(state.eval.shown_rows(), [9905]);
    assert_eq!(state.eval.selected, 9905);
    // esc while typing clears the name: every failing case, a screen at a time.
    update(&mut state, key('/'));
    update(&mut state, special(Key::Esc));
    assert!(state.screen == Screen::Eval, "esc cleared the filter, it did not leave the screen");
    assert_eq!(state.eval.shown_rows().len(), rows.div_ceil(7));
    update(&mut state, special(Key::End));
    assert_eq!(state.eval.selected, 9996);
    let screen = draw(&mut terminal, &state);
    assert!(
        screen.contains("case-09996") && screen.contains("case-09989") && !screen.contains("case-09990"),
        "{screen}"
    );
    // A click on the first row drawn selects the case drawn there, scrolled as it is.
    let first_drawn =
        screen.lines().nth(2).unwrap().split_whitespace().find(|w| w.starts_with("case-")).unwrap().to_string();
    update(
        &mut state,
        Msg::Term(tunebench::tui::msg::TermEvent::Mouse(tunebench::tui::msg::Mouse {
            kind: tunebench::tui::msg::MouseKind::Click,
            column: 5,
            row: 2,
        })),
    );
    assert_eq!(state.eval.rows[state.eval.selected].as_deref(), Some(first_drawn.as_str()));
}
