//! The optimize screen: its title the settings (model, split, seed, budget, proposals), a progress
//! line (candidate n of m, cells scored of the budget, calls and tokens per role, what it does now),
//! then the candidates as rows (id, kind and rationale escaped and clipped, train and held-out pass
//! rate and mean F1, the delta against the baseline with its interval and p-value, the cost; rejected
//! ones dimmed with their reason, the best starred); enter opens a candidate: its diff against the
//! editors' text beside its cases against the baseline's, each marked train or held-out.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use crate::optimize::changes::{CaseChange, Moved};
use crate::optimize::{Figures, RoleCost};
use crate::safe_text::escape_controls;
use crate::tui::optimize::state::{OptimizeOverlay, OptimizePhase, OptimizeView, Row};
use crate::tui::panes::clip;
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Draws the optimize screen into `area` (the status bar is drawn by the caller).
pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let view = &state.optimize;
    match &view.overlay {
        OptimizeOverlay::None => rows(frame, area, view, theme),
        OptimizeOverlay::Candidate { id, diff, changes } => {
            candidate(frame, area, view, (id, diff, changes), theme);
        }
    }
}

fn frame_of<'a>(spans: Vec<Span<'a>>, theme: &Theme) -> Block<'a> {
    Block::default().borders(Borders::ALL).border_style(theme.border_focused).title(Line::from(spans))
}

fn title<'a>(view: &OptimizeView, theme: &Theme) -> Vec<Span<'a>> {
    let s = &view.settings;
    let mut spans = vec![
        Span::styled(format!(" optimize · {} ", clip(&escape_controls(&s.model), 28)), theme.title),
        Span::styled(
            format!("split {} · seed {} · budget {} · proposals {} ", s.held_out, s.seed, s.budget, s.max_proposals),
            theme.text,
        ),
    ];
    match &view.phase {
        OptimizePhase::Running => spans.push(Span::styled("· running (esc stops) ", theme.dim)),
        OptimizePhase::Failed(_) => spans.push(Span::styled("· failed ", theme.error)),
        OptimizePhase::Done if view.record.as_deref().is_some_and(|r| r.cancelled) => {
            spans.push(Span::styled("· stopped: what was scored is kept ", theme.warning));
        }
        _ => {}
    }
    if let Some(best) = view.best() {
        spans.push(Span::styled(format!("· best ★ {} ", escape_controls(best)), theme.valid));
    }
    spans
}

/// `pass 0.67 F1 0.80`-like figures in 11 columns: `0.67/0.80` (`–` not run).
fn figures(f: Option<Figures>) -> String {
    match f {
        Some(f) => match f.mean_f1 {
            Some(f1) => format!("{:.2}/{f1:.2}", f.pass_rate),
            None => format!("{:.2}/ –", f.pass_rate),
        },
        None => "–".into(),
    }
}

/// Tokens in a few columns: `830`, `12.4k`, `3.1M`.
fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn role(name: &str, cost: &RoleCost) -> String {
    format!(
        "{name} {} calls ({} cached) {} in / {} out tok",
        cost.calls,
        cost.cached,
        tokens(cost.tokens_in),
        tokens(cost.tokens_out)
    )
}

fn progress<'a>(view: &OptimizeView, theme: &Theme) -> Vec<Line<'a>> {
    let p = &view.progress;
    let candidates = match p.planned {
        // Nothing to try: said, not left as "candidate 0 of 0".
        Some(0) => "no candidate to try (demonstrations need a train case that passes, ablation a system \
                    prompt of two instructions or more, proposals a proposer)"
            .to_string(),
        planned => format!("candidate {} of {}", p.candidates, planned.map_or("?".into(), |n| n.to_string())),
    };
    let mut first = vec![Span::styled(
        format!(
            "{candidates} · {} / {} cells scored · {} train, {} held-out cases",
            p.cells_scored, p.budget, p.train, p.held_out
        ),
        theme.text,
    )];
    if view.running() && !p.doing.is_empty() {
        first.push(Span::styled(format!(" · {}", escape_controls(&p.doing)), theme.dim));
    }
    let second = format!("{} · {}", role("candidates", &p.cost.candidates), role("proposer", &p.cost.proposer));
    let mut lines = vec![Line::from(first), Line::from(Span::styled(second, theme.dim))];
    if let OptimizePhase::Failed(message) = &view.phase {
        lines.push(Line::from(Span::styled(escape_controls(message).into_owned(), theme.error)));
    }
    if let Some(Err(e)) = &view.saved {
        lines.push(Line::from(Span::styled(format!("not recorded: {}", escape_controls(e)), theme.warning)));
    }
    lines
}

/// The delta against the baseline: `+0.17 [-0.05,+0.40] p=0.50`.
fn delta(row: &Row) -> String {
    match &row.versus {
        Some(v) => format!("{:+.2} [{:+.2},{:+.2}] p={:.2}", v.mean_delta, v.ci_low, v.ci_high, v.p_value),
        None => "–".into(),
    }
}

fn cost(row: &Row) -> String {
    format!("{} cells {} tok", row.cells, tokens(row.cost.tokens_in + row.cost.tokens_out))
}

const ID: usize = 9;
const KIND: usize = 9;
const FIG: usize = 10;
const DELTA: usize = 29;
const COST: usize = 17;

fn rows(frame: &mut Frame, area: Rect, view: &OptimizeView, theme: &Theme) {
    let block = frame_of(title(view, theme), theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let fixed = 2 + ID + KIND + 2 * (FIG + 1) + DELTA + COST;
    let why_width = width.saturating_sub(fixed).max(8);
    let mut lines = progress(view, theme);
    lines.push(Line::from(Span::styled(
        clip(
            &format!(
                "  {:ID$}{:KIND$}{:why_width$}{:>FIG$} {:>FIG$} {:DELTA$}{}",
                "id", "kind", "rationale", "train p/F1", "held p/F1", " Δ held-out [95% CI] p", "cost"
            ),
            width,
        ),
        theme.dim,
    )));
    if view.rows.is_empty() && view.running() {
        lines.push(Line::from(Span::styled("splitting the cases, scoring the baseline…", theme.dim)));
    }
    let best = view.best();
    let height = (inner.height as usize).saturating_sub(lines.len());
    let first = view.selected.saturating_sub(height.saturating_sub(1));
    for (i, row) in view.rows.iter().enumerate().skip(first).take(height) {
        let selected = i == view.selected;
        let dismissed = view.dismissed.contains(&row.id);
        let marker = match (selected, best == Some(row.id.as_str())) {
            (true, _) => "▶ ",
            (false, true) => "★ ",
            (false, false) => "  ",
        };
        let mut why = escape_controls(&row.rationale).replace('\n', " ");
        if let Some(reason) = &row.rejected {
            why = format!("rejected: {} · {why}", escape_controls(reason).replace('\n', " "));
        } else if dismissed {
            why = format!("✗ rejected by you · {why}");
        } else if view.accepted.as_deref() == Some(row.id.as_str()) {
            why = format!("accepted · {why}");
        }
        let dim = row.rejected.is_some() || dismissed;
        let style = |normal: Style| if dim { theme.dim } else { normal };
        let delta_style = match &row.versus {
            Some(v) if v.mean_delta > 0.0 => theme.valid,
            Some(v) if v.mean_delta < 0.0 => theme.invalid,
            _ => theme.dim,
        };
        let spans = vec![
            Span::styled(
                format!("{marker}{:ID$}", clip(&escape_controls(&row.id), ID - 1)),
                if selected { theme.selection } else { style(theme.text) },
            ),
            Span::styled(format!("{:KIND$}", clip(&escape_controls(&row.origin), KIND - 1)), style(theme.dim)),
            Span::styled(format!("{:why_width$}", clip(&why, why_width.saturating_sub(1))), style(theme.text)),
            Span::styled(format!("{:>FIG$} ", figures(row.train)), style(theme.text)),
            Span::styled(format!("{:>FIG$} ", figures(row.held_out)), style(theme.text)),
            Span::styled(format!("{:DELTA$}", clip(&delta(row), DELTA - 1)), style(delta_style)),
            Span::styled(clip(&cost(row), COST), style(theme.dim)),
        ];
        let mut line = Line::from(spans);
        if selected {
            line = line.style(theme.selection);
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn moved_word(moved: Moved) -> &'static str {
    match moved {
        Moved::Improved => "improved",
        Moved::Regressed => "regressed",
        Moved::Same => "same",
        Moved::Unpaired => "unpaired",
    }
}

/// A candidate opened: its diff against the editors' text (left), its cases (right).
fn candidate(
    frame: &mut Frame,
    area: Rect,
    view: &OptimizeView,
    (id, diff, changes): (&str, &[String], &[CaseChange]),
    theme: &Theme,
) {
    let parts = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(60), Constraint::Percentage(40)])
        .split(area);
    let rationale = view.rows.iter().find(|r| r.id == id).map(|r| r.rationale.clone()).unwrap_or_default();
    let left = frame_of(
        vec![
            Span::styled(format!(" {} ", escape_controls(id)), theme.title),
            Span::styled(
                format!("against the editors · {} ", clip(&escape_controls(&rationale).replace('\n', " "), 40)),
                theme.dim,
            ),
        ],
        theme,
    );
    let inner = left.inner(parts[0]);
    frame.render_widget(left, parts[0]);
    let width = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    if diff.is_empty() {
        lines.push(Line::from(Span::styled("the editors hold this candidate's text: no difference", theme.dim)));
    }
    for line in diff.iter().skip(view.scroll) {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            theme.title
        } else if line.starts_with('+') {
            theme.valid
        } else if line.starts_with('-') {
            theme.invalid
        } else if line.starts_with("@@") {
            theme.dim
        } else {
            theme.text
        };
        lines.push(Line::from(Span::styled(clip(&escape_controls(line), width), style)));
    }
    frame.render_widget(Paragraph::new(lines), inner);

    let count = |m: Moved| changes.iter().filter(|c| c.moved == m).count();
    let right = frame_of(
        vec![Span::styled(
            format!(" cases vs baseline: {} improved, {} regressed ", count(Moved::Improved), count(Moved::Regressed)),
            theme.title,
        )],
        theme,
    );
    let inner = right.inner(parts[1]);
    frame.render_widget(right, parts[1]);
    let width = inner.width as usize;
    let mut lines = Vec::new();
    if changes.is_empty() {
        lines.push(Line::from(Span::styled("not scored (rejected, or stopped before it ran)", theme.dim)));
    }
    for change in changes {
        let before = change.before.map_or("–", crate::eval::report::verdict_name);
        let set = if change.held_out { "held-out" } else { "train" };
        let style = match change.moved {
            Moved::Improved => theme.valid,
            Moved::Regressed => theme.invalid,
            _ => theme.dim,
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{:10}", moved_word(change.moved)), style),
            Span::styled(format!("{:9}", set), if change.held_out { theme.warning } else { theme.dim }),
            Span::styled(
                clip(
                    &format!(
                        "{} {before} → {} ({:+.2})",
                        escape_controls(&change.case),
                        crate::eval::report::verdict_name(change.after),
                        change.delta
                    ),
                    width.saturating_sub(19),
                ),
                theme.text,
            ),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
