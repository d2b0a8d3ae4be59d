//! Model families: one file per family ([`llama`], [`qwen2`], [`qwen3`], [`gemma3`]) reads its
//! metadata keys and names its tensors through a [`Schema`], and builds a [`Plan`]: the model's shape
//! and, layer by layer, which shared operations of the forward pass run (projections with optional
//! biases, RMS norms, q/k head norms, rotary pairs and base, a sliding window, a SiLU or GELU-tanh
//! gated feed-forward, post-norms). `general.architecture` picks the family; the schema names
//! everything a file lacks before any weight is read. Adding a family is one file and one line of
//! [`FAMILIES`].

pub mod gemma3;
pub mod llama;
pub mod plan;
pub mod qwen2;
pub mod qwen3;
pub mod schema;

use candle_core::quantized::gguf_file::Content;

pub use plan::{rope_frequencies, Activation, Config, LayerPlan, Plan, Projection, Rope, RopePairs};
pub use schema::Schema;

use super::EngineError;

/// The families this build runs, by `general.architecture`.
pub const FAMILIES: &[&Family] = &[&llama::LLAMA, &qwen2::QWEN2, &qwen3::QWEN3, &gemma3::GEMMA3];

/// A model family: its `general.architecture`, and how it reads a file into a plan.
pub struct Family {
    /// `general.architecture`, and the prefix of the family's metadata keys (`{name}.block_count`).
    pub name: &'static str,
    /// Reads the family's keys and names its tensors (each required one noted when missing).
    pub plan: fn(&mut Schema<'_>) -> Plan,
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Family({})", self.name)
    }
}

impl Family {
    /// The family of `content`, by its `general.architecture`; an error names it and the families
    /// this build runs.
    pub fn of(content: &Content) -> Result<&'static Family, EngineError> {
        let name = content.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned();
        FAMILIES.iter().copied().find(|family| Some(family.name) == name.as_deref()).ok_or_else(|| {
            let known: Vec<&str> = FAMILIES.iter().map(|family| family.name).collect();
            EngineError::Model(match name {
                Some(name) => {
                    format!("general.architecture is {name:?}: this build runs the model families {}", known.join(", "))
                }
                None => format!(
                    "the GGUF has no general.architecture: this build runs the model families {}",
                    known.join(", ")
                ),
            })
        })
    }
}

impl Plan {
    /// The plan of `content`'s model: its family's, every key and tensor it needs checked.
    pub fn of(content: &Content) -> Result<Plan, EngineError> {
        let family = Family::of(content)?;
        let mut schema = Schema::new(content, family.name);
        let plan = (family.plan)(&mut schema);
        schema.finish(plan)
    }
}

#[cfg(test)]
mod tests;
