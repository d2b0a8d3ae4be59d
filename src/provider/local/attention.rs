//! Attention over a compact key/value cache: keys and values stored as f16 (half the bytes of f32,
//! and exact to convert back), the keys in tiles of sixteen positions laid out so that sixteen
//! positions' scores are sixteen vector lanes, the values position after position.
//!
//! One call attends one token's query heads that share a key/value head. The numbers are made by
//! one fixed arithmetic — `q·scale`, per position four `fma` chains over the dimensions (`d mod 4`)
//! added as `(c0 + c1) + (c2 + c3)`, `e^(s − max)` by [`super::math::exp`], the weights summed in
//! sixteen lanes (position `p` in lane `p mod 16`), then per dimension one `fma` chain over the
//! positions times `1/Σ` — on every path (AVX-512, AVX2, portable), so they give the same bits, and a
//! token's result depends only on the cache up to its position, never on its batch or thread.

use half::f16;

use super::kernels::{Kernels, Level};
use super::math::{exp, sum16};

/// Positions per key tile.
pub const TILE: usize = 16;

/// How many key/value heads, of how many dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvShape {
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl KvShape {
    fn kv_dim(self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// Values of one key tile (every head).
    fn tile_len(self) -> usize {
        TILE * self.kv_dim()
    }

    /// Bytes one cached position takes (key and value).
    pub fn bytes_per_position(self) -> usize {
        2 * self.kv_dim() * std::mem::size_of::<f16>()
    }
}

/// One layer's cached keys and values.
#[derive(Clone, Debug, Default)]
pub struct KvLayer {
    /// Tile after tile; in tile `p / 16`, head `h`'s dimension `d` of position `p` at
    /// `(h·head_dim + d)·16 + p mod 16`.
    keys: Vec<f16>,
    /// Position after position, `kv_heads × head_dim` values each.
    values: Vec<f16>,
}

impl KvLayer {
    /// An empty cache with address space for `positions` (pages are touched only as they are used).
    pub fn with_capacity(shape: KvShape, positions: usize) -> Self {
        Self {
            keys: Vec::with_capacity(positions.div_ceil(TILE) * shape.tile_len()),
            values: Vec::with_capacity(positions * shape.kv_dim()),
        }
    }

    /// Makes room for `positions` positions.
    pub fn grow(&mut self, shape: KvShape, positions: usize) {
        let keys = positions.div_ceil(TILE) * shape.tile_len();
        if self.keys.len() < keys {
            self.keys.resize(keys, f16::ZERO);
        }
        if self.values.len() < positions * shape.kv_dim() {
            self.values.resize(positions * shape.kv_dim(), f16::ZERO);
        }
    }

    /// Stores position `p`'s key and value (`kv_heads × head_dim` values each; room made by [`Self::grow`]).
    pub fn store(&mut self, shape: KvShape, p: usize, key: &[f32], value: &[f32]) {
        let kv_dim = shape.kv_dim();
        let tile = &mut self.keys[(p / TILE) * shape.tile_len()..][..shape.tile_len()];
        for (i, k) in key[..kv_dim].iter().enumerate() {
            tile[i * TILE + p % TILE] = f16::from_f32(*k);
        }
        for (slot, v) in self.values[p * kv_dim..][..kv_dim].iter_mut().zip(value) {
            *slot = f16::from_f32(*v);
        }
    }
}

/// The scratch one [`attend`] call needs: the scaled queries and every head's scores.
pub fn scratch_len(group: usize, head_dim: usize, positions: usize) -> usize {
    group * (head_dim + positions.div_ceil(TILE) * TILE)
}

/// The `group` query heads in `queries` (`group × head_dim`) that share key/value head `kv`, attending
/// the first `positions` cached positions, into `out` (`group × head_dim`).
#[allow(clippy::too_many_arguments)]
pub fn attend(
    kernels: Kernels,
    cache: &KvLayer,
    shape: KvShape,
    kv: usize,
    queries: &[f32],
    positions: usize,
    scale: f32,
    scratch: &mut [f32],
    out: &mut [f32],
) {
    let (hd, group) = (shape.head_dim, queries.len() / shape.head_dim);
    assert!(kv < shape.kv_heads && positions > 0, "key/value head {kv} of {}, {positions} positions", shape.kv_heads);
    assert!(
        cache.keys.len() >= positions.div_ceil(TILE) * shape.tile_len()
            && cache.values.len() >= positions * shape.kv_dim(),
        "{positions} positions are not all in the cache"
    );
    let (q, scores) = scratch[..scratch_len(group, hd, positions)].split_at_mut(group * hd);
    for (scaled, q) in q.iter_mut().zip(queries) {
        *scaled = q * scale;
    }
    let job = Job { keys: &cache.keys, values: &cache.values, shape, kv, positions };
    let out = &mut out[..group * hd];
    #[cfg(target_arch = "x86_64")]
    match kernels.level() {
        // SAFETY: `Kernels` at a level is made only on a CPU that runs it (`Kernels::at`).
        Level::Avx512 if unsafe { avx512::attend(&job, q, scores, out) } => return,
        // SAFETY: as above.
        Level::Avx2 | Level::Avx512 => return unsafe { avx2_lanes(&job, q, scores, out) },
        Level::Portable => {}
    }
    let _ = kernels;
    job.lanes(q, scores, out)
}

/// What one call reads.
struct Job<'a> {
    keys: &'a [f16],
    values: &'a [f16],
    shape: KvShape,
    kv: usize,
    positions: usize,
}

/// An f16 as f32, exactly, in operations that vectorize (subnormals by one multiply, which is exact).
#[inline(always)]
fn widen(h: f16) -> f32 {
    let bits = u32::from(h.to_bits());
    let magnitude = bits & 0x7FFF;
    let value = if magnitude >= 0x7C00 {
        f32::from_bits((magnitude << 13) | 0x7F80_0000)
    } else {
        // 2^112 moves the f16 exponent bias (15) to the f32 one (127).
        f32::from_bits(magnitude << 13) * f32::from_bits(0x7780_0000)
    };
    f32::from_bits(value.to_bits() | ((bits & 0x8000) << 16))
}

impl Job<'_> {
    /// The reference arithmetic (compiled as is for other CPUs, and for AVX2 by [`avx2_lanes`]).
    #[inline(always)]
    fn lanes(&self, q: &[f32], scores: &mut [f32], out: &mut [f32]) {
        let (hd, n) = (self.shape.head_dim, self.positions);
        let (tiles, tile_len, kv_heads) = (n.div_ceil(TILE), self.shape.tile_len(), self.shape.kv_heads);
        for ((q, scores), out) in
            q.chunks_exact(hd).zip(scores.chunks_exact_mut(tiles * TILE)).zip(out.chunks_exact_mut(hd))
        {
            for (tile, scores) in scores.chunks_exact_mut(TILE).enumerate() {
                let keys = &self.keys[tile * tile_len + self.kv * hd * TILE..][..hd * TILE];
                let mut chains = [[0f32; TILE]; 4];
                for (d, row) in keys.chunks_exact(TILE).enumerate() {
                    let chain = &mut chains[d % 4];
                    for (c, k) in chain.iter_mut().zip(row) {
                        *c = q[d].mul_add(widen(*k), *c);
                    }
                }
                for (l, s) in scores.iter_mut().enumerate() {
                    *s = (chains[0][l] + chains[1][l]) + (chains[2][l] + chains[3][l]);
                }
            }
            let scores = &mut scores[..n];
            let max = scores.iter().fold(f32::NEG_INFINITY, |m, s| m.max(*s));
            let mut lanes = [0f32; TILE];
            for (p, s) in scores.iter_mut().enumerate() {
                *s = exp(*s - max);
                lanes[p % TILE] += *s;
            }
            let inverse = 1.0 / sum16(&lanes);
            out.fill(0.0);
            for (p, e) in scores.iter().enumerate() {
                let values = &self.values[(p * kv_heads + self.kv) * hd..][..hd];
                for (o, v) in out.iter_mut().zip(values) {
                    *o = e.mul_add(widen(*v), *o);
                }
            }
            for o in out.iter_mut() {
                *o *= inverse;
            }
        }
    }
}

/// [`Job::lanes`] compiled for AVX2 (the same operations, so the same bits).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn avx2_lanes(job: &Job, q: &[f32], scores: &mut [f32], out: &mut [f32]) {
    job.lanes(q, scores, out)
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::math::{exp512, sum16};
    use super::{Job, TILE};

    /// Runs `job` if its shape has a kernel here (1 to 8 query heads per key/value head, 64 or 128
    /// dimensions); `false` otherwise.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, BW, VNNI and F16C.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    pub unsafe fn attend(job: &Job, q: &[f32], scores: &mut [f32], out: &mut [f32]) -> bool {
        let group = q.len() / job.shape.head_dim;
        macro_rules! shapes {
            ($($g:literal),*) => {
                match (group, job.shape.head_dim) {
                    $(
                        ($g, 64) => run::<$g, 4>(job, q, scores, out),
                        ($g, 128) => run::<$g, 8>(job, q, scores, out),
                    )*
                    _ => return false,
                }
            };
        }
        shapes!(1, 2, 3, 4, 5, 6, 7, 8);
        true
    }

    /// `G` query heads of `16·C` dimensions.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    fn run<const G: usize, const C: usize>(job: &Job, q: &[f32], scores: &mut [f32], out: &mut [f32]) {
        let (hd, n) = (16 * C, job.positions);
        let (tiles, tile_len, kv_heads) = (n.div_ceil(TILE), job.shape.tile_len(), job.shape.kv_heads);
        let width = tiles * TILE;
        assert!(q.len() >= G * hd && scores.len() >= G * width && out.len() >= G * hd, "buffers too short");
        assert!(job.keys.len() >= tiles * tile_len && job.values.len() >= n * kv_heads * hd, "cache too short");
        for tile in 0..tiles {
            let at = tile * tile_len + job.kv * hd * TILE;
            let mut chains = [[_mm512_setzero_ps(); 4]; G];
            for d in 0..hd {
                // SAFETY: sixteen f16 keys from `at + 16d`, inside the tiles checked above.
                let keys = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(job.keys.as_ptr().add(at + TILE * d).cast()) });
                for (g, chains) in chains.iter_mut().enumerate() {
                    chains[d % 4] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), keys, chains[d % 4]);
                }
            }
            for (g, c) in chains.iter().enumerate() {
                let sum = _mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3]));
                // SAFETY: sixteen scores at `g·width + 16·tile`, inside `scores` (checked above).
                unsafe { _mm512_storeu_ps(scores.as_mut_ptr().add(g * width + tile * TILE), sum) };
            }
        }
        let mut inverse = [0f32; G];
        for (g, inverse) in inverse.iter_mut().enumerate() {
            let scores = &mut scores[g * width..(g + 1) * width];
            // The largest score, sixteen lanes at a time (the same value as the portable fold: a
            // maximum of finite numbers does not depend on the order, but for the sign of a zero,
            // which `s − max` and `exp` do not see).
            let mut most = _mm512_set1_ps(f32::NEG_INFINITY);
            for tile in 0..tiles {
                let live = (n - tile * TILE).min(TILE);
                let mask: __mmask16 = if live == TILE { u16::MAX } else { (1u16 << live) - 1 };
                // SAFETY: the live scores of tile `tile`, inside `scores`.
                let s = unsafe { _mm512_mask_loadu_ps(most, mask, scores.as_ptr().add(tile * TILE)) };
                most = _mm512_max_ps(most, s);
            }
            let max = _mm512_reduce_max_ps(most);
            let mut lanes = _mm512_setzero_ps();
            for tile in 0..tiles {
                let live = (n - tile * TILE).min(TILE);
                let mask: __mmask16 = if live == TILE { u16::MAX } else { (1u16 << live) - 1 };
                // SAFETY: sixteen scores from `16·tile`, inside `scores`.
                unsafe {
                    let s = _mm512_loadu_ps(scores.as_ptr().add(tile * TILE));
                    let e = _mm512_maskz_mov_ps(mask, exp512(_mm512_sub_ps(s, _mm512_set1_ps(max))));
                    _mm512_storeu_ps(scores.as_mut_ptr().add(tile * TILE), e);
                    lanes = _mm512_add_ps(lanes, e);
                }
            }
            let mut sums = [0f32; TILE];
            // SAFETY: sixteen floats into an array of sixteen.
            unsafe { _mm512_storeu_ps(sums.as_mut_ptr(), lanes) };
            *inverse = 1.0 / sum16(&sums);
        }
        let mut acc = [[_mm512_setzero_ps(); C]; G];
        for p in 0..n {
            let at = (p * kv_heads + job.kv) * hd;
            let mut values = [_mm512_setzero_ps(); C];
            for (c, v) in values.iter_mut().enumerate() {
                // SAFETY: sixteen f16 values from `at + 16c`, inside the positions checked above.
                *v = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(job.values.as_ptr().add(at + 16 * c).cast()) });
            }
            for (g, acc) in acc.iter_mut().enumerate() {
                let weight = _mm512_set1_ps(scores[g * width + p]);
                for (a, v) in acc.iter_mut().zip(values) {
                    *a = _mm512_fmadd_ps(weight, v, *a);
                }
            }
        }
        for (g, acc) in acc.iter().enumerate() {
            for (c, a) in acc.iter().enumerate() {
                // SAFETY: sixteen floats at `g·hd + 16c`, inside `out` (checked above).
                unsafe {
                    _mm512_storeu_ps(
                        out.as_mut_ptr().add(g * hd + 16 * c),
                        _mm512_mul_ps(*a, _mm512_set1_ps(inverse[g])),
                    )
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::tests::values;
    use super::*;

    fn cache(shape: KvShape, positions: usize) -> KvLayer {
        let mut cache = KvLayer::with_capacity(shape, positions);
        cache.grow(shape, positions);
        let kv_dim = shape.kv_heads * shape.head_dim;
        for p in 0..positions {
            let (k, v) = (values(kv_dim, 2 * p as u32), values(kv_dim, 2 * p as u32 + 1));
            cache.store(shape, p, &k.iter().map(|x| x * 3.0).collect::<Vec<_>>(), &v);
        }
        cache
    }

    #[test]
    fn f16_widens_exactly() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let (got, want) = (widen(h), h.to_f32());
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{bits:#06x}: {got} vs {want}");
        }
    }

    #[test]
    fn attention_is_a_softmax_weighted_sum_of_values() {
        let shape = KvShape { kv_heads: 3, head_dim: 64 };
        let cache = cache(shape, 37);
        let (group, kv, positions) = (3, 1, 37);
        let queries = values(group * 64, 99);
        let mut scratch = vec![0f32; scratch_len(group, 64, positions)];
        let mut out = vec![0f32; group * 64];
        attend(Kernels::portable(), &cache, shape, kv, &queries, positions, 0.125, &mut scratch, &mut out);
        for g in 0..group {
            let q = &queries[g * 64..(g + 1) * 64];
            let key =
                |p: usize, d: usize| f64::from(cache.keys[(p / 16) * 16 * 192 + (kv * 64 + d) * 16 + p % 16].to_f32());
            let value = |p: usize, d: usize| f64::from(cache.values[p * 192 + kv * 64 + d].to_f32());
            let raw: Vec<f64> =
                (0..positions).map(|p| (0..64).map(|d| f64::from(q[d]) * key(p, d)).sum::<f64>() * 0.125).collect();
            let max = raw.iter().cloned().fold(f64::MIN, f64::max);
            let weights: Vec<f64> = raw.iter().map(|r| (r - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for d in 0..64 {
                let want: f64 = (0..positions).map(|p| weights[p] / total * value(p, d)).sum();
                let got = f64::from(out[g * 64 + d]);
                assert!((got - want).abs() < 1e-5, "head {g}, {d}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn every_path_gives_the_same_bits_at_every_length() {
        for (kv_heads, head_dim, group) in [(3, 64, 3), (2, 128, 1), (1, 32, 2)] {
            let shape = KvShape { kv_heads, head_dim };
            let cache = cache(shape, 70);
            for positions in [1, 15, 16, 17, 33, 70] {
                for kv in 0..kv_heads {
                    let queries = values(group * head_dim, positions as u32 + 7 * kv as u32);
                    let run = |kernels: Kernels| {
                        let mut scratch = vec![0f32; scratch_len(group, head_dim, positions)];
                        let mut out = vec![0f32; group * head_dim];
                        attend(kernels, &cache, shape, kv, &queries, positions, 0.1, &mut scratch, &mut out);
                        out
                    };
                    let want = run(Kernels::portable());
                    for level in [Level::Avx2, Level::Avx512] {
                        let Some(kernels) = Kernels::at(level) else { continue };
                        let got = run(kernels);
                        assert!(
                            got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{level:?}, {shape:?}, {positions} positions: not the portable bits"
                        );
                    }
                }
            }
        }
    }
}
