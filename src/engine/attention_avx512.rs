//! The AVX-512 kernels of attention's three steps: the same arithmetic as the portable lanes (so the
//! same bits), sixteen positions' scores in one register, for the head groups and widths they are
//! written for; other shapes fall back to the AVX2 entries.

use std::arch::x86_64::*;
use std::ops::Range;

use super::attention::{tiles, Heads, TILE};
use super::math::{exp512, sum16};

/// Step 1: the AVX-512 kernel for its shapes ([`Heads::avx512_shape`]), else the AVX2 one.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn scores_shaped(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
    if heads.avx512_shape() {
        scores(heads, q, tiles, out)
    } else {
        super::attention::avx2::scores(heads, q, tiles, out)
    }
}

/// Step 3: the AVX-512 kernel for its shapes (and `dims` from a multiple of 16, 32, 64 or 128
/// wide), else the AVX2 one.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn weigh_shaped(heads: &Heads, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
    if heads.avx512_shape() && dims.start.is_multiple_of(16) && matches!(dims.len(), 32 | 64 | 128) {
        weigh(heads, w, inverse, dims, out)
    } else {
        super::attention::avx2::weigh(heads, w, inverse, dims, out)
    }
}

/// Step 1 for `G` heads.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C; the shape is one of [`Heads::avx512_shape`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn scores(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
    macro_rules! groups {
        ($($g:literal),*) => {
            match heads.group {
                $($g => scores_of::<$g>(heads, q, tiles, out),)*
                _ => unreachable!("checked by avx512_shape"),
            }
        };
    }
    groups!(1, 2, 3, 4, 5, 6, 7, 8)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
fn scores_of<const G: usize>(heads: &Heads, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
    let (hd, tile_len) = (heads.shape.head_dim, heads.shape.tile_len());
    assert!(q.len() >= G * hd && out.len() >= tiles.len() * G * TILE && hd % 4 == 0, "buffers too short");
    assert!(heads.keys.len() >= tiles.end * tile_len, "cache too short");
    for (i, tile) in tiles.enumerate() {
        let at = tile * tile_len + heads.kv * hd * TILE;
        let mut chains = [[_mm512_setzero_ps(); 4]; G];
        for d in (0..hd).step_by(4) {
            for (j, _) in [(); 4].iter().enumerate() {
                // SAFETY: sixteen f16 keys from `at + 16(d + j)`, inside the tiles checked above.
                let keys =
                    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(heads.keys.as_ptr().add(at + TILE * (d + j)).cast()) });
                for (g, chains) in chains.iter_mut().enumerate() {
                    chains[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d + j]), keys, chains[j]);
                }
            }
        }
        for (g, c) in chains.iter().enumerate() {
            let sum = _mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3]));
            // SAFETY: sixteen scores at `(i·G + g)·16`, inside `out` (checked above).
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add((i * G + g) * TILE), sum) };
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

/// Step 3 for `G` heads and 32, 64 or 128 dimensions.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C; the shape is one of [`Heads::avx512_shape`], `dims`
/// starts at a multiple of 16 and is 32, 64 or 128 wide.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn weigh(heads: &Heads, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
    macro_rules! shapes {
        ($($g:literal),*) => {
            match (heads.group, dims.len()) {
                $(
                    ($g, 32) => weigh_of::<$g, 2>(heads, w, inverse, dims.start, out),
                    ($g, 64) => weigh_of::<$g, 4>(heads, w, inverse, dims.start, out),
                    ($g, 128) => weigh_of::<$g, 8>(heads, w, inverse, dims.start, out),
                )*
                _ => unreachable!("checked by the caller"),
            }
        };
    }
    shapes!(1, 2, 3, 4, 5, 6, 7, 8)
}

/// `G` heads, the `16·C` dimensions from `first`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
fn weigh_of<const G: usize, const C: usize>(heads: &Heads, w: &[f32], inverse: &[f32], first: usize, out: &mut [f32]) {
    let (hd, n, kv_heads) = (heads.shape.head_dim, heads.positions, heads.shape.kv_heads);
    assert!(w.len() >= tiles(n) * G * TILE && inverse.len() >= G && out.len() >= G * 16 * C, "buffers too short");
    assert!(first + 16 * C <= hd && heads.values.len() >= n * kv_heads * hd, "cache too short");
    let mut acc = [[_mm512_setzero_ps(); C]; G];
    for p in 0..n {
        let at = (p * kv_heads + heads.kv) * hd + first;
        let mut values = [_mm512_setzero_ps(); C];
        for (c, v) in values.iter_mut().enumerate() {
            // SAFETY: sixteen f16 values from `at + 16c`, inside the positions checked above.
            *v = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(heads.values.as_ptr().add(at + 16 * c).cast()) });
        }
        let lane = (p / TILE * G) * TILE + p % TILE;
        for (g, acc) in acc.iter_mut().enumerate() {
            let weight = _mm512_set1_ps(w[lane + g * TILE]);
            for (a, v) in acc.iter_mut().zip(values) {
                *a = _mm512_fmadd_ps(weight, v, *a);
            }
        }
    }
    for (g, acc) in acc.iter().enumerate() {
        for (c, a) in acc.iter().enumerate() {
            // SAFETY: sixteen floats at `g·16C + 16c`, inside `out` (checked above).
            unsafe {
                _mm512_storeu_ps(out.as_mut_ptr().add((g * C + c) * 16), _mm512_mul_ps(*a, _mm512_set1_ps(inverse[g])))
            };
        }
    }
}
