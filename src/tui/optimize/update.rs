//! The optimize screen's part of `update` (pure): entering it from the eval screen (the prompt as
//! the editors hold it, optimized with the core's default split, seed and budget), the optimizer's
//! events filling the progress and the rows, the record arriving (stored; its held-out cases marked
//! in the eval matrix), the selection, a candidate opened (its diff against the editors' text, its
//! cases against the baseline's), accept and reject ([`super::accept`]), esc stopping it.

use ratatui_textarea::Input;

use crate::optimize::{OptimizeEvent, OptimizeOptions};
use crate::provider::kind::ProviderKind;
use crate::run::SetupOptions;
use crate::tui::msg::{Action, Dispatch, Effect, Job, OptimizeNews, OptimizeRequest, Start};
use crate::tui::optimize::state::{OptimizeOverlay, OptimizePhase, OptimizeView, Row, Settings};
use crate::tui::state::{HeldOut, Screen, State};

fn help_line() -> &'static str {
    "optimize: ↑/↓ candidate, enter diff and cases, a accept, r reject, ctrl-r again, esc stop / back"
}

/// `optimize` from the eval screen: open the optimize screen; the first time (or after a failure),
/// optimize.
pub fn enter(state: &mut State) -> Vec<Effect> {
    if state.workbench.running() {
        state.note = Some("a run is going: esc cancels it, then o optimizes".into());
        return Vec::new();
    }
    if state.eval.running() {
        state.note = Some("the eval is running: let it end (or ctrl-r later), then o optimizes".into());
        return Vec::new();
    }
    state.screen = Screen::Optimize;
    if matches!(state.optimize.phase, OptimizePhase::Idle | OptimizePhase::Failed(_)) {
        return start(state);
    }
    state.note = Some(help_line().into());
    Vec::new()
}

/// The settings an optimization from the workbench runs with: the core's defaults; no proposer on the
/// local model (a 135M model proposes no useful edit, and each proposal costs minutes on a laptop)
/// nor on the replay (it plays recorded answers): demonstrations and ablations alone, offline.
pub fn settings(state: &State) -> Settings {
    let defaults = OptimizeOptions::new(state.path.clone(), SetupOptions::default());
    let offline = matches!(state.choice.provider, ProviderKind::Local | ProviderKind::Replay);
    let model = match &state.choice.model {
        Some(model) => format!("{}:{model}", state.choice.provider),
        None => state.choice.provider.to_string(),
    };
    Settings {
        model,
        held_out: defaults.held_out,
        seed: defaults.seed,
        budget: defaults.budget,
        max_proposals: if offline { 0 } else { defaults.max_proposals },
    }
}

/// Starts an optimization of the prompt as the editors hold it (a new one replaces the rows).
pub fn start(state: &mut State) -> Vec<Effect> {
    let settings = settings(state);
    let [system, template, schema] = state.texts();
    let id = state.optimize.id + 1;
    state.optimize = OptimizeView {
        id,
        phase: OptimizePhase::Running,
        settings: settings.clone(),
        progress: crate::tui::optimize::state::Progress { budget: settings.budget, ..Default::default() },
        ..OptimizeView::default()
    };
    state.held_out = None;
    let unsaved_schema = state.saved_texts.get(2).is_some_and(|saved| *saved != schema);
    state.note = Some(if unsaved_schema {
        format!("optimizing on {} (the schema's unsaved edits are not used: the saved schema is)", settings.model)
    } else {
        format!("optimizing on {} ({})", settings.model, help_line())
    });
    let edited = crate::optimize::evaluate::Edit { system: (!system.is_empty()).then_some(system), template };
    vec![Effect::Start(Start::Optimize(Box::new(OptimizeRequest {
        id,
        path: state.path.clone(),
        edited,
        target: state.choice.target(),
        held_out: settings.held_out,
        seed: settings.seed,
        budget: settings.budget,
        max_proposals: settings.max_proposals,
    })))]
}

/// Back to the eval screen (an opened candidate closes first); a running optimization is stopped
/// first and stays shown until its record arrives.
pub fn leave(state: &mut State) -> Vec<Effect> {
    let view = &mut state.optimize;
    if view.overlay != OptimizeOverlay::None {
        view.overlay = OptimizeOverlay::None;
        return Vec::new();
    }
    if view.running() {
        state.note = Some("stopping: what was scored is kept and stored (esc again: back to the eval)".into());
        return vec![Effect::Cancel(Job::Optimize)];
    }
    state.screen = Screen::Eval;
    Vec::new()
}

/// A key while the optimize screen is shown.
pub fn key(state: &mut State, input: &Input, act: Dispatch) -> Vec<Effect> {
    match state.keymap.optimize_action(input) {
        Some(action) => act(state, action),
        None => Vec::new(),
    }
}

/// An action while the optimize screen is shown.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    let view = &mut state.optimize;
    let opened = view.overlay != OptimizeOverlay::None;
    let last = view.rows.len().saturating_sub(1);
    match action {
        Action::CancelRun | Action::Optimize | Action::Eval => return leave(state),
        Action::Run | Action::RunOneTurn if view.running() => {
            state.note = Some("an optimization is running: esc stops it first".into());
        }
        Action::Run | Action::RunOneTurn => return start(state),
        Action::Up if opened => view.scroll = view.scroll.saturating_sub(1),
        Action::Down if opened => view.scroll += 1,
        Action::PageUp if opened => view.scroll = view.scroll.saturating_sub(10),
        Action::PageDown if opened => view.scroll += 10,
        Action::Home if opened => view.scroll = 0,
        Action::Up => view.selected = view.selected.saturating_sub(1),
        Action::Down => view.selected = (view.selected + 1).min(last),
        Action::PageUp => view.selected = view.selected.saturating_sub(10),
        Action::PageDown => view.selected = (view.selected + 10).min(last),
        Action::Home => view.selected = 0,
        Action::End => view.selected = last,
        Action::Open => return open(state),
        Action::AcceptCandidate => return crate::tui::optimize::accept::accept(state),
        Action::RejectCandidate => crate::tui::optimize::accept::reject(state),
        _ => state.note = Some(help_line().into()),
    }
    Vec::new()
}

/// Opens the selected candidate: its diff against the editors' text now, and its cases against the
/// baseline's (from the record: a candidate's text arrives with it).
fn open(state: &mut State) -> Vec<Effect> {
    let view = &state.optimize;
    let Some(row) = view.rows.get(view.selected) else { return Vec::new() };
    let Some(record) = view.record.as_deref() else {
        state.note =
            Some("a candidate's text arrives with the record, when the optimization ends (esc stops it)".into());
        return Vec::new();
    };
    let Some(candidate) = record.candidate(&row.id) else { return Vec::new() };
    let (system, template) = (state.system.text(), state.template.text());
    let system = (!system.is_empty()).then_some(system);
    let diff = crate::optimize::diff::edit_diff(
        (system.as_deref(), &template),
        (candidate.system.as_deref(), &candidate.template),
    );
    let diff: Vec<String> = diff.lines().map(str::to_string).collect();
    let changes = crate::optimize::changes::case_changes(&record.baseline, candidate);
    let id = candidate.id.clone();
    let view = &mut state.optimize;
    view.overlay = OptimizeOverlay::Candidate { id, diff, changes };
    view.scroll = 0;
    Vec::new()
}

/// News of optimization `id`.
pub fn news(state: &mut State, id: u64, news: OptimizeNews) -> Vec<Effect> {
    if id != state.optimize.id {
        return Vec::new();
    }
    match news {
        OptimizeNews::Event(event) if state.optimize.running() => event_in(state, *event),
        OptimizeNews::Event(_) => {}
        OptimizeNews::Done(Ok(done)) => {
            let done = *done;
            let view = &mut state.optimize;
            view.phase = OptimizePhase::Done;
            view.rows = std::iter::once(&done.record.baseline).chain(&done.record.candidates).map(row_of).collect();
            view.selected = view.selected.min(view.rows.len().saturating_sub(1));
            view.progress.cells_scored = done.record.budget.cells_scored;
            view.progress.cost = done.record.cost.clone();
            state.held_out =
                Some(HeldOut { optimization: Some(done.record.id.clone()), cases: done.record.split.held_out.clone() });
            let how = match (&done.record.cancelled, &done.record.best) {
                (true, _) => "stopped; what was scored is kept".to_string(),
                (false, Some(best)) => format!("best on the held-out cases: {best}"),
                (false, None) => "no held-out ranking".to_string(),
            };
            let saved = match &done.saved {
                Ok(path) => format!("recorded in {}", path.display()),
                Err(e) => format!("not recorded: {e}"),
            };
            state.note = Some(format!("optimization {}: {how}; {saved}", done.record.id));
            view.saved = Some(done.saved);
            view.record = Some(Box::new(done.record));
        }
        OptimizeNews::Done(Err(message)) => {
            state.optimize.phase = OptimizePhase::Failed(message.clone());
            state.note = Some(format!("optimize: {message}"));
        }
    }
    Vec::new()
}

/// An optimizer event: the progress and the row it is about.
fn event_in(state: &mut State, event: OptimizeEvent) {
    let view = &mut state.optimize;
    let set = |held_out: bool| if held_out { "held-out" } else { "train" };
    match event {
        OptimizeEvent::Split { train, held_out, held_out_cases } => {
            view.progress.train = train;
            view.progress.held_out = held_out;
            state.held_out = Some(HeldOut { optimization: None, cases: held_out_cases });
        }
        OptimizeEvent::Planned { candidates } => view.progress.planned = Some(candidates),
        OptimizeEvent::Evaluating { candidate, held_out, cells } => {
            view.progress.doing = format!("{candidate}: {cells} {} cases", set(held_out));
            row(view, &candidate);
        }
        OptimizeEvent::Scored { candidate, held_out, figures } => {
            let row = row(view, &candidate);
            if held_out {
                row.held_out = Some(figures);
            } else {
                row.train = Some(figures);
            }
        }
        OptimizeEvent::Rejected { candidate, reason } => {
            row(view, &candidate).rejected = Some(reason);
        }
        OptimizeEvent::Proposing { candidate } => view.progress.doing = format!("asking the proposer for {candidate}"),
        OptimizeEvent::Fetching(progress) => view.progress.doing = crate::run::progress_in_words(&progress),
        OptimizeEvent::Spent { candidate, cells, cost, cells_scored, budget, total } => {
            let row = row(view, &candidate);
            row.cells += cells;
            add(&mut row.cost, &cost);
            view.progress.cells_scored = cells_scored;
            view.progress.budget = budget;
            view.progress.cost = total;
        }
        OptimizeEvent::Done { cancelled } => {
            view.progress.doing = if cancelled { "stopped".into() } else { "done".into() };
        }
    }
}

/// The row of candidate `id`; a candidate is counted the first time it shows up (the baseline apart).
fn row<'a>(view: &'a mut OptimizeView, id: &str) -> &'a mut Row {
    if id != "baseline" && !view.rows.iter().any(|r| r.id == id) {
        view.progress.candidates += 1;
    }
    view.row_mut(id)
}

fn add(total: &mut crate::optimize::RoleCost, more: &crate::optimize::RoleCost) {
    total.calls += more.calls;
    total.cached += more.cached;
    total.tokens_in += more.tokens_in;
    total.tokens_out += more.tokens_out;
}

/// A recorded candidate as a row.
fn row_of(candidate: &crate::optimize::Candidate) -> Row {
    Row {
        id: candidate.id.clone(),
        origin: candidate.origin.clone(),
        rationale: candidate.rationale.clone(),
        train: candidate.train,
        held_out: candidate.held_out,
        versus: candidate.versus_baseline.clone(),
        cells: candidate.cases.len(),
        cost: candidate.cost.clone(),
        rejected: candidate.rejected.clone(),
    }
}
