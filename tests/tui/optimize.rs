//! The optimize screen: `o` on the eval screen optimizes the prompt as the editors hold it on the
//! real runner (`optimize::run` on the job bridge) against the in-process server with a scripted
//! proposer; progress while it runs, the candidates as rows, a candidate's diff and per-case changes,
//! accept into the editors (unsaved, undone in one step), reject, esc stopping it with the record
//! kept, the held-out cases marked in the eval matrix; snapshots of the rows and of a candidate.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::Key;
use tunebench::optimize::changes::Moved;
use tunebench::provider::wire_server::{Received, Reply, Step, WireServer};
use tunebench::tui::msg::{Effect, Job, Msg, OptimizeNews, Start};
use tunebench::tui::optimize::state::{OptimizeOverlay, OptimizePhase};
use tunebench::tui::runner::Runner;
use tunebench::tui::setup::state_for;
use tunebench::tui::state::{Screen, State};
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;

use super::eval::drive_on;
use super::support::*;

/// Six cases; the prompt as saved answers cases 1–3 right and 4–6 wrong. The schema's description
/// carries a nonce (the response cache outlives the test) that no screen shows.
const PROMPT: &str = concat!(
    r#"id = "labels"
response_type = "jsonl"
system = "Name the entity of the text."
template = "Text: {{text}}"
schema = '''{"type": "object", "description": "NONCE", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}'''

[eval]
match = "entity"

[provider]
name = "openai"
model = "test-model"
base_url = "URL"

"#,
    include_str!("../fixtures/optimize/six_cases.toml")
);

/// The server: the proposer's requests answered from `proposals` in order; a candidate whose system
/// prompt says GOOD-EDIT answers every case right, BAD-EDIT none, any other 1–3. With `stall_after`,
/// candidate requests past that many never answer (until the client goes).
struct Scripted {
    _runtime: tokio::runtime::Runtime,
    server: WireServer,
    candidate_requests: Arc<AtomicUsize>,
}

fn scripted(proposals: Vec<String>, stall_after: Option<usize>) -> Scripted {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let candidate_requests = Arc::new(AtomicUsize::new(0));
    let ran = candidate_requests.clone();
    let handler = move |request: &Received| -> Reply {
        let body = request.body.clone();
        if body.contains("You improve prompts") {
            let n = asked.fetch_add(1, Ordering::SeqCst);
            let answer = proposals.get(n).cloned().unwrap_or_else(|| "no more proposals".into());
            return Reply::chat_stream(&answer, "stop", Some((100, 20)));
        }
        let n = ran.fetch_add(1, Ordering::SeqCst);
        if stall_after.is_some_and(|after| n >= after) {
            return Reply::chunked("text/event-stream").then(Step::AwaitClose);
        }
        let case = (1..=6).find(|k| body.contains(&format!("CASE-{k}"))).unwrap_or(0);
        let right = if body.contains("GOOD-EDIT") {
            true
        } else if body.contains("BAD-EDIT") {
            false
        } else {
            case <= 3
        };
        let entity = if right { format!("E-{case}") } else { format!("WRONG-{case}") };
        Reply::chat_stream(&format!("{{\"entity\": \"{entity}\"}}\n"), "stop", Some((30, 12)))
    };
    let server = runtime.block_on(WireServer::start_handler(handler)).unwrap();
    Scripted { _runtime: runtime, server, candidate_requests }
}

fn proposal(rationale: &str, system: &str) -> String {
    serde_json::json!({ "rationale": rationale, "system": system }).to_string()
}

/// The prompt in `dir`, aimed at `server`.
fn prompt_in(dir: &Path, server: &WireServer) -> PathBuf {
    let nonce = format!("{:?}", std::time::SystemTime::now());
    let text = PROMPT.replace("NONCE", &nonce).replace("URL", &format!("{}/v1", server.url()));
    let path = dir.join("labels.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Executes `effects` on `runner` and feeds every message back until the optimization's record
/// arrives; `seen` looks at the state after each message.
fn drive_optimize(
    state: &mut State,
    effects: Vec<Effect>,
    runner: &mut Runner,
    rx: &mpsc::Receiver<Msg>,
    mut seen: impl FnMut(&mut State, &Msg) -> Vec<Effect>,
) {
    let mut pending = effects;
    loop {
        for effect in std::mem::take(&mut pending) {
            for msg in runner.execute(effect) {
                update(state, msg);
            }
        }
        let msg = rx.recv_timeout(Duration::from_secs(120)).expect("the optimization reports within two minutes");
        let done = matches!(msg, Msg::Optimize { news: OptimizeNews::Done(_), .. });
        pending.extend(update(state, msg.clone()));
        pending.extend(seen(state, &msg));
        if done {
            return;
        }
    }
}

fn draw_optimize(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = Theme::default().without_colors();
    terminal.draw(|frame| tunebench::tui::optimize::view::render(frame, frame.area(), state, &theme)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn draw_all(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = Theme::default().without_colors();
    terminal.draw(|frame| tunebench::tui::view::render(frame, state, &theme)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..buffer.area.height)
        .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The workbench on the prompt, its eval run (alt-e), then `o`: the optimization runs to its end.
/// Returns the folder, the server, the state and what the screen showed while it ran.
fn optimized(proposals: Vec<String>) -> (tempfile::TempDir, Scripted, State, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let s = scripted(proposals, None);
    let path = prompt_in(dir.path(), &s.server);
    without_local_model();
    let mut state = state_for(&path).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, Some(dir.path().join("data"))).unwrap();
    runner.record_history = false;
    let effects = update(&mut state, alt('e'));
    drive_on(&mut state, effects, &mut runner, &rx);
    let effects = update(&mut state, key('o'));
    assert_eq!(state.screen, Screen::Optimize, "o on the eval screen opens the optimize screen");
    assert!(
        matches!(effects.as_slice(), [Effect::Start(Start::Optimize(r))] if r.id == 1 && r.max_proposals == 4),
        "{effects:?}"
    );
    assert_eq!(state.optimize.phase, OptimizePhase::Running);
    let mut frames = Vec::new();
    drive_optimize(&mut state, effects, &mut runner, &rx, |state, msg| {
        if matches!(msg, Msg::Optimize { news: OptimizeNews::Event(_), .. }) && state.optimize.running() {
            frames.push(draw_optimize(state, 140, 24));
        }
        Vec::new()
    });
    (dir, s, state, frames)
}

fn good_bad_malformed() -> Vec<String> {
    vec![
        proposal("say which entity precisely", "GOOD-EDIT: name the entity exactly as the text spells it."),
        "this is not a proposal".into(),
        proposal("be terse", "BAD-EDIT: answer anything."),
    ]
}

#[test]
fn o_on_the_eval_screen_optimizes_the_prompt_with_progress_then_candidates_as_rows() {
    let (dir, _s, state, frames) = optimized(good_bad_malformed());
    // Progress while it ran: the title's settings, candidate n of m, cells of the budget, tokens per role.
    assert!(frames.len() > 3, "frames were drawn while it ran");
    assert!(frames.iter().all(|f| f.contains("split 0.5 · seed 0 · budget 200 · proposals 4")), "{}", frames[0]);
    let mid = frames.iter().find(|f| f.contains("candidate 2 of")).unwrap_or_else(|| {
        panic!(
            "a frame with the second candidate: {}",
            frames.iter().map(|f| f.lines().nth(1).unwrap_or("").to_string()).collect::<Vec<_>>().join("\n")
        )
    });
    assert!(mid.contains("cells scored") && mid.contains("candidates ") && mid.contains("proposer "), "{mid}");
    let scored: Vec<usize> =
        frames.iter().filter_map(|f| f.split(" / 200 cells scored").next()?.rsplit(' ').next()?.parse().ok()).collect();
    assert!(scored.windows(2).all(|w| w[0] <= w[1]) && scored.last() > scored.first(), "{scored:?}");

    assert_eq!(state.optimize.phase, OptimizePhase::Done, "{:?}", state.note);
    let record = state.optimize.record.as_deref().unwrap();
    let good =
        record.candidates.iter().find(|c| c.system.as_deref().is_some_and(|s| s.starts_with("GOOD-EDIT"))).unwrap();
    assert_eq!(record.best.as_deref(), Some(good.id.as_str()), "the known-good edit ranks first on held-out cases");
    assert_eq!(state.optimize.best(), Some(good.id.as_str()));
    let rows = &state.optimize.rows;
    assert_eq!(rows.len(), 1 + record.candidates.len(), "the baseline and every candidate are rows");
    let malformed =
        rows.iter().find(|r| r.origin == "proposal" && r.rejected.is_some()).expect("the malformed proposal");
    assert!(malformed.rejected.as_deref().unwrap().contains("not"), "{:?}", malformed.rejected);
    let good_row = rows.iter().find(|r| r.id == good.id).unwrap();
    assert!(good_row.held_out.is_some_and(|f| f.pass_rate == 1.0) && good_row.versus.is_some(), "{good_row:?}");
    assert!(good_row.cells > 0 && good_row.cost.tokens_in > 0, "{good_row:?}");

    // The record is stored in the data directory as the CLI stores it.
    let stored: Vec<_> = std::fs::read_dir(dir.path().join("data/optimizations")).unwrap().collect();
    assert_eq!(stored.len(), 1);

    let screen = draw_optimize(&state, 140, 18);
    assert!(screen.contains(&format!("best ★ {}", good.id)), "{screen}");
    assert!(screen.contains("rejected: "), "a rejected candidate shows its reason:\n{screen}");
    insta::assert_snapshot!("optimize_rows_140x18", screen);
}

#[test]
fn enter_shows_the_candidate_diff_against_the_editors_and_its_cases_marked_train_or_held_out() {
    let (_dir, _s, mut state, _) = optimized(good_bad_malformed());
    let best = state.optimize.best().unwrap().to_string();
    let row = state.optimize.rows.iter().position(|r| r.id == best).unwrap();
    state.optimize.selected = row;
    update(&mut state, special(Key::Enter));
    let OptimizeOverlay::Candidate { id, diff, changes } = &state.optimize.overlay else {
        panic!("enter opens the candidate: {:?}", state.optimize.overlay)
    };
    assert_eq!(id, &best);
    assert!(diff.iter().any(|l| l == "-Name the entity of the text."), "{diff:?}");
    assert!(diff.iter().any(|l| l.starts_with("+GOOD-EDIT")), "{diff:?}");
    let improved: Vec<_> = changes.iter().filter(|c| c.moved == Moved::Improved).collect();
    assert!(improved.iter().any(|c| c.held_out) && improved.iter().any(|c| !c.held_out), "{changes:?}");
    assert!(changes.iter().all(|c| c.moved != Moved::Regressed), "{changes:?}");
    let screen = draw_optimize(&state, 120, 16);
    assert!(screen.contains("held-out") && screen.contains("train"), "{screen}");
    insta::assert_snapshot!("optimize_candidate_120x16", screen);
    update(&mut state, special(Key::Esc));
    assert_eq!(state.optimize.overlay, OptimizeOverlay::None, "esc closes the candidate first");
    assert_eq!(state.screen, Screen::Optimize);
}

#[test]
fn accept_puts_the_candidate_in_the_editors_unsaved_and_ctrl_z_takes_it_back_in_one_step() {
    let (dir, _s, mut state, _) = optimized(good_bad_malformed());
    let on_disk = std::fs::read_to_string(dir.path().join("labels.toml")).unwrap();
    let best = state.optimize.best().unwrap().to_string();
    state.optimize.selected = state.optimize.rows.iter().position(|r| r.id == best).unwrap();
    let before = state.texts();
    assert!(!state.dirty);
    let effects = update(&mut state, key('a'));
    assert!(effects.iter().all(|e| !matches!(e, Effect::Save { .. })), "accept writes nothing: {effects:?}");
    assert!(state.system.text().starts_with("GOOD-EDIT"), "{}", state.system.text());
    assert_eq!(state.template.text(), before[1]);
    assert!(state.dirty, "the accepted edit is unsaved");
    assert_eq!(std::fs::read_to_string(dir.path().join("labels.toml")).unwrap(), on_disk);

    update(&mut state, ctrl('z'));
    assert_eq!(state.texts(), before, "ctrl-z puts both editors back in one step");
    assert!(!state.dirty);

    update(&mut state, key('a'));
    let effects = update(&mut state, ctrl('s'));
    let save = effects.iter().find(|e| matches!(e, Effect::Save { .. })).expect("ctrl-s saves through the normal path");
    let Effect::Save { prompt, .. } = save else { unreachable!() };
    assert!(prompt.system.as_deref().is_some_and(|s| s.starts_with("GOOD-EDIT")));
}

#[test]
fn reject_marks_a_candidate_and_it_is_never_the_best() {
    let (_dir, _s, mut state, _) = optimized(good_bad_malformed());
    let best = state.optimize.best().unwrap().to_string();
    state.optimize.selected = state.optimize.rows.iter().position(|r| r.id == best).unwrap();
    update(&mut state, key('r'));
    assert_eq!(state.optimize.dismissed, vec![best.clone()]);
    assert_ne!(state.optimize.best(), Some(best.as_str()), "a rejected candidate is not the best");
    let screen = draw_optimize(&state, 140, 18);
    assert!(screen.contains("✗ rejected by you"), "{screen}");
    let texts = state.texts();
    update(&mut state, key('a'));
    assert_eq!(state.texts(), texts, "a rejected candidate is not accepted");
    update(&mut state, key('r'));
    assert_eq!(state.optimize.best(), Some(best.as_str()), "r again takes the mark back");
}

#[test]
fn the_eval_matrix_marks_the_held_out_cases_of_the_sessions_optimization() {
    let (_dir, _s, mut state, _) = optimized(good_bad_malformed());
    let held: Vec<String> = state.optimize.record.as_deref().unwrap().split.held_out.clone();
    assert_eq!(state.held_out.as_ref().map(|h| h.cases.clone()), Some(held.clone()));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.screen, Screen::Eval, "esc goes back to the eval screen once it ended");
    let screen = draw_all(&state, 120, 20);
    assert!(screen.contains("◇ held out by optimize"), "{screen}");
    for case in ["c1", "c2", "c3", "c4", "c5", "c6"] {
        let line =
            screen.lines().find(|l| l.contains(&format!(" {case} "))).unwrap_or_else(|| panic!("{case}:\n{screen}"));
        assert_eq!(line.contains('◇'), held.iter().any(|h| h == case), "{case}: {line}");
    }
}

#[test]
fn esc_stops_a_running_optimization_and_its_record_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    // The baseline's three train cases answer; the next candidate's requests hang until the client goes.
    let s = scripted(vec![], Some(3));
    let path = prompt_in(dir.path(), &s.server);
    without_local_model();
    let mut state = state_for(&path).unwrap();
    state.screen = Screen::Eval;
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, Some(dir.path().join("data"))).unwrap();
    runner.record_history = false;
    let effects = update(&mut state, key('o'));
    assert_eq!(state.screen, Screen::Optimize);
    let mut stopped = false;
    drive_optimize(&mut state, effects, &mut runner, &rx, |state, msg| {
        // The next set of cases is about to run: its requests hang.
        let next = matches!(msg, Msg::Optimize { news: OptimizeNews::Event(e), .. }
            if matches!(**e, tunebench::optimize::OptimizeEvent::Evaluating { .. }));
        if next && state.optimize.progress.cells_scored >= 3 && !stopped && state.optimize.running() {
            stopped = true;
            let effects = update(state, special(Key::Esc));
            assert_eq!(effects, vec![Effect::Cancel(Job::Optimize)]);
            assert_eq!(state.screen, Screen::Optimize, "the screen stays until the record arrives");
            return effects;
        }
        Vec::new()
    });
    assert!(stopped);
    assert!(s.candidate_requests.load(Ordering::SeqCst) <= 3 + 3, "nothing asked after the stop but the set under way");
    let record = state.optimize.record.as_deref().expect("the stopped optimization's record");
    assert!(record.cancelled);
    assert_eq!(record.baseline.cases.len(), 3, "the baseline's train cases are kept");
    let path = state.optimize.saved.clone().unwrap().unwrap();
    let kept = tunebench::optimize::store::load_file(&path).unwrap();
    assert_eq!(&kept, record, "the record is stored as it is shown");
    assert!(draw_optimize(&state, 140, 18).contains("stopped: what was scored is kept"));
    update(&mut state, special(Key::Esc));
    assert_eq!(state.screen, Screen::Eval);
}

#[test]
fn the_prompt_is_optimized_as_the_editors_hold_it_and_nothing_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let s = scripted(vec![], None);
    let path = prompt_in(dir.path(), &s.server);
    let on_disk = std::fs::read_to_string(&path).unwrap();
    without_local_model();
    let mut state = state_for(&path).unwrap();
    update(&mut state, alt('1'));
    type_text(&mut state, "GOOD-EDIT ");
    assert!(state.dirty);
    state.screen = Screen::Eval;
    let (tx, rx) = mpsc::channel();
    let mut runner = Runner::new(tx, Some(dir.path().join("data"))).unwrap();
    runner.record_history = false;
    let effects = update(&mut state, key('o'));
    drive_optimize(&mut state, effects, &mut runner, &rx, |_, _| Vec::new());
    let record = state.optimize.record.as_deref().unwrap();
    assert_eq!(record.baseline.system.as_deref(), Some("GOOD-EDIT Name the entity of the text."));
    assert_eq!(record.baseline.train.map(|f| f.pass_rate), Some(1.0), "the unsaved text ran");
    assert!(state.dirty, "the edits stay unsaved");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), on_disk, "the prompt file is not written");
}

#[test]
fn an_optimization_with_no_candidate_to_try_says_why_not_candidate_0_of_0() {
    let dir = tempfile::tempdir().unwrap();
    let s = scripted(Vec::new(), None);
    let path = prompt_in(dir.path(), &s.server);
    without_local_model();
    let mut state = state_for(&path).unwrap();
    let screen = draw_optimize(&state, 160, 6);
    assert!(screen.contains("candidate 0 of ?"), "not planned yet:\n{screen}");
    state.optimize.progress.planned = Some(0);
    let screen = draw_optimize(&state, 160, 6);
    assert!(
        screen.contains("no candidate to try (demonstrations need a train case that passes, ablation a system"),
        "{screen}"
    );
    assert!(!screen.contains("candidate 0 of"), "{screen}");
}
