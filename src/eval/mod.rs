//! Evaluation: whether answers are *right*. Expected answers and checks per case (in the prompt file),
//! a score per cell (`score`), and the one pipeline the CLI, the workbench and batches share (see
//! ARCHITECTURE.md, "Data flow of a tuning loop"). No terminal code: front ends print or draw what this gives.
//!
//! ```text
//! prompt files, --model specs, --types ─▶ plan::EvalPlan (cells = case × column × repeat)
//!     ─▶ pipeline::run (RunSetup per column, run_batch_each, history) ─▶ EvalEvent ─▶ front end
//!     ─▶ score::score_record per cell ─▶ record::EvalRecord (+ totals) ─▶ store (data dir)
//!                                           │ baseline / eval diff: diff.rs; reports: report*.rs
//! ```
//!
//! - [`score`]: one run record scored against its case's expectations: verdict, precision / recall /
//!   F1 on paired items, field accuracy, the field-level differences, every check's result.
//! - [`pairing`]: answer items paired with expected items on the key; P / R / F1, field accuracy, differences.
//! - [`checks`]: each check kind run on an answer and its run record.
//! - [`grade`]: the checks graded after the answer by a program or a model (`command`, `judge`,
//!   promptfoo's `python`, `javascript`, `llm-rubric`); [`graded`]: each cell's graded checks run.
//! - [`values`]: how values compare (trim + case fold unless exact, number tolerance, missing = null).
//! - `verdict`: the answer read from the record, and the verdict with its one-line reason.
//! - [`approval`]: what approving a run's answer writes (its valid, complete items) and what it leaves
//!   out; refused unless the user insists when something is (the workbench's "approve").
//! - [`plan`]: the columns (prompt version × model), rows (cases) and cells of an eval; [`plan_cases`]:
//!   each prompt's cases as the plan reaches them (a dataset indexed); [`model_spec`]: a `--model` value.
//! - [`pipeline`]: every cell run and scored, as events; the record.
//! - [`session`]: one eval from start to end, the owner every front end calls: plan, re-runs, baseline,
//!   the model fetch, the pipeline, the record saved and its delta.
//! - [`record`]: the eval record and each cell's run in brief.
//! - [`totals`]: per column, and per row × column over repeats (k/N, pass^N, flaky).
//! - [`store`]: one file per eval in the data directory; list, load by id, `last` or file.
//! - [`diff`]: the baseline delta and `eval diff A B`.
//! - [`report`]: JUnit XML and CSV; [`report_html`]: the self-contained HTML page; [`report_file`]: the
//!   format a file's extension asks for (`eval -o`).
//! - [`batch`]: an imported provider batch's runs scored into an eval record.
//! - `bench`, `bench_scale` (feature `testing`): `tunebench bench`'s eval figures, and how large evals scale.

pub mod approval;
pub mod batch;
#[cfg(feature = "testing")]
pub mod bench;
#[cfg(feature = "testing")]
pub mod bench_scale;
pub mod checks;
pub mod comparators;
pub mod diff;
pub mod grade;
pub mod graded;
pub mod model_spec;
pub mod pairing;
pub mod pipeline;
pub mod plan;
pub mod plan_cases;
mod plan_sources;
pub mod record;
#[cfg(test)]
mod replayed;
pub mod report;
pub mod report_file;
pub mod report_html;
pub mod rerun;
pub mod score;
pub mod session;
pub mod store;
pub mod suite;
pub mod totals;
pub mod values;
mod verdict;

pub use approval::{approve, approve_in_dataset, Approval};
pub use pipeline::{EvalEvent, Pipeline};
pub use plan::{Column, EvalOptions, EvalPlan, ModelSpec};
pub use record::{CellRecord, EvalRecord};
pub use score::{score_record, Expectations};

/// An eval that cannot run or be read; each message names the bad value, file or id.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Bad input: a prompt file, a case, a model spec, an expectation, a record file (exit 2).
    #[error("{0}")]
    Input(String),
    /// The data directory cannot be read or written.
    #[error("{0}")]
    Store(String),
}

impl From<crate::dataset::DatasetError> for EvalError {
    /// A dataset that cannot be read, or a bad row in it, is bad input.
    fn from(error: crate::dataset::DatasetError) -> Self {
        EvalError::Input(error.to_string())
    }
}
