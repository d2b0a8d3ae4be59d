//! The qwen3 family: a head's width from `qwen3.attention.key_length` (128 on Qwen3-0.6B, not
//! dim/heads), an RMS norm of each query and key head before the rotary embedding over NeoX pairs,
//! the embedding table as the output projection when the file has no `output.weight`.

use super::plan::{Plan, Rope, RopePairs};
use super::schema::{Defaults, Schema};
use super::Family;

pub const QWEN3: Family = Family { name: "qwen3", plan };

fn plan(s: &mut Schema<'_>) -> Plan {
    let config = s.config(Defaults { context: 40_960, eps: 1e-6, head_dim_key: true });
    let rope = Rope { pairs: RopePairs::NeoX, base: s.float_or("rope.freq_base", 10_000.0) };
    let layers = (0..config.layers)
        .map(|i| {
            let mut layer = s.standard_layer(i, rope);
            layer.q_norm = Some(s.layer(i, "attn_q_norm"));
            layer.k_norm = Some(s.layer(i, "attn_k_norm"));
            layer
        })
        .collect();
    s.standard_plan(config, layers)
}
