//! The optimizer (`tunebench optimize`, one owner): the prompt's cases split into train and held-out,
//! candidates made (reflective proposals, few-shot demonstrations, ablations), each evaluated through
//! the eval pipeline on the train cases, a Pareto front kept, the front ranked on the held-out cases
//! with a paired test against the baseline, all within a budget of cells, recorded. A front end passes
//! [`OptimizeOptions`], a sink for [`OptimizeEvent`]s and a cancel, and shows the [`Optimization`].

pub mod changes;
pub mod diff;
pub mod evaluate;
pub mod mutate;
pub mod propose;
pub mod record;
pub mod seeded;
pub mod select;
mod session;
pub mod split;
pub mod stats;
pub mod store;

use std::path::PathBuf;

pub use record::{Candidate, Cost, Optimization, RoleCost};
pub use select::Figures;
pub use session::{run, run_and_keep, Kept};

use crate::run::SetupOptions;

/// Why an optimization could not run or be kept.
#[derive(Debug, thiserror::Error)]
pub enum OptimizeError {
    /// Bad input (exit 2): the message names the flag, the file or the value.
    #[error("{0}")]
    Input(String),
    /// The record could not be written or read.
    #[error("{0}")]
    Store(String),
}

impl From<crate::eval::EvalError> for OptimizeError {
    fn from(error: crate::eval::EvalError) -> Self {
        OptimizeError::Input(error.to_string())
    }
}

/// What the front end asks for.
#[derive(Clone, Debug)]
pub struct OptimizeOptions {
    /// The prompt file (one prompt, with at least 2 cases).
    pub prompt: PathBuf,
    /// `--model`: the model the candidates run on (`None`: the front end's, else the prompt's).
    pub model: Option<crate::eval::ModelSpec>,
    /// The front end's run options (provider, sampling, the response cache), laid over the prompt.
    pub setup: SetupOptions,
    /// `--split`: the held-out fraction, inside (0, 1).
    pub held_out: f64,
    /// `--seed`: the split, the samples and the bootstrap.
    pub seed: u64,
    /// `--budget`: cells scored, at most (baseline included).
    pub budget: usize,
    /// `--max-proposals`: requests to the proposer (rejected proposals count).
    pub max_proposals: usize,
    /// `--proposer`: `local` or PROVIDER:MODEL (`None`: the prompt's own model).
    pub proposer: Option<String>,
    /// `--proposer-base-url`: the proposer's own server (`None`: the prompt's server when the proposer
    /// is on the prompt's provider, else the provider's default). The prompt's key never goes there.
    pub proposer_base_url: Option<String>,
    /// `--proposer-key-env`: the variable holding the proposer's key (`None`: the prompt's variable on
    /// the prompt's own server, else the provider's default variable).
    pub proposer_key_env: Option<String>,
    /// `--demos`: demonstrations per demonstration candidate (0: none).
    pub demos: usize,
    /// Ablation candidates (an instruction of the system prompt removed).
    pub ablation: bool,
    /// `--rank-all`: every candidate run on the held-out cases, not only the Pareto front's (as the
    /// budget allows): what each mutation does to held-out cases, measured.
    pub rank_all: bool,
    /// Cells run at once (`None`: the provider's default).
    pub concurrency: Option<usize>,
    /// Where the last eval (which stratifies the split) is looked for (`None`: the data directory's).
    pub evals_dir: Option<PathBuf>,
    /// The system prompt and template as a front end holds them (the workbench's editors, unsaved), in
    /// place of the file's: the baseline and every edit start from this text (`None`: the file's).
    pub edited: Option<evaluate::Edit>,
    /// The default local model may be fetched when the candidates or the proposer run on it.
    pub fetch_model: bool,
}

impl OptimizeOptions {
    /// The defaults for `prompt`: half held out, seed 0, 200 cells, 4 proposals, 3 demonstrations.
    pub fn new(prompt: PathBuf, setup: SetupOptions) -> Self {
        OptimizeOptions {
            prompt,
            model: None,
            setup,
            held_out: 0.5,
            seed: 0,
            budget: 200,
            max_proposals: 4,
            proposer: None,
            proposer_base_url: None,
            proposer_key_env: None,
            demos: 3,
            ablation: true,
            rank_all: false,
            concurrency: None,
            evals_dir: None,
            edited: None,
            fetch_model: false,
        }
    }
}

/// What an optimization reports while it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum OptimizeEvent {
    /// The cases were split (`held_out_cases`: the held-out cases' names, in the prompt's order).
    Split { train: usize, held_out: usize, held_out_cases: Vec<String> },
    /// About this many candidates will be made at most (the mutations, and the proposals allowed).
    Planned { candidates: usize },
    /// `candidate` scored `cells` cells at `cost`; the optimization has scored `cells_scored` of its
    /// `budget` cells so far and spent `total` per role.
    Spent { candidate: String, cells: usize, cost: RoleCost, cells_scored: usize, budget: usize, total: Cost },
    /// A candidate starts on a set of cases (`cells` to score).
    Evaluating { candidate: String, held_out: bool, cells: usize },
    /// A candidate was scored on a set.
    Scored { candidate: String, held_out: bool, figures: Figures },
    /// A candidate was rejected before it ran.
    Rejected { candidate: String, reason: String },
    /// The proposer is asked for candidate `candidate`.
    Proposing { candidate: String },
    /// The default local model is being fetched.
    Fetching(crate::provider::FetchProgress),
    /// It ended (`cancelled`: a cancel stopped it; what was scored is kept).
    Done { cancelled: bool },
}
