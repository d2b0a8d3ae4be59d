//! The AVX2 kernels of the K-quant forms and Q5_0 ([`super::kquant`]): sixteen interleaved weight rows
//! times `T` (1 to 4) tokens' quantized activations, each 32-byte half of a 64-byte load holding four
//! nibble bytes of eight rows. Each load (and its fifth- or sixth-bit plane) is unpacked once for all
//! the tokens, and each token's row is summed in its own lane by exactly the arithmetic of
//! [`super::kquant_portable`], so the bits match it. The K forms' scales multiply inside the i16 →
//! i32 multiply-add, so a super-block's sum stays an integer until its one float step.

use std::arch::x86_64::*;

use super::avx2::{column, four, halves, load, nibble_dots, store, tokens};
use super::kquant::{KActBlock, KForm, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUBS};
use super::quant::{ActBlock, ROWS};

/// Sixteen bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn sixteen<B>(bytes: &[B], at: usize) -> __m128i {
    assert!(size_of::<B>() == 1 && at + 16 <= bytes.len());
    // SAFETY: 16 one-byte values from `at` (checked above).
    unsafe { _mm_loadu_si128(bytes.as_ptr().add(at).cast()) }
}

/// Eight unsigned bytes from `at` as i16 pairs `(b, b)`, one pair per row lane (a sub-block's
/// scales of eight rows, as [`nibble_dots`]' weights).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn doubled(bytes: &[u8], at: usize) -> __m256i {
    assert!(at + 8 <= bytes.len());
    // SAFETY: 8 bytes from `at` (checked above).
    let eight = unsafe { _mm_loadl_epi64(bytes.as_ptr().add(at).cast()) };
    _mm256_cvtepu8_epi16(_mm_shuffle_epi8(eight, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)))
}

/// Two i16 values as one i32, broadcast to every lane (the activation side of a pair multiply-add).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn pair(first: i16, second: i16) -> __m256i {
    _mm256_set1_epi32(i32::from(first as u16) | (i32::from(second) << 16))
}

/// Runs `sub(u, j, half, acc)` over sub-block `j` of each of the `units` units of a group (`subs` a
/// unit) and both halves of eight rows, and `end(u, half, acc)` after each unit's last. One token
/// (generation, bound by memory) reads each sub-block's lines once, both halves together; more tokens
/// take one half at a time over the whole group (the other half's bytes then come back from cache), so
/// no register holds a token's broadcasts across both halves.
#[inline(always)]
fn walk<A: Copy, const T: usize>(
    units: usize,
    subs: usize,
    zero: A,
    mut sub: impl FnMut(usize, usize, usize, &mut A),
    mut end: impl FnMut(usize, usize, &mut A),
) -> [A; 2] {
    let mut acc = [zero; 2];
    if T == 1 {
        for u in 0..units {
            for j in 0..subs {
                for (half, acc) in acc.iter_mut().enumerate() {
                    sub(u, j, half, acc);
                }
            }
            for (half, acc) in acc.iter_mut().enumerate() {
                end(u, half, acc);
            }
        }
    } else {
        for (half, acc) in acc.iter_mut().enumerate() {
            for u in 0..units {
                for j in 0..subs {
                    sub(u, j, half, acc);
                }
                end(u, half, acc);
            }
        }
    }
    acc
}

/// Generation reads each weight once, from memory: share `j` of `shares` of the cache lines of the
/// unit after `u` is asked for while unit `u` is summed (one token: the kernel walks the units in
/// order, and the hardware's prefetchers do not follow a unit's two planes far enough ahead). Past
/// the group's last unit it asks for the next group's first, which the caller reads next; a prefetch
/// never faults, whatever the address.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn ahead<W>(w: &[W], u: usize, j: usize, shares: usize) {
    let lines = size_of::<W>().div_ceil(64);
    let next = w.as_ptr().wrapping_add(u + 1).cast::<i8>();
    for line in (j * lines).div_ceil(shares)..((j + 1) * lines).div_ceil(shares) {
        _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64 * line));
    }
}

/// Each token's float sums of both halves into its sixteen.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn store_all<const T: usize>(acc: &[[__m256; T]; 2], out: &mut [[f32; ROWS]]) {
    for (half, sums) in acc.iter().enumerate() {
        for (t, sums) in sums.iter().enumerate() {
            store(half, *sums, &mut out[t]);
        }
    }
}

/// Q4_K and Q5_K: `out[t]` = the sixteen rows of `w` times token `t` of `a` (one activation block a
/// unit, rows `per_row` blocks apart), for the `T` tokens.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn k_rows<F: KForm, const T: usize>(w: &[F], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let zero = ([_mm256_setzero_si256(); T], [_mm256_setzero_ps(); T]);
    let sub = |u: usize, j: usize, half: usize, (sums, _): &mut ([__m256i; T], [__m256; T])| {
        if T == 1 && half == 0 {
            ahead(w, u, j, SUBS);
        }
        let (form, x) = (&w[u], column(&x, u));
        let fifth = form.fifth_bits().map(|qh| load(qh, 64 * j + 32 * half));
        let scales = doubled(&form.low().scales, 16 * j + 8 * half);
        nibble_dots(&form.low().qs, 256 * j + 32 * half, fifth, x.map(|x| &x.qs[j]), scales, sums);
    };
    let end = |u: usize, half: usize, (sums, acc): &mut ([__m256i; T], [__m256; T])| {
        let (g, x) = (w[u].low(), column(&x, u));
        let (d, dmin) = (halves(&g.d, 8 * half), halves(&g.dmin, 8 * half));
        let mins: [__m256i; SUBS / 2] =
            std::array::from_fn(|p| _mm256_cvtepu8_epi16(sixteen(&g.mins, 32 * p + 16 * half)));
        for t in 0..T {
            // Σ m·Σa: four pairs of sub-blocks, each at most 2·63·4,064.
            let mut offset = _mm256_setzero_si256();
            for (p, mins) in mins.iter().enumerate() {
                let sums = pair(x[t].sums[2 * p], x[t].sums[2 * p + 1]);
                offset = _mm256_add_epi32(offset, _mm256_madd_epi16(*mins, sums));
            }
            let da = _mm256_set1_ps(x[t].d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(sums[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(offset), acc[t]);
            sums[t] = _mm256_setzero_si256();
        }
    };
    let acc = walk::<_, T>(w.len(), SUBS, zero, sub, end);
    store_all(&acc.map(|(_, acc)| acc), out);
}

/// Q4_K rows times `T` tokens' activation rows, `per_row` blocks apart.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`super::avx2::available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_k<const T: usize>(w: &[Q4Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q5_K rows times `T` tokens' activation rows.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_k<const T: usize>(w: &[Q5Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q6_K rows times `T` tokens' activation rows: `q` unsigned (0..64) in the byte products, each
/// sixteen's scale in the multiply-add, and `32·sc·Σa` (the offset of 32, `Σa` the activations'
/// `bsums`) taken off in the same i32 sums.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6_k<const T: usize>(w: &[Q6Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let (low, top) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x30));
    let (even, odd) = (
        _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14),
        _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15),
    );
    let zero = ([_mm256_setzero_si256(); T], [_mm256_setzero_ps(); T]);
    let sub = |u: usize, j: usize, half: usize, (sums, _): &mut ([__m256i; T], [__m256; T])| {
        if T == 1 && half == 0 {
            ahead(w, u, j, SUBS);
        }
        let (g, x) = (&w[u], column(&x, u));
        // The two sixteens' scales of the eight rows, (sc₀, sc₁) a row: each doubled for its own
        // sixteen's products, and both, times 32, against the activations' sums of sixteen (at
        // most 2·4,096·2,032).
        let scales = sixteen(&g.scales, 32 * j + 16 * half);
        let (sc0, sc1) =
            (_mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, even)), _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, odd)));
        let offsets = _mm256_slli_epi16(_mm256_cvtepi8_epi16(scales), 5);
        for t in 0..T {
            let bsums = pair(x[t].bsums[2 * j], x[t].bsums[2 * j + 1]);
            sums[t] = _mm256_sub_epi32(sums[t], _mm256_madd_epi16(offsets, bsums));
        }
        for m in 0..2 {
            let qh = load(&g.qh, 128 * j + 64 * m + 32 * half);
            // Loads k = 2m and 2m + 1; bits 4s, 4s+1 of each `qh` byte to bits 4, 5 (low
            // nibble of load s), 4s+2, 4s+3 (its high one).
            let (mut lo, mut hi) = ([_mm256_setzero_si256(); 2], [_mm256_setzero_si256(); 2]);
            for s in 0..2 {
                let packed = load(&g.qs, 256 * j + 64 * (2 * m + s) + 32 * half);
                let (lo_top, hi_top) = if s == 0 {
                    (_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2))
                } else {
                    (qh, _mm256_srli_epi16(qh, 2))
                };
                lo[s] = _mm256_or_si256(_mm256_and_si256(packed, low), _mm256_and_si256(lo_top, top));
                hi[s] =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low), _mm256_and_si256(hi_top, top));
            }
            // i16 pairs: two steps of 2·63·127 at most (32,004), then times the scale (at most
            // 2·32,004·128 a lane).
            for t in 0..T {
                let qs = &x[t].qs[j];
                let (k0, k1) = (4 * (2 * m), 4 * (2 * m + 1));
                let lo_pairs = _mm256_add_epi16(
                    _mm256_maddubs_epi16(lo[0], four(qs, k0)),
                    _mm256_maddubs_epi16(lo[1], four(qs, k1)),
                );
                let hi_pairs = _mm256_add_epi16(
                    _mm256_maddubs_epi16(hi[0], four(qs, 16 + k0)),
                    _mm256_maddubs_epi16(hi[1], four(qs, 16 + k1)),
                );
                let both = _mm256_add_epi32(_mm256_madd_epi16(lo_pairs, sc0), _mm256_madd_epi16(hi_pairs, sc1));
                sums[t] = _mm256_add_epi32(sums[t], both);
            }
        }
    };
    let end = |u: usize, half: usize, (sums, acc): &mut ([__m256i; T], [__m256; T])| {
        let d = halves(&w[u].d, 8 * half);
        for t in 0..T {
            let scale = _mm256_mul_ps(d, _mm256_set1_ps(x[t][u].d));
            acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sums[t]), acc[t]);
            sums[t] = _mm256_setzero_si256();
        }
    };
    let acc = walk::<_, T>(w.len(), SUBS, zero, sub, end);
    store_all(&acc.map(|(_, acc)| acc), out);
}

/// Q5_0 rows times `T` tokens' activation rows: `Σq·a − 16·Σa` a block.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_0<const T: usize>(w: &[Q5x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let sub = |b: usize, _: usize, half: usize, sums: &mut [__m256; T]| {
        if T == 1 && half == 0 {
            ahead(w, b, 0, 1);
        }
        let (g, x) = (&w[b], column(&x, b));
        let mut dots = [_mm256_setzero_si256(); T];
        let fifth = Some(load(&g.qh, 32 * half));
        nibble_dots(&g.qs, 32 * half, fifth, x.map(|x| &x.qs), _mm256_set1_epi16(1), &mut dots);
        let d = halves(&g.d, 8 * half);
        for t in 0..T {
            let sum = _mm256_cvtepi32_ps(_mm256_sub_epi32(dots[t], _mm256_set1_epi32(16 * x[t].sum)));
            sums[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t].d)), sum, sums[t]);
        }
    };
    let acc = walk::<_, T>(w.len(), 1, [_mm256_setzero_ps(); T], sub, |_, _, _| {});
    store_all(&acc, out);
}
