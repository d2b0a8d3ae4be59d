//! Evaluation: whether answers are *right*. Expected answers and checks per case (in the prompt file,
//! `prompt::expect`), a score per cell (`score`), and the one pipeline the CLI, the workbench and
//! batches share (see ARCHITECTURE.md, "Evaluation").
//!
//! - [`score`]: one run record scored against its case's expectations: verdict, precision / recall /
//!   F1 on paired items, field accuracy, the field-level differences, every check's result.

pub mod score;
