//! The AVX2 kernels of the K-quant forms and Q5_0 ([`super::kquant`]): sixteen interleaved weight rows
//! times `T` (1 to 4) tokens' quantized activations, each 32-byte half of a 64-byte load holding four
//! nibble bytes of eight rows. Each load (and its fifth- or sixth-bit plane) is unpacked once for all
//! the tokens, and each token's row is summed in its own lane by exactly the arithmetic of
//! [`super::kquant::portable`], so the bits match it. (The AVX-512 table runs these too.)

use std::arch::x86_64::*;

use super::avx2::{column, four, halves, load, nibble_dots, store, tokens};
use super::kquant::{KForm, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUBS};
use super::quant::{ActBlock, ROWS};

/// Eight bytes of `bytes` from `at`, each widened to an i32 lane.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn eight(bytes: &[u8], at: usize) -> __m256i {
    assert!(at + 8 <= bytes.len());
    // SAFETY: 8 bytes from `at` (checked above).
    _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(bytes.as_ptr().add(at).cast()) })
}

/// The same for signed bytes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn eight_signed(bytes: &[i8], at: usize) -> __m256i {
    assert!(at + 8 <= bytes.len());
    // SAFETY: 8 bytes from `at` (checked above).
    _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(bytes.as_ptr().add(at).cast()) })
}

/// Runs `block(b, half, accumulators of the half)` over the `blocks` blocks of a group and both
/// halves of eight rows. One token (generation, bound by memory) reads each block's lines once, both
/// halves together; more tokens take one half at a time over the whole group (the other half's bytes
/// then come back from cache), so no register holds a token's broadcasts across both halves.
#[inline(always)]
fn walk<A: Copy, const T: usize>(blocks: usize, zero: A, mut block: impl FnMut(usize, usize, &mut A)) -> [A; 2] {
    let mut acc = [zero; 2];
    if T == 1 {
        for b in 0..blocks {
            for (half, acc) in acc.iter_mut().enumerate() {
                block(b, half, acc);
            }
        }
    } else {
        for (half, acc) in acc.iter_mut().enumerate() {
            for b in 0..blocks {
                block(b, half, acc);
            }
        }
    }
    acc
}

/// Q4_K and Q5_K: `out[t]` = the sixteen rows of `w` times token `t` of `a` (eight blocks a unit,
/// rows `per_row` blocks apart), for the `T` tokens.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn k_rows<F: KForm, const T: usize>(w: &[F], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<T>(a, per_row, SUBS * w.len(), out.len());
    let zero = ([_mm256_setzero_ps(); T], [_mm256_setzero_ps(); T]);
    let acc = walk::<_, T>(SUBS * w.len(), zero, |b, half, (sums, mins)| {
        let (form, j, x) = (&w[b / SUBS], b % SUBS, column(&x, b));
        let (g, qh) = (form.low(), form.fifth_bits());
        let (d, dmin) = (halves(&g.d, 8 * half), halves(&g.dmin, 8 * half));
        let fifth = qh.map(|qh| load(qh, 64 * j + 32 * half));
        let dots = nibble_dots(&g.qs, 256 * j + 32 * half, fifth, x);
        let sc = eight(&g.scales, 16 * j + 8 * half);
        // m·Σa (at most 63·32·127) is exact in f32, so the float product is the integer one.
        let m = _mm256_cvtepi32_ps(eight(&g.mins, 16 * j + 8 * half));
        for t in 0..T {
            let da = _mm256_set1_ps(x[t].d);
            let scaled = _mm256_cvtepi32_ps(_mm256_mullo_epi32(sc, dots[t]));
            sums[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), scaled, sums[t]);
            let offset = _mm256_mul_ps(m, _mm256_set1_ps(x[t].sum as f32));
            mins[t] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, da), offset, mins[t]);
        }
    });
    for (half, (sums, mins)) in acc.iter().enumerate() {
        for t in 0..T {
            store(half, _mm256_sub_ps(sums[t], mins[t]), &mut out[t]);
        }
    }
}

/// Q4_K rows times `T` tokens' activation rows, `per_row` blocks apart.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`super::avx2::available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_k<const T: usize>(w: &[Q4Kx16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q5_K rows times `T` tokens' activation rows.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_k<const T: usize>(w: &[Q5Kx16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q6_K rows times `T` tokens' activation rows: `q` unsigned (0..64) in the byte products, then
/// `Σ(q − 32)·a = Σq·a − 32·Σa` for each half of sixteen values, times its scale.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6_k<const T: usize>(w: &[Q6Kx16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<T>(a, per_row, SUBS * w.len(), out.len());
    let (low, ones, top) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi16(1), _mm256_set1_epi8(0x30));
    let acc = walk::<_, T>(SUBS * w.len(), [_mm256_setzero_ps(); T], |b, half, sums| {
        let (g, j, x) = (&w[b / SUBS], b % SUBS, column(&x, b));
        let d = halves(&g.d, 8 * half);
        let (mut lo32, mut hi32) = ([_mm256_setzero_si256(); T], [_mm256_setzero_si256(); T]);
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
            // i16 pairs: two steps of 2·63·127 at most (32,004), then widened.
            for t in 0..T {
                let qs = &x[t].qs;
                let (k0, k1) = (4 * (2 * m), 4 * (2 * m + 1));
                let lo_pairs = _mm256_add_epi16(
                    _mm256_maddubs_epi16(lo[0], four(qs, k0)),
                    _mm256_maddubs_epi16(lo[1], four(qs, k1)),
                );
                let hi_pairs = _mm256_add_epi16(
                    _mm256_maddubs_epi16(hi[0], four(qs, 16 + k0)),
                    _mm256_maddubs_epi16(hi[1], four(qs, 16 + k1)),
                );
                lo32[t] = _mm256_add_epi32(lo32[t], _mm256_madd_epi16(lo_pairs, ones));
                hi32[t] = _mm256_add_epi32(hi32[t], _mm256_madd_epi16(hi_pairs, ones));
            }
        }
        let (sc0, sc1) = (eight_signed(&g.scales, 32 * j + 8 * half), eight_signed(&g.scales, 32 * j + 16 + 8 * half));
        for t in 0..T {
            let (first, second) = half_sums(&x[t].qs);
            let sum = _mm256_add_epi32(
                _mm256_mullo_epi32(_mm256_sub_epi32(lo32[t], first), sc0),
                _mm256_mullo_epi32(_mm256_sub_epi32(hi32[t], second), sc1),
            );
            let scale = _mm256_mul_ps(d, _mm256_set1_ps(x[t].d));
            sums[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sum), sums[t]);
        }
    });
    for (half, sums) in acc.iter().enumerate() {
        for (t, sums) in sums.iter().enumerate() {
            store(half, *sums, &mut out[t]);
        }
    }
}

/// `32·Σa` over the first and over the last sixteen activation bytes, each broadcast to every lane.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn half_sums(qs: &[i8; 32]) -> (__m256i, __m256i) {
    // SAFETY: the 32 bytes of `qs`.
    let bytes = unsafe { _mm256_loadu_si256(qs.as_ptr().cast()) };
    // Pairs of bytes (1·a + 1·a, exact in i16), then pairs of those: lanes 0–3 the first sixteen
    // bytes, 4–7 the last sixteen.
    let quads = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1));
    let sum4 = |v: __m128i| {
        let v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0b01_00_11_10));
        _mm_add_epi32(v, _mm_shuffle_epi32(v, 0b10_11_00_01))
    };
    let (first, second) = (sum4(_mm256_castsi256_si128(quads)), sum4(_mm256_extracti128_si256(quads, 1)));
    let times32 = |v: __m128i| _mm256_broadcastd_epi32(_mm_slli_epi32(v, 5));
    (times32(first), times32(second))
}

/// Q5_0 rows times `T` tokens' activation rows: `Σq·a − 16·Σa` a block.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_0<const T: usize>(w: &[Q5x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<T>(a, per_row, w.len(), out.len());
    let acc = walk::<_, T>(w.len(), [_mm256_setzero_ps(); T], |b, half, sums| {
        let (g, x) = (&w[b], column(&x, b));
        let dots = nibble_dots(&g.qs, 32 * half, Some(load(&g.qh, 32 * half)), x);
        let d = halves(&g.d, 8 * half);
        for t in 0..T {
            let sum = _mm256_cvtepi32_ps(_mm256_sub_epi32(dots[t], _mm256_set1_epi32(16 * x[t].sum)));
            sums[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t].d)), sum, sums[t]);
        }
    });
    for (half, sums) in acc.iter().enumerate() {
        for (t, sums) in sums.iter().enumerate() {
            store(half, *sums, &mut out[t]);
        }
    }
}
