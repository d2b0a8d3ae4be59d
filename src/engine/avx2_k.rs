//! The AVX2 kernels of the K-quant forms and Q5_0 ([`super::kquant`]): sixteen interleaved weight rows
//! times one token's quantized activations, each 32-byte half of a 64-byte load holding four nibble
//! bytes of eight rows, each row summed in its own lane by exactly the arithmetic of
//! [`super::kquant::portable`], so the bits match it. (The AVX-512 table runs these too.)

use std::arch::x86_64::*;

use super::avx2::{four, halves};
use super::kquant::{KForm, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUBS};
use super::quant::{ActBlock, ROWS};

/// 32 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn load(bytes: &[u8], at: usize) -> __m256i {
    assert!(at + 32 <= bytes.len());
    // SAFETY: 32 bytes from `at` (checked above).
    unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
}

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

/// The activation bytes of a block as the eight broadcasts the nibble loads `k` meet: values `4k..4k+4`
/// (low nibbles) at `k`, `16+4k..` (high nibbles) at `4 + k`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn broadcasts(x: &ActBlock) -> [__m256i; 8] {
    std::array::from_fn(|i| if i < 4 { four(&x.qs, 4 * i) } else { four(&x.qs, 16 + 4 * (i - 4)) })
}

/// Row lanes of `Σ q·a` over a sub-block whose `q` are at most 15 (`fifth` None) or 31 (a fifth-bit
/// plane's 32 bytes of these eight rows): nibbles at `qs[at + 64k..]`, four loads.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn nibble_dot(qs: &[u8], at: usize, fifth: Option<__m256i>, a: &[__m256i; 8]) -> __m256i {
    let (low, ones, bit) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi16(1), _mm256_set1_epi8(0x10));
    // i16 pairs of lanes 2r, 2r+1 collect row r: four steps of 2·31·127 at most (31,496).
    let (mut lo_pairs, mut hi_pairs) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for k in 0..4 {
        let packed = load(qs, at + 64 * k);
        let mut lo = _mm256_and_si256(packed, low);
        let mut hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
        if let Some(qh) = fifth {
            // Bit k of each byte to bit 4 (for the low nibble), bit 4 + k to bit 4 (the high one).
            let count = _mm_cvtsi32_si128(k as i32);
            let up = _mm_cvtsi32_si128(4 - k as i32);
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_sll_epi16(qh, up), bit));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srl_epi16(qh, count), bit));
        }
        lo_pairs = _mm256_add_epi16(lo_pairs, _mm256_maddubs_epi16(lo, a[k]));
        hi_pairs = _mm256_add_epi16(hi_pairs, _mm256_maddubs_epi16(hi, a[4 + k]));
    }
    _mm256_add_epi32(_mm256_madd_epi16(lo_pairs, ones), _mm256_madd_epi16(hi_pairs, ones))
}

/// Q4_K and Q5_K: the sixteen rows of `w` times the activation row `a` (eight blocks a unit).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn k_rows<F: KForm>(w: &[F], a: &[ActBlock]) -> [f32; ROWS] {
    assert!(a.len() >= SUBS * w.len(), "the activation row is shorter than the weight rows");
    let (mut sums, mut mins) = ([_mm256_setzero_ps(); 2], [_mm256_setzero_ps(); 2]);
    for (form, x) in w.iter().zip(a.chunks_exact(SUBS)) {
        let (g, qh) = (form.low(), form.fifth_bits());
        let d = [halves(&g.d, 0), halves(&g.d, 8)];
        let dmin = [halves(&g.dmin, 0), halves(&g.dmin, 8)];
        for (j, x) in x.iter().enumerate() {
            let a = broadcasts(x);
            let (da, sum) = (_mm256_set1_ps(x.d), _mm256_set1_epi32(x.sum));
            for half in 0..2 {
                let fifth = qh.map(|qh| load(qh, 64 * j + 32 * half));
                let dot = nibble_dot(&g.qs, 256 * j + 32 * half, fifth, &a);
                let (sc, m) = (eight(&g.scales, 16 * j + 8 * half), eight(&g.mins, 16 * j + 8 * half));
                let scaled = _mm256_cvtepi32_ps(_mm256_mullo_epi32(sc, dot));
                sums[half] = _mm256_fmadd_ps(_mm256_mul_ps(d[half], da), scaled, sums[half]);
                let offset = _mm256_cvtepi32_ps(_mm256_mullo_epi32(m, sum));
                mins[half] = _mm256_fmadd_ps(_mm256_mul_ps(dmin[half], da), offset, mins[half]);
            }
        }
    }
    store(std::array::from_fn(|half| _mm256_sub_ps(sums[half], mins[half])))
}

/// The two halves' eight lanes as the sixteen rows.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn store(halves: [__m256; 2]) -> [f32; ROWS] {
    let mut out = [0f32; ROWS];
    for (half, lanes) in halves.iter().enumerate() {
        // SAFETY: eight floats into the eight of this half.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * half), *lanes) };
    }
    out
}

/// Q4_K rows times one activation row.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`super::avx2::available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_k(w: &[Q4Kx16], a: &[ActBlock]) -> [f32; ROWS] {
    k_rows(w, a)
}

/// Q5_K rows times one activation row.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_k(w: &[Q5Kx16], a: &[ActBlock]) -> [f32; ROWS] {
    k_rows(w, a)
}

/// Q6_K rows times one activation row: `q` unsigned (0..64) in the byte products, then
/// `Σ(q − 32)·a = Σq·a − 32·Σa` for each half of sixteen values, times its scale.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6_k(w: &[Q6Kx16], a: &[ActBlock]) -> [f32; ROWS] {
    assert!(a.len() >= SUBS * w.len(), "the activation row is shorter than the weight rows");
    let (low, ones, top) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi16(1), _mm256_set1_epi8(0x30));
    let mut sums = [_mm256_setzero_ps(); 2];
    for (g, x) in w.iter().zip(a.chunks_exact(SUBS)) {
        let d = [halves(&g.d, 0), halves(&g.d, 8)];
        for (j, x) in x.iter().enumerate() {
            let a = broadcasts(x);
            let da = _mm256_set1_ps(x.d);
            let first: i32 = x.qs[..16].iter().map(|q| i32::from(*q)).sum();
            let second: i32 = x.qs[16..].iter().map(|q| i32::from(*q)).sum();
            let (first, second) = (_mm256_set1_epi32(32 * first), _mm256_set1_epi32(32 * second));
            for half in 0..2 {
                let (mut lo32, mut hi32) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                for m in 0..2 {
                    let qh = load(&g.qh, 128 * j + 64 * m + 32 * half);
                    // i16 pairs: two steps of 2·63·127 at most (32,004), then widened.
                    let (mut lo_pairs, mut hi_pairs) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                    for s in 0..2 {
                        let k = 2 * m + s;
                        let packed = load(&g.qs, 256 * j + 64 * k + 32 * half);
                        // Bits 4s, 4s+1 of each byte to bits 4, 5 (low nibble); 4s+2, 4s+3 (high).
                        let (lo_top, hi_top) = if s == 0 {
                            (_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2))
                        } else {
                            (qh, _mm256_srli_epi16(qh, 2))
                        };
                        let lo = _mm256_or_si256(_mm256_and_si256(packed, low), _mm256_and_si256(lo_top, top));
                        let hi = _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16(packed, 4), low),
                            _mm256_and_si256(hi_top, top),
                        );
                        lo_pairs = _mm256_add_epi16(lo_pairs, _mm256_maddubs_epi16(lo, a[k]));
                        hi_pairs = _mm256_add_epi16(hi_pairs, _mm256_maddubs_epi16(hi, a[4 + k]));
                    }
                    lo32 = _mm256_add_epi32(lo32, _mm256_madd_epi16(lo_pairs, ones));
                    hi32 = _mm256_add_epi32(hi32, _mm256_madd_epi16(hi_pairs, ones));
                }
                let (sc0, sc1) =
                    (eight_signed(&g.scales, 32 * j + 8 * half), eight_signed(&g.scales, 32 * j + 16 + 8 * half));
                let sum = _mm256_add_epi32(
                    _mm256_mullo_epi32(_mm256_sub_epi32(lo32, first), sc0),
                    _mm256_mullo_epi32(_mm256_sub_epi32(hi32, second), sc1),
                );
                sums[half] = _mm256_fmadd_ps(_mm256_mul_ps(d[half], da), _mm256_cvtepi32_ps(sum), sums[half]);
            }
        }
    }
    store(sums)
}

/// Q5_0 rows times one activation row: `Σq·a − 16·Σa` a block.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_0(w: &[Q5x16], a: &[ActBlock]) -> [f32; ROWS] {
    assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
    let mut sums = [_mm256_setzero_ps(); 2];
    for (g, x) in w.iter().zip(a) {
        let a = broadcasts(x);
        let (da, offset) = (_mm256_set1_ps(x.d), _mm256_set1_epi32(16 * x.sum));
        for (half, sums) in sums.iter_mut().enumerate() {
            let dot = nibble_dot(&g.qs, 32 * half, Some(load(&g.qh, 32 * half)), &a);
            let sum = _mm256_cvtepi32_ps(_mm256_sub_epi32(dot, offset));
            *sums = _mm256_fmadd_ps(_mm256_mul_ps(halves(&g.d, 8 * half), da), sum, *sums);
        }
    }
    store(sums)
}
