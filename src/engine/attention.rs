//! Attention over a compact key/value cache: keys and values stored as f16 (half the bytes of f32,
//! and exact to convert back), each key/value head's in runs of [`RUN`] positions that are one stretch
//! of memory (a generated token's attention streams them as the kernels stream a matrix's rows), the
//! keys in tiles of sixteen positions laid out so that sixteen positions' scores are sixteen vector
//! lanes, the values position after position.
//!
//! [`attend`] attends one token's query heads that share a key/value head, in three steps that
//! [`Heads`] also offers one by one, so a lone generated token's attention can be split across
//! threads (scores by key tile, softmax by head, weighted values by dimension). The numbers are made by
//! one fixed arithmetic — `q·scale`, per position four `fma` chains over the dimensions (`d mod 4`)
//! added as `(c0 + c1) + (c2 + c3)`, `e^(s − max)` by [`super::math::exp`], the weights summed in
//! sixteen lanes (position `p` in lane `p mod 16`), then per dimension one `fma` chain over the
//! positions times `1/Σ` — on every path (AVX-512, AVX2, portable), so they give the same bits, and a
//! token's result depends only on the cache up to its position, never on its batch or thread.

use half::{f16, slice::HalfFloatSliceExt};

use super::kernels::Kernels;
use super::math::{exp, sum16};

/// Positions per key tile.
pub const TILE: usize = 16;

/// Positions a key/value head's keys, and its values, run unbroken: the cache grows a run of every
/// head at a time (1 MiB a layer for eight heads of 128 dimensions), and one head's run is 32 KiB of
/// keys and 32 KiB of values. Tiles of sixteen positions, one after the other (4 KiB each, every
/// head's in turn), left the hardware's prefetchers to start again at every tile: a generated token's
/// attention read its cache at half the rate the matrices' kernels read theirs.
pub const RUN: usize = 128;

/// How many key/value heads, of how many dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvShape {
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl KvShape {
    pub(super) fn kv_dim(self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// Values of one run, keys or values (every head's [`RUN`] positions).
    fn run_len(self) -> usize {
        RUN * self.kv_dim()
    }

    /// Where head `kv`'s key tile `tile` starts in the keys (`head_dim × 16`: dimension `d` of the
    /// tile's position `p` at `d·16 + p mod 16`).
    pub(super) fn key_tile(self, kv: usize, tile: usize) -> usize {
        self.head_run(kv, tile * TILE) + (tile * TILE % RUN) * self.head_dim
    }

    /// Where head `kv`'s values of position `p` start in the values (`head_dim` of them).
    pub(super) fn value_row(self, kv: usize, p: usize) -> usize {
        self.head_run(kv, p) + (p % RUN) * self.head_dim
    }

    /// Where head `kv`'s run that holds position `p` starts (in the keys, as in the values).
    fn head_run(self, kv: usize, p: usize) -> usize {
        ((p / RUN) * self.kv_heads + kv) * RUN * self.head_dim
    }

    /// Keys (or values) that hold `positions` positions: whole runs.
    fn cache_len(self, positions: usize) -> usize {
        positions.div_ceil(RUN) * self.run_len()
    }

    /// Bytes one cached position takes (key and value).
    pub fn bytes_per_position(self) -> usize {
        2 * self.kv_dim() * std::mem::size_of::<f16>()
    }
}

/// One layer's cached keys and values, run after run ([`RUN`] positions), in a run head after head.
#[derive(Clone, Debug, Default)]
pub struct KvLayer {
    /// In a head's run, tile after tile ([`KvShape::key_tile`]).
    keys: Vec<f16>,
    /// In a head's run, position after position ([`KvShape::value_row`]).
    values: Vec<f16>,
}

impl KvLayer {
    /// An empty cache with address space for `positions` (pages are touched only as they are used).
    pub fn with_capacity(shape: KvShape, positions: usize) -> Self {
        let len = shape.cache_len(positions);
        Self { keys: Vec::with_capacity(len), values: Vec::with_capacity(len) }
    }

    /// Makes room for `positions` positions.
    pub fn grow(&mut self, shape: KvShape, positions: usize) {
        let len = shape.cache_len(positions);
        for cache in [&mut self.keys, &mut self.values] {
            if cache.len() < len {
                cache.resize(len, f16::ZERO);
            }
        }
    }

    /// Stores position `p`'s key and value (`kv_heads × head_dim` values each, head after head; room
    /// made by [`Self::grow`]). Whole rows at a time through `half`'s slice conversion (F16C where the
    /// CPU has it: the same bits as one value at a time, which asked for the CPU's features each time).
    pub fn store(&mut self, shape: KvShape, p: usize, key: &[f32], value: &[f32]) {
        const STAGED: usize = 64;
        let hd = shape.head_dim;
        let (key, value) = (&key[..shape.kv_dim()], &value[..shape.kv_dim()]);
        let mut staged = [f16::ZERO; STAGED];
        for (kv, (key, value)) in key.chunks_exact(hd).zip(value.chunks_exact(hd)).enumerate() {
            // The key's dimensions go a tile's row apart: converted a stack buffer at a time.
            let tile = &mut self.keys[shape.key_tile(kv, p / TILE)..][..hd * TILE];
            for (part, key) in key.chunks(STAGED).enumerate() {
                let staged = &mut staged[..key.len()];
                staged.convert_from_f32_slice(key);
                for (d, k) in staged.iter().enumerate() {
                    tile[(STAGED * part + d) * TILE + p % TILE] = *k;
                }
            }
            self.values[shape.value_row(kv, p)..][..hd].convert_from_f32_slice(value);
        }
    }
}

/// Key tiles that hold `positions` positions.
pub fn tiles(positions: usize) -> usize {
    positions.div_ceil(TILE)
}

/// The scratch one [`attend`] call needs: the scaled queries, every head's scores and their sums.
pub fn scratch_len(group: usize, head_dim: usize, positions: usize) -> usize {
    group * (head_dim + tiles(positions) * TILE + 1)
}

/// The `group` query heads in `queries` (`group × head_dim`) that share key/value head `kv`, attending
/// the cached positions `first..positions` (a sliding window; `first` 0: all of them), into `out`
/// (`group × head_dim`): [`Heads::scores`], [`Heads::hide_before`], [`Heads::softmax`] and
/// [`Heads::weigh`] one after the other, on one thread.
#[allow(clippy::too_many_arguments)]
pub fn attend(
    kernels: Kernels,
    cache: &KvLayer,
    shape: KvShape,
    kv: usize,
    queries: &[f32],
    (first, positions): (usize, usize),
    scale: f32,
    scratch: &mut [f32],
    out: &mut [f32],
) {
    let (hd, group) = (shape.head_dim, queries.len() / shape.head_dim);
    let heads = Heads::new(cache, shape, kv, group, positions);
    let (q, rest) = scratch[..scratch_len(group, hd, positions)].split_at_mut(group * hd);
    let (scores, inverse) = rest.split_at_mut(group * tiles(positions) * TILE);
    scale_queries(&queries[..group * hd], scale, q);
    heads.scores(kernels, q, 0..tiles(positions), scores);
    heads.hide_before(first, scores);
    heads.softmax(kernels, scores, inverse);
    heads.weigh(kernels, scores, inverse, 0..hd, &mut out[..group * hd]);
}

/// `q·scale` into `out`: the queries as the scores use them.
pub fn scale_queries(queries: &[f32], scale: f32, out: &mut [f32]) {
    for (scaled, q) in out.iter_mut().zip(queries) {
        *scaled = q * scale;
    }
}

/// The `group` query heads that share key/value head `kv`, attending the first `positions` cached
/// positions. Their scores are laid out tile after tile, each tile's sixteen lanes head after head
/// (`(tile·group + g)·16 + p mod 16`), so a range of tiles is one run of memory: the three steps can
/// each be split across threads (scores by tile, weighted values by dimension) and give the same bits.
pub struct Heads<'a> {
    pub(super) keys: &'a [f16],
    pub(super) values: &'a [f16],
    pub(super) shape: KvShape,
    pub(super) kv: usize,
    pub(super) group: usize,
    pub(super) positions: usize,
}

impl<'a> Heads<'a> {
    /// Panics when `kv` is not a head of `shape` or `positions` are not all in the cache.
    pub fn new(cache: &'a KvLayer, shape: KvShape, kv: usize, group: usize, positions: usize) -> Self {
        assert!(
            kv < shape.kv_heads && positions > 0,
            "key/value head {kv} of {}, {positions} positions",
            shape.kv_heads
        );
        assert!(
            cache.keys.len() >= shape.cache_len(positions) && cache.values.len() >= shape.cache_len(positions),
            "{positions} positions are not all in the cache"
        );
        Self { keys: &cache.keys, values: &cache.values, shape, kv, group, positions }
    }

    /// Where this head's key tile `tile` starts in [`Self::keys`] ([`KvShape::key_tile`]).
    pub(super) fn key_tile(&self, tile: usize) -> usize {
        self.shape.key_tile(self.kv, tile)
    }

    /// Where this head's values of position `p` start in [`Self::values`] ([`KvShape::value_row`]).
    pub(super) fn value_row(&self, p: usize) -> usize {
        self.shape.value_row(self.kv, p)
    }

    /// Values of the scores of all the heads (`tiles · group · 16`).
    pub fn scores_len(&self) -> usize {
        tiles(self.positions) * self.group * TILE
    }

    /// Step 1: the scores of the scaled queries `q` (`group × head_dim`) in key tiles `tiles`, into
    /// `out` (those tiles' part of the scores: `tiles.len() · group · 16`). Per position, four `fma`
    /// chains over the dimensions (`d mod 4`) added as `(c0 + c1) + (c2 + c3)`.
    pub fn scores(&self, kernels: Kernels, q: &[f32], tiles: std::ops::Range<usize>, out: &mut [f32]) {
        let (hd, group) = (self.shape.head_dim, self.group);
        assert!(q.len() >= group * hd && out.len() >= tiles.len() * group * TILE, "buffers too short");
        assert!(tiles.end <= self::tiles(self.positions), "tiles {tiles:?} of {}", self.positions);
        kernels.scores(self, q, tiles, out)
    }

    /// Between steps 1 and 2, for a sliding window: the scores of the positions before `first` set to
    /// −∞, so the softmax gives them no weight (`e^−87` at most, which the values never notice).
    pub fn hide_before(&self, first: usize, scores: &mut [f32]) {
        assert!(scores.len() >= self.scores_len(), "buffers too short");
        for p in 0..first.min(self.positions) {
            for g in 0..self.group {
                scores[(p / TILE * self.group + g) * TILE + p % TILE] = f32::NEG_INFINITY;
            }
        }
    }

    /// Step 2: each head's scores (all of `scores`) turned into `e^(s − max)` in place, and
    /// `inverse[g]` = 1 / their sum (summed in sixteen lanes, position `p` in lane `p mod 16`).
    pub fn softmax(&self, kernels: Kernels, scores: &mut [f32], inverse: &mut [f32]) {
        assert!(scores.len() >= self.scores_len() && inverse.len() >= self.group, "buffers too short");
        kernels.softmax(self, scores, inverse)
    }

    /// Step 3: dimensions `dims` (whole sixteens) of each head's output, into `out` (`group ×
    /// dims.len()`): per dimension one `fma` chain over the positions, times `inverse[g]`.
    pub fn weigh(
        &self,
        kernels: Kernels,
        weights: &[f32],
        inverse: &[f32],
        dims: std::ops::Range<usize>,
        out: &mut [f32],
    ) {
        let width = dims.len();
        assert!(weights.len() >= self.scores_len() && inverse.len() >= self.group, "buffers too short");
        assert!(out.len() >= self.group * width && dims.end <= self.shape.head_dim, "dimensions {dims:?}");
        kernels.weigh(self, weights, inverse, dims, out)
    }

    /// The reference arithmetic of step 1 (compiled as is for other CPUs, and for AVX2).
    #[inline(always)]
    pub(super) fn scores_lanes(&self, q: &[f32], tiles: std::ops::Range<usize>, out: &mut [f32]) {
        let (hd, group) = (self.shape.head_dim, self.group);
        for (tile, out) in tiles.zip(out.chunks_exact_mut(group * TILE)) {
            let keys = &self.keys[self.key_tile(tile)..][..hd * TILE];
            for (q, scores) in q.chunks_exact(hd).zip(out.chunks_exact_mut(TILE)) {
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
        }
    }

    #[inline(always)]
    pub(super) fn softmax_lanes(&self, scores: &mut [f32], inverse: &mut [f32]) {
        let (n, group) = (self.positions, self.group);
        let tiles = tiles(n);
        for (g, inverse) in inverse[..group].iter_mut().enumerate() {
            let slot = |p: usize| (p / TILE * group + g) * TILE + p % TILE;
            let max = (0..n).fold(f32::NEG_INFINITY, |m, p| m.max(scores[slot(p)]));
            let mut lanes = [0f32; TILE];
            for p in 0..tiles * TILE {
                // Lanes past the last position weigh nothing.
                let e = if p < n { exp(scores[slot(p)] - max) } else { 0.0 };
                scores[slot(p)] = e;
                lanes[p % TILE] += e;
            }
            *inverse = 1.0 / sum16(&lanes);
        }
    }

    #[inline(always)]
    pub(super) fn weigh_lanes(&self, weights: &[f32], inverse: &[f32], dims: std::ops::Range<usize>, out: &mut [f32]) {
        let (group, width) = (self.group, dims.len());
        for (g, out) in out.chunks_exact_mut(width).take(group).enumerate() {
            out.fill(0.0);
            for p in 0..self.positions {
                let e = weights[(p / TILE * group + g) * TILE + p % TILE];
                let values = &self.values[self.value_row(p) + dims.start..][..width];
                for (o, v) in out.iter_mut().zip(values) {
                    *o = e.mul_add(widen(*v), *o);
                }
            }
            for o in out.iter_mut() {
                *o *= inverse[g];
            }
        }
    }
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

/// Which heads and dimensions one pass of a vector path's weighted values makes: heads `first_head..`,
/// dimensions from `dim` of each head, written from `column` of `out`'s rows of `width` (one a head).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub first_head: usize,
    pub dim: usize,
    pub column: usize,
    pub width: usize,
}

#[cfg(target_arch = "x86_64")]
impl Span {
    /// Where head `head`'s part of this pass starts in `out`.
    pub fn row(self, head: usize) -> usize {
        head * self.width + self.column
    }
}

/// The reference arithmetic of the three steps as free functions: the portable entries of
/// [`super::kernels`]' table.
pub(super) mod portable {
    use std::ops::Range;

    use super::Heads;

    pub fn scores(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
        heads.scores_lanes(q, tiles, out)
    }

    pub fn softmax(heads: &Heads, scores: &mut [f32], inverse: &mut [f32]) {
        heads.softmax_lanes(scores, inverse)
    }

    pub fn weigh(heads: &Heads, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
        heads.weigh_lanes(w, inverse, dims, out)
    }
}

/// The AVX2 entries: [`super::attention_avx2`]'s kernels.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::Heads;

    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn scores(heads: &Heads, q: &[f32], tiles: std::ops::Range<usize>, out: &mut [f32]) {
        super::super::attention_avx2::scores(heads, q, tiles, out)
    }

    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn softmax(heads: &Heads, scores: &mut [f32], inverse: &mut [f32]) {
        super::super::attention_avx2::softmax(heads, scores, inverse)
    }

    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn weigh(heads: &Heads, w: &[f32], inverse: &[f32], dims: std::ops::Range<usize>, out: &mut [f32]) {
        super::super::attention_avx2::weigh(heads, w, inverse, dims, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::tests::values;
    use super::super::kernels::Level;
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

    /// Each key and value lands where `key_tile` and `value_row` say, as `f16::from_f32` rounds it.
    #[test]
    fn a_stored_position_is_its_values_rounded_to_f16() {
        // A head narrower than the store's staging buffer, and one that crosses it twice with a remainder.
        for shape in [KvShape { kv_heads: 3, head_dim: 40 }, KvShape { kv_heads: 2, head_dim: 136 }] {
            stored_position_over(shape);
        }
    }

    fn stored_position_over(shape: KvShape) {
        let positions = 2 * RUN + 5;
        let mut cache = KvLayer::with_capacity(shape, positions);
        cache.grow(shape, positions);
        let kv_dim = shape.kv_dim();
        let row = |p: usize, of: u32| -> Vec<f32> {
            let mut row = values(kv_dim, 2 * p as u32 + of);
            // Halfway cases, the edges of f16's range, a NaN.
            row[..6].copy_from_slice(&[1.0 + 2f32.powi(-11), 65_504.0, 65_520.0, 6e-8, -0.0, f32::NAN]);
            row
        };
        for p in 0..positions {
            cache.store(shape, p, &row(p, 0), &row(p, 1));
        }
        let bits = |x: f16| if x.is_nan() { u16::MAX } else { x.to_bits() };
        for p in 0..positions {
            let (key, value) = (row(p, 0), row(p, 1));
            for kv in 0..shape.kv_heads {
                for d in 0..shape.head_dim {
                    let (k, v) = (key[kv * shape.head_dim + d], value[kv * shape.head_dim + d]);
                    let stored_key = cache.keys[shape.key_tile(kv, p / TILE) + d * TILE + p % TILE];
                    let stored_value = cache.values[shape.value_row(kv, p) + d];
                    assert_eq!(bits(stored_key), bits(f16::from_f32(k)), "key {p} {kv} {d}: {k}");
                    assert_eq!(bits(stored_value), bits(f16::from_f32(v)), "value {p} {kv} {d}: {v}");
                }
            }
        }
    }

    /// Over all the positions, and over a sliding window's last ones (the positions before it weigh nothing).
    #[test]
    fn attention_is_a_softmax_weighted_sum_of_values() {
        for first in [0, 5, 16, 36, RUN + 3] {
            attention_over(first);
        }
    }

    fn attention_over(first: usize) {
        let shape = KvShape { kv_heads: 3, head_dim: 64 };
        let positions = RUN + 37;
        let cache = cache(shape, positions);
        let (group, kv) = (3, 1);
        let queries = values(group * 64, 99);
        let mut scratch = vec![0f32; scratch_len(group, 64, positions)];
        let mut out = vec![0f32; group * 64];
        attend(Kernels::detect(), &cache, shape, kv, &queries, (first, positions), 0.125, &mut scratch, &mut out);
        for g in 0..group {
            let q = &queries[g * 64..(g + 1) * 64];
            let key = |p: usize, d: usize| f64::from(cache.keys[shape.key_tile(kv, p / 16) + d * 16 + p % 16].to_f32());
            let value = |p: usize, d: usize| f64::from(cache.values[shape.value_row(kv, p) + d].to_f32());
            let raw: Vec<f64> =
                (first..positions).map(|p| (0..64).map(|d| f64::from(q[d]) * key(p, d)).sum::<f64>() * 0.125).collect();
            let max = raw.iter().cloned().fold(f64::MIN, f64::max);
            let weights: Vec<f64> = raw.iter().map(|r| (r - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for d in 0..64 {
                let want: f64 = (first..positions).map(|p| weights[p - first] / total * value(p, d)).sum();
                let got = f64::from(out[g * 64 + d]);
                assert!((got - want).abs() < 1e-5, "from {first}, head {g}, {d}: {got} vs {want}");
            }
        }
    }

    /// The steps one by one, the scores in two runs of tiles and the weighted values 32, 64 or a whole
    /// head's dimensions at a time (as threads share them), give `attend`'s bits.
    #[test]
    fn the_steps_split_across_threads_give_attends_bits() {
        for (kv_heads, head_dim, group) in
            [(3, 64, 3), (2, 128, 1), (1, 32, 2), (2, 96, 2), (1, 18, 2), (1, 256, 4), (2, 48, 6), (1, 80, 5)]
        {
            let shape = KvShape { kv_heads, head_dim };
            let cache = cache(shape, 2 * RUN + 9);
            for positions in [1, 17, 33, 70, RUN, RUN + 1, 2 * RUN + 9] {
                for kv in 0..kv_heads {
                    let queries = values(group * head_dim, 3 + positions as u32 + kv as u32);
                    for level in [Level::Portable, Level::Avx2, Level::Avx512] {
                        let Some(kernels) = Kernels::at(level) else { continue };
                        let mut scratch = vec![0f32; scratch_len(group, head_dim, positions)];
                        let mut want = vec![0f32; group * head_dim];
                        attend(kernels, &cache, shape, kv, &queries, (0, positions), 0.1, &mut scratch, &mut want);
                        let heads = Heads::new(&cache, shape, kv, group, positions);
                        let mut q = vec![0f32; group * head_dim];
                        scale_queries(&queries, 0.1, &mut q);
                        let mut scores = vec![0f32; heads.scores_len()];
                        let (all, half) = (tiles(positions), tiles(positions) / 2);
                        let (first, second) = scores.split_at_mut(half * group * TILE);
                        heads.scores(kernels, &q, 0..half, first);
                        heads.scores(kernels, &q, half..all, second);
                        let mut inverse = vec![0f32; group];
                        heads.softmax(kernels, &mut scores, &mut inverse);
                        let widths = [32, 64, head_dim].into_iter().filter(|w| head_dim.is_multiple_of(*w));
                        for width in widths {
                            let mut got = vec![0f32; group * head_dim];
                            for start in (0..head_dim).step_by(width) {
                                let mut part = vec![0f32; group * width];
                                heads.weigh(kernels, &scores, &inverse, start..start + width, &mut part);
                                for g in 0..group {
                                    got[g * head_dim + start..][..width].copy_from_slice(&part[g * width..][..width]);
                                }
                            }
                            assert!(
                                got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                                "{level:?}, {shape:?}, {positions} positions, {width} wide: the steps differ from attend"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_path_gives_the_same_bits_at_every_length() {
        for (kv_heads, head_dim, group) in [(3, 64, 3), (2, 128, 1), (1, 32, 2), (1, 256, 4), (2, 48, 6), (1, 80, 5)] {
            let shape = KvShape { kv_heads, head_dim };
            let cache = cache(shape, 2 * RUN + 9);
            for positions in [1, 15, 16, 17, 33, 70, RUN - 1, RUN, RUN + 1, 2 * RUN + 9] {
                for kv in 0..kv_heads {
                    let queries = values(group * head_dim, positions as u32 + 7 * kv as u32);
                    let run = |kernels: Kernels| {
                        let mut scratch = vec![0f32; scratch_len(group, head_dim, positions)];
                        let mut out = vec![0f32; group * head_dim];
                        attend(kernels, &cache, shape, kv, &queries, (0, positions), 0.1, &mut scratch, &mut out);
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
