//! What a family file reads a GGUF through: its metadata keys (under the family's prefix) and its
//! tensor names, each noted as it is asked for. A required key or tensor the file lacks is not an
//! error on the spot: [`Schema::finish`] names everything missing at once (and every tensor of the
//! wrong shape), before a single weight is read. Tensors nobody asks for (a vision tower in an Ollama
//! blob) are ignored.

use candle_core::quantized::gguf_file::Content;

use super::super::EngineError;
use super::plan::{Config, LayerPlan, Plan, Projection, Rope, Shape};

/// The most missing or misshapen items one error lists (then "and N more").
const LISTED: usize = 8;

/// A GGUF read as one family: the keys and tensors asked for, and what was missing.
pub struct Schema<'a> {
    content: &'a Content,
    family: &'static str,
    missing: Vec<String>,
    wrong: Vec<String>,
}

/// The family's defaults for the keys every family shares.
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    /// The context when `{family}.context_length` is missing.
    pub context: usize,
    /// The norms' epsilon when `{family}.attention.layer_norm_rms_epsilon` is missing.
    pub eps: f32,
    /// A head's width from `{family}.attention.key_length` (else `dim / heads`).
    pub head_dim_key: bool,
}

impl<'a> Schema<'a> {
    pub fn new(content: &'a Content, family: &'static str) -> Self {
        Self { content, family, missing: Vec::new(), wrong: Vec::new() }
    }

    /// The metadata key `{family}.{suffix}`.
    pub fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.family)
    }

    fn number(&mut self, suffix: &str) -> Option<usize> {
        let key = self.key(suffix);
        let value = self.content.metadata.get(&key)?;
        let n = value
            .to_u32()
            .map(|v| v as usize)
            .or_else(|_| value.to_u64().map(|v| v as usize))
            .or_else(|_| value.to_i32().map(|v| v.max(0) as usize))
            .or_else(|_| value.to_i64().map(|v| v.max(0) as usize));
        match n {
            Ok(n) => Some(n),
            Err(_) => {
                self.wrong.push(format!("key `{key}` is not a whole number"));
                None
            }
        }
    }

    /// The required count `{family}.{suffix}` (0 when missing: [`Schema::finish`] reports it).
    pub fn count(&mut self, suffix: &str) -> usize {
        if !self.content.metadata.contains_key(&self.key(suffix)) {
            self.missing.push(format!("key `{}`", self.key(suffix)));
        }
        self.number(suffix).unwrap_or(0)
    }

    /// The count `{family}.{suffix}`, else `default`.
    pub fn count_or(&mut self, suffix: &str, default: usize) -> usize {
        self.number(suffix).unwrap_or(default)
    }

    /// The number `{family}.{suffix}`, else `default`.
    pub fn float_or(&mut self, suffix: &str, default: f32) -> f32 {
        let key = self.key(suffix);
        match self.content.metadata.get(&key) {
            None => default,
            Some(value) => match value.to_f32().or_else(|_| value.to_f64().map(|v| v as f32)) {
                Ok(v) if v.is_finite() => v,
                _ => {
                    self.wrong.push(format!("key `{key}` is not a finite number"));
                    default
                }
            },
        }
    }

    /// Whether the file has tensor `name`.
    pub fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// The required tensor `name`.
    pub fn tensor(&mut self, name: &str) -> String {
        if !self.has(name) {
            self.missing.push(format!("tensor `{name}`"));
        }
        name.to_string()
    }

    /// Tensor `name` if the file has it.
    pub fn optional(&self, name: &str) -> Option<String> {
        self.has(name).then(|| name.to_string())
    }

    /// Layer `i`'s required weight `blk.{i}.{name}.weight`.
    pub fn layer(&mut self, i: usize, name: &str) -> String {
        self.tensor(&format!("blk.{i}.{name}.weight"))
    }

    /// Layer `i`'s weight `blk.{i}.{name}.weight` if the file has it.
    pub fn layer_optional(&self, i: usize, name: &str) -> Option<String> {
        self.optional(&format!("blk.{i}.{name}.weight"))
    }

    /// Layer `i`'s required bias `blk.{i}.{name}.bias`.
    pub fn layer_bias(&mut self, i: usize, name: &str) -> String {
        self.tensor(&format!("blk.{i}.{name}.bias"))
    }

    /// Layer `i`'s bias `blk.{i}.{name}.bias` if the file has it.
    pub fn layer_bias_optional(&self, i: usize, name: &str) -> Option<String> {
        self.optional(&format!("blk.{i}.{name}.bias"))
    }

    /// The model around `layers` as llama lays it out: `token_embd`, `output_norm`, the output projection
    /// (else the embedding table, tied), no embedding scale, no rope factors; a family changes what differs.
    pub fn standard_plan(&mut self, config: Config, layers: Vec<LayerPlan>) -> Plan {
        let embeddings = self.tensor("token_embd.weight");
        Plan {
            config,
            output: self.output_or_tied(&embeddings),
            embeddings,
            embedding_scale: None,
            rope_factors: None,
            layers,
            output_norm: self.tensor("output_norm.weight"),
        }
    }

    /// The output projection `output.weight`, else the embedding table (tied embeddings).
    pub fn output_or_tied(&self, embeddings: &str) -> String {
        self.optional("output.weight").unwrap_or_else(|| embeddings.to_string())
    }

    /// The shape every family reads from the same keys: layers, widths, heads, context, epsilon.
    pub fn config(&mut self, defaults: Defaults) -> Config {
        let dim = self.count("embedding_length");
        let heads = self.count("attention.head_count");
        let kv_heads = self.count_or("attention.head_count_kv", heads);
        let layers = self.count("block_count");
        let head_dim = match defaults.head_dim_key {
            true => self.count_or("attention.key_length", dim / heads.max(1)),
            false => dim / heads.max(1),
        };
        let present = |s: &Self, suffix: &str| s.content.metadata.contains_key(&s.key(suffix));
        if present(self, "embedding_length") && present(self, "attention.head_count") {
            let whole = defaults.head_dim_key || (heads > 0 && dim.is_multiple_of(heads));
            if heads == 0
                || kv_heads == 0
                || !heads.is_multiple_of(kv_heads)
                || head_dim == 0
                || head_dim % 2 != 0
                || !whole
            {
                self.wrong.push(format!(
                    "unusable attention shape: {dim} dims, {heads} heads of {head_dim}, {kv_heads} key/value heads"
                ));
            }
        }
        // Each layer is tensors of the file: more layers than tensors is a count to refuse, not to
        // build a plan for.
        let tensors = self.content.tensor_infos.len();
        let layers = if layers > tensors {
            self.wrong.push(format!(
                "key `{}` is {layers}, more layers than the file has tensors ({tensors})",
                self.key("block_count")
            ));
            0
        } else {
            layers
        };
        Config {
            family: self.family,
            layers,
            dim,
            heads,
            kv_heads,
            head_dim,
            context: self.count_or("context_length", defaults.context),
            eps: self.float_or("attention.layer_norm_rms_epsilon", defaults.eps),
            attention_scale: 1.0 / (head_dim.max(1) as f32).sqrt(),
        }
    }

    /// Layer `i` as llama lays it out: `attn_norm`, `attn_q`/`attn_k`/`attn_v`/`attn_output`,
    /// `ffn_norm`, `ffn_gate`/`ffn_up`/`ffn_down`, SiLU, no extra norms; a family changes what differs.
    pub fn standard_layer(&mut self, i: usize, rope: Rope) -> LayerPlan {
        LayerPlan {
            attn_norm: self.layer(i, "attn_norm"),
            q: Projection::new(self.layer(i, "attn_q")),
            k: Projection::new(self.layer(i, "attn_k")),
            v: Projection::new(self.layer(i, "attn_v")),
            q_norm: None,
            k_norm: None,
            rope,
            window: None,
            attn_output: self.layer(i, "attn_output"),
            post_attention_norm: None,
            ffn_norm: self.layer(i, "ffn_norm"),
            gate: self.layer(i, "ffn_gate"),
            up: self.layer(i, "ffn_up"),
            down: self.layer(i, "ffn_down"),
            activation: super::plan::Activation::Silu,
            post_ffn_norm: None,
        }
    }

    /// The plan, once every tensor it names has been checked against its shape; else one error that
    /// names every missing key and tensor and every misshapen tensor.
    pub fn finish(mut self, plan: Plan) -> Result<Plan, EngineError> {
        if self.missing.is_empty() && self.wrong.is_empty() {
            self.check_shapes(&plan);
        }
        if self.missing.is_empty() && self.wrong.is_empty() {
            return Ok(plan);
        }
        let list = |items: &[String]| {
            let mut text = items.iter().take(LISTED).cloned().collect::<Vec<_>>().join(", ");
            if items.len() > LISTED {
                text.push_str(&format!(" and {} more", items.len() - LISTED));
            }
            text
        };
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("it lacks {}", list(&self.missing)));
        }
        if !self.wrong.is_empty() {
            parts.push(list(&self.wrong));
        }
        Err(EngineError::Model(format!("the GGUF does not fit the {} family: {}", self.family, parts.join("; "))))
    }

    /// Rows and columns of tensor `name` (a vector: one row).
    fn dims(&self, name: &str) -> Option<(usize, usize)> {
        match self.content.tensor_infos.get(name)?.shape.dims() {
            [cols] => Some((1, *cols)),
            [rows, cols] => Some((*rows, *cols)),
            _ => None,
        }
    }

    fn check_shapes(&mut self, plan: &Plan) {
        for (name, want) in plan.tensors() {
            let Some((rows, cols)) = self.dims(name) else {
                let dims = self.content.tensor_infos.get(name).map(|t| t.shape.dims().to_vec());
                self.wrong.push(format!("tensor `{name}` has shape {:?}, not a matrix", dims.unwrap_or_default()));
                continue;
            };
            let expected = match want {
                Shape::Matrix(r, c) => Some((r, c)),
                Shape::Vector(n) => Some((1, n)),
                Shape::Rows { cols: c } => Some((rows.max(1), c)),
                Shape::SameAs(other) => self.dims(other),
                Shape::Transposed(other) => self.dims(other).map(|(r, c)| (c, r)),
            };
            if let Some((r, c)) = expected.filter(|e| *e != (rows, cols)) {
                self.wrong.push(format!("tensor `{name}` is {rows}×{cols}, expected {r}×{c}"));
            }
        }
    }
}
