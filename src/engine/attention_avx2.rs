//! The AVX2 kernels of attention's scores and weighted values: the same arithmetic as the portable
//! lanes (so the same bits), eight positions or dimensions in one register, the f16 keys and values
//! widened once for up to three query heads that share them (F16C: exact, as the portable widening);
//! shapes they are not written for (a head of dimensions not a multiple of 4, values not a multiple
//! of 8 wide) take the portable lanes compiled for AVX2.

use std::arch::x86_64::*;
use std::ops::Range;

use super::attention::{tiles, Heads, Span, TILE};
use super::math::avx2::exp256;
use super::math::sum16;

/// Query heads one pass over the keys or values serves (their chains fit in the 16 registers).
const HEADS_PER_PASS: usize = 3;
/// f16 values in a cache line.
const LINE: usize = 32;
/// Positions the weighted values ask for ahead of the one they sum. The keys and values are asked for
/// into the second-level cache (`T1`), as the AVX-512 kernels ask (measured there).
const AHEAD: usize = 40;

/// Step 1 ([`Heads::scores`]).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn scores(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
    let (hd, group) = (heads.shape.head_dim, heads.group);
    if !hd.is_multiple_of(4) {
        return heads.scores_lanes(q, tiles, out);
    }
    assert!(q.len() >= group * hd && out.len() >= tiles.len() * group * TILE, "buffers too short");
    assert!(tiles.is_empty() || heads.keys.len() >= heads.key_tile(tiles.end - 1) + hd * TILE, "cache too short");
    let mut first = 0;
    while first < group {
        match (group - first).min(HEADS_PER_PASS) {
            1 => scores_of::<1>(heads, q, tiles.clone(), first, out),
            2 => scores_of::<2>(heads, q, tiles.clone(), first, out),
            _ => scores_of::<3>(heads, q, tiles.clone(), first, out),
        }
        first += HEADS_PER_PASS;
    }
}

/// Heads `first..first + G`: per position four `fma` chains over the dimensions (`d mod 4`), added
/// as `(c0 + c1) + (c2 + c3)`, eight positions (half a tile) at a time.
#[target_feature(enable = "avx2,fma,f16c")]
fn scores_of<const G: usize>(heads: &Heads, q: &[f32], tiles: Range<usize>, first: usize, out: &mut [f32]) {
    let (hd, group) = (heads.shape.head_dim, heads.group);
    for (i, tile) in tiles.enumerate() {
        let at = heads.key_tile(tile);
        // The next tile's keys of this head (at a run's end, in the next run), a cache line a step.
        let next = heads.keys.as_ptr().wrapping_add(heads.key_tile(tile + 1));
        for half in [0, 8] {
            let mut chains = [[_mm256_setzero_ps(); 4]; G];
            for d in (0..hd).step_by(4) {
                let line = (half / 8 * hd / 4 + d / 4) * LINE;
                _mm_prefetch::<_MM_HINT_T1>(next.wrapping_add(line).cast());
                for j in 0..4 {
                    // SAFETY: eight f16 keys from `at + 16(d + j) + half`, inside the tiles checked by the caller.
                    let keys = _mm256_cvtph_ps(unsafe {
                        _mm_loadu_si128(heads.keys.as_ptr().add(at + TILE * (d + j) + half).cast())
                    });
                    for (g, chains) in chains.iter_mut().enumerate() {
                        let query = _mm256_set1_ps(q[(first + g) * hd + d + j]);
                        chains[j] = _mm256_fmadd_ps(query, keys, chains[j]);
                    }
                }
            }
            for (g, c) in chains.iter().enumerate() {
                let sum = _mm256_add_ps(_mm256_add_ps(c[0], c[1]), _mm256_add_ps(c[2], c[3]));
                let slot = (i * group + first + g) * TILE + half;
                assert!(slot + 8 <= out.len(), "scores out of bounds");
                // SAFETY: eight scores from `slot`, inside `out` (checked above).
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(slot), sum) };
            }
        }
    }
}

/// Step 2 ([`Heads::softmax`]): a tile's sixteen scores in two registers, [`exp256`] as the portable
/// `exp` (so the same bits), the sums kept in sixteen lanes as the portable loop keeps them.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn softmax(heads: &Heads, scores: &mut [f32], inverse: &mut [f32]) {
    let (n, group) = (heads.positions, heads.group);
    let tiles = tiles(n);
    assert!(scores.len() >= tiles * group * TILE && inverse.len() >= group, "buffers too short");
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    // Which of the eight lanes from position `p` hold one of the `n` positions.
    let live = |p: usize| _mm256_cmpgt_epi32(_mm256_set1_epi32(n.saturating_sub(p).min(8) as i32), lane);
    let lowest = _mm256_set1_ps(f32::NEG_INFINITY);
    for (g, inverse) in inverse[..group].iter_mut().enumerate() {
        // The largest score (the same value as the portable fold: a maximum of finite numbers does not
        // depend on the order, but for the sign of a zero, which `s − max` and `exp` do not see).
        let mut most = lowest;
        for tile in 0..tiles {
            let at = (tile * group + g) * TILE;
            for half in [0, 8] {
                // SAFETY: eight scores from `at + half`, inside `scores` (checked above).
                let s = unsafe { _mm256_loadu_ps(scores.as_ptr().add(at + half)) };
                let s = _mm256_blendv_ps(lowest, s, _mm256_castsi256_ps(live(tile * TILE + half)));
                // A NaN score leaves `most` as it was, as `f32::max` does.
                most = _mm256_max_ps(s, most);
            }
        }
        let mut lanes = [0f32; 8];
        // SAFETY: eight floats into an array of eight.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), most) };
        let max = _mm256_set1_ps(lanes.iter().fold(f32::NEG_INFINITY, |m, x| m.max(*x)));
        let mut sums = [_mm256_setzero_ps(); 2];
        for tile in 0..tiles {
            let at = (tile * group + g) * TILE;
            for (h, half) in [0, 8].into_iter().enumerate() {
                // SAFETY: eight scores from `at + half`, inside `scores` (checked above).
                unsafe {
                    let s = _mm256_loadu_ps(scores.as_ptr().add(at + half));
                    let live = _mm256_castsi256_ps(live(tile * TILE + half));
                    let e = _mm256_and_ps(live, exp256(_mm256_sub_ps(s, max)));
                    _mm256_storeu_ps(scores.as_mut_ptr().add(at + half), e);
                    sums[h] = _mm256_add_ps(sums[h], e);
                }
            }
        }
        let mut sixteen = [0f32; TILE];
        // SAFETY: two times eight floats into an array of sixteen.
        unsafe {
            _mm256_storeu_ps(sixteen.as_mut_ptr(), sums[0]);
            _mm256_storeu_ps(sixteen.as_mut_ptr().add(8), sums[1]);
        }
        *inverse = 1.0 / sum16(&sixteen);
    }
}

/// Step 3 ([`Heads::weigh`]).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn weigh(heads: &Heads, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
    let (group, width) = (heads.group, dims.len());
    if !width.is_multiple_of(8) {
        return heads.weigh_lanes(w, inverse, dims, out);
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
                (1, 32..) => weigh_of::<1, 4>(heads, w, inverse, span, out),
                (2, 32..) => weigh_of::<2, 4>(heads, w, inverse, span, out),
                (_, 32..) => weigh_of::<3, 4>(heads, w, inverse, span, out),
                (1, 16..) => weigh_of::<1, 2>(heads, w, inverse, span, out),
                (2, 16..) => weigh_of::<2, 2>(heads, w, inverse, span, out),
                (_, 16..) => weigh_of::<3, 2>(heads, w, inverse, span, out),
                (1, _) => weigh_of::<1, 1>(heads, w, inverse, span, out),
                (2, _) => weigh_of::<2, 1>(heads, w, inverse, span, out),
                _ => weigh_of::<3, 1>(heads, w, inverse, span, out),
            };
        }
        first += HEADS_PER_PASS;
    }
}

/// Heads `first_head..+G`, the `8·C` dimensions from `span.dim`: per dimension one `fma` chain over
/// the positions, times `1/Σ`. Returns the dimensions made.
#[target_feature(enable = "avx2,fma,f16c")]
fn weigh_of<const G: usize, const C: usize>(
    heads: &Heads,
    w: &[f32],
    inverse: &[f32],
    span: Span,
    out: &mut [f32],
) -> usize {
    let (n, group) = (heads.positions, heads.group);
    let mut acc = [[_mm256_setzero_ps(); C]; G];
    for p in 0..n {
        let at = heads.value_row(p) + span.dim;
        // Every cache line of this span's values `AHEAD` positions on (in the next run at a run's end).
        let ahead = heads.values.as_ptr().wrapping_add(heads.value_row(p + AHEAD) + span.dim);
        for line in (0..8 * C).step_by(LINE) {
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(line).cast());
        }
        _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(8 * C - 1).cast());
        let lane = (p / TILE * group + span.first_head) * TILE + p % TILE;
        let mut weights = [_mm256_setzero_ps(); G];
        for (g, weight) in weights.iter_mut().enumerate() {
            *weight = _mm256_set1_ps(w[lane + g * TILE]);
        }
        for c in 0..C {
            // SAFETY: eight f16 values from `at + 8c`, inside the positions checked by the caller.
            let values = _mm256_cvtph_ps(unsafe { _mm_loadu_si128(heads.values.as_ptr().add(at + 8 * c).cast()) });
            for (acc, weight) in acc.iter_mut().zip(weights) {
                acc[c] = _mm256_fmadd_ps(weight, values, acc[c]);
            }
        }
    }
    for (g, acc) in acc.iter().enumerate() {
        let head = span.first_head + g;
        let row = span.row(head);
        assert!(row + 8 * C <= out.len(), "values out of bounds");
        for (c, a) in acc.iter().enumerate() {
            // SAFETY: eight floats at `row + 8c`, inside `out` (checked above).
            unsafe {
                _mm256_storeu_ps(out.as_mut_ptr().add(row + 8 * c), _mm256_mul_ps(*a, _mm256_set1_ps(inverse[head])))
            };
        }
    }
    8 * C
}
