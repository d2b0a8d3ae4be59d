//! Model families: what the loaders ask of a GGUF's architecture instead of assuming one. Each family
//! is one descriptor in its own file ([`llama`]) and one line of [`FAMILIES`]; `general.architecture`
//! picks it, and the loaders read its metadata keys, tensor names, norm, rotary embedding and output
//! projection from it.

pub mod llama;

use candle_core::quantized::gguf_file::Content;

use super::EngineError;

/// The families this build runs, by `general.architecture`.
pub const FAMILIES: &[&Arch] = &[&llama::LLAMA];

/// A model family as the loaders read it.
#[derive(Debug, PartialEq)]
pub struct Arch {
    /// `general.architecture`, and the prefix of the family's metadata keys (`{name}.block_count`).
    pub name: &'static str,
    /// A layer's tensors, each named `blk.{i}.{name}.weight`.
    pub layer: LayerTensors,
    /// The token embedding table.
    pub embeddings: &'static str,
    /// The norm before the output projection.
    pub output_norm: &'static str,
    /// The output projection.
    pub output: &'static str,
    /// The output projection when the file has no [`Arch::output`] tensor.
    pub missing_output: MissingOutput,
    pub norm: Norm,
    pub rope: Rope,
    /// The context length when the metadata gives none.
    pub default_context: usize,
}

/// The names of one layer's tensors (between `blk.{i}.` and `.weight`).
#[derive(Debug, PartialEq)]
pub struct LayerTensors {
    pub attn_norm: &'static str,
    pub q: &'static str,
    pub k: &'static str,
    pub v: &'static str,
    pub attn_output: &'static str,
    pub ffn_norm: &'static str,
    pub gate: &'static str,
    pub up: &'static str,
    pub down: &'static str,
}

/// How the activations are normalised before attention, the feed-forward and the output.
#[derive(Debug, PartialEq)]
pub enum Norm {
    /// Divided by their root mean square (plus `eps`, from the metadata key `{name}.{eps_key}`, else
    /// `default_eps`), times the norm's weights.
    Rms { eps_key: &'static str, default_eps: f32 },
}

/// The rotary position embedding.
#[derive(Debug, PartialEq)]
pub struct Rope {
    /// The metadata key of the frequency base (`{name}.{base_key}`), and the base when it is missing.
    pub base_key: &'static str,
    pub default_base: f32,
    pub pairs: RopePairs,
}

/// Which dimensions of a head rotate together.
#[derive(Debug, PartialEq)]
pub enum RopePairs {
    /// Dimensions `2i` and `2i + 1` (the GGUF's weights are laid out for it).
    Adjacent,
}

/// What a file without its output projection means.
#[derive(Debug, PartialEq)]
pub enum MissingOutput {
    /// The embedding table is the output projection (tied embeddings).
    Tied,
    /// An error naming the tensor.
    Refused,
}

impl Arch {
    /// The family of `content`, by its `general.architecture`; an error names it and the families
    /// this build runs.
    pub fn of(content: &Content) -> Result<&'static Arch, EngineError> {
        let name = content.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned();
        FAMILIES.iter().copied().find(|arch| Some(arch.name) == name.as_deref()).ok_or_else(|| {
            let known: Vec<&str> = FAMILIES.iter().map(|arch| arch.name).collect();
            EngineError::Model(format!(
                "general.architecture is {:?}: only {}-architecture GGUF models run here",
                name.unwrap_or_default(),
                known.join(" or ")
            ))
        })
    }

    /// The metadata key `{name}.{suffix}`.
    pub fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.name)
    }

    /// Layer `i`'s tensor `name` (one of [`Arch::layer`]'s).
    pub fn layer_tensor(&self, i: usize, name: &str) -> String {
        format!("blk.{i}.{name}.weight")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use candle_core::quantized::gguf_file::{Value, VersionedMagic};

    use super::super::model::Config;
    use super::*;

    /// A second family as a descriptor alone: other metadata keys, tensor names and defaults.
    static TOY: Arch = Arch {
        name: "toy",
        layer: LayerTensors {
            attn_norm: "in_norm",
            q: "q",
            k: "k",
            v: "v",
            attn_output: "o",
            ffn_norm: "mid_norm",
            gate: "gate",
            up: "up",
            down: "down",
        },
        embeddings: "embed.weight",
        output_norm: "final_norm.weight",
        output: "lm_head.weight",
        missing_output: MissingOutput::Refused,
        norm: Norm::Rms { eps_key: "norm_eps", default_eps: 1e-6 },
        rope: Rope { base_key: "rope_theta", default_base: 1_000_000.0, pairs: RopePairs::Adjacent },
        default_context: 32_768,
    };

    fn content(architecture: &str, metadata: &[(&str, u32)]) -> Content {
        let mut map: HashMap<String, Value> =
            metadata.iter().map(|(key, value)| (key.to_string(), Value::U32(*value))).collect();
        map.insert("general.architecture".into(), Value::String(architecture.into()));
        Content { magic: VersionedMagic::GgufV3, metadata: map, tensor_infos: HashMap::new(), tensor_data_offset: 0 }
    }

    #[test]
    fn the_family_is_picked_by_the_architecture_and_an_unknown_one_is_named() {
        let llama = content("llama", &[]);
        assert_eq!(Arch::of(&llama).map(|arch| arch.name), Ok("llama"));
        let qwen = content("qwen2", &[]);
        let error = Arch::of(&qwen).unwrap_err().to_string();
        assert_eq!(error, "general.architecture is \"qwen2\": only llama-architecture GGUF models run here");
        let names: Vec<&str> = FAMILIES.iter().map(|arch| arch.name).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique, "one descriptor per family");
    }

    #[test]
    fn the_shape_is_read_through_the_family_descriptor() {
        let keys = [("toy.embedding_length", 64), ("toy.attention.head_count", 4), ("toy.block_count", 0)];
        let toy = content("toy", &keys);
        let config = Config::of_family(&toy, &TOY).unwrap();
        assert_eq!((config.dim, config.heads, config.kv_heads, config.head_dim), (64, 4, 4, 16));
        assert_eq!((config.context, config.rope_base, config.eps), (32_768, 1_000_000.0, f64::from(1e-6f32)));
        assert_eq!(config.arch.layer_tensor(3, config.arch.layer.q), "blk.3.q.weight");
        // The llama descriptor reads llama's keys, not the toy's.
        let error = Config::of_family(&toy, &llama::LLAMA).unwrap_err().to_string();
        assert!(error.contains("`llama.embedding_length`"), "{error}");
        let llama_keys = [("llama.embedding_length", 64), ("llama.attention.head_count", 4), ("llama.block_count", 0)];
        let config = Config::from_gguf(&content("llama", &llama_keys)).unwrap();
        assert_eq!((config.arch.name, config.context, config.rope_base), ("llama", 2048, 10_000.0));
    }
}
