//! The transformer of a GGUF file on the CPU, whatever its family: our own forward pass over plain f32
//! buffers, running the family's [`Plan`] layer by layer from the shared operations of [`ops`], with
//! the weights kept in their 4-bit or 8-bit blocks (or as f32 rows) and multiplied by [`kernels`].
//!
//! Nothing is allocated per token once the buffers have grown to the longest batch. The key/value cache
//! grows with the positions used (up to the context) and can be cut back to any length, so a retry
//! turn reuses the prompt prefix it shares with the turn before (prompt caching). [`super::reference`]
//! is a llama on candle's own quantized matmuls: the speed baseline (llama.cpp's logits, in the
//! family fixtures, are the reference of every family).
//!
//! [`kernels`]: super::kernels

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;

use super::arch::{Activation, Plan, RopePairs};
use super::attention::{attend, scratch_len, KvLayer};
use super::attention_split::{attend_split, split_scratch_len, Token};
use super::kernels::{groups, matmul_groups, Kernels};
use super::kquant::{KActBlock, SUPER};
use super::quant::{ActBlock, Matrix, BLOCK, ROWS};
use super::threads::{Disjoint, Pool, PoolError};
use super::weights::{self, Identity};
use super::EngineError;

mod loader;
mod ops;
mod quantized;
mod split;

pub use super::arch::Config;
pub(super) use loader::rope_factors;
use loader::Loader;
use ops::{add, gated, rms_norm_heads, rms_norm_rows, scale, RopeTable};
pub use ops::{argmax, first_largest};
use quantized::{Forms, Quantized};
use split::{per_token, project, smallest_chunk};

/// Where a GGUF's interleaved weights are kept on disk, and the GGUF's identity.
#[derive(Clone, Debug)]
pub struct StoredWeights {
    pub file: std::path::PathBuf,
    pub identity: Identity,
}

/// How the weights were loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightsFrom {
    /// Read in place from the stored file, memory-mapped: `bytes` of block matrices (every one the file holds).
    Mapped { bytes: usize },
    /// Rebuilt from the GGUF (no stored file asked for, or none usable: why), and stored when asked.
    Gguf(String),
}

/// Which forward pass runs the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// Ours: 4-bit weights as stored, AVX2 kernels (the default).
    #[default]
    Native,
    /// candle's quantized matmuls, 4-bit weights converted to Q8_0 at load (the speed baseline).
    Candle,
    /// candle's quantized matmuls on the weights as stored (the reference the tests compare with).
    CandleAsStored,
}

/// What the generation loop needs of a model.
pub trait Transformer: Send {
    fn config(&self) -> &Config;
    /// Bytes of the weight matrices generating one token reads (the embedding row aside).
    fn weight_bytes(&self) -> usize;
    /// How the weights were loaded (candle's backends: always from the GGUF).
    fn weights_from(&self) -> WeightsFrom {
        WeightsFrom::Gguf("candle's backend stores nothing".into())
    }
    /// Runs `tokens` at the positions after the cache and writes the logits after the last one into
    /// `logits` (resized to the vocabulary; one buffer kept across a generation's tokens is allocated
    /// once: a fresh 0.6 MB a token was the allocator's pages zeroed again every token).
    fn forward_into(&mut self, tokens: &[u32], logits: &mut Vec<f32>) -> Result<(), EngineError>;
    /// [`Self::forward_into`] a new vector.
    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        let mut logits = Vec::new();
        self.forward_into(tokens, &mut logits)?;
        Ok(logits)
    }
    /// Forgets every cached position from `len` on.
    fn truncate_cache(&mut self, len: usize);
    /// The threads a forward pass runs on.
    fn threads(&self) -> usize {
        1
    }
    /// Runs later forward passes on `threads` threads (the numbers stay the same bits).
    fn set_threads(&mut self, threads: usize) -> Result<(), EngineError> {
        let _ = threads;
        Ok(())
    }
}

/// Loads the weights of `content` (read from `reader`) for `backend`, with a cache of `context` positions,
/// running on `threads` threads (ours; candle's matmuls keep their own setting). `stored`: where our
/// interleaved weights are kept on disk (read from there when whole and of this GGUF, else rebuilt and
/// written there).
pub fn load<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    backend: Backend,
    context: usize,
    threads: usize,
    stored: Option<&StoredWeights>,
) -> Result<Box<dyn Transformer>, EngineError> {
    Ok(match backend {
        Backend::Native => Box::new(Model::load(content, reader, context, threads, stored)?),
        Backend::Candle => Box::new(super::reference::Llama::load(content, reader, context, true)?),
        Backend::CandleAsStored => Box::new(super::reference::Llama::load(content, reader, context, false)?),
    })
}

/// One layer's weights, as its [`super::arch::LayerPlan`] names them, and its key/value cache.
struct Layer {
    attn_norm: Vec<f32>,
    wq: Matrix,
    wk: Matrix,
    wv: Matrix,
    /// Biases added after the query, key and value projections.
    bq: Option<Vec<f32>>,
    bk: Option<Vec<f32>>,
    bv: Option<Vec<f32>>,
    /// RMS norm weights of each query head and key head (`head_dim` values).
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    /// The layer's rotary table (an index into [`Model::ropes`]) and pairs.
    rope: usize,
    pairs: RopePairs,
    window: Option<usize>,
    wo: Matrix,
    post_attention_norm: Option<Vec<f32>>,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
    activation: Activation,
    post_ffn_norm: Option<Vec<f32>>,
    cache: KvLayer,
}

/// Working memory of one forward pass, `tokens × width` each; grown, never shrunk.
#[derive(Default)]
struct Buffers {
    x: Vec<f32>,
    h: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    y: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
    acts: Vec<ActBlock>,
    supers: Vec<KActBlock>,
}

fn grow<T: Default + Clone>(buffer: &mut Vec<T>, len: usize) -> &mut [T] {
    if buffer.len() < len {
        buffer.resize(len, T::default());
    }
    &mut buffer[..len]
}

/// The model with its key/value cache.
pub struct Model {
    pub config: Config,
    /// The tensor names the weights came from.
    plan: Plan,
    embeddings: Matrix,
    embedding_scale: Option<f32>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None`: the output projection is the embedding table (tied embeddings).
    output: Option<Matrix>,
    /// The widest feed-forward layer.
    ffn: usize,
    /// One rotary table per frequency base the layers use.
    ropes: Vec<RopeTable>,
    cached: usize,
    buffers: Buffers,
    pool: Pool,
    kernels: Kernels,
    /// The quantized forms of the activations the matrices read.
    forms: Forms,
    weights_from: WeightsFrom,
}

pub(super) fn pool_err(error: PoolError) -> EngineError {
    EngineError::Model(error.0)
}

impl Model {
    pub fn load<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        context: usize,
        threads: usize,
        stored: Option<&StoredWeights>,
    ) -> Result<Self, EngineError> {
        let plan = Plan::of(content)?;
        super::quant::fits_in_memory(content, &format!("this {} model", plan.config.family))?;
        super::huge_pages::on_for_the_weights();
        let (from_disk, why) = match stored {
            Some(s) => match weights::load(&s.file, &s.identity) {
                Ok(m) => (m, String::new()),
                Err(why) => (Default::default(), why),
            },
            None => (Default::default(), "no stored weights asked for".to_string()),
        };
        let mut config = plan.config.clone();
        config.context = context.min(config.context).max(1);
        let factors = rope_factors(content, reader, &plan)?;
        let mut load = Loader { content, reader, stored: from_disk, scratch: Vec::new(), rebuilt: false };
        let mut layers = Vec::with_capacity(config.layers);
        let mut ropes: Vec<RopeTable> = Vec::new();
        for p in &plan.layers {
            let rope = match ropes.iter().position(|table| table.base == p.rope.base) {
                Some(at) => at,
                None => {
                    ropes.push(RopeTable::new(p.rope.base, config.head_dim, &factors, config.context));
                    ropes.len() - 1
                }
            };
            layers.push(Layer {
                attn_norm: load.vector(&p.attn_norm)?,
                wq: load.matrix(&p.q.weight)?,
                wk: load.matrix(&p.k.weight)?,
                wv: load.matrix(&p.v.weight)?,
                bq: load.optional(&p.q.bias)?,
                bk: load.optional(&p.k.bias)?,
                bv: load.optional(&p.v.bias)?,
                q_norm: load.optional(&p.q_norm)?,
                k_norm: load.optional(&p.k_norm)?,
                rope,
                pairs: p.rope.pairs,
                window: p.window,
                wo: load.matrix(&p.attn_output)?,
                post_attention_norm: load.optional(&p.post_attention_norm)?,
                ffn_norm: load.vector(&p.ffn_norm)?,
                gate: load.matrix(&p.gate)?,
                up: load.matrix(&p.up)?,
                down: load.matrix(&p.down)?,
                activation: p.activation,
                post_ffn_norm: load.optional(&p.post_ffn_norm)?,
                cache: KvLayer::with_capacity(config.kv_shape(), config.context),
            });
        }
        let embeddings = load.matrix(&plan.embeddings)?;
        let output = match plan.output == plan.embeddings {
            true => None,
            false => Some(load.matrix(&plan.output)?),
        };
        let norm = load.vector(&plan.output_norm)?;
        let ffn = layers.iter().map(|l| l.gate.rows).max().unwrap_or(0);
        let rebuilt = load.rebuilt;
        let pool = Pool::new(threads).map_err(pool_err)?;
        let kernels = Kernels::configured().map_err(EngineError::Model)?;
        let mut model = Self {
            config,
            embedding_scale: plan.embedding_scale,
            plan,
            embeddings,
            layers,
            norm,
            output,
            ffn,
            ropes,
            cached: 0,
            buffers: Buffers::default(),
            pool,
            kernels,
            // Both set below, from the model's matrices.
            forms: Forms::default(),
            weights_from: WeightsFrom::Gguf(String::new()),
        };
        model.forms = Forms::of(model.multiplied());
        let named = model.named_matrices();
        let from = if named.is_empty() {
            WeightsFrom::Gguf("f32 rows alone, read from the GGUF (nothing to store)".into())
        } else if !rebuilt {
            // Counted, not assumed: a matrix copied instead of mapped is not in the figure.
            WeightsFrom::Mapped { bytes: named.iter().filter(|(_, m)| m.is_mapped()).map(|(_, m)| m.bytes()).sum() }
        } else {
            // A cache: when it cannot be written, the next start rebuilds again (and says so).
            let saved = stored.map_or(Ok(()), |s| weights::save(&s.file, &s.identity, &named));
            WeightsFrom::Gguf(match saved {
                Ok(()) => why,
                Err(e) => format!("{why}; not stored: {e}"),
            })
        };
        model.weights_from = from;
        Ok(model)
    }

    /// Every matrix a token is multiplied by: the layers' and the output's (the embeddings when tied).
    fn multiplied(&self) -> impl Iterator<Item = &Matrix> {
        let layers = self.layers.iter().flat_map(|l| [&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down]);
        layers.chain([self.output.as_ref().unwrap_or(&self.embeddings)])
    }

    fn matrix_bytes(&self) -> usize {
        self.multiplied().map(Matrix::bytes).sum()
    }

    fn forward_inner(&mut self, tokens: &[u32], logits: &mut Vec<f32>) -> Result<(), EngineError> {
        let Self {
            config: c,
            embeddings,
            embedding_scale,
            layers,
            norm,
            output,
            ffn,
            ropes,
            cached,
            buffers: b,
            pool,
            kernels,
            forms,
            ..
        } = self;
        let (seq, start, kernels, threads) = (tokens.len(), *cached, *kernels, pool.threads());
        let (dim, q_dim, kv_dim, hd, ffn) = (c.dim, c.q_dim(), c.kv_dim(), c.head_dim, *ffn);
        let (eps, group, attention_scale) = (c.eps, c.heads / c.kv_heads, c.attention_scale);
        let x = grow(&mut b.x, seq * dim);
        let h = grow(&mut b.h, seq * dim);
        let q = grow(&mut b.q, seq * q_dim);
        let k = grow(&mut b.k, seq * kv_dim);
        let v = grow(&mut b.v, seq * kv_dim);
        let y = grow(&mut b.y, seq * q_dim);
        let gate = grow(&mut b.gate, seq * ffn);
        let up = grow(&mut b.up, seq * ffn);
        let per_thread = scratch_len(group, hd, start + seq);
        // A lone token's attention is split finer than its key/value heads when they are too few to
        // share out evenly (generation: 3 heads on 2 threads would leave one thread idle a third of it).
        let split_heads = seq == 1 && threads > 1 && c.kv_heads < 4 * threads;
        let scratch_needed = if split_heads {
            split_scratch_len(c.kv_shape(), group, start + seq, threads)
        } else {
            threads * per_thread
        };
        let scratch = grow(&mut b.scores, scratch_needed);
        let widest = seq * dim.max(q_dim).max(ffn);
        let quantized = Quantized::new(grow(&mut b.acts, widest / BLOCK), grow(&mut b.supers, widest / SUPER), forms);
        let qz = &quantized;
        for (t, &token) in tokens.iter().enumerate() {
            if token as usize >= embeddings.rows {
                return Err(EngineError::Model(format!(
                    "token {token} is outside the model's vocabulary of {}",
                    embeddings.rows
                )));
            }
            let row = &mut x[t * dim..(t + 1) * dim];
            embeddings.dequantize_row(token as usize, row);
            if let Some(by) = embedding_scale {
                scale(row, *by);
            }
        }
        for (i, layer) in layers.iter_mut().enumerate() {
            {
                // x += the last layer's output (none before the first), then x's norm, quantized.
                let (xo, ho) = (Disjoint::new(&mut *x), Disjoint::new(&mut *h));
                per_token(pool, seq, &|t| {
                    let rows = t * dim..(t + 1) * dim;
                    // SAFETY: token t's rows of each buffer are this call's alone.
                    let (x, h) = unsafe { (xo.slice(rows.clone()), ho.slice(rows)) };
                    if i > 0 {
                        add(x, h);
                    }
                    rms_norm_rows(x, &layer.attn_norm, eps, h, kernels);
                    // SAFETY: as above.
                    unsafe { qz.token(t, h, kernels) };
                })?;
            }
            let (qo, ko, vo) = (Disjoint::new(&mut *q), Disjoint::new(&mut *k), Disjoint::new(&mut *v));
            // SAFETY (each `rows` below): no thread writes the activations while the matrices read them.
            let normed = unsafe { qz.rows(&h[..seq * dim], seq) };
            project(pool, &[(&layer.wq, &qo), (&layer.wk, &ko), (&layer.wv, &vo)], normed, seq, kernels)?;
            let rope = &ropes[layer.rope];
            per_token(pool, seq, &|t| {
                // SAFETY: token t's rows are this call's alone.
                let (q, k, v) = unsafe {
                    (
                        qo.slice(t * q_dim..(t + 1) * q_dim),
                        ko.slice(t * kv_dim..(t + 1) * kv_dim),
                        vo.slice(t * kv_dim..(t + 1) * kv_dim),
                    )
                };
                for (values, bias) in [(&mut *q, &layer.bq), (&mut *k, &layer.bk), (&mut *v, &layer.bv)] {
                    if let Some(bias) = bias {
                        add(values, bias);
                    }
                }
                for (values, weights) in [(&mut *q, &layer.q_norm), (&mut *k, &layer.k_norm)] {
                    if let Some(weights) = weights {
                        rms_norm_heads(values, weights, eps, kernels);
                    }
                }
                rope.rotate(q, start + t, layer.pairs);
                rope.rotate(k, start + t, layer.pairs);
            })?;
            let shape = c.kv_shape();
            layer.cache.grow(shape, start + seq);
            for t in 0..seq {
                layer.cache.store(shape, start + t, &k[t * kv_dim..(t + 1) * kv_dim], &v[t * kv_dim..(t + 1) * kv_dim]);
            }
            // The positions token t sees: all up to its own, or the window's last ones.
            let window = layer.window;
            let seen = move |t: usize| {
                let positions = start + t + 1;
                (window.map_or(0, |w| positions.saturating_sub(w)), positions)
            };
            if split_heads {
                let (first, positions) = seen(0);
                let token = Token { cache: &layer.cache, shape, group, first, positions, scale: attention_scale };
                attend_split(pool, kernels, &token, &q[..q_dim], scratch, &mut y[..q_dim])?;
                // SAFETY: one thread.
                unsafe { qz.token(0, &y[..q_dim], kernels) };
            } else {
                let (cache, q) = (&layer.cache, &*q);
                let (yo, so) = (Disjoint::new(&mut *y), Disjoint::new(&mut *scratch));
                // One unit: one token's query heads that share a key/value head.
                pool.split(seq * c.kv_heads, 2, &|thread, units| {
                    // SAFETY: each thread has its own scratch, and each unit its own heads of `y`.
                    let scratch = unsafe { so.slice(thread * per_thread..(thread + 1) * per_thread) };
                    for unit in units {
                        let (t, kv) = (unit / c.kv_heads, unit % c.kv_heads);
                        let heads = t * q_dim + kv * group * hd..t * q_dim + (kv + 1) * group * hd;
                        // SAFETY: unit (t, kv) writes only its own heads of token t.
                        let out = unsafe { yo.slice(heads.clone()) };
                        attend(kernels, cache, shape, kv, &q[heads], seen(t), attention_scale, scratch, out);
                    }
                })
                .map_err(pool_err)?;
                per_token(pool, seq, &|t| {
                    // SAFETY: token t's rows are this call's alone.
                    unsafe { qz.token(t, yo.slice(t * q_dim..(t + 1) * q_dim), kernels) };
                })?;
            }
            let attended = unsafe { qz.rows(&y[..seq * q_dim], seq) };
            project(pool, &[(&layer.wo, &Disjoint::new(&mut *h))], attended, seq, kernels)?;
            {
                let (xo, ho) = (Disjoint::new(&mut *x), Disjoint::new(&mut *h));
                per_token(pool, seq, &|t| {
                    let rows = t * dim..(t + 1) * dim;
                    // SAFETY: token t's rows of each buffer are this call's alone.
                    let (x, h) = unsafe { (xo.slice(rows.clone()), ho.slice(rows)) };
                    if let Some(weights) = &layer.post_attention_norm {
                        rms_norm_heads(h, weights, eps, kernels);
                    }
                    add(x, h);
                    rms_norm_rows(x, &layer.ffn_norm, eps, h, kernels);
                    // SAFETY: as above.
                    unsafe { qz.token(t, h, kernels) };
                })?;
            }
            let ffn = layer.gate.rows;
            {
                let (go, uo) = (Disjoint::new(&mut *gate), Disjoint::new(&mut *up));
                let (wg, wu, activation) = (&layer.gate, &layer.up, layer.activation);
                {
                    let normed = unsafe { qz.rows(&h[..seq * dim], seq) };
                    let group_bytes = (wg.bytes() + wu.bytes()) / groups(wg).max(1);
                    let smallest = smallest_chunk(pool, groups(wg), group_bytes, seq);
                    pool.split_in(groups(wg), 2, smallest, &|_, range| {
                        let rows = ROWS * range.start..(ROWS * range.end).min(ffn);
                        for (w, o) in [(wu, &uo), (wg, &go)] {
                            matmul_groups(w, normed, seq, range.clone(), kernels, &mut |t, g, sums| {
                                let at = t * ffn + ROWS * g;
                                // SAFETY: each thread writes the rows of its own groups.
                                let out = unsafe { o.slice(at..at + ROWS.min(ffn - ROWS * g)) };
                                out.copy_from_slice(&sums[..out.len()]);
                            });
                        }
                        for t in 0..seq {
                            let rows = t * ffn + rows.start..t * ffn + rows.end;
                            // SAFETY: these rows are this thread's, written just above.
                            let (gate, up) = unsafe { (go.slice(rows.clone()), uo.slice(rows)) };
                            gated(activation, gate, up, kernels);
                        }
                    })
                    .map_err(pool_err)?;
                }
                per_token(pool, seq, &|t| {
                    // SAFETY: token t's rows are this call's alone.
                    unsafe { qz.token(t, go.slice(t * ffn..(t + 1) * ffn), kernels) };
                })?;
            }
            let activated = unsafe { qz.rows(&gate[..seq * ffn], seq) };
            project(pool, &[(&layer.down, &Disjoint::new(&mut *h))], activated, seq, kernels)?;
            if let Some(weights) = &layer.post_ffn_norm {
                let ho = Disjoint::new(&mut *h);
                per_token(pool, seq, &|t| {
                    // SAFETY: token t's rows are this call's alone.
                    rms_norm_heads(unsafe { ho.slice(t * dim..(t + 1) * dim) }, weights, eps, kernels);
                })?;
            }
        }
        add(x, h);
        let last = &x[(seq - 1) * dim..];
        rms_norm_rows(last, norm, eps, &mut h[..dim], kernels);
        // SAFETY: one thread.
        unsafe { qz.token(0, &h[..dim], kernels) };
        let output = output.as_ref().unwrap_or(embeddings);
        // Every row is written below: a buffer of the right length is not cleared first.
        logits.resize(output.rows, 0.0);
        let normed = unsafe { qz.rows(&h[..dim], 1) };
        project(pool, &[(output, &Disjoint::new(logits))], normed, 1, kernels)
    }
}

impl Transformer for Model {
    fn config(&self) -> &Config {
        &self.config
    }

    fn weight_bytes(&self) -> usize {
        self.matrix_bytes()
    }

    fn weights_from(&self) -> WeightsFrom {
        self.weights_from.clone()
    }

    fn forward_into(&mut self, tokens: &[u32], logits: &mut Vec<f32>) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::Model("nothing to run: no tokens".into()));
        }
        if self.cached + tokens.len() > self.config.context {
            return Err(EngineError::Context { needed: self.cached + tokens.len(), context: self.config.context });
        }
        self.forward_inner(tokens, logits)?;
        self.cached += tokens.len();
        Ok(())
    }

    fn truncate_cache(&mut self, len: usize) {
        self.cached = self.cached.min(len);
    }

    fn threads(&self) -> usize {
        self.pool.threads()
    }

    fn set_threads(&mut self, threads: usize) -> Result<(), EngineError> {
        if threads != self.pool.threads() {
            self.pool = Pool::new(threads).map_err(pool_err)?;
        }
        Ok(())
    }
}
