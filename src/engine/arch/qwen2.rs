//! The qwen2 family (Qwen2, Qwen2.5): the standard layer with biases on the query, key and value
//! projections, rotary embedding over NeoX pairs (`i`, `i + head_dim/2`), the embedding table as the
//! output projection when the file has no `output.weight`.

use super::plan::{Plan, Projection, Rope, RopePairs};
use super::schema::{Defaults, Schema};
use super::Family;

pub const QWEN2: Family = Family { name: "qwen2", plan };

fn plan(s: &mut Schema<'_>) -> Plan {
    let config = s.config(Defaults { context: 32_768, eps: 1e-6, head_dim_key: false });
    let rope = Rope { pairs: RopePairs::NeoX, base: s.float_or("rope.freq_base", 10_000.0) };
    let layers = (0..config.layers)
        .map(|i| {
            let mut layer = s.standard_layer(i, rope);
            for (projection, name) in [(&mut layer.q, "attn_q"), (&mut layer.k, "attn_k"), (&mut layer.v, "attn_v")] {
                *projection = Projection { weight: projection.weight.clone(), bias: Some(s.layer_bias(i, name)) };
            }
            layer
        })
        .collect();
    s.standard_plan(config, layers)
}
