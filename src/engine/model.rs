//! The llama-architecture transformer of a GGUF file on the CPU: our own forward pass over plain f32
//! buffers, with the weights kept in their 4-bit or 8-bit blocks and multiplied by [`kernels`].
//!
//! Nothing is allocated per token once the buffers have grown to the longest batch. The key/value cache
//! grows with the positions used (up to the context) and can be cut back to any length, so a retry
//! turn reuses the prompt prefix it shares with the turn before (prompt caching). [`super::reference`]
//! is the same model on candle's own quantized matmuls: the speed baseline and the tests' reference.
//!
//! [`kernels`]: super::kernels

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;

use super::arch::{MissingOutput, RopePairs};
use super::attention::{attend, scratch_len, KvLayer};
use super::attention_split::{attend_split, split_scratch_len, Token};
use super::kernels::{groups, matmul_groups, Kernels};
use super::math::silu_mul;
use super::quant::{vector, ActBlock, Matrix, BLOCK, ROWS};
use super::threads::{Disjoint, Pool, PoolError};
use super::weights::{self, Identity};
use super::EngineError;

mod config;
mod rows;

pub use config::Config;
pub use rows::argmax;
use rows::{add, quantize_rows, rms_norm_rows, rope_tables};

/// Where a GGUF's interleaved weights are kept on disk, and the GGUF's identity.
#[derive(Clone, Debug)]
pub struct StoredWeights {
    pub file: std::path::PathBuf,
    pub identity: Identity,
}

/// How the weights were loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightsFrom {
    /// Read back from the stored file.
    Stored,
    /// Rebuilt from the GGUF (no stored file asked for, or none usable: why), and stored when asked.
    Gguf(String),
}

/// Tensor `name` from the stored weights, else read from the GGUF (`rebuilt` set).
fn matrix_from<R: Read + Seek>(
    stored: &mut std::collections::HashMap<String, Matrix>,
    content: &Content,
    reader: &mut R,
    name: &str,
    scratch: &mut Vec<u8>,
    rebuilt: &mut bool,
) -> Result<Matrix, EngineError> {
    match stored.remove(name) {
        Some(m) => Ok(m),
        None => {
            *rebuilt = true;
            Matrix::read(content, reader, name, scratch)
        }
    }
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
    /// Runs `tokens` at the positions after the cache and returns the logits after the last one.
    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError>;
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
        Backend::Native => Box::new(Llama::load(content, reader, context, threads, stored)?),
        Backend::Candle => Box::new(super::reference::Llama::load(content, reader, context, true)?),
        Backend::CandleAsStored => Box::new(super::reference::Llama::load(content, reader, context, false)?),
    })
}

struct Layer {
    attn_norm: Vec<f32>,
    wq: Matrix,
    wk: Matrix,
    wv: Matrix,
    wo: Matrix,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
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
}

fn grow<T: Default + Clone>(buffer: &mut Vec<T>, len: usize) -> &mut [T] {
    if buffer.len() < len {
        buffer.resize(len, T::default());
    }
    &mut buffer[..len]
}

/// The model with its key/value cache.
pub struct Llama {
    pub config: Config,
    embeddings: Matrix,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None`: the output projection is the embedding table (tied embeddings).
    output: Option<Matrix>,
    ffn: usize,
    /// `context × head_dim/2` rotary cosines and sines.
    cos: Vec<f32>,
    sin: Vec<f32>,
    cached: usize,
    buffers: Buffers,
    pool: Pool,
    kernels: Kernels,
    weights_from: WeightsFrom,
}

pub(super) fn pool_err(error: PoolError) -> EngineError {
    EngineError::Model(error.0)
}

impl Llama {
    pub fn load<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        context: usize,
        threads: usize,
        stored: Option<&StoredWeights>,
    ) -> Result<Self, EngineError> {
        let (mut from_disk, mut why) = match stored {
            Some(s) => match weights::load(&s.file, &s.identity) {
                Ok(m) => (m, String::new()),
                Err(why) => (Default::default(), why),
            },
            None => (Default::default(), "no stored weights asked for".to_string()),
        };
        let mut rebuilt = false;
        let mut config = Config::from_gguf(content)?;
        config.context = context.min(config.context).max(1);
        config.read_rope_factors(content, reader)?;
        let (dim, kv_dim) = (config.dim, config.kv_dim());
        let mut layers = Vec::with_capacity(config.layers);
        let mut ffn = 0;
        let mut scratch = Vec::new();
        let (arch, names) = (config.arch, &config.arch.layer);
        for i in 0..config.layers {
            let mut matrix = |name: &str, rows: Option<usize>, cols: usize| {
                let full = arch.layer_tensor(i, name);
                let m = matrix_from(&mut from_disk, content, reader, &full, &mut scratch, &mut rebuilt)?;
                match rows {
                    Some(rows) if (m.rows, m.cols) != (rows, cols) => Err(shape_err(&full, &m, rows, cols)),
                    None if m.cols != cols => Err(shape_err(&full, &m, m.rows, cols)),
                    _ => Ok(m),
                }
            };
            let (wq, wk, wv, wo) = (
                matrix(names.q, Some(dim), dim)?,
                matrix(names.k, Some(kv_dim), dim)?,
                matrix(names.v, Some(kv_dim), dim)?,
                matrix(names.attn_output, Some(dim), dim)?,
            );
            let gate = matrix(names.gate, None, dim)?;
            ffn = gate.rows;
            let (up, down) = (matrix(names.up, Some(ffn), dim)?, matrix(names.down, Some(dim), ffn)?);
            let attn_norm = norm_vector(content, reader, &arch.layer_tensor(i, names.attn_norm), dim)?;
            let ffn_norm = norm_vector(content, reader, &arch.layer_tensor(i, names.ffn_norm), dim)?;
            let cache = KvLayer::with_capacity(config.kv_shape(), config.context);
            layers.push(Layer { attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down, cache });
        }
        let embeddings = matrix_from(&mut from_disk, content, reader, arch.embeddings, &mut scratch, &mut rebuilt)?;
        if embeddings.cols != dim {
            return Err(shape_err(arch.embeddings, &embeddings, embeddings.rows, dim));
        }
        let output = match (content.tensor_infos.contains_key(arch.output), &arch.missing_output) {
            (true, _) => Some(matrix_from(&mut from_disk, content, reader, arch.output, &mut scratch, &mut rebuilt)?),
            (false, MissingOutput::Tied) => None,
            (false, MissingOutput::Refused) => {
                return Err(EngineError::Model(format!("the GGUF has no tensor `{}`", arch.output)))
            }
        };
        let norm = norm_vector(content, reader, arch.output_norm, dim)?;
        let (cos, sin) = rope_tables(&config);
        let pool = Pool::new(threads).map_err(pool_err)?;
        let kernels = Kernels::detect();
        if !rebuilt {
            why.clear();
        }
        let mut model = Self {
            config,
            embeddings,
            layers,
            norm,
            output,
            ffn,
            cos,
            sin,
            cached: 0,
            buffers: Buffers::default(),
            pool,
            kernels,
            weights_from: WeightsFrom::Stored,
        };
        if rebuilt {
            if let Some(s) = stored {
                // A cache: when it cannot be written, the next start rebuilds again (and says so).
                let named = model.named_matrices();
                let named: Vec<(&str, &Matrix)> = named.iter().map(|(n, m)| (n.as_str(), *m)).collect();
                if let Err(e) = weights::save(&s.file, &s.identity, &named) {
                    why = format!("{why}; not stored: {e}");
                }
            }
            model.weights_from = WeightsFrom::Gguf(why);
        }
        Ok(model)
    }

    /// Every weight matrix with its tensor name.
    fn named_matrices(&self) -> Vec<(String, &Matrix)> {
        let mut out: Vec<(String, &Matrix)> = Vec::new();
        let (arch, names) = (self.config.arch, &self.config.arch.layer);
        for (i, l) in self.layers.iter().enumerate() {
            for (m, name) in [
                (&l.wq, names.q),
                (&l.wk, names.k),
                (&l.wv, names.v),
                (&l.wo, names.attn_output),
                (&l.gate, names.gate),
                (&l.up, names.up),
                (&l.down, names.down),
            ] {
                out.push((arch.layer_tensor(i, name), m));
            }
        }
        out.push((arch.embeddings.into(), &self.embeddings));
        if let Some(output) = &self.output {
            out.push((arch.output.into(), output));
        }
        out
    }

    fn matrix_bytes(&self) -> usize {
        let layers: usize = self
            .layers
            .iter()
            .map(|l| [&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down].iter().map(|m| m.bytes()).sum::<usize>())
            .sum();
        layers + self.output.as_ref().unwrap_or(&self.embeddings).bytes()
    }

    fn forward_inner(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        let Self {
            config: c, embeddings, layers, norm, output, ffn, cos, sin, cached, buffers: b, pool, kernels, ..
        } = self;
        let (seq, start, kernels, threads) = (tokens.len(), *cached, *kernels, pool.threads());
        let (dim, kv_dim, hd, ffn) = (c.dim, c.kv_dim(), c.head_dim, *ffn);
        let (eps, group, scale) = (c.eps as f32, c.heads / c.kv_heads, 1.0 / (hd as f32).sqrt());
        let x = grow(&mut b.x, seq * dim);
        let h = grow(&mut b.h, seq * dim);
        let q = grow(&mut b.q, seq * dim);
        let k = grow(&mut b.k, seq * kv_dim);
        let v = grow(&mut b.v, seq * kv_dim);
        let y = grow(&mut b.y, seq * dim);
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
        let acts = grow(&mut b.acts, seq * dim.max(ffn) / BLOCK);
        for (t, &token) in tokens.iter().enumerate() {
            if token as usize >= embeddings.rows {
                return Err(EngineError::Model(format!(
                    "token {token} is outside the model's vocabulary of {}",
                    embeddings.rows
                )));
            }
            embeddings.dequantize_row(token as usize, &mut x[t * dim..(t + 1) * dim]);
        }
        let half = hd / 2;
        // The family's pairs: adjacent dimensions (the only ones a family here uses).
        let RopePairs::Adjacent = c.arch.rope.pairs;
        let rope = |values: &mut [f32], heads: usize, position: usize| {
            let (cos, sin) = (&cos[position * half..][..half], &sin[position * half..][..half]);
            for head in values.chunks_exact_mut(hd).take(heads) {
                for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                    let (a, b) = (pair[0], pair[1]);
                    pair[0] = a * cos[i] - b * sin[i];
                    pair[1] = a * sin[i] + b * cos[i];
                }
            }
        };
        let (per_dim, per_ffn) = (dim / BLOCK, ffn / BLOCK);
        for (i, layer) in layers.iter_mut().enumerate() {
            {
                // x += the last layer's output (none before the first), then x's norm, quantized.
                let (xo, ho, ao) = (Disjoint::new(&mut *x), Disjoint::new(&mut *h), Disjoint::new(&mut *acts));
                per_token(pool, seq, &|t| {
                    let rows = t * dim..(t + 1) * dim;
                    // SAFETY: token t's rows of each buffer are this call's alone.
                    let (x, h, a) =
                        unsafe { (xo.slice(rows.clone()), ho.slice(rows), ao.slice(t * per_dim..(t + 1) * per_dim)) };
                    if i > 0 {
                        add(x, h);
                    }
                    rms_norm_rows(x, &layer.attn_norm, eps, h, kernels);
                    kernels.quantize(h, a);
                })?;
            }
            let (qo, ko, vo) = (Disjoint::new(&mut *q), Disjoint::new(&mut *k), Disjoint::new(&mut *v));
            project(pool, &[(&layer.wq, &qo), (&layer.wk, &ko), (&layer.wv, &vo)], acts, seq, kernels)?;
            per_token(pool, seq, &|t| {
                // SAFETY: token t's rows are this call's alone.
                let (q, k) = unsafe { (qo.slice(t * dim..(t + 1) * dim), ko.slice(t * kv_dim..(t + 1) * kv_dim)) };
                rope(q, c.heads, start + t);
                rope(k, c.kv_heads, start + t);
            })?;
            let shape = c.kv_shape();
            layer.cache.grow(shape, start + seq);
            for t in 0..seq {
                layer.cache.store(shape, start + t, &k[t * kv_dim..(t + 1) * kv_dim], &v[t * kv_dim..(t + 1) * kv_dim]);
            }
            if split_heads {
                let token = Token { cache: &layer.cache, shape, group, positions: start + 1, scale };
                attend_split(pool, kernels, &token, &q[..dim], scratch, &mut y[..dim])?;
                kernels.quantize(&y[..dim], &mut acts[..per_dim]);
            } else {
                let (cache, q) = (&layer.cache, &*q);
                let (yo, so, ao) = (Disjoint::new(&mut *y), Disjoint::new(&mut *scratch), Disjoint::new(&mut *acts));
                // One unit: one token's query heads that share a key/value head.
                pool.split(seq * c.kv_heads, 2, &|thread, units| {
                    // SAFETY: each thread has its own scratch, and each unit its own heads of `y`.
                    let scratch = unsafe { so.slice(thread * per_thread..(thread + 1) * per_thread) };
                    for unit in units {
                        let (t, kv) = (unit / c.kv_heads, unit % c.kv_heads);
                        let heads = t * dim + kv * group * hd..t * dim + (kv + 1) * group * hd;
                        // SAFETY: unit (t, kv) writes only its own heads of token t.
                        let out = unsafe { yo.slice(heads.clone()) };
                        attend(kernels, cache, shape, kv, &q[heads], start + t + 1, scale, scratch, out);
                    }
                })
                .map_err(pool_err)?;
                per_token(pool, seq, &|t| {
                    // SAFETY: token t's rows are this call's alone.
                    let (y, a) =
                        unsafe { (yo.slice(t * dim..(t + 1) * dim), ao.slice(t * per_dim..(t + 1) * per_dim)) };
                    kernels.quantize(y, a);
                })?;
            }
            project(pool, &[(&layer.wo, &Disjoint::new(&mut *h))], acts, seq, kernels)?;
            {
                let (xo, ho, ao) = (Disjoint::new(&mut *x), Disjoint::new(&mut *h), Disjoint::new(&mut *acts));
                per_token(pool, seq, &|t| {
                    let rows = t * dim..(t + 1) * dim;
                    // SAFETY: token t's rows of each buffer are this call's alone.
                    let (x, h, a) =
                        unsafe { (xo.slice(rows.clone()), ho.slice(rows), ao.slice(t * per_dim..(t + 1) * per_dim)) };
                    add(x, h);
                    rms_norm_rows(x, &layer.ffn_norm, eps, h, kernels);
                    kernels.quantize(h, a);
                })?;
            }
            {
                let (go, uo, ao) = (Disjoint::new(&mut *gate), Disjoint::new(&mut *up), Disjoint::new(&mut *acts));
                let (wg, wu) = (&layer.gate, &layer.up);
                {
                    // SAFETY: read only during this split.
                    let acts = unsafe { ao.slice(0..seq * per_dim) };
                    pool.split(groups(wg), 2, &|_, range| {
                        let rows = ROWS * range.start..(ROWS * range.end).min(ffn);
                        for (w, o) in [(wu, &uo), (wg, &go)] {
                            matmul_groups(w, acts, seq, range.clone(), kernels, &mut |t, g, sums| {
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
                            silu_mul(gate, up, kernels);
                        }
                    })
                    .map_err(pool_err)?;
                }
                per_token(pool, seq, &|t| {
                    // SAFETY: token t's rows are this call's alone.
                    let (g, a) =
                        unsafe { (go.slice(t * ffn..(t + 1) * ffn), ao.slice(t * per_ffn..(t + 1) * per_ffn)) };
                    kernels.quantize(g, a);
                })?;
            }
            project(pool, &[(&layer.down, &Disjoint::new(&mut *h))], acts, seq, kernels)?;
        }
        add(x, h);
        let last = &x[(seq - 1) * dim..];
        rms_norm_rows(last, norm, eps, &mut h[..dim], kernels);
        quantize_rows(&h[..dim], dim, acts, kernels);
        let output = output.as_ref().unwrap_or(embeddings);
        let mut logits = vec![0f32; output.rows];
        project(pool, &[(output, &Disjoint::new(&mut logits))], acts, 1, kernels)?;
        Ok(logits)
    }
}

/// Runs `f(t)` for each of `seq` tokens, split across the pool (the tokens' rows are independent).
fn per_token(pool: &mut Pool, seq: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), EngineError> {
    pool.split(seq, 2, &|_, tokens| tokens.for_each(f)).map_err(pool_err)
}

/// Each matrix times the `tokens` activation rows of `acts`, into its output (`tokens × rows`, token
/// after token), the row groups of all of them split across the pool's threads.
fn project(
    pool: &mut Pool,
    matrices: &[(&Matrix, &Disjoint<'_, f32>)],
    acts: &[ActBlock],
    tokens: usize,
    kernels: Kernels,
) -> Result<(), EngineError> {
    let units: usize = matrices.iter().map(|(m, _)| groups(m)).sum();
    pool.split(units, 2, &|_, range| {
        let mut first = 0;
        for (m, out) in matrices {
            let mine = range.start.max(first)..range.end.min(first + groups(m));
            if !mine.is_empty() {
                let (rows, mine) = (m.rows, mine.start - first..mine.end - first);
                matmul_groups(m, acts, tokens, mine, kernels, &mut |t, g, sums| {
                    let at = t * rows + ROWS * g;
                    // SAFETY: each thread writes the rows of its own groups.
                    let out = unsafe { out.slice(at..at + ROWS.min(rows - ROWS * g)) };
                    out.copy_from_slice(&sums[..out.len()]);
                });
            }
            first += groups(m);
        }
    })
    .map_err(pool_err)
}

impl Transformer for Llama {
    fn config(&self) -> &Config {
        &self.config
    }

    fn weight_bytes(&self) -> usize {
        self.matrix_bytes()
    }

    fn weights_from(&self) -> WeightsFrom {
        self.weights_from.clone()
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::Model("nothing to run: no tokens".into()));
        }
        if self.cached + tokens.len() > self.config.context {
            return Err(EngineError::Context { needed: self.cached + tokens.len(), context: self.config.context });
        }
        let logits = self.forward_inner(tokens)?;
        self.cached += tokens.len();
        Ok(logits)
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

fn shape_err(name: &str, m: &Matrix, rows: usize, cols: usize) -> EngineError {
    EngineError::Model(format!("tensor {name} is {}×{}, expected {rows}×{cols}", m.rows, m.cols))
}

fn norm_vector<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
    dim: usize,
) -> Result<Vec<f32>, EngineError> {
    let values = vector(content, reader, name)?;
    if values.len() != dim {
        return Err(EngineError::Model(format!("tensor {name} has {} values, expected {dim}", values.len())));
    }
    Ok(values)
}
