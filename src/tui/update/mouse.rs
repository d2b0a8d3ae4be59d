//! The mouse: a click focuses the pane under it, the wheel scrolls it, a click or drag on the
//! truncation chart moves the cut there.

use ratatui::layout::Rect;

use super::{act, set_cut};
use crate::tui::msg::{Action, Effect, Mouse, MouseKind};
use crate::tui::panes::{self, truncation};
use crate::tui::state::{Overlay, Pane, State};

pub fn mouse(state: &mut State, mouse: Mouse) -> Vec<Effect> {
    if state.overlay != Overlay::None {
        return Vec::new();
    }
    let area = Rect { x: 0, y: 0, width: state.size.0, height: state.size.1 };
    let layout = panes::layout(area, state);
    let Some((pane, rect)) = layout.pane_at(mouse.column, mouse.row) else { return Vec::new() };
    match mouse.kind {
        MouseKind::Click | MouseKind::Drag => {
            if mouse.kind == MouseKind::Click {
                state.focus = pane;
            }
            if pane == Pane::Truncation && state.focus == Pane::Truncation {
                if let Some((from, width, chart)) = truncation::plot_columns(rect) {
                    if mouse.row >= chart.y && mouse.column >= from && width > 0 {
                        let total = state.run.chunk_ends.len();
                        let x = (mouse.column - from).min(width - 1) as usize;
                        let cut = ((x as f64 + 0.5) / f64::from(width) * total as f64).round() as usize;
                        set_cut(state, cut);
                    }
                }
            }
            Vec::new()
        }
        MouseKind::ScrollDown | MouseKind::ScrollUp => {
            state.focus = pane;
            let down = mouse.kind == MouseKind::ScrollDown;
            if pane.is_editor() {
                let area = match pane {
                    Pane::System => &mut state.system,
                    Pane::Template => &mut state.template,
                    _ => &mut state.schema,
                };
                area.scroll((if down { 3 } else { -3 }, 0));
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
