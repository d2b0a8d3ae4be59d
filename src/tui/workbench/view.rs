//! Draws the editing screen: each pane where the layout puts it, then the open value editor.

use ratatui::layout::Rect;
use ratatui::Frame;

use crate::tui::panes::{lines, output, truncation, Layout};
use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::workbench::panes::{editors, history, preview, value_editor, variables};
use crate::tui::workbench::state::Pane;

/// Draws the panes of `layout`, and the value editor over `above_status` when one is open.
pub fn render(frame: &mut Frame, layout: &Layout, above_status: Rect, state: &State, theme: &Theme) {
    for (pane, rect) in &layout.panes {
        match pane {
            Pane::System if state.workbench.preview => preview::render(frame, *rect, state, theme),
            Pane::System | Pane::Template | Pane::Schema => editors::render(frame, *rect, *pane, state, theme),
            Pane::Variables => variables::render(frame, *rect, state, theme),
            Pane::Output => output::render(frame, *rect, state, theme),
            Pane::Lines => lines::render(frame, *rect, state, theme),
            Pane::Truncation => truncation::render(frame, *rect, state, theme),
            Pane::History => history::render(frame, *rect, state, theme),
        }
    }
    value_editor::render(frame, above_status, state, theme);
}
