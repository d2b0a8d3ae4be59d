//! A llama on candle's own quantized matmuls and tensor ops: the speed baseline of `tunebench bench`
//! and a second llama the tests hold our forward pass ([`super::model`]) to. It runs the llama family
//! alone (other families are refused, naming theirs): llama.cpp's logits are every family's reference.
//!
//! As the baseline, weights stored as Q4_0/Q4_1/Q5_x are converted to Q8_0 at load (candle's Q4_1
//! matmul has no SIMD path; Q8_0 does), its fastest setting here; as the reference, they stay as
//! stored, the same numbers our pass multiplies. The key/value cache is preallocated.

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};

use super::arch::{rope_frequencies, Plan, RopePairs};
use super::model::{rope_factors, Config, Transformer};
use super::EngineError;

struct Layer {
    attn_norm: Tensor,
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    ffn_norm: Tensor,
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
    k_cache: Tensor,
    v_cache: Tensor,
}

/// The model with its key/value cache.
pub struct Llama {
    pub config: Config,
    embeddings: QTensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    cos: Tensor,
    sin: Tensor,
    /// Positions held in the cache.
    cached: usize,
    device: Device,
    /// Bytes of the matrices one token reads.
    weight_bytes: usize,
}

fn model_err(e: candle_core::Error) -> EngineError {
    EngineError::Model(e.to_string())
}

/// Reads a quantized tensor, converting 4/5-bit block formats to Q8_0 when `convert`.
fn qtensor<R: std::io::Read + std::io::Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
    device: &Device,
    convert: bool,
) -> Result<QTensor, EngineError> {
    let tensor = content.tensor(reader, name, device).map_err(|e| EngineError::Model(format!("tensor {name}: {e}")))?;
    let convert =
        convert && matches!(tensor.dtype(), GgmlDType::Q4_0 | GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1);
    if !convert {
        return Ok(tensor);
    }
    let values = tensor.dequantize(device).map_err(model_err)?;
    QTensor::quantize(&values, GgmlDType::Q8_0).map_err(model_err)
}

fn dense<R: std::io::Read + std::io::Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
    device: &Device,
) -> Result<Tensor, EngineError> {
    let tensor = content.tensor(reader, name, device).map_err(|e| EngineError::Model(format!("tensor {name}: {e}")))?;
    tensor.dequantize(device).map_err(model_err)
}

impl Llama {
    /// Loads the weights of `content` (read from `reader`) with a cache of `context` positions.
    pub fn load<R: std::io::Read + std::io::Seek>(
        content: &Content,
        reader: &mut R,
        context: usize,
        convert: bool,
    ) -> Result<Self, EngineError> {
        let device = Device::Cpu;
        let plan = Plan::of(content)?;
        let plain = |l: &super::arch::LayerPlan| {
            l.rope.pairs == RopePairs::Adjacent
                && [&l.q.bias, &l.k.bias, &l.v.bias, &l.q_norm, &l.post_attention_norm].iter().all(|t| t.is_none())
                && l.window.is_none()
        };
        if plan.config.family != "llama" {
            return Err(EngineError::Model(format!(
                "candle's backend runs the llama family alone; this is a {} model",
                plan.config.family
            )));
        }
        if !plan.layers.iter().all(plain) {
            return Err(EngineError::Model("candle's backend runs llama models without q/k/v biases".into()));
        }
        let mut config = plan.config.clone();
        config.context = context.min(config.context).max(1);
        let factors = rope_factors(content, reader, &plan)?;
        let base = plan.layers.first().map_or(10_000.0, |l| l.rope.base);
        let mut weight_bytes = 0;
        let mut matmul = |reader: &mut R, name: &str| {
            qtensor(content, reader, name, &device, convert).and_then(|t| {
                weight_bytes += t.storage_size_in_bytes();
                QMatMul::from_qtensor(t).map_err(model_err)
            })
        };
        let mut layers = Vec::with_capacity(config.layers);
        for p in &plan.layers {
            let (wq, wk, wv, wo) = (
                matmul(reader, &p.q.weight)?,
                matmul(reader, &p.k.weight)?,
                matmul(reader, &p.v.weight)?,
                matmul(reader, &p.attn_output)?,
            );
            let (gate, up, down) = (matmul(reader, &p.gate)?, matmul(reader, &p.up)?, matmul(reader, &p.down)?);
            let cache_shape = (1, config.kv_heads, config.context, config.head_dim);
            layers.push(Layer {
                attn_norm: dense(content, reader, &p.attn_norm, &device)?,
                wq,
                wk,
                wv,
                wo,
                ffn_norm: dense(content, reader, &p.ffn_norm, &device)?,
                gate,
                up,
                down,
                k_cache: Tensor::zeros(cache_shape, DType::F32, &device).map_err(model_err)?,
                v_cache: Tensor::zeros(cache_shape, DType::F32, &device).map_err(model_err)?,
            });
        }
        let embeddings = content
            .tensor(reader, &plan.embeddings, &device)
            .map_err(|e| EngineError::Model(format!("tensor {}: {e}", plan.embeddings)))?;
        let norm = dense(content, reader, &plan.output_norm, &device)?;
        // Tied embeddings: the output projection is the embedding table, as stored.
        let output = match plan.output == plan.embeddings {
            true => content.tensor(reader, &plan.embeddings, &device).map_err(model_err)?,
            false => qtensor(content, reader, &plan.output, &device, convert)?,
        };
        weight_bytes += output.storage_size_in_bytes();
        let output = QMatMul::from_qtensor(output).map_err(model_err)?;
        let (cos, sin) =
            rope_tables(&config, &rope_frequencies(base, config.head_dim, &factors), &device).map_err(model_err)?;
        Ok(Self { config, embeddings, layers, norm, output, cos, sin, cached: 0, device, weight_bytes })
    }

    fn forward_inner(&mut self, tokens: &[u32]) -> candle_core::Result<Vec<f32>> {
        let seq = tokens.len();
        let start = self.cached;
        let c = &self.config;
        let (heads, kv_heads, hd) = (c.heads, c.kv_heads, c.head_dim);
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self.embeddings.embedding(&ids)?.unsqueeze(0)?; // (1, seq, dim)
        let cos = self.cos.narrow(0, start, seq)?;
        let sin = self.sin.narrow(0, start, seq)?;
        let mask = if seq > 1 { Some(causal_mask(seq, start, &self.device)?) } else { None };
        let scale = f64::from(c.attention_scale);
        for layer in &mut self.layers {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, c.eps)?;
            let q = layer.wq.forward(&h)?.reshape((1, seq, heads, hd))?.transpose(1, 2)?.contiguous()?;
            let k = layer.wk.forward(&h)?.reshape((1, seq, kv_heads, hd))?.transpose(1, 2)?.contiguous()?;
            let v = layer.wv.forward(&h)?.reshape((1, seq, kv_heads, hd))?.transpose(1, 2)?.contiguous()?;
            let q = candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?;
            layer.k_cache.slice_set(&k, 2, start)?;
            layer.v_cache.slice_set(&v, 2, start)?;
            let total = start + seq;
            let k = layer.k_cache.narrow(2, 0, total)?;
            let v = layer.v_cache.narrow(2, 0, total)?;
            let group = heads / kv_heads;
            // Grouped-query attention: each key/value head serves `group` query heads.
            let q = q.reshape((1, kv_heads, group * seq, hd))?;
            let mut att = (q.matmul(&k.t()?.contiguous()?)? * scale)?; // (1, kv, group*seq, total)
            if let Some(mask) = &mask {
                let att4 = att.reshape((1, kv_heads, group, seq, total))?;
                att = att4.broadcast_add(mask)?.reshape((1, kv_heads, group * seq, total))?;
            }
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att.matmul(&v.contiguous()?)?; // (1, kv, group*seq, hd)
            let y = y.reshape((1, heads, seq, hd))?.transpose(1, 2)?.reshape((1, seq, heads * hd))?;
            x = (x + layer.wo.forward(&y)?)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, c.eps)?;
            let ffn = (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (x + layer.down.forward(&ffn)?)?;
        }
        let last = x.narrow(1, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, c.eps)?;
        let logits = self.output.forward(&last)?;
        logits.flatten_all()?.to_vec1::<f32>()
    }
}

impl Transformer for Llama {
    fn config(&self) -> &Config {
        &self.config
    }

    fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    fn forward_into(&mut self, tokens: &[u32], logits: &mut Vec<f32>) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::Model("nothing to run: no tokens".into()));
        }
        if self.cached + tokens.len() > self.config.context {
            return Err(EngineError::Context { needed: self.cached + tokens.len(), context: self.config.context });
        }
        *logits = self.forward_inner(tokens).map_err(model_err)?;
        self.cached += tokens.len();
        Ok(())
    }

    fn truncate_cache(&mut self, len: usize) {
        self.cached = self.cached.min(len);
    }
}

/// Interleaved rotary tables (llama's adjacent pairs: `rope_i`) of each pair's frequency `freqs`.
fn rope_tables(c: &Config, freqs: &[f32], device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let freqs = Tensor::new(freqs, device)?;
    let positions = Tensor::arange(0u32, c.context as u32, device)?.to_dtype(DType::F32)?;
    let angles = positions.unsqueeze(1)?.broadcast_mul(&freqs.unsqueeze(0)?)?;
    Ok((angles.cos()?, angles.sin()?))
}

/// `-inf` above the diagonal for `seq` new positions after `start` cached ones: shape (seq, start+seq).
fn causal_mask(seq: usize, start: usize, device: &Device) -> candle_core::Result<Tensor> {
    let total = start + seq;
    let values: Vec<f32> =
        (0..seq).flat_map(|i| (0..total).map(move |j| if j > start + i { f32::NEG_INFINITY } else { 0.0 })).collect();
    Tensor::from_vec(values, (seq, total), device)
}
