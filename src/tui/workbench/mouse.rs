//! The mouse: a click focuses the pane under it, the wheel scrolls it; a click in an editor puts the
//! cursor there (a drag selects), a click on a row of the variables pane selects it (a case is
//! chosen), a click or drag on the truncation chart moves the cut there. Where things are is read
//! from what the last frame drew ([`crate::tui::state::Drawn`]): no pane code runs here.

use ratatui::layout::{Position, Rect};

use crate::tui::msg::{Action, Effect, Mouse, MouseKind};
use crate::tui::state::{Overlay, Shown, State};
use crate::tui::workbench::actions::act;
use crate::tui::workbench::navigate::set_cut;
use crate::tui::workbench::state::Pane;

pub fn mouse(state: &mut State, mouse: Mouse) -> Vec<Effect> {
    if state.overlay != Overlay::None {
        return Vec::new();
    }
    let shown = state.drawn.shown();
    let at = Position { x: mouse.column, y: mouse.row };
    let Some((pane, _)) = shown.panes.iter().copied().find(|(_, rect)| rect.contains(at)) else { return Vec::new() };
    match mouse.kind {
        MouseKind::Click | MouseKind::Drag => {
            if mouse.kind == MouseKind::Click {
                state.workbench.focus = pane;
            }
            if pane == Pane::Variables && mouse.kind == MouseKind::Click {
                if let Some(index) = variable_row(&shown, state, mouse.row) {
                    state.workbench.selected_variable = index;
                    // A click on a case (or the default variables) chooses it, as enter does.
                    if index <= state.cases.len() {
                        return act(state, Action::Open);
                    }
                }
                return Vec::new();
            }
            if pane.is_editor() && state.workbench.focus == pane {
                click_in_editor(state, pane, &shown, mouse);
                return Vec::new();
            }
            if pane == Pane::Truncation && state.workbench.focus == Pane::Truncation {
                if let Some((from, width, chart)) = shown.plot {
                    if mouse.row >= chart.y && mouse.column >= from && width > 0 {
                        let total = state.workbench.run.chunk_ends.len();
                        let x = (mouse.column - from).min(width - 1) as usize;
                        let cut = ((x as f64 + 0.5) / f64::from(width) * total as f64).round() as usize;
                        set_cut(state, cut);
                    }
                }
            }
            Vec::new()
        }
        MouseKind::ScrollDown | MouseKind::ScrollUp => {
            state.workbench.focus = pane;
            let down = mouse.kind == MouseKind::ScrollDown;
            if pane.is_editor() {
                let area = match pane {
                    Pane::System => &mut state.system,
                    Pane::Template => &mut state.template,
                    _ => &mut state.schema,
                };
                area.area_mut().scroll((if down { 3 } else { -3 }, 0));
                area.settle();
                return Vec::new();
            }
            if pane == Pane::Truncation {
                return act(state, if down { Action::Right } else { Action::Left });
            }
            let mut effects = Vec::new();
            for _ in 0..3 {
                effects.extend(act(state, if down { Action::Down } else { Action::Up }));
            }
            effects
        }
    }
}

/// A click in an editor puts the cursor on the character under it (a drag selects from there), on
/// the wrapped rows as drawn: the editor's own screen map and scroll, from its last render.
fn click_in_editor(state: &mut State, pane: Pane, shown: &Shown, mouse: Mouse) {
    if state.workbench.preview && pane == Pane::System {
        return;
    }
    let Some(text) = shown.editor_text.iter().find(|(p, _)| *p == pane).map(|(_, r)| *r) else { return };
    if !text.contains(Position { x: mouse.column, y: mouse.row }) {
        return;
    }
    let editor = match pane {
        Pane::System => &mut state.system,
        Pane::Template => &mut state.template,
        _ => &mut state.schema,
    };
    let area = editor.area_mut();
    let (top_row, top_col) = area.scroll_offset();
    let row = usize::from(mouse.row - text.y) + usize::from(top_row);
    let col = usize::from(mouse.column - text.x) + usize::from(top_col);
    let at = area.screen_to_data(row, col);
    match mouse.kind {
        MouseKind::Drag if area.selection_range().is_none() => area.start_selection(),
        MouseKind::Drag => {}
        _ => area.cancel_selection(),
    }
    let (row, col) = (u16::try_from(at.0).unwrap_or(u16::MAX), u16::try_from(at.1).unwrap_or(u16::MAX));
    area.move_cursor(ratatui_textarea::CursorMove::Jump(row, col));
    editor.settle();
}

/// The list row (as `State::selected_variable` counts) drawn at screen `row` of the variables pane,
/// as the last frame drew it (its first line is the run's, then the list, as the case filter shows
/// it, from the position it scrolled to).
fn variable_row(shown: &Shown, state: &State, row: u16) -> Option<usize> {
    let (inner, skipped): (Rect, usize) = shown.variables?;
    let at = row.checked_sub(inner.y + 1).filter(|_| row < inner.y + inner.height)? as usize;
    crate::tui::case_list::Listing::of(state).row_at(skipped + at)
}
