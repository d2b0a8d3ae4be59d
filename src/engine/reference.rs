//! The same transformer on candle's own quantized matmuls and tensor ops: the speed baseline of
//! `tunebench bench` and the reference the tests hold our forward pass ([`super::model`]) to.
//!
//! As the baseline, weights stored as Q4_0/Q4_1/Q5_x are converted to Q8_0 at load (candle's Q4_1
//! matmul has no SIMD path; Q8_0 does), its fastest setting here; as the reference, they stay as
//! stored, the same numbers our pass multiplies. The key/value cache is preallocated.

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};

use super::arch::{MissingOutput, RopePairs};
use super::model::{Config, Transformer};
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
        let mut config = Config::from_gguf(content)?;
        config.context = context.min(config.context).max(1);
        config.read_rope_factors(content, reader)?;
        let mut weight_bytes = 0;
        let mut matmul = |name: &str| {
            qtensor(content, reader, name, &device, convert).and_then(|t| {
                weight_bytes += t.storage_size_in_bytes();
                QMatMul::from_qtensor(t).map_err(model_err)
            })
        };
        let mut layers = Vec::with_capacity(config.layers);
        let (arch, names) = (config.arch, &config.arch.layer);
        for i in 0..config.layers {
            let (wq, wk, wv, wo) = (
                matmul(&arch.layer_tensor(i, names.q))?,
                matmul(&arch.layer_tensor(i, names.k))?,
                matmul(&arch.layer_tensor(i, names.v))?,
                matmul(&arch.layer_tensor(i, names.attn_output))?,
            );
            let (gate, up, down) = (
                matmul(&arch.layer_tensor(i, names.gate))?,
                matmul(&arch.layer_tensor(i, names.up))?,
                matmul(&arch.layer_tensor(i, names.down))?,
            );
            let cache_shape = (1, config.kv_heads, config.context, config.head_dim);
            layers.push(Layer {
                attn_norm: Tensor::zeros(1, DType::F32, &device).map_err(model_err)?,
                wq,
                wk,
                wv,
                wo,
                ffn_norm: Tensor::zeros(1, DType::F32, &device).map_err(model_err)?,
                gate,
                up,
                down,
                k_cache: Tensor::zeros(cache_shape, DType::F32, &device).map_err(model_err)?,
                v_cache: Tensor::zeros(cache_shape, DType::F32, &device).map_err(model_err)?,
            });
        }
        for (i, layer) in layers.iter_mut().enumerate() {
            layer.attn_norm = dense(content, reader, &arch.layer_tensor(i, names.attn_norm), &device)?;
            layer.ffn_norm = dense(content, reader, &arch.layer_tensor(i, names.ffn_norm), &device)?;
        }
        let embeddings = content
            .tensor(reader, arch.embeddings, &device)
            .map_err(|e| EngineError::Model(format!("tensor {}: {e}", arch.embeddings)))?;
        let norm = dense(content, reader, arch.output_norm, &device)?;
        let output = if content.tensor_infos.contains_key(arch.output) {
            let output = qtensor(content, reader, arch.output, &device, convert)?;
            weight_bytes += output.storage_size_in_bytes();
            QMatMul::from_qtensor(output).map_err(model_err)?
        } else {
            if arch.missing_output == MissingOutput::Refused {
                return Err(EngineError::Model(format!("the GGUF has no tensor `{}`", arch.output)));
            }
            // Tied embeddings: the output projection is the embedding table.
            let tied = content.tensor(reader, arch.embeddings, &device).map_err(model_err)?;
            weight_bytes += tied.storage_size_in_bytes();
            QMatMul::from_qtensor(tied).map_err(model_err)?
        };
        let (cos, sin) = rope_tables(&config, &device).map_err(model_err)?;
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
        let scale = 1.0 / (hd as f64).sqrt();
        for layer in &mut self.layers {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, c.eps as f32)?;
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
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, c.eps as f32)?;
            let ffn = (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (x + layer.down.forward(&ffn)?)?;
        }
        let last = x.narrow(1, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, c.eps as f32)?;
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

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::Model("nothing to run: no tokens".into()));
        }
        if self.cached + tokens.len() > self.config.context {
            return Err(EngineError::Context { needed: self.cached + tokens.len(), context: self.config.context });
        }
        let logits = self.forward_inner(tokens).map_err(model_err)?;
        self.cached += tokens.len();
        Ok(logits)
    }

    fn truncate_cache(&mut self, len: usize) {
        self.cached = self.cached.min(len);
    }
}

/// Interleaved rotary tables (the family's adjacent pairs: `rope_i`).
fn rope_tables(c: &Config, device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let RopePairs::Adjacent = c.arch.rope.pairs;
    let freqs = c.rope_frequencies();
    let freqs = Tensor::new(freqs.as_slice(), device)?;
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
