//! The shape of a llama-family model (layers, dimensions, heads, context, rotary base, norm epsilon),
//! read from its GGUF metadata under its family's keys, with the family's defaults.

use candle_core::quantized::gguf_file::Content;

use super::super::arch::{Arch, Norm};
use super::super::attention::KvShape;
use super::super::EngineError;

/// The shape of the model, from its family's metadata (`llama.*` for llama).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The family: metadata keys, tensor names, norm, rotary embedding, output projection.
    pub arch: &'static Arch,
    pub layers: usize,
    pub dim: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub context: usize,
    pub rope_base: f32,
    /// Llama 3's rotary scaling (`rope_freqs.weight`): one factor per pair that divides its frequency
    /// (empty: none).
    pub rope_factors: Vec<f32>,
    pub eps: f64,
}

fn meta_usize(content: &Content, key: &str) -> Result<usize, EngineError> {
    let value = content.metadata.get(key).ok_or_else(|| EngineError::Model(format!("the GGUF has no `{key}`")))?;
    value
        .to_u32()
        .map(|v| v as usize)
        .or_else(|_| value.to_u64().map(|v| v as usize))
        .or_else(|_| value.to_i32().map(|v| v.max(0) as usize))
        .map_err(|e| EngineError::Model(format!("`{key}`: {e}")))
}

fn meta_f32(content: &Content, key: &str) -> Option<f32> {
    content.metadata.get(key).and_then(|v| v.to_f32().ok())
}

impl Config {
    /// The shape of `content`'s model, its family picked by `general.architecture`.
    pub fn from_gguf(content: &Content) -> Result<Self, EngineError> {
        Self::of_family(content, Arch::of(content)?)
    }

    /// The shape of `content`'s model read as family `arch` (its metadata keys and defaults).
    pub fn of_family(content: &Content, arch: &'static Arch) -> Result<Self, EngineError> {
        let key = |suffix: &str| arch.key(suffix);
        let dim = meta_usize(content, &key("embedding_length"))?;
        let heads = meta_usize(content, &key("attention.head_count"))?;
        let kv_heads = meta_usize(content, &key("attention.head_count_kv")).unwrap_or(heads);
        if heads == 0 || kv_heads == 0 || dim % heads != 0 || heads % kv_heads != 0 || (dim / heads) % 2 != 0 {
            return Err(EngineError::Model(format!(
                "unusable attention shape: {dim} dims, {heads} heads, {kv_heads} key/value heads"
            )));
        }
        // Each layer is tensors of the file: more layers than tensors is a count to refuse, not to
        // allocate for.
        let layers_key = key("block_count");
        let layers = meta_usize(content, &layers_key)?;
        if layers > content.tensor_infos.len() {
            return Err(EngineError::Model(format!(
                "`{layers_key}` is {layers}, more layers than the file has tensors ({})",
                content.tensor_infos.len()
            )));
        }
        let Norm::Rms { eps_key, default_eps } = arch.norm;
        Ok(Self {
            arch,
            layers,
            dim,
            heads,
            kv_heads,
            head_dim: dim / heads,
            context: meta_usize(content, &key("context_length")).unwrap_or(arch.default_context),
            rope_base: meta_f32(content, &key(arch.rope.base_key)).unwrap_or(arch.rope.default_base),
            rope_factors: Vec::new(),
            eps: meta_f32(content, &key(eps_key)).unwrap_or(default_eps) as f64,
        })
    }

    /// Reads the rotary scaling factors `rope_freqs.weight` when the file has them (Llama 3.x), one
    /// per pair of a head's dimensions; a tensor of another length is refused, naming it.
    pub fn read_rope_factors<R: std::io::Read + std::io::Seek>(
        &mut self,
        content: &Content,
        reader: &mut R,
    ) -> Result<(), EngineError> {
        const NAME: &str = "rope_freqs.weight";
        if !content.tensor_infos.contains_key(NAME) {
            return Ok(());
        }
        let cpu = candle_core::Device::Cpu;
        let read = |reader: &mut R| -> candle_core::Result<Vec<f32>> {
            content.tensor(reader, NAME, &cpu)?.dequantize(&cpu)?.flatten_all()?.to_vec1::<f32>()
        };
        let factors = read(reader).map_err(|e| EngineError::Model(format!("`{NAME}`: {e}")))?;
        if factors.len() != self.head_dim / 2 || factors.iter().any(|f| !f.is_finite() || *f <= 0.0) {
            return Err(EngineError::Model(format!(
                "`{NAME}` holds {} factors (finite, above 0 expected): a head of {} dimensions has {} pairs",
                factors.len(),
                self.head_dim,
                self.head_dim / 2
            )));
        }
        self.rope_factors = factors;
        Ok(())
    }

    /// Each pair's rotary frequency, `1 / base^(2i / head_dim)`, divided by its scaling factor.
    pub fn rope_frequencies(&self) -> Vec<f32> {
        let half = self.head_dim / 2;
        (0..half)
            .map(|i| {
                let freq = 1.0 / self.rope_base.powf(2.0 * i as f32 / self.head_dim as f32);
                freq / self.rope_factors.get(i).copied().unwrap_or(1.0)
            })
            .collect()
    }

    pub(super) fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    pub(super) fn kv_shape(&self) -> KvShape {
        KvShape { kv_heads: self.kv_heads, head_dim: self.head_dim }
    }
}
