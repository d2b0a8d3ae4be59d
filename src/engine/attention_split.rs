//! A generated token's attention split across the pool's threads finer than its key/value heads
//! (3 heads on 2 threads would leave one thread idle a third of it): [`Heads`]' three steps, scores by
//! key tile, softmax by key/value head, weighted values by whole heads or parts of them, each its own split. The
//! steps are [`super::attention::attend`]'s, so the numbers are its bits.

use super::attention::{scale_queries, tiles, Heads, KvLayer, KvShape, TILE};
use super::kernels::Kernels;
use super::model::pool_err;
use super::threads::{Disjoint, Pool};
use super::EngineError;

/// What one token's attention reads: a layer's cache, its shape, query heads per key/value head, the
/// positions attended (`first..positions`, the token's own the last) and the queries' scale.
pub(super) struct Token<'a> {
    pub cache: &'a KvLayer,
    pub shape: KvShape,
    pub group: usize,
    pub first: usize,
    pub positions: usize,
    pub scale: f32,
}

impl Token<'_> {
    fn heads(&self, kv: usize) -> Heads<'_> {
        Heads::new(self.cache, self.shape, kv, self.group, self.positions)
    }

    /// Dimensions of a unit of the weighted values: the widest that divides a head in whole cache
    /// lines of f16 values and still gives each of `threads` two units (a head's values of a position
    /// are one stretch of memory, read once for every dimension of the unit); a whole head where no
    /// cache line divides it.
    fn width(&self, threads: usize) -> usize {
        let hd = self.shape.head_dim;
        (1..=hd / 32)
            .rev()
            .map(|lines| 32 * lines)
            .filter(|w| hd.is_multiple_of(*w))
            .find(|w| self.shape.kv_heads * (hd / w) >= 2 * threads)
            .unwrap_or(if hd.is_multiple_of(32) { 32 } else { hd })
    }
}

/// The scratch [`attend_split`] needs: every head's scaled query, scores and sum, and a staging row
/// per thread.
pub(super) fn split_scratch_len(shape: KvShape, group: usize, positions: usize, threads: usize) -> usize {
    let heads = shape.kv_heads * group;
    heads * (shape.head_dim + tiles(positions) * TILE + 1) + threads * group * shape.head_dim
}

/// One token's attention, every head (`queries` and `out`: `heads × head_dim`), in the three steps of
/// [`Heads`] each split across the pool: scores by key tile, softmax by key/value head, the weighted
/// values by heads or parts of them ([`Token::width`]). The steps are [`attend`]'s, so the numbers are its bits.
pub(super) fn attend_split(
    pool: &mut Pool,
    kernels: Kernels,
    token: &Token<'_>,
    queries: &[f32],
    scratch: &mut [f32],
    out: &mut [f32],
) -> Result<(), EngineError> {
    let (hd, kv_heads, group) = (token.shape.head_dim, token.shape.kv_heads, token.group);
    let (heads, ntiles, width) = (kv_heads * group, tiles(token.positions), token.width(pool.threads()));
    let per_kv = group * ntiles * TILE;
    let (scaled, rest) = scratch.split_at_mut(heads * hd);
    let (scores, rest) = rest.split_at_mut(kv_heads * per_kv);
    let (inverse, staging) = rest.split_at_mut(heads);
    scale_queries(&queries[..heads * hd], token.scale, scaled);
    let (scaled, so, io) = (&*scaled, Disjoint::new(scores), Disjoint::new(inverse));
    pool.split(kv_heads * ntiles, 2, &|_, units| {
        let mut unit = units.start;
        while unit < units.end {
            // This chunk's tiles of one key/value head.
            let (kv, first) = (unit / ntiles, unit % ntiles);
            let end = (units.end - kv * ntiles).min(ntiles);
            // SAFETY: these tiles' scores are this chunk's alone.
            let out = unsafe { so.slice(kv * per_kv + first * group * TILE..kv * per_kv + end * group * TILE) };
            token.heads(kv).scores(kernels, &scaled[kv * group * hd..(kv + 1) * group * hd], first..end, out);
            unit = kv * ntiles + end;
        }
    })
    .map_err(pool_err)?;
    pool.split(kv_heads, 2, &|_, kvs| {
        for kv in kvs {
            // SAFETY: head kv's scores and sums are this unit's alone.
            let (scores, inverse) =
                unsafe { (so.slice(kv * per_kv..(kv + 1) * per_kv), io.slice(kv * group..(kv + 1) * group)) };
            let heads = token.heads(kv);
            heads.hide_before(token.first, scores);
            heads.softmax(kernels, scores, inverse);
        }
    })
    .map_err(pool_err)?;
    let (lines, oo, st) = (hd / width, Disjoint::new(out), Disjoint::new(staging));
    pool.split(kv_heads * lines, 2, &|thread, units| {
        // SAFETY: each thread has its own staging row.
        let staging = unsafe { st.slice(thread * group * hd..thread * group * hd + group * width) };
        for unit in units {
            let (kv, line) = (unit / lines, unit % lines);
            let dims = line * width..(line + 1) * width;
            // SAFETY: no unit writes the scores or sums in this step.
            let (weights, inverse) =
                unsafe { (so.shared(kv * per_kv..(kv + 1) * per_kv), io.shared(kv * group..(kv + 1) * group)) };
            token.heads(kv).weigh(kernels, weights, inverse, dims.clone(), staging);
            for (g, row) in staging.chunks_exact(width).enumerate() {
                let at = (kv * group + g) * hd + dims.start;
                // SAFETY: these dimensions of head (kv, g) are this unit's alone.
                unsafe { oo.slice(at..at + width) }.copy_from_slice(row);
            }
        }
    })
    .map_err(pool_err)
}
