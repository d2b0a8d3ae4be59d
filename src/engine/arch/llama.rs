//! The llama family (SmolLM2, Llama 2/3, TinyLlama, ...): llama.cpp's tensor names, RMS norm, rotary
//! embedding over adjacent pairs, and the embedding table as the output projection when the file has
//! none.

use super::{Arch, LayerTensors, MissingOutput, Norm, Rope, RopePairs};

pub const LLAMA: Arch = Arch {
    name: "llama",
    layer: LayerTensors {
        attn_norm: "attn_norm",
        q: "attn_q",
        k: "attn_k",
        v: "attn_v",
        attn_output: "attn_output",
        ffn_norm: "ffn_norm",
        gate: "ffn_gate",
        up: "ffn_up",
        down: "ffn_down",
    },
    embeddings: "token_embd.weight",
    output_norm: "output_norm.weight",
    output: "output.weight",
    missing_output: MissingOutput::Tied,
    norm: Norm::Rms { eps_key: "attention.layer_norm_rms_epsilon", default_eps: 1e-5 },
    rope: Rope { base_key: "rope.freq_base", default_base: 10_000.0, pairs: RopePairs::Adjacent },
    default_context: 2048,
};
