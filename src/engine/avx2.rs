//! The AVX2 kernels of [`super::kernels`]: sixteen interleaved weight rows times one token's quantized
//! activations, as two halves of eight rows (one 32-byte half of each 64-byte load), each row summed
//! in its own lane by exactly the arithmetic of the portable path, so the bits match it.

use std::arch::x86_64::*;

use super::quant::{ActBlock, Q4x16, Q8x16, ROWS};

/// Whether this CPU runs these kernels (every AVX2 CPU has FMA and F16C too).
pub fn available() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
}

/// Eight f16 values from `at` as f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn halves(values: &[half::f16; ROWS], at: usize) -> __m256 {
    assert!(at + 8 <= ROWS);
    // SAFETY: 16 bytes: eight f16 values from `at` (checked above).
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(values.as_ptr().add(at).cast::<__m128i>()) })
}

/// Four activation bytes from `at` as one i32, broadcast to every lane.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn four(qs: &[i8; 32], at: usize) -> __m256i {
    let bytes = [qs[at], qs[at + 1], qs[at + 2], qs[at + 3]];
    _mm256_set1_epi32(i32::from_le_bytes(bytes.map(|b| b as u8)))
}

/// The sixteen rows of `w` (one group) times the activation row `a`.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4(w: &[Q4x16], a: &[ActBlock]) -> [f32; ROWS] {
    assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
    let (low, ones) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi16(1));
    let mut out = [0f32; ROWS];
    for half in 0..2 {
        let (mut sums, mut offsets) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for (group, x) in w.iter().zip(a) {
            // Each i16 pair of lanes 2r, 2r+1 collects row r: 8 products of at most 15·127·2 in all
            // (30,480), inside i16.
            let mut pairs = _mm256_setzero_si256();
            for k in 0..4 {
                // SAFETY: 32 bytes from offset 64k + 32·half of the 256-byte `qs`.
                let packed = unsafe { _mm256_loadu_si256(group.qs.as_ptr().add(64 * k + 32 * half).cast()) };
                let lo = _mm256_and_si256(packed, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
                pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(lo, four(&x.qs, 4 * k)));
                pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(hi, four(&x.qs, 16 + 4 * k)));
            }
            let products = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
            let (d, m) = (halves(&group.d, 8 * half), halves(&group.m, 8 * half));
            sums = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), products, sums);
            offsets = _mm256_fmadd_ps(m, _mm256_set1_ps(x.s), offsets);
        }
        // SAFETY: eight floats into the eight of this half.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * half), _mm256_add_ps(sums, offsets)) };
    }
    out
}

/// The same for 8-bit weights.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q8(w: &[Q8x16], a: &[ActBlock]) -> [f32; ROWS] {
    assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
    let ones = _mm256_set1_epi16(1);
    let mut out = [0f32; ROWS];
    for half in 0..2 {
        let mut sums = _mm256_setzero_ps();
        for (group, x) in w.iter().zip(a) {
            // Lane r of the i32 sums collects row r (an i16 pair holds at most 128·127·2, so each
            // step is widened before the next is added).
            let mut rows = _mm256_setzero_si256();
            for k in 0..8 {
                // SAFETY: 32 bytes from offset 64k + 32·half of the 512-byte `qs`.
                let wq = unsafe { _mm256_loadu_si256(group.qs.as_ptr().add(64 * k + 32 * half).cast()) };
                // maddubs multiplies unsigned by signed: |w| times a with w's sign.
                let aq = four(&x.qs, 4 * k);
                let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(aq, wq));
                rows = _mm256_add_epi32(rows, _mm256_madd_epi16(pairs, ones));
            }
            let d = halves(&group.d, 8 * half);
            sums = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), _mm256_cvtepi32_ps(rows), sums);
        }
        // SAFETY: eight floats into the eight of this half.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * half), sums) };
    }
    out
}
