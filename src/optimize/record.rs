//! The optimization record: the prompt as read, the split, the baseline and every candidate (its full
//! text, its diff against the original, its figures and per-case scores on train and held-out, or why
//! it was rejected), the proposer's calls, the cost per role and the budget; kept in the data directory
//! ([`super::store`]) and printed by `optimize --json`.

use serde::{Deserialize, Serialize};

use super::select::Figures;
use super::split::Split;
use super::stats::Paired;
use crate::eval::plan::PromptText;
use crate::eval::score::Verdict;

/// The record format's version.
pub const FORMAT: u32 = 1;

/// One optimization, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Optimization {
    /// The record format ([`FORMAT`]).
    pub optimization: u32,
    /// `YYYYMMDD-HHMMSS-mmmxx`, as an eval's.
    pub id: String,
    pub started_at_ms: u64,
    pub duration_ms: u64,
    /// The prompt file as it was read.
    pub prompt: PromptText,
    /// The model the candidates ran on (`provider:model, mode`).
    pub model: String,
    /// The proposer (`provider:model`); `None` when no proposal was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposer: Option<String>,
    pub split: Split,
    /// The prompt as it is (id `baseline`).
    pub baseline: Candidate,
    /// Every candidate in the order it was made, rejected ones included.
    pub candidates: Vec<Candidate>,
    /// The candidate ranked first on the held-out cases (`baseline` when no edit beat it; `None` when
    /// the held-out cases were not run).
    pub best: Option<String>,
    /// Every request to the proposer.
    pub proposer_calls: Vec<ProposerCall>,
    pub cost: Cost,
    pub budget: Budget,
    /// Ctrl-c stopped it: what was scored is kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// Why it ended before trying everything (the budget, the proposals allowed, a cancel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// A version of the prompt: the original, a proposal, a mutation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// `baseline`, then `c1`, `c2`, …
    pub id: String,
    /// `baseline`, `proposal`, `demos` (few-shot demonstrations), `ablation` (an instruction removed).
    pub origin: String,
    /// The candidate it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Why: the proposer's one line, or what the mutation did.
    pub rationale: String,
    pub system: Option<String>,
    pub template: String,
    /// Unified diff of `system` and `template` against the original (empty for the baseline).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// Figures on the train cases (`None`: not run, or rejected).
    pub train: Option<Figures>,
    /// Figures on the held-out cases (`None`: not on the Pareto front, or the budget ran out).
    pub held_out: Option<Figures>,
    /// On the Pareto front of train scores.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_front: bool,
    /// Against the baseline on the held-out cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versus_baseline: Option<Paired>,
    /// Why it was not run (malformed, unchanged, does not render, a duplicate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    /// Every case scored, train and held-out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CaseResult>,
    /// What its cells cost (train and held-out; cached calls cost no tokens).
    #[serde(default, skip_serializing_if = "RoleCost::is_nothing")]
    pub cost: RoleCost,
}

/// One case of a candidate, scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub case: String,
    pub held_out: bool,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
    /// The mean of the pass (1 or 0) and the F1 (the pass again without an expected answer).
    pub score: f64,
    /// The score's reason in one line.
    pub reason: String,
}

/// One request to the proposer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposerCall {
    /// The candidate it produced (accepted or rejected).
    pub candidate: String,
    /// The answer as it came.
    pub answer: String,
    pub turns: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

/// Calls and tokens per role.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub proposer: RoleCost,
    /// The candidates' (and the baseline's) cells.
    pub candidates: RoleCost,
}

/// A role's calls and tokens (cached calls cost no tokens but are counted).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleCost {
    pub calls: usize,
    pub cached: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

impl RoleCost {
    /// No call made.
    pub fn is_nothing(&self) -> bool {
        *self == RoleCost::default()
    }
}

/// What was allowed and what was used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// `--budget`: cells scored, at most.
    pub cells: usize,
    /// `--max-proposals`.
    pub max_proposals: usize,
    pub cells_scored: usize,
    pub proposals: usize,
}

impl Optimization {
    /// The candidate `id` (`baseline` included).
    pub fn candidate(&self, id: &str) -> Option<&Candidate> {
        std::iter::once(&self.baseline).chain(&self.candidates).find(|c| c.id == id)
    }
}
