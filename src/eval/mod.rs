//! Evaluation: whether answers are *right*. Expected answers and checks per case (in the prompt file,
//! `prompt::expect`), a score per cell (`score`), and the one pipeline the CLI, the workbench and
//! batches share (see ARCHITECTURE.md, "Evaluation").
//!
//! - [`score`]: one run record scored against its case's expectations: verdict, precision / recall /
//!   F1 on paired items, field accuracy, the field-level differences, every check's result.
//! - [`pairing`]: answer items paired with expected items on the key; P / R / F1, field accuracy, differences.
//! - [`checks`]: each check kind run on an answer and its run record.
//! - [`values`]: how values compare (trim + case fold unless exact, number tolerance, missing = null).
//! - `verdict`: the answer read from the record, and the verdict with its one-line reason.
//! - [`score::approve`]: a run's answer written into its case as the expected answer (the workbench's "approve").

pub mod checks;
pub mod pairing;
#[cfg(test)]
mod replayed;
pub mod score;
pub mod values;
mod verdict;

pub use score::{approve, score_record, Expectations};
