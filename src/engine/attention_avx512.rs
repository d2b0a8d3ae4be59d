//! The AVX-512 kernels of attention's three steps: the same arithmetic as the portable lanes (so the
//! same bits), sixteen positions' scores or sixteen dimensions in one register, the f16 keys and
//! values widened once for up to four query heads that share them; shapes they are not written for
//! (a head of dimensions not a multiple of 4, values not a multiple of 16 wide) take the AVX2 entries.

use std::arch::x86_64::*;
use std::ops::Range;

use super::attention::{tiles, Heads, Span, TILE};
use super::math::{exp512, sum16};

/// Query heads one pass over the keys or values serves (sixteen chains or sums in registers).
const HEADS_PER_PASS: usize = 4;
/// f16 values in a cache line.
const LINE: usize = 32;
/// Positions the weighted values ask for ahead of the one they sum. The keys and values are asked for
/// into the second-level cache (`T1`), not the first: a generated token's attention read 28 layers'
/// caches 10–25% faster so (two threads on this VM's EPYC), and the 0.6B file generated 4–5% faster
/// where memory gave it room (docs/bench.md).
const AHEAD: usize = 40;

/// Step 1 ([`Heads::scores`]).
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C, and AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn scores(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
    let (hd, group) = (heads.shape.head_dim, heads.group);
    if !hd.is_multiple_of(4) {
        return super::attention::avx2::scores(heads, q, tiles, out);
    }
    assert!(q.len() >= group * hd && out.len() >= tiles.len() * group * TILE, "buffers too short");
    assert!(tiles.is_empty() || heads.keys.len() >= heads.key_tile(tiles.end - 1) + hd * TILE, "cache too short");
    let mut first = 0;
    while first < group {
        match (group - first).min(HEADS_PER_PASS) {
            1 => scores_of::<1>(heads, q, tiles.clone(), first, out),
            2 => scores_of::<2>(heads, q, tiles.clone(), first, out),
            3 => scores_of::<3>(heads, q, tiles.clone(), first, out),
            _ => scores_of::<4>(heads, q, tiles.clone(), first, out),
        }
        first += HEADS_PER_PASS;
    }
}

/// Heads `first..first + G`: per position four `fma` chains over the dimensions (`d mod 4`), added
/// as `(c0 + c1) + (c2 + c3)`, a tile's sixteen positions at a time.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn scores_of<const G: usize>(heads: &Heads, q: &[f32], tiles: Range<usize>, first: usize, out: &mut [f32]) {
    let (hd, group) = (heads.shape.head_dim, heads.group);
    for (i, tile) in tiles.enumerate() {
        let at = heads.key_tile(tile);
        // The next tile's keys of this head (at a run's end, in the next run), two cache lines a step.
        let next = heads.keys.as_ptr().wrapping_add(heads.key_tile(tile + 1));
        let mut chains = [[_mm512_setzero_ps(); 4]; G];
        for d in (0..hd).step_by(4) {
            _mm_prefetch::<_MM_HINT_T1>(next.wrapping_add(d / 4 * 2 * LINE).cast());
            _mm_prefetch::<_MM_HINT_T1>(next.wrapping_add((d / 4 * 2 + 1) * LINE).cast());
            for j in 0..4 {
                // SAFETY: sixteen f16 keys from `at + 16(d + j)`, inside the tiles checked by the caller.
                let keys =
                    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(heads.keys.as_ptr().add(at + TILE * (d + j)).cast()) });
                for (g, chains) in chains.iter_mut().enumerate() {
                    chains[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[(first + g) * hd + d + j]), keys, chains[j]);
                }
            }
        }
        for (g, c) in chains.iter().enumerate() {
            let sum = _mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3]));
            let at = (i * group + first + g) * TILE;
            assert!(at + TILE <= out.len(), "scores out of bounds");
            // SAFETY: sixteen scores from `at`, inside `out` (checked above).
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(at), sum) };
        }
    }
}

/// Step 2, each head sixteen lanes at a time.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn softmax(heads: &Heads, scores: &mut [f32], inverse: &mut [f32]) {
    let (n, group) = (heads.positions, heads.group);
    let tiles = tiles(n);
    assert!(scores.len() >= tiles * group * TILE && inverse.len() >= group, "buffers too short");
    let live = |tile: usize| -> __mmask16 {
        let live = (n - tile * TILE).min(TILE);
        if live == TILE {
            u16::MAX
        } else {
            (1u16 << live) - 1
        }
    };
    for (g, inverse) in inverse[..group].iter_mut().enumerate() {
        // The largest score, sixteen lanes at a time (the same value as the portable fold: a
        // maximum of finite numbers does not depend on the order, but for the sign of a zero,
        // which `s − max` and `exp` do not see).
        let mut most = _mm512_set1_ps(f32::NEG_INFINITY);
        for tile in 0..tiles {
            // SAFETY: the live scores of head g in tile `tile`, inside `scores`.
            let s = unsafe { _mm512_mask_loadu_ps(most, live(tile), scores.as_ptr().add((tile * group + g) * TILE)) };
            most = _mm512_max_ps(most, s);
        }
        let max = _mm512_set1_ps(_mm512_reduce_max_ps(most));
        let mut lanes = _mm512_setzero_ps();
        for tile in 0..tiles {
            let at = (tile * group + g) * TILE;
            // SAFETY: sixteen scores from `at`, inside `scores`.
            unsafe {
                let s = _mm512_loadu_ps(scores.as_ptr().add(at));
                let e = _mm512_maskz_mov_ps(live(tile), exp512(_mm512_sub_ps(s, max)));
                _mm512_storeu_ps(scores.as_mut_ptr().add(at), e);
                lanes = _mm512_add_ps(lanes, e);
            }
        }
        let mut sums = [0f32; TILE];
        // SAFETY: sixteen floats into an array of sixteen.
        unsafe { _mm512_storeu_ps(sums.as_mut_ptr(), lanes) };
        *inverse = 1.0 / sum16(&sums);
    }
}

/// Step 3 ([`Heads::weigh`]).
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C, and AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn weigh(heads: &Heads, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
    let (group, width) = (heads.group, dims.len());
    if !width.is_multiple_of(16) {
        return super::attention::avx2::weigh(heads, w, inverse, dims, out);
    }
    let (hd, n) = (heads.shape.head_dim, heads.positions);
    assert!(w.len() >= tiles(n) * group * TILE && inverse.len() >= group, "buffers too short");
    assert!(out.len() >= group * width && dims.end <= hd, "buffers too short");
    assert!(n == 0 || heads.values.len() >= heads.value_row(n - 1) + hd, "cache too short");
    let mut first = 0;
    while first < group {
        let g = (group - first).min(HEADS_PER_PASS);
        let mut at = 0;
        while at < width {
            let span = Span { first_head: first, dim: dims.start + at, column: at, width };
            at += match (g, width - at) {
                (1, 128..) => weigh_of::<1, 8>(heads, w, inverse, span, out),
                (2, 128..) => weigh_of::<2, 8>(heads, w, inverse, span, out),
                (1, 64..) => weigh_of::<1, 4>(heads, w, inverse, span, out),
                (2, 64..) => weigh_of::<2, 4>(heads, w, inverse, span, out),
                (3, 64..) => weigh_of::<3, 4>(heads, w, inverse, span, out),
                (_, 64..) => weigh_of::<4, 4>(heads, w, inverse, span, out),
                (1, 32..) => weigh_of::<1, 2>(heads, w, inverse, span, out),
                (2, 32..) => weigh_of::<2, 2>(heads, w, inverse, span, out),
                (3, 32..) => weigh_of::<3, 2>(heads, w, inverse, span, out),
                (_, 32..) => weigh_of::<4, 2>(heads, w, inverse, span, out),
                (1, _) => weigh_of::<1, 1>(heads, w, inverse, span, out),
                (2, _) => weigh_of::<2, 1>(heads, w, inverse, span, out),
                (3, _) => weigh_of::<3, 1>(heads, w, inverse, span, out),
                _ => weigh_of::<4, 1>(heads, w, inverse, span, out),
            };
        }
        first += HEADS_PER_PASS;
    }
}

/// Heads `first_head..+G`, the `16·C` dimensions from `span.dim`: per dimension one `fma` chain over
/// the positions, times `1/Σ`. Returns the dimensions made.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn weigh_of<const G: usize, const C: usize>(
    heads: &Heads,
    w: &[f32],
    inverse: &[f32],
    span: Span,
    out: &mut [f32],
) -> usize {
    let (n, group) = (heads.positions, heads.group);
    let mut acc = [[_mm512_setzero_ps(); C]; G];
    for p in 0..n {
        let at = heads.value_row(p) + span.dim;
        // Every cache line of this span's values `AHEAD` positions on (in the next run at a run's end).
        let ahead = heads.values.as_ptr().wrapping_add(heads.value_row(p + AHEAD) + span.dim);
        for line in (0..16 * C).step_by(LINE) {
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(line).cast());
        }
        _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(16 * C - 1).cast());
        let lane = (p / TILE * group + span.first_head) * TILE + p % TILE;
        let mut weights = [_mm512_setzero_ps(); G];
        for (g, weight) in weights.iter_mut().enumerate() {
            *weight = _mm512_set1_ps(w[lane + g * TILE]);
        }
        for c in 0..C {
            // SAFETY: sixteen f16 values from `at + 16c`, inside the positions checked by the caller.
            let values = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(heads.values.as_ptr().add(at + 16 * c).cast()) });
            for (acc, weight) in acc.iter_mut().zip(weights) {
                acc[c] = _mm512_fmadd_ps(weight, values, acc[c]);
            }
        }
    }
    for (g, acc) in acc.iter().enumerate() {
        let head = span.first_head + g;
        let row = span.row(head);
        assert!(row + 16 * C <= out.len(), "values out of bounds");
        for (c, a) in acc.iter().enumerate() {
            // SAFETY: sixteen floats at `row + 16c`, inside `out` (checked above).
            unsafe {
                _mm512_storeu_ps(out.as_mut_ptr().add(row + 16 * c), _mm512_mul_ps(*a, _mm512_set1_ps(inverse[head])))
            };
        }
    }
    16 * C
}
