//! The optimize screen's state: the optimization's settings (shown in the title), its progress as
//! the core reports it (candidate n of m, cells scored of the budget, tokens per role), the
//! candidates as rows (filled from the events while it runs, then from the record), the rows the
//! user rejected, the selection, and the candidate opened (its diff against the editors' text and its
//! per-case changes). Nothing here scores: the figures come from `optimize::run`.

use std::path::PathBuf;

use crate::optimize::changes::CaseChange;
use crate::optimize::stats::Paired;
use crate::optimize::{Cost, Figures, Optimization, RoleCost};

/// Where the optimization is.
pub type OptimizePhase = crate::tui::phase::JobPhase;

/// What the optimization was asked for (the title shows it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// The model the candidates run on, as the workbench chose it.
    pub model: String,
    pub held_out: f64,
    pub seed: u64,
    pub budget: usize,
    pub max_proposals: usize,
}

/// How far it got, from the core's events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub train: usize,
    pub held_out: usize,
    /// Candidates made so far (the baseline apart), and at most how many will be.
    pub candidates: usize,
    pub planned: Option<usize>,
    /// What it does now (`c2: train cases`, `asking the proposer for c5`).
    pub doing: String,
    pub cells_scored: usize,
    pub budget: usize,
    /// Calls and tokens per role so far.
    pub cost: Cost,
}

/// One candidate as a row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub id: String,
    /// `baseline`, `proposal`, `demos`, `ablation` (empty until the record says).
    pub origin: String,
    pub rationale: String,
    pub train: Option<Figures>,
    pub held_out: Option<Figures>,
    pub versus: Option<Paired>,
    /// Cells scored and what they cost.
    pub cells: usize,
    pub cost: RoleCost,
    /// Why the optimizer rejected it.
    pub rejected: Option<String>,
}

/// What the screen shows over the rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum OptimizeOverlay {
    #[default]
    None,
    /// The selected candidate opened: its diff against the editors' text as it was when opened, and
    /// its cases against the baseline's.
    Candidate { id: String, diff: Vec<String>, changes: Vec<CaseChange> },
}

/// The optimize screen.
#[derive(Clone, Debug, Default)]
pub struct OptimizeView {
    /// The number of the latest optimization (news of older ones is ignored).
    pub id: u64,
    pub phase: OptimizePhase,
    pub settings: Settings,
    pub progress: Progress,
    pub rows: Vec<Row>,
    /// The record once it ended (stopped ones too): the one owner of the figures from then on.
    pub record: Option<Box<Optimization>>,
    /// Where the record was stored, or why not.
    pub saved: Option<Result<PathBuf, String>>,
    /// The ids the user rejected (`r`): marked, never "best".
    pub dismissed: Vec<String>,
    /// The id of the candidate last accepted into the editors.
    pub accepted: Option<String>,
    pub selected: usize,
    pub overlay: OptimizeOverlay,
    /// First line shown of the opened candidate.
    pub scroll: usize,
}

impl OptimizeView {
    /// Whether candidates are being made and scored.
    pub fn running(&self) -> bool {
        self.phase == OptimizePhase::Running
    }

    /// The row of `id`, added at the end when it is new.
    pub fn row_mut(&mut self, id: &str) -> &mut Row {
        let at = match self.rows.iter().position(|r| r.id == id) {
            Some(at) => at,
            None => {
                self.rows.push(Row { id: id.to_string(), ..Row::default() });
                self.rows.len() - 1
            }
        };
        &mut self.rows[at]
    }

    /// The best candidate the user has not rejected: the record's best, else (when the user rejected
    /// it) the next in the held-out ranking the rows show (mean score, then pass rate; the baseline on a tie).
    pub fn best(&self) -> Option<&str> {
        let record = self.record.as_deref()?;
        let best = record.best.as_deref()?;
        if !self.dismissed.iter().any(|d| d == best) {
            return Some(best);
        }
        let mut ranked: Vec<(usize, &Row)> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.held_out.is_some() && r.rejected.is_none() && !self.dismissed.contains(&r.id))
            .collect();
        let key = |r: &Row| r.held_out.map_or((0.0, 0.0), |f| (f.mean_score, f.pass_rate));
        ranked.sort_by(|(i, a), (j, b)| {
            let ((sa, pa), (sb, pb)) = (key(a), key(b));
            sb.total_cmp(&sa).then(pb.total_cmp(&pa)).then(i.cmp(j))
        });
        ranked.first().map(|(_, r)| r.id.as_str())
    }
}

/// A candidate accepted into the editors: the system prompt and template before and after, so that
/// undo-accept can put the editors back in one step (while they still hold what was accepted).
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptUndo {
    pub candidate: String,
    pub before: [String; 2],
    pub after: [String; 2],
}
