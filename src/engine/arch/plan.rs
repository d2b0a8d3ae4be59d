//! A model's plan: its shape ([`Config`]) and, layer by layer, which of the forward pass's shared
//! operations run on which tensors — what a family file builds from a GGUF's keys and tensor names,
//! and what `super::super::model` runs. Nothing here reads a tensor's bytes.

use super::super::attention::KvShape;

/// The shape of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The family (`general.architecture`).
    pub family: &'static str,
    pub layers: usize,
    /// Width of the residual stream (`embedding_length`).
    pub dim: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Positions the key/value cache holds (the file's context, capped at load).
    pub context: usize,
    /// The RMS norms' epsilon.
    pub eps: f32,
    /// What the queries are multiplied by before their scores (1/√head_dim unless the family says other).
    pub attention_scale: f32,
}

impl Config {
    /// Width of the queries (every head): `heads × head_dim`, not always `dim`.
    pub fn q_dim(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Width of the keys or the values (every key/value head).
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    pub fn kv_shape(&self) -> KvShape {
        KvShape { kv_heads: self.kv_heads, head_dim: self.head_dim }
    }
}

/// Which dimensions of a head rotate together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopePairs {
    /// Dimensions `2i` and `2i + 1` (llama: the GGUF's q/k rows are laid out for it).
    Adjacent,
    /// Dimensions `i` and `i + head_dim/2` (NeoX style: qwen2, qwen3, gemma3).
    NeoX,
}

/// A layer's rotary position embedding: its pairs and its frequency base.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rope {
    pub pairs: RopePairs,
    pub base: f32,
}

/// The feed-forward network's activation of the gate, before it multiplies the up projection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `x / (1 + e^−x)`.
    Silu,
    /// GELU, tanh approximation.
    GeluTanh,
}

/// A projection: its weight tensor and an optional bias added after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    pub weight: String,
    pub bias: Option<String>,
}

impl Projection {
    pub fn new(weight: String) -> Self {
        Self { weight, bias: None }
    }
}

/// One layer: `x += post_attention_norm(o(attention(rope(q_norm(q)), rope(k_norm(k)), v)))`, then
/// `x += post_ffn_norm(down(activation(gate(h)) · up(h)))`, `h` the layer's norm of `x` each time.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerPlan {
    pub attn_norm: String,
    pub q: Projection,
    pub k: Projection,
    pub v: Projection,
    /// RMS norm of each query head, and of each key head, before the rope (`head_dim` weights).
    pub q_norm: Option<String>,
    pub k_norm: Option<String>,
    pub rope: Rope,
    /// A sliding window: a key at position p0 is seen from p1 only if `p1 − p0 < window`.
    pub window: Option<usize>,
    pub attn_output: String,
    /// RMS norm of the attention's output before it is added (gemma3).
    pub post_attention_norm: Option<String>,
    pub ffn_norm: String,
    pub gate: String,
    pub up: String,
    pub down: String,
    pub activation: Activation,
    /// RMS norm of the feed-forward output before it is added (gemma3).
    pub post_ffn_norm: Option<String>,
}

/// What the forward pass runs: the shape, the tensors and each layer's operations.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub config: Config,
    /// The token embedding table (`vocabulary × dim`).
    pub embeddings: String,
    /// Each embedding multiplied by it after the lookup (gemma3: √dim).
    pub embedding_scale: Option<f32>,
    /// Divisors of each rotary pair's frequency, every layer (`rope_freqs.weight`: Llama 3.x).
    pub rope_factors: Option<String>,
    pub layers: Vec<LayerPlan>,
    pub output_norm: String,
    /// The output projection: its own tensor, or the embedding table (tied embeddings).
    pub output: String,
}

impl Plan {
    /// Every tensor the plan reads, with the shape it must have (rows, columns; a vector is one row):
    /// `None` where the shape is the file's to choose (vocabulary, feed-forward width), checked
    /// against the tensors it must agree with instead.
    pub fn tensors(&self) -> Vec<(&str, Shape<'_>)> {
        let c = &self.config;
        let (dim, q, kv, hd) = (c.dim, c.q_dim(), c.kv_dim(), c.head_dim);
        let mut out: Vec<(&str, Shape)> = vec![
            (self.embeddings.as_str(), Shape::Rows { cols: dim }),
            (self.output_norm.as_str(), Shape::Vector(dim)),
            (self.output.as_str(), Shape::Rows { cols: dim }),
        ];
        if let Some(factors) = &self.rope_factors {
            out.push((factors.as_str(), Shape::Vector(hd / 2)));
        }
        for l in &self.layers {
            out.extend([
                (l.attn_norm.as_str(), Shape::Vector(dim)),
                (l.q.weight.as_str(), Shape::Matrix(q, dim)),
                (l.k.weight.as_str(), Shape::Matrix(kv, dim)),
                (l.v.weight.as_str(), Shape::Matrix(kv, dim)),
                (l.attn_output.as_str(), Shape::Matrix(dim, q)),
                (l.ffn_norm.as_str(), Shape::Vector(dim)),
                (l.gate.as_str(), Shape::Rows { cols: dim }),
                (l.up.as_str(), Shape::SameAs(&l.gate)),
                (l.down.as_str(), Shape::Transposed(&l.gate)),
            ]);
            for (bias, width) in [(&l.q.bias, q), (&l.k.bias, kv), (&l.v.bias, kv)] {
                out.extend(bias.as_deref().map(|b| (b, Shape::Vector(width))));
            }
            for norm in [&l.q_norm, &l.k_norm] {
                out.extend(norm.as_deref().map(|n| (n, Shape::Vector(hd))));
            }
            for norm in [&l.post_attention_norm, &l.post_ffn_norm] {
                out.extend(norm.as_deref().map(|n| (n, Shape::Vector(dim))));
            }
        }
        out
    }
}

/// The shape a tensor of the plan must have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape<'a> {
    /// `rows × cols`.
    Matrix(usize, usize),
    /// Any number of rows of `cols`.
    Rows { cols: usize },
    /// `n` values (one row).
    Vector(usize),
    /// The shape of another tensor of the plan.
    SameAs(&'a str),
    /// The shape of another tensor of the plan, rows and columns swapped.
    Transposed(&'a str),
}

/// Each rotary pair's frequency `1 / base^(2i / head_dim)`, divided by its factor (none: 1).
pub fn rope_frequencies(base: f32, head_dim: usize, factors: &[f32]) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| {
            let freq = 1.0 / base.powf(2.0 * i as f32 / head_dim as f32);
            freq / factors.get(i).copied().unwrap_or(1.0)
        })
        .collect()
}
