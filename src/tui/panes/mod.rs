//! The panes every screen shares (the output, lines and truncation panes, the status line, the local
//! model picker's list, the overlays), where the editing screen's panes go ([`layout`], shared with the mouse), and the frame
//! and clipping every pane uses. Panes draw from `&State` and `&Theme` and never change the state.

pub mod lines;
pub mod model_list;
pub mod output;
pub mod overlay;
pub mod status;
pub mod truncation;

use ratatui::layout::{Constraint, Direction, Layout as Split, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders};

use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::workbench::state::Pane;

/// Where everything goes on a screen of a given size.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub panes: Vec<(Pane, Rect)>,
    pub status: Rect,
}

impl Layout {
    /// The pane at a screen cell.
    pub fn pane_at(&self, column: u16, row: u16) -> Option<(Pane, Rect)> {
        self.panes.iter().copied().find(|(_, r)| r.contains(ratatui::layout::Position { x: column, y: row }))
    }
}

fn split(direction: Direction, area: Rect, constraints: &[Constraint]) -> Vec<Rect> {
    Split::default().direction(direction).constraints(constraints.to_vec()).split(area).to_vec()
}

/// The layout of `area` for `state` (all panes at 120×40; the focused one alone when zoomed).
pub fn layout(area: Rect, state: &State) -> Layout {
    use Constraint::{Length, Min, Percentage};
    let rows = split(Direction::Vertical, area, &[Min(0), Length(2)]);
    let (main, status) = (rows[0], rows[1]);
    if state.workbench.zoom {
        return Layout { panes: vec![(state.workbench.focus, main)], status };
    }
    let halves = split(Direction::Vertical, main, &[Percentage(45), Percentage(55)]);
    let top = split(Direction::Horizontal, halves[0], &[Percentage(40), Percentage(33), Percentage(27)]);
    let left = split(Direction::Vertical, top[0], &[Percentage(35), Percentage(65)]);
    let right = split(Direction::Vertical, top[2], &[Percentage(50), Percentage(50)]);
    let bottom = split(Direction::Horizontal, halves[1], &[Percentage(34), Percentage(28), Percentage(38)]);
    Layout {
        panes: vec![
            (Pane::System, left[0]),
            (Pane::Template, left[1]),
            (Pane::Schema, top[1]),
            (Pane::Variables, right[0]),
            (Pane::History, right[1]),
            (Pane::Output, bottom[0]),
            (Pane::Lines, bottom[1]),
            (Pane::Truncation, bottom[2]),
        ],
        status,
    }
}

/// The frame of a pane: its title (with the alt-N key that focuses it), focused or not.
pub fn block<'a>(pane: Pane, state: &State, theme: &Theme, extra: Vec<Span<'a>>) -> Block<'a> {
    block_named(pane, pane.title(), state, theme, extra)
}

/// [`block`] with the pane called `name` (a shorter name where the title has more to say).
pub fn block_named<'a>(pane: Pane, name: &str, state: &State, theme: &Theme, extra: Vec<Span<'a>>) -> Block<'a> {
    let focused = state.workbench.focus == pane;
    let number = Pane::ALL.iter().position(|p| *p == pane).map_or(0, |i| i + 1);
    let mut title = vec![
        Span::styled(format!(" {number} "), theme.dim),
        Span::styled(format!("{name} "), if focused { theme.border_focused } else { theme.title }),
    ];
    title.extend(extra);
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused { BorderType::Thick } else { BorderType::Plain })
        .border_style(if focused { theme.border_focused } else { theme.border })
        .title(Line::from(title))
}

/// `text` cut to `width` columns (characters), with `…` when cut.
pub fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}
