//! The gemma3 family: embeddings × √dim, four norms per layer (after attention and after the
//! feed-forward too, each before its residual add), q/k head norms, a GELU-tanh gated feed-forward,
//! rotary embedding over NeoX pairs, and five local layers to one global: a layer `i` with
//! `i % 6 < 5` sees only the last `gemma3.attention.sliding_window` positions and rotates with base
//! `rope.freq_base_swa` (10000 when absent), a global one sees them all with `rope.freq_base`. The
//! norm weights are stored with Gemma's +1 already added (used as they are); the output projection is
//! the embedding table.

use super::plan::{Activation, Plan, Rope, RopePairs};
use super::schema::{Defaults, Schema};
use super::Family;

pub const GEMMA3: Family = Family { name: "gemma3", plan };

/// Layers per cycle of local layers and one global one.
const PATTERN: usize = 6;

fn plan(s: &mut Schema<'_>) -> Plan {
    let mut config = s.config(Defaults { context: 131_072, eps: 1e-6, head_dim_key: true });
    // Queries scaled by 1/√head_dim, except the 27B (62 layers): 1/√(dim/heads).
    if config.layers == 62 && config.heads > 0 {
        config.attention_scale = 1.0 / ((config.dim / config.heads) as f32).sqrt();
    }
    let window = s.count("attention.sliding_window");
    let global = Rope { pairs: RopePairs::NeoX, base: s.float_or("rope.freq_base", 10_000.0) };
    let local = Rope { pairs: RopePairs::NeoX, base: s.float_or("rope.freq_base_swa", 10_000.0) };
    let layers = (0..config.layers)
        .map(|i| {
            let is_local = i % PATTERN < PATTERN - 1;
            let mut layer = s.standard_layer(i, if is_local { local } else { global });
            layer.window = is_local.then_some(window.max(1));
            layer.q_norm = Some(s.layer(i, "attn_q_norm"));
            layer.k_norm = Some(s.layer(i, "attn_k_norm"));
            layer.post_attention_norm = Some(s.layer(i, "post_attention_norm"));
            layer.post_ffn_norm = Some(s.layer(i, "post_ffw_norm"));
            layer.activation = Activation::GeluTanh;
            layer
        })
        .collect();
    let embedding_scale = Some((config.dim as f32).sqrt());
    Plan { embedding_scale, ..s.standard_plan(config, layers) }
}
