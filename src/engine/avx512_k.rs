//! The AVX-512 VNNI kernels of the K-quant forms and Q5_0 ([`super::kquant`]): sixteen interleaved
//! weight rows times `T` (1 to 4) tokens' quantized activations, all sixteen rows in one register.
//! Each 64-byte load (four values of each row, in its low nibbles, and four more in its high ones) is
//! unpacked once for all the tokens, then one `vpdpbusd` a nibble plane and token sums four products
//! into each row's lane. A sub-block's scale multiplies its i32 dot once, so a super-block's sum stays
//! the exact integer of [`super::kquant_portable`] until its one float step, and the bits match it.

use std::arch::x86_64::*;

use super::avx2::{column, tokens};
use super::avx2_k::ahead;
use super::avx512::{four, halves};
use super::kquant::{KActBlock, KForm, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUBS, SUPER};
use super::quant::{ActBlock, ROWS};

/// 64 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn load64<B>(bytes: &[B], at: usize) -> __m512i {
    assert!(size_of::<B>() == 1 && at + 64 <= bytes.len());
    // SAFETY: 64 one-byte values from `at` (checked above).
    unsafe { _mm512_loadu_si512(bytes.as_ptr().add(at).cast()) }
}

/// 32 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn load32<B>(bytes: &[B], at: usize) -> __m256i {
    assert!(size_of::<B>() == 1 && at + 32 <= bytes.len());
    // SAFETY: 32 one-byte values from `at` (checked above).
    unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
}

/// Two i16 values as one i32, broadcast to every lane (the activation side of a pair multiply-add).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn pair(first: i16, second: i16) -> __m512i {
    _mm512_set1_epi32(i32::from(first as u16) | (i32::from(second) << 16))
}

/// A sub-block's nibbles at `qs[at + 64k..]` (k in 0..4) unpacked: `[lo, hi]`, `lo[k]` holding values
/// `4k..4k+4` of every row (four bytes a row lane) and `hi[k]` values `16+4k..`, each with its fifth
/// bit when `fifth` holds the sub-block's plane (64 bytes, laid out as [`Q5Kx16`]'s: bit `k` of a byte
/// for the low nibble's value, bit `4 + k` for the high one's).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn nibbles(qs: &[u8], at: usize, fifth: Option<__m512i>) -> [[__m512i; 4]; 2] {
    let (low, bit) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x10));
    let unpacked: [(__m512i, __m512i); 4] = std::array::from_fn(|k| {
        let packed = load64(qs, at + 64 * k);
        let (mut lo, mut hi) = (_mm512_and_si512(packed, low), _mm512_and_si512(_mm512_srli_epi16(packed, 4), low));
        if let Some(qh) = fifth {
            // Within each byte: bit k to bit 4 (a left shift of 4 − k), bit 4 + k to bit 4 (right, k).
            let (up, down) = (_mm_cvtsi32_si128(4 - k as i32), _mm_cvtsi32_si128(k as i32));
            lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_sll_epi16(qh, up), bit));
            hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srl_epi16(qh, down), bit));
        }
        (lo, hi)
    });
    [unpacked.map(|(lo, _)| lo), unpacked.map(|(_, hi)| hi)]
}

/// For each token, the dots of a sub-block's unpacked weights (`planes`, as [`nibbles`]) with its 32
/// activations `x[t]`: `[Σ` over values 0..16`, Σ` over 16..32`]` in each row's lane, four `vpdpbusd`
/// each (`q` at most 63, so every product sum is exact).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn dots<const T: usize>(planes: &[[__m512i; 4]; 2], x: [&[i8; 32]; T]) -> [[__m512i; 2]; T] {
    x.map(|x| {
        std::array::from_fn(|h| {
            let mut dot = _mm512_setzero_si512();
            for (k, plane) in planes[h].iter().enumerate() {
                dot = _mm512_dpbusd_epi32(dot, *plane, four(x, 16 * h + 4 * k));
            }
            dot
        })
    })
}

/// Each token's sixteen float sums into `out[t]`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn store_all<const T: usize>(acc: &[__m512; T], out: &mut [[f32; ROWS]]) {
    for (sums, out) in acc.iter().zip(out) {
        // SAFETY: sixteen floats into an array of sixteen.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr(), *sums) };
    }
}

/// Q4_K and Q5_K: `out[t]` = the sixteen rows of `w` times token `t` of `a` (one activation block a
/// unit, rows `per_row` blocks apart), for the `T` tokens.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
fn k_rows<F: KForm, const T: usize>(w: &[F], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let mut acc = [_mm512_setzero_ps(); T];
    for (u, form) in w.iter().enumerate() {
        let (g, x) = (form.low(), column(&x, u));
        // Σ_j sc_j·Σq·a: each sub-block's dot at most 32·31·127, times a scale of at most 63.
        let mut sums = [_mm512_setzero_si512(); T];
        for j in 0..SUBS {
            if T == 1 {
                ahead(w, u, j, SUBS);
            }
            let fifth = form.fifth_bits().map(|qh| load64(qh, 64 * j));
            let planes = nibbles(&g.qs, 256 * j, fifth);
            // SAFETY: 16 bytes from 16j of the 128-byte `scales`.
            let scales = _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(g.scales.as_ptr().add(16 * j).cast()) });
            for (sums, [lo, hi]) in sums.iter_mut().zip(dots(&planes, x.map(|x| &x.qs[j]))) {
                *sums = _mm512_add_epi32(*sums, _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), scales));
            }
        }
        let (d, dmin) = (halves(&g.d), halves(&g.dmin));
        // Each row's mins of sub-blocks 2p and 2p + 1 side by side: an i16 pair a lane.
        let mins: [__m512i; SUBS / 2] = std::array::from_fn(|p| _mm512_cvtepu8_epi16(load32(&g.mins, 32 * p)));
        for t in 0..T {
            // Σ m·Σa: four pairs of sub-blocks, each at most 2·63·4,064.
            let mut offset = _mm512_setzero_si512();
            for (p, mins) in mins.iter().enumerate() {
                offset = _mm512_dpwssd_epi32(offset, *mins, pair(x[t].sums[2 * p], x[t].sums[2 * p + 1]));
            }
            let da = _mm512_set1_ps(x[t].d);
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(sums[t]), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(offset), acc[t]);
        }
    }
    store_all(&acc, out);
}

/// Q4_K rows times `T` tokens' activation rows, `per_row` blocks apart.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C, and AVX2 and FMA ([`super::avx512::available`],
/// [`super::avx2::available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn q4_k<const T: usize>(w: &[Q4Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q5_K rows times `T` tokens' activation rows.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn q5_k<const T: usize>(w: &[Q5Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    k_rows::<_, T>(w, a, per_row, out)
}

/// Q6_K rows times `T` tokens' activation rows: `q` unsigned (0..64) in the byte products, each
/// sixteen's dot times its scale, and `32·sc·Σa` (the offset of 32, `Σa` the activations' `bsums`)
/// taken off in the same i32 sums.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn q6_k<const T: usize>(w: &[Q6Kx16], a: &[KActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let (low, top) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x30));
    let mut acc = [_mm512_setzero_ps(); T];
    for (u, g) in w.iter().enumerate() {
        let x = column(&x, u);
        // At most 16 sixteens of 16·63·127 times a scale of at most 128 in magnitude, plus the offsets.
        let mut sums = [_mm512_setzero_si512(); T];
        for j in 0..SUBS {
            if T == 1 {
                ahead(w, u, j, SUBS);
            }
            // Each row's scales of sixteens 2j and 2j + 1, an i16 pair a lane; each as an i32 for its
            // sixteen's dot, and both, times 32, against the activations' sums of sixteen.
            let scales = _mm512_cvtepi8_epi16(load32(&g.scales, 32 * j));
            let (sc0, sc1) = (_mm512_srai_epi32(_mm512_slli_epi32(scales, 16), 16), _mm512_srai_epi32(scales, 16));
            let offsets = _mm512_slli_epi16(scales, 5);
            let mut planes = [[_mm512_setzero_si512(); 4]; 2];
            for m in 0..2 {
                // Loads k = 2m and 2m + 1; bits 4s, 4s+1 of each `qh` byte to bits 4, 5 (low nibble
                // of load s), 4s+2, 4s+3 (its high one).
                let qh = load64(&g.qh, 128 * j + 64 * m);
                for s in 0..2 {
                    let k = 2 * m + s;
                    let packed = load64(&g.qs, 256 * j + 64 * k);
                    let (lo_top, hi_top) = if s == 0 {
                        (_mm512_slli_epi16(qh, 4), _mm512_slli_epi16(qh, 2))
                    } else {
                        (qh, _mm512_srli_epi16(qh, 2))
                    };
                    planes[0][k] = _mm512_or_si512(_mm512_and_si512(packed, low), _mm512_and_si512(lo_top, top));
                    planes[1][k] = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi16(packed, 4), low),
                        _mm512_and_si512(hi_top, top),
                    );
                }
            }
            for (t, [lo, hi]) in dots(&planes, x.map(|x| &x.qs[j])).into_iter().enumerate() {
                let offset = _mm512_madd_epi16(offsets, pair(x[t].bsums[2 * j], x[t].bsums[2 * j + 1]));
                let both = _mm512_add_epi32(_mm512_mullo_epi32(lo, sc0), _mm512_mullo_epi32(hi, sc1));
                sums[t] = _mm512_add_epi32(sums[t], _mm512_sub_epi32(both, offset));
            }
        }
        let d = halves(&g.d);
        for t in 0..T {
            let scale = _mm512_mul_ps(d, _mm512_set1_ps(x[t].d));
            acc[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(sums[t]), acc[t]);
        }
    }
    store_all(&acc, out);
}

/// Q5_0 rows times `T` tokens' activation rows: `Σq·a − 16·Σa` a block.
///
/// # Safety
/// As [`q4_k`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn q5_0<const T: usize>(w: &[Q5x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let mut acc = [_mm512_setzero_ps(); T];
    for (b, g) in w.iter().enumerate() {
        if T == 1 {
            ahead(w, b, 0, 1);
        }
        let x = column(&x, b);
        let planes = nibbles(&g.qs, 0, Some(load64(&g.qh, 0)));
        let d = halves(&g.d);
        for (t, [lo, hi]) in dots(&planes, x.map(|x| &x.qs)).into_iter().enumerate() {
            let sum = _mm512_sub_epi32(_mm512_add_epi32(lo, hi), _mm512_set1_epi32(16 * x[t].sum));
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t].d)), _mm512_cvtepi32_ps(sum), acc[t]);
        }
    }
    store_all(&acc, out);
}

/// [`super::kernels::Kernels::quantize_k`]: [`super::kquant::quantize_k_lanes`]' arithmetic sixteen
/// values at a time (the same bits: the first value of largest magnitude, one multiply by `iscale`,
/// ties to even, `min(127)` before the conversion, so a NaN product is 127 as there, and `as i8`'s
/// saturation). The 256 values stay in registers, and the sums of sixteen are taken from the bytes
/// four sixteens at a time (`vpsadbw`), not lane by lane: 52 ns a block instead of 83, and the 0.6B
/// file's prompt 5–10% faster (docs/bench.md).
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C ([`super::avx512::available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c,avx2,fma")]
pub unsafe fn quantize_k(x: &[f32], out: &mut [KActBlock]) {
    const SIXTEENS: usize = SUPER / 16;
    let (top, bottom, flip) = (_mm512_set1_ps(127.0), _mm512_set1_ps(-128.0), _mm512_set1_epi8(-128));
    for (chunk, block) in x.chunks_exact(SUPER).zip(out.iter_mut()) {
        let mut values = [_mm512_setzero_ps(); SIXTEENS];
        for (i, v) in values.iter_mut().enumerate() {
            // SAFETY: sixteen floats from 16i of the 256-float chunk.
            *v = unsafe { _mm512_loadu_ps(chunk.as_ptr().add(16 * i)) };
        }
        // `max(|v|, m)`: a NaN `|v|` keeps `m`, as `f32::max` does.
        let mut most = _mm512_setzero_ps();
        for v in &values {
            most = _mm512_max_ps(_mm512_abs_ps(*v), most);
        }
        let amax = _mm512_reduce_max_ps(most);
        // The first value of that magnitude.
        let mut first = None;
        for (i, v) in values.iter().enumerate() {
            let mask = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(*v), _mm512_set1_ps(amax));
            if mask != 0 {
                first = Some(16 * i + mask.trailing_zeros() as usize);
                break;
            }
        }
        let Some(max) = first.map(|i| chunk[i]).filter(|_| amax > 0.0) else {
            *block = KActBlock::default();
            continue;
        };
        let iscale = -127.0 / max;
        let scale = _mm512_set1_ps(iscale);
        // Each sixteen's bytes, four sixteens a register: stored as `qs`, and summed (`bsums`) as
        // unsigned bytes (each + 128) by `vpsadbw`, eight to a 64-bit lane.
        let mut sads = [0u64; 2 * SIXTEENS];
        for (four, (qs, sads)) in values.chunks_exact(4).zip(block.qs.chunks_exact_mut(2).zip(sads.chunks_exact_mut(8)))
        {
            let mut bytes = _mm512_setzero_si512();
            for (i, v) in four.iter().enumerate() {
                let rounded =
                    _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(scale, *v));
                // Then `as i8`'s saturation (an `iscale` that overflowed makes infinities).
                let q = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(rounded, top), bottom)));
                bytes = match i {
                    0 => _mm512_castsi128_si512(q),
                    1 => _mm512_inserti32x4::<1>(bytes, q),
                    2 => _mm512_inserti32x4::<2>(bytes, q),
                    _ => _mm512_inserti32x4::<3>(bytes, q),
                };
            }
            // SAFETY: 64 bytes into the two 32-byte `qs` rows of these four sixteens, and eight
            // 64-bit sums into an array of eight.
            unsafe {
                _mm512_storeu_si512(qs.as_flattened_mut().as_mut_ptr().cast(), bytes);
                _mm512_storeu_si512(
                    sads.as_mut_ptr().cast(),
                    _mm512_sad_epu8(_mm512_xor_si512(bytes, flip), _mm512_setzero_si512()),
                );
            }
        }
        for (s, halves) in block.bsums.iter_mut().zip(sads.chunks_exact(2)) {
            *s = ((halves[0] + halves[1]) as i32 - 16 * 128) as i16;
        }
        block.d = 1.0 / iscale;
        for (s, pair) in block.sums.iter_mut().zip(block.bsums.chunks_exact(2)) {
            *s = pair[0] + pair[1];
        }
    }
}
