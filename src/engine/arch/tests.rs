//! The families' plans read from synthetic GGUF headers (keys and tensor shapes, no weights): what each
//! family adds, and the errors that name what a file lacks.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, TensorInfo, Value, VersionedMagic};
use candle_core::quantized::GgmlDType;

use super::*;

/// A header of family `arch` with `keys` and every tensor of `tensors` (rows, cols; 0 rows: a vector).
fn content(arch: &str, keys: &[(&str, u32)], tensors: &[(String, usize, usize)]) -> Content {
    let mut metadata: HashMap<String, Value> =
        keys.iter().map(|(key, value)| (format!("{arch}.{key}"), Value::U32(*value))).collect();
    metadata.insert("general.architecture".into(), Value::String(arch.into()));
    let tensor_infos = tensors
        .iter()
        .map(|(name, rows, cols)| {
            let shape =
                if *rows == 0 { candle_core::Shape::from(*cols) } else { candle_core::Shape::from((*rows, *cols)) };
            (name.clone(), TensorInfo { ggml_dtype: GgmlDType::F32, shape, offset: 0 })
        })
        .collect();
    Content { magic: VersionedMagic::GgufV3, metadata, tensor_infos, tensor_data_offset: 0 }
}

/// A whole model's keys and tensors: `layers` layers, dim 64, 4 heads of `head_dim`, 2 key/value heads,
/// feed-forward 96, vocabulary 50; `extra` names per-layer tensors (`{i}` the layer) the family adds.
fn model(arch: &str, layers: u32, head_dim: usize, extra: &[(&str, usize, usize)]) -> Content {
    let (dim, q, kv, ffn) = (64, 4 * head_dim, 2 * head_dim, 96);
    let mut tensors = vec![("token_embd.weight".to_string(), 50, dim), ("output_norm.weight".to_string(), 0, dim)];
    for i in 0..layers {
        for (name, rows, cols) in [
            ("attn_norm.weight", 0, dim),
            ("attn_q.weight", q, dim),
            ("attn_k.weight", kv, dim),
            ("attn_v.weight", kv, dim),
            ("attn_output.weight", dim, q),
            ("ffn_norm.weight", 0, dim),
            ("ffn_gate.weight", ffn, dim),
            ("ffn_up.weight", ffn, dim),
            ("ffn_down.weight", dim, ffn),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        {
            tensors.push((format!("blk.{i}.{name}"), rows, cols));
        }
    }
    let keys = [
        ("embedding_length", 64),
        ("attention.head_count", 4),
        ("attention.head_count_kv", 2),
        ("block_count", layers),
        ("attention.key_length", head_dim as u32),
        ("attention.sliding_window", 11),
        ("context_length", 128),
    ];
    content(arch, &keys, &tensors)
}

#[test]
fn an_unknown_architecture_is_named_with_the_families_that_run() {
    let error = Plan::of(&content("phi3", &[], &[])).unwrap_err().to_string();
    assert_eq!(
        error,
        "general.architecture is \"phi3\": this build runs the model families llama, qwen2, qwen3, gemma3"
    );
    let names: Vec<&str> = FAMILIES.iter().map(|family| family.name).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "one family per architecture");
}

#[test]
fn llama_reads_its_keys_adjacent_pairs_and_ties_its_output() {
    let plan = Plan::of(&model("llama", 2, 16, &[])).unwrap();
    let c = &plan.config;
    assert_eq!(
        (c.family, c.layers, c.dim, c.heads, c.kv_heads, c.head_dim, c.context),
        ("llama", 2, 64, 4, 2, 16, 128)
    );
    assert_eq!((c.eps, c.attention_scale), (1e-5, 0.25));
    assert_eq!(plan.output, "token_embd.weight", "tied");
    let layer = &plan.layers[1];
    assert_eq!(layer.rope, Rope { pairs: RopePairs::Adjacent, base: 10_000.0 });
    assert_eq!((layer.q.weight.as_str(), &layer.q.bias, &layer.q_norm), ("blk.1.attn_q.weight", &None, &None));
    assert_eq!((layer.activation, layer.window), (Activation::Silu, None));
}

#[test]
fn qwen2_needs_its_biases_and_rotates_neox_pairs() {
    let biases = [("attn_q.bias", 0, 64), ("attn_k.bias", 0, 32), ("attn_v.bias", 0, 32)];
    let plan = Plan::of(&model("qwen2", 1, 16, &biases)).unwrap();
    let layer = &plan.layers[0];
    assert_eq!(layer.rope.pairs, RopePairs::NeoX);
    assert_eq!(layer.k.bias.as_deref(), Some("blk.0.attn_k.bias"));
    let error = Plan::of(&model("qwen2", 2, 16, &biases[..2])).unwrap_err().to_string();
    assert_eq!(
        error,
        "the GGUF does not fit the qwen2 family: it lacks tensor `blk.0.attn_v.bias`, tensor `blk.1.attn_v.bias`"
    );
}

#[test]
fn qwen3_takes_its_head_width_from_key_length_and_norms_query_and_key_heads() {
    let norms = [("attn_q_norm.weight", 0, 32), ("attn_k_norm.weight", 0, 32)];
    let plan = Plan::of(&model("qwen3", 1, 32, &norms)).unwrap();
    let c = &plan.config;
    assert_eq!((c.head_dim, c.q_dim(), c.kv_dim(), c.attention_scale), (32, 128, 64, 1.0 / 32f32.sqrt()));
    assert_eq!(plan.layers[0].q_norm.as_deref(), Some("blk.0.attn_q_norm.weight"));
    // Without the norms and with a key length its tensors do not have: every fault named at once.
    let error = Plan::of(&model("qwen3", 1, 32, &norms[..1])).unwrap_err().to_string();
    assert!(error.contains("it lacks tensor `blk.0.attn_k_norm.weight`"), "{error}");
    let mut wrong = model("qwen3", 1, 32, &norms);
    wrong.metadata.insert("qwen3.attention.key_length".into(), Value::U32(16));
    let error = Plan::of(&wrong).unwrap_err().to_string();
    assert!(error.contains("tensor `blk.0.attn_q.weight` is 128×64, expected 64×64"), "{error}");
    assert!(error.contains("tensor `blk.0.attn_q_norm.weight` is 1×32, expected 1×16"), "{error}");
}

#[test]
fn gemma3_has_five_local_layers_to_one_global_and_its_own_norms() {
    let extra = [
        ("attn_q_norm.weight", 0, 32),
        ("attn_k_norm.weight", 0, 32),
        ("post_attention_norm.weight", 0, 64),
        ("post_ffw_norm.weight", 0, 64),
    ];
    let mut file = model("gemma3", 7, 32, &extra);
    file.metadata.insert("gemma3.rope.freq_base".into(), Value::F32(1e6));
    let plan = Plan::of(&file).unwrap();
    assert_eq!(plan.embedding_scale, Some(8.0));
    let windows: Vec<Option<usize>> = plan.layers.iter().map(|l| l.window).collect();
    assert_eq!(windows, [Some(11), Some(11), Some(11), Some(11), Some(11), None, Some(11)]);
    let bases: Vec<f32> = plan.layers.iter().map(|l| l.rope.base).collect();
    assert_eq!(bases, [1e4, 1e4, 1e4, 1e4, 1e4, 1e6, 1e4]);
    let layer = &plan.layers[5];
    assert_eq!(layer.activation, Activation::GeluTanh);
    assert_eq!(layer.post_ffn_norm.as_deref(), Some("blk.5.post_ffw_norm.weight"));
    assert_eq!(plan.config.attention_scale, 1.0 / 32f32.sqrt());
    // No window key, no post-norms: named before anything is read.
    let mut file = model("gemma3", 1, 32, &extra[..2]);
    file.metadata.remove("gemma3.attention.sliding_window");
    let error = Plan::of(&file).unwrap_err().to_string();
    assert_eq!(
        error,
        "the GGUF does not fit the gemma3 family: it lacks key `gemma3.attention.sliding_window`, \
         tensor `blk.0.post_attention_norm.weight`, tensor `blk.0.post_ffw_norm.weight`"
    );
}

#[test]
fn tensors_the_family_does_not_use_are_ignored_and_missing_keys_are_named() {
    let mut file = model("llama", 1, 16, &[]);
    file.tensor_infos.insert(
        "v.blk.0.attn_q.weight".into(),
        TensorInfo { ggml_dtype: GgmlDType::F32, shape: candle_core::Shape::from((7, 3)), offset: 0 },
    );
    assert!(Plan::of(&file).is_ok(), "a vision tower's tensors are not the model's");
    file.metadata.remove("llama.embedding_length");
    file.metadata.remove("llama.block_count");
    let error = Plan::of(&file).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "the GGUF does not fit the llama family: it lacks key `llama.embedding_length`, key `llama.block_count`"
        ),
        "{error}"
    );
    // A count of layers beyond the tensors is refused, not planned for.
    let mut file = model("llama", 1, 16, &[]);
    file.metadata.insert("llama.block_count".into(), Value::U32(4_000_000_000));
    let error = Plan::of(&file).unwrap_err().to_string();
    assert!(error.contains("key `llama.block_count` is 4000000000, more layers than the file has tensors"), "{error}");
}
