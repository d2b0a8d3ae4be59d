//! Draws the workbench: the screen shown (each screen's own view), then the status line, the local
//! model picker's list and the overlay every screen shares.

use ratatui::layout::Rect;
use ratatui::Frame;

use crate::tui::panes::{layout, model_list, overlay, status};
use crate::tui::state::{Screen, State};
use crate::tui::theme::Theme;

/// Draws the screen shown, its status line and the overlay over it.
pub fn render(frame: &mut Frame, state: &State, theme: &Theme) {
    let area = frame.area();
    let layout = layout(area, state);
    let above_status = Rect { height: area.height.saturating_sub(layout.status.height), ..area };
    let panes = if state.screen == Screen::Workbench { layout.panes.clone() } else { Vec::new() };
    state.drawn.note(|shown| *shown = crate::tui::state::Shown { panes, ..Default::default() });
    match state.screen {
        Screen::Eval => crate::tui::eval::view::render(frame, above_status, state, theme),
        Screen::Compare => crate::tui::compare::view::render(frame, above_status, state, theme),
        Screen::Optimize => crate::tui::optimize::view::render(frame, above_status, state, theme),
        Screen::Workbench => crate::tui::workbench::view::render(frame, &layout, above_status, state, theme),
    }
    status::render(frame, layout.status, state, theme);
    model_list::render(frame, above_status, state, theme);
    overlay::render(frame, area, state, theme);
}
