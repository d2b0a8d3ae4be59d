//! The AVX-512 VNNI kernels of [`super::kernels`]: sixteen interleaved weight rows times up to four
//! tokens' quantized activations, one `vpdpbusd` (64 multiply-adds) per 64 bytes of weights. The
//! weights of a block are loaded and unpacked once for all the tokens, and each token's sums are made
//! by exactly the arithmetic of the portable path, so the bits match it (and do not depend on how many
//! tokens share the pass).

use std::arch::x86_64::*;

use super::quant::{ActBlock, Q4x16, Q8x16, ROWS};

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vnni")
        && std::is_x86_feature_detected!("f16c")
}

/// Four activation bytes as one i32, broadcast to every lane.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub(super) fn four(qs: &[i8; 32], at: usize) -> __m512i {
    let bytes = [qs[at], qs[at + 1], qs[at + 2], qs[at + 3]];
    _mm512_set1_epi32(i32::from_le_bytes(bytes.map(|b| b as u8)))
}

/// Sixteen f16 values as f32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub(super) fn halves(values: &[half::f16; ROWS]) -> __m512 {
    // SAFETY: 32 bytes: the sixteen f16 values.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(values.as_ptr().cast::<__m256i>()) })
}

/// `out[t]` = the sixteen rows of `w` (one group, `w.len()` blocks) times token `t` of `a`, whose
/// activation rows are `per_row` blocks apart, for the `T` tokens.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn q4<const T: usize>(w: &[Q4x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    assert!(a.len() >= (T - 1) * per_row + w.len() && out.len() >= T, "activations or outputs missing");
    let low = _mm512_set1_epi8(0x0F);
    let mut sums = [_mm512_setzero_ps(); T];
    let mut offsets = [_mm512_setzero_ps(); T];
    for (b, group) in w.iter().enumerate() {
        // Byte 64k + 4r + i: byte 4k + i of row r. Low nibbles: values 4k+i; high: 16+4k+i.
        let (mut lo, mut hi) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for k in 0..4 {
            // SAFETY: 64 bytes from offset 64k of the 256-byte `qs`.
            let packed = unsafe { _mm512_loadu_si512(group.qs.as_ptr().add(64 * k).cast()) };
            lo[k] = _mm512_and_si512(packed, low);
            hi[k] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
        }
        let (d, m) = (halves(&group.d), halves(&group.m));
        for t in 0..T {
            let x = &a[t * per_row + b];
            // Two chains of four, added in integers (exact, so the order does not matter).
            let mut even = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[0], four(&x.qs, 0));
            let mut odd = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[1], four(&x.qs, 4));
            even = _mm512_dpbusd_epi32(even, lo[2], four(&x.qs, 8));
            odd = _mm512_dpbusd_epi32(odd, lo[3], four(&x.qs, 12));
            even = _mm512_dpbusd_epi32(even, hi[0], four(&x.qs, 16));
            odd = _mm512_dpbusd_epi32(odd, hi[1], four(&x.qs, 20));
            even = _mm512_dpbusd_epi32(even, hi[2], four(&x.qs, 24));
            odd = _mm512_dpbusd_epi32(odd, hi[3], four(&x.qs, 28));
            let products = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            sums[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.d)), products, sums[t]);
            offsets[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(x.s), offsets[t]);
        }
    }
    for t in 0..T {
        // SAFETY: sixteen floats into an array of sixteen.
        unsafe { _mm512_storeu_ps(out[t].as_mut_ptr(), _mm512_add_ps(sums[t], offsets[t])) };
    }
}

/// The same for 8-bit weights: `vpdpbusd` multiplies unsigned by signed bytes, so the weights are
/// shifted by 128 (`w ^ 0x80`) and each block's sum starts at `−128·Σa`, which takes the shift back
/// out exactly.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn q8<const T: usize>(w: &[Q8x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    assert!(a.len() >= (T - 1) * per_row + w.len() && out.len() >= T, "activations or outputs missing");
    let flip = _mm512_set1_epi8(i8::MIN);
    let mut sums = [_mm512_setzero_ps(); T];
    for (b, group) in w.iter().enumerate() {
        let mut shifted = [_mm512_setzero_si512(); 8];
        for (k, shifted) in shifted.iter_mut().enumerate() {
            // SAFETY: 64 bytes from offset 64k of the 512-byte `qs`.
            *shifted = _mm512_xor_si512(unsafe { _mm512_loadu_si512(group.qs.as_ptr().add(64 * k).cast()) }, flip);
        }
        let d = halves(&group.d);
        for t in 0..T {
            let x = &a[t * per_row + b];
            let mut even = _mm512_set1_epi32(-128 * x.sum);
            let mut odd = _mm512_setzero_si512();
            for k in (0..8).step_by(2) {
                even = _mm512_dpbusd_epi32(even, shifted[k], four(&x.qs, 4 * k));
                odd = _mm512_dpbusd_epi32(odd, shifted[k + 1], four(&x.qs, 4 * k + 4));
            }
            let products = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            sums[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.d)), products, sums[t]);
        }
    }
    for t in 0..T {
        // SAFETY: sixteen floats into an array of sixteen.
        unsafe { _mm512_storeu_ps(out[t].as_mut_ptr(), sums[t]) };
    }
}

/// [`super::kernels::Kernels::quantize`]: each 32 values to 8 bits with their scale `max|x|/127`,
/// rounded to nearest even as the portable path does.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
pub unsafe fn quantize(x: &[f32], out: &mut [ActBlock]) {
    let (low, high) = (_mm512_set1_epi32(-127), _mm512_set1_epi32(127));
    for (chunk, block) in x.chunks_exact(32).zip(out.iter_mut()) {
        // SAFETY: 32 floats: the chunk.
        let (a, b) = unsafe { (_mm512_loadu_ps(chunk.as_ptr()), _mm512_loadu_ps(chunk.as_ptr().add(16))) };
        let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
        let d = amax / 127.0;
        let inverse = _mm512_set1_ps(if d > 0.0 { 1.0 / d } else { 0.0 });
        let qa = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(a, inverse)), high), low);
        let qb = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(b, inverse)), high), low);
        let sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
        // SAFETY: 16 bytes each into the two halves of the 32-byte `qs`.
        unsafe {
            _mm_storeu_si128(block.qs.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(qa));
            _mm_storeu_si128(block.qs.as_mut_ptr().add(16).cast(), _mm512_cvtepi32_epi8(qb));
        }
        block.d = d;
        block.sum = sum;
        block.s = d * sum as f32;
    }
}
