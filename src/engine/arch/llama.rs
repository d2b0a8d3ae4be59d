//! The llama family (SmolLM2, Llama 2/3.x, TinyLlama, ...): the standard layer, rotary embedding over
//! adjacent pairs (the GGUF's q/k rows are permuted for it), Llama 3.x's rope factors
//! (`rope_freqs.weight`) when the file has them, q/k/v biases when it has them, and the embedding table
//! as the output projection when it has no `output.weight`.

use super::plan::{Plan, Projection, Rope, RopePairs};
use super::schema::{Defaults, Schema};
use super::Family;

pub const LLAMA: Family = Family { name: "llama", plan };

fn plan(s: &mut Schema<'_>) -> Plan {
    let config = s.config(Defaults { context: 2048, eps: 1e-5, head_dim_key: false });
    let rope = Rope { pairs: RopePairs::Adjacent, base: s.float_or("rope.freq_base", 10_000.0) };
    let layers = (0..config.layers)
        .map(|i| {
            let mut layer = s.standard_layer(i, rope);
            let bias = |s: &Schema<'_>, name: &str, p: &Projection| Projection {
                weight: p.weight.clone(),
                bias: s.layer_bias_optional(i, name),
            };
            layer.q = bias(s, "attn_q", &layer.q);
            layer.k = bias(s, "attn_k", &layer.k);
            layer.v = bias(s, "attn_v", &layer.v);
            layer
        })
        .collect();
    let rope_factors = s.optional("rope_freqs.weight");
    Plan { rope_factors, ..s.standard_plan(config, layers) }
}
