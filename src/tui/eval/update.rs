//! The eval screen's part of `update` (pure): entering and leaving it, the pipeline's events filling
//! the cells, the record and its delta to the baseline arriving, the selection, the drill-down, and
//! approve (the core's `eval::approval` on the saved prompt, saved as ctrl-s saves, then the row
//! scored again and its delta recounted).

use ratatui_textarea::Input;

use crate::eval::diff::Delta;
use crate::eval::EvalEvent;
use crate::tui::eval::approve::{approve, ask_approve};
use crate::tui::eval::filter::Move;
use crate::tui::eval::state::{EvalCell, EvalOverlay, EvalPhase, EvalView};
use crate::tui::msg::{Action, Dispatch, Effect, EvalNews, EvalRequest, Job, Start};
use crate::tui::state::{Screen, State};

/// `eval` from the edit screen: open the eval screen; the first time, run it.
pub fn enter(state: &mut State) -> Vec<Effect> {
    if state.workbench.running() {
        state.note = Some("a run is going: esc cancels it, then alt-e opens the eval screen".into());
        return Vec::new();
    }
    state.screen = Screen::Eval;
    if state.eval.phase == EvalPhase::Idle {
        return rerun(state);
    }
    state.note = Some(help_line().into());
    Vec::new()
}

fn help_line() -> &'static str {
    "eval: ↑/↓ case, enter open, a approve, r review, / name, v verdicts, ctrl-r re-run, esc back"
}

/// Runs the whole matrix again (the edits saved first: the eval runs the saved file).
pub fn rerun(state: &mut State) -> Vec<Effect> {
    let mut effects = Vec::new();
    if state.dirty {
        effects = crate::tui::edit::save(state);
        if effects.is_empty() {
            return effects;
        }
    }
    let edits = state.edits;
    state.screen = Screen::Eval;
    let view = &mut state.eval;
    let id = view.id + 1;
    // The last record as it ran: the scores approves replaced put back.
    let previous = view.record.take().map(|mut record| {
        let replaced = std::mem::take(&mut view.as_ran);
        for (row, score) in replaced {
            if let Some(cell) = record.cells.iter_mut().find(|c| c.row == row && c.column == 0 && c.repeat <= 1) {
                cell.score = score;
            }
        }
        record.sum_up();
        record
    });
    // An eval opened from the history runs again against itself (the user chose it, as `--baseline
    // ID`); else the baseline is `last`, as everywhere: the newest earlier eval of the prompt on this
    // model (the run before, when this session keeps no store). The title names it.
    let chosen = view.opened.take().is_some();
    let baseline = previous;
    *view = EvalView {
        id,
        phase: EvalPhase::Running,
        selected: view.selected,
        rows: view.rows.clone(),
        column: view.column.clone(),
        baseline_record: baseline.clone(),
        baseline_column: view.baseline_column,
        edits,
        ..EvalView::default()
    };
    view.cells = vec![EvalCell::default(); view.rows.len()];
    state.note = Some(format!("evaluating every case on {} ({})", state.choice.provider, help_line()));
    effects.push(Effect::Start(Start::Eval(Box::new(EvalRequest {
        id,
        path: state.path.clone(),
        target: eval_target(&state.choice),
        baseline,
        chosen,
    }))));
    effects
}

/// Back to the edit screen (a confirmation or a drill-down closes first); a running eval is stopped.
pub fn leave(state: &mut State) -> Vec<Effect> {
    let view = &mut state.eval;
    if view.overlay != EvalOverlay::None {
        view.overlay = EvalOverlay::None;
        return Vec::new();
    }
    state.screen = Screen::Workbench;
    let view = &mut state.eval;
    if view.running() {
        view.phase = EvalPhase::Failed("cancelled: ctrl-r on the eval screen runs it again".into());
        return vec![Effect::Cancel(Job::Eval)];
    }
    Vec::new()
}

/// A key while the eval screen is shown (no editor takes typing here).
pub fn key(state: &mut State, input: &Input, act: Dispatch) -> Vec<Effect> {
    if state.eval.overlay == EvalOverlay::Truncation {
        return crate::tui::eval::truncation::key(state, input);
    }
    let review = matches!(state.eval.overlay, EvalOverlay::Review | EvalOverlay::ReviewDone);
    if review && state.keymap.eval_action(input) == Some(Action::AnswerTruncation) {
        return crate::tui::eval::truncation::open(state);
    }
    if review {
        return crate::tui::eval::review_keys::key(state, input);
    }
    if let EvalOverlay::ConfirmApprove { row, approval } = &state.eval.overlay {
        use ratatui_textarea::Key;
        let (row, shown) = (*row, approval.lines().len());
        let view = &mut state.eval;
        match input.key {
            Key::Char('y') | Key::Enter => return approve(state, row, false),
            // A second `a` insists: a partial answer's valid items are written, the rest marked.
            Key::Char('a') => return approve(state, row, true),
            Key::Up => view.scroll = view.scroll.saturating_sub(1),
            Key::Down => view.scroll = (view.scroll + 1).min(shown.saturating_sub(1)),
            Key::PageUp => view.scroll = view.scroll.saturating_sub(10),
            Key::PageDown => view.scroll = (view.scroll + 10).min(shown.saturating_sub(1)),
            Key::Home => view.scroll = 0,
            Key::End => view.scroll = shown.saturating_sub(1),
            _ => {
                view.overlay = EvalOverlay::None;
                state.note = Some("not approved".into());
            }
        }
        return Vec::new();
    }
    if state.eval.filter.typing {
        filter_key(state, input);
        return Vec::new();
    }
    match state.keymap.eval_action(input) {
        Some(action) => act(state, action),
        None => Vec::new(),
    }
}

/// A key while a case name filter is typed: it narrows the matrix as it is typed.
fn filter_key(state: &mut State, input: &Input) {
    use ratatui_textarea::Key;
    let view = &mut state.eval;
    match input.key {
        Key::Char(c) if !input.ctrl && !input.alt => view.filter.name.push(c),
        Key::Backspace => {
            view.filter.name.pop();
        }
        Key::Enter => view.filter.typing = false,
        Key::Esc => {
            view.filter.name.clear();
            view.filter.typing = false;
        }
        _ => return,
    }
    view.move_selection(Move::By(0));
}

/// An action while the eval screen is shown.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    let view = &mut state.eval;
    let scrolled = view.overlay == EvalOverlay::Case || matches!(view.overlay, EvalOverlay::Diff(_));
    match action {
        Action::Eval | Action::CancelRun => return leave(state),
        Action::Run | Action::RunOneTurn => return rerun(state),
        Action::Up if scrolled => view.scroll = view.scroll.saturating_sub(1),
        Action::Down if scrolled => view.scroll += 1,
        Action::PageUp if scrolled => view.scroll = view.scroll.saturating_sub(10),
        Action::PageDown if scrolled => view.scroll += 10,
        Action::Up => view.move_selection(Move::By(-1)),
        Action::Down => view.move_selection(Move::By(1)),
        Action::PageUp => view.move_selection(Move::By(-10)),
        Action::PageDown => view.move_selection(Move::By(10)),
        Action::Home => view.move_selection(Move::First),
        Action::End => view.move_selection(Move::Last),
        Action::FilterCases if view.overlay == EvalOverlay::None => view.filter.typing = true,
        Action::FilterVerdicts if view.overlay == EvalOverlay::None => {
            view.filter.verdicts = view.filter.verdicts.next();
            view.move_selection(Move::By(0));
        }
        Action::Open if view.scored(view.selected).is_some() => {
            view.overlay = EvalOverlay::Case;
            view.scroll = 0;
        }
        Action::Open => state.note = Some("this case has not ended yet".into()),
        Action::Approve => return ask_approve(state),
        Action::Review => return crate::tui::eval::review_keys::start(state),
        Action::EvalDiff => return crate::tui::eval::history::show_diff(state),
        Action::AnswerTruncation if view.overlay == EvalOverlay::Case => {
            return crate::tui::eval::truncation::open(state)
        }
        Action::AnswerTruncation => state.note = Some("truncation: open a case first (enter), then t".into()),
        _ => state.note = Some(help_line().into()),
    }
    Vec::new()
}

/// A click on the matrix at screen row `row`: the case drawn there is selected.
pub fn click(state: &mut State, row: u16) -> Vec<Effect> {
    if state.eval.overlay != EvalOverlay::None {
        return Vec::new();
    }
    // The matrix starts below its frame's top line and the header line, at the first row drawn.
    let height = usize::from(state.size.1).saturating_sub(crate::tui::eval::filter::MATRIX_CHROME);
    let shown = state.eval.shown_rows();
    let first = crate::tui::eval::filter::first_drawn(&shown, state.eval.selected, height);
    if let Some(&index) = (row as usize).checked_sub(2).and_then(|at| shown.get(first + at)) {
        state.eval.selected = index;
    }
    Vec::new()
}

/// News of eval `id`.
pub fn news(state: &mut State, id: u64, news: EvalNews) -> Vec<Effect> {
    let view = &mut state.eval;
    if id != view.id {
        return Vec::new();
    }
    match news {
        EvalNews::Planned { rows, column, baseline, baseline_column } => {
            view.cells = vec![EvalCell::default(); rows.len()];
            view.selected = view.selected.min(rows.len().saturating_sub(1));
            view.rows = rows;
            view.column = column;
            view.baseline_record = baseline;
            view.baseline_column = baseline_column;
        }
        EvalNews::Event(event) if view.running() => cell_event(view, *event),
        EvalNews::Event(_) => {}
        EvalNews::Done(Ok(done)) if view.running() => {
            let done = *done;
            view.phase = EvalPhase::Done;
            state.note = Some(summary(done.baseline.as_ref(), &done.saved));
            view.baseline = done.baseline;
            view.record = Some(Box::new(done.record));
            // The record holds the scores from now on.
            for cell in &mut view.cells {
                cell.scored = None;
            }
            // The eval's runs went to the history (they come along: the history pane lists them, newest
            // first, as the file is read) and its record to the store (listed again).
            let shown = done.runs.into_iter().filter(|run| run.prompt == state.saved.id);
            state.workbench.history.splice(0..0, shown);
            return vec![Effect::ListEvals { path: state.path.clone() }];
        }
        EvalNews::Done(Err(message)) if view.running() => {
            view.phase = EvalPhase::Failed(message.clone());
            state.note = Some(format!("eval: {message}"));
        }
        EvalNews::Done(_) => {}
        EvalNews::Opened(result) => crate::tui::eval::history::opened(state, result),
        EvalNews::Swept { row, sweep } => crate::tui::eval::truncation::swept(state, row, sweep),
        EvalNews::Rescored { row, scored } => {
            state.note = Some(format!("case scored again: {:?} ({})", scored.score.verdict, scored.score.reason));
            match view.scored_mut(row) {
                // The record's cell takes the new score (the one it ran with is kept for a re-run's
                // baseline); the title's totals and the delta to the baseline are summed up from it.
                Some(cell) => {
                    let was = std::mem::replace(&mut cell.score, scored.score);
                    if !view.as_ran.iter().any(|(r, _)| *r == row) {
                        view.as_ran.push((row, was));
                    }
                    if let Some(record) = view.record.as_deref_mut() {
                        record.sum_up();
                        if let Some(baseline) = view.baseline_record.as_deref() {
                            view.baseline = Some(crate::eval::session::compare(baseline, record));
                        }
                    }
                }
                None => {
                    if let Some(cell) = view.cells.get_mut(row) {
                        cell.scored = Some(scored);
                    }
                }
            }
        }
    }
    Vec::new()
}

/// The status line after a run: the changes against the baseline (as the title and the change
/// column count them), and where the record went.
fn summary(baseline: Option<&Delta>, saved: &Result<std::path::PathBuf, String>) -> String {
    let changes = baseline.map(|d| {
        let same = d.columns.iter().map(|c| c.same).sum::<usize>();
        let changed = if d.changed > 0 { format!(", {} changed", d.changed) } else { String::new() };
        format!("against {}: {} improved, {} regressed{changed}, {same} same", d.baseline, d.improved, d.regressed)
    });
    let saved = match saved {
        Ok(path) => format!("recorded in {}", path.display()),
        Err(e) => format!("not recorded: {e}"),
    };
    match changes {
        Some(changes) => format!("eval done: {changes}; {saved}"),
        None => format!("eval done; {saved}"),
    }
}

fn cell_event(view: &mut EvalView, event: EvalEvent) {
    // One column, one repeat: cell i of the plan is row i.
    let row_of = |cell: usize| cell;
    match event {
        EvalEvent::CellStarted { cell } => {
            if let Some(c) = view.cells.get_mut(row_of(cell)) {
                c.started = true;
                c.turn = 1;
            }
        }
        EvalEvent::Retry { cell, turn } => {
            if let Some(c) = view.cells.get_mut(row_of(cell)) {
                c.answer.clear();
                c.turn = turn;
            }
        }
        EvalEvent::Delta { cell, text } => {
            if let Some(c) = view.cells.get_mut(row_of(cell)) {
                c.answer.push_str(&text);
            }
        }
        EvalEvent::CellScored { scored, run, .. } => {
            if let Some(c) = view.cells.get_mut(scored.row) {
                c.started = true;
                c.scored = Some(scored);
                c.run = Some(run);
            }
        }
        EvalEvent::Done { .. } => {}
    }
}

/// What the eval of `choice` runs on: the replay plays the prompt's recorded answers (each case its
/// own file beside them) instantly.
fn eval_target(choice: &crate::tui::choice::Choice) -> crate::run::Target {
    let replayed = (choice.provider == crate::provider::kind::ProviderKind::Replay).then(|| choice.transcript.clone());
    let replay =
        replayed.flatten().map(|path| crate::run::ReplayFrom::File(path, crate::provider::replay::Pace::Instant));
    crate::run::Target { replay, ..choice.target() }
}
