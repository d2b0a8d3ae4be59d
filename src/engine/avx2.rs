//! The AVX2 kernels of [`super::kernels`]: sixteen interleaved weight rows times `T` (1 to 4) tokens'
//! quantized activations, as two halves of eight rows (one 32-byte half of each 64-byte load). Each
//! weight load is unpacked once for all the tokens, and each token's row is summed in its own lane by
//! exactly the arithmetic of the portable path, so the bits match it (and do not depend on how many
//! tokens share the pass).

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

/// The `T` tokens' activation rows of `a` (`per_row` blocks apart), `blocks` blocks each; checks
/// that `a` holds them and `out` has room for their sums.
#[inline]
pub(super) fn tokens<A, const T: usize>(a: &[A], per_row: usize, blocks: usize, out: usize) -> [&[A]; T] {
    assert!(T >= 1 && out >= T, "{T} tokens, room for {out}");
    assert!(a.len() >= (T - 1) * per_row + blocks, "{} activation blocks, not {T} rows of {blocks}", a.len());
    std::array::from_fn(|t| &a[t * per_row..t * per_row + blocks])
}

/// Each token's two halves of eight lanes into its sixteen sums.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn store(half: usize, lanes: __m256, out: &mut [f32; ROWS]) {
    assert!(half < 2);
    // SAFETY: eight floats into the eight of this half (checked above).
    unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * half), lanes) };
}

/// 32 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn load(bytes: &[u8], at: usize) -> __m256i {
    assert!(at + 32 <= bytes.len());
    // SAFETY: 32 bytes from `at` (checked above).
    unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) }
}

/// The blocks at `b` of the tokens' activation rows.
#[inline]
pub(super) fn column<'a, A, const T: usize>(x: &[&'a [A]; T], b: usize) -> [&'a A; T] {
    std::array::from_fn(|t| &x[t][b])
}

/// For each token `t`, adds to `dots[t]`'s row lanes `Σ q·a` over a sub-block (activations `x[t]`)
/// whose `q` are at most 15 (`fifth` None) or 31 (a fifth-bit plane's 32 bytes of these eight rows),
/// times the row's weight in `weights` (an i16 pair per row lane, both halves equal: 1, or the
/// sub-block's scale): nibbles at `qs[at + 64k..]`, four loads, each unpacked once for every token.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn nibble_dots<const T: usize>(
    qs: &[u8],
    at: usize,
    fifth: Option<__m256i>,
    x: [&[i8; 32]; T],
    weights: __m256i,
    dots: &mut [__m256i; T],
) {
    let (low, bit) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x10));
    // i16 pairs of lanes 2r, 2r+1 collect row r: each k adds at most 2·2·31·127 (15,748), so two
    // steps fit (four of 4-bit q: 4·2·2·15·127 = 30,480) before they are widened into `dots` (times
    // a weight of at most 63: 2·31,496·63 a lane).
    let mut pairs = [_mm256_setzero_si256(); T];
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
        for (pairs, x) in pairs.iter_mut().zip(x) {
            let both = _mm256_add_epi16(
                _mm256_maddubs_epi16(lo, four(x, 4 * k)),
                _mm256_maddubs_epi16(hi, four(x, 16 + 4 * k)),
            );
            *pairs = _mm256_add_epi16(*pairs, both);
        }
        if k == 3 || (fifth.is_some() && k == 1) {
            for (dots, pairs) in dots.iter_mut().zip(&mut pairs) {
                *dots = _mm256_add_epi32(*dots, _mm256_madd_epi16(*pairs, weights));
                *pairs = _mm256_setzero_si256();
            }
        }
    }
}

/// `out[t]` = the sixteen rows of `w` (one group) times token `t` of `a`, whose activation rows are
/// `per_row` blocks apart, for the `T` tokens.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4<const T: usize>(w: &[Q4x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    for half in 0..2 {
        let (mut sums, mut offsets) = ([_mm256_setzero_ps(); T], [_mm256_setzero_ps(); T]);
        for (b, group) in w.iter().enumerate() {
            let mut dots = [_mm256_setzero_si256(); T];
            nibble_dots(&group.qs, 32 * half, None, column(&x, b).map(|x| &x.qs), _mm256_set1_epi16(1), &mut dots);
            let (d, m) = (halves(&group.d, 8 * half), halves(&group.m, 8 * half));
            for t in 0..T {
                let x = &x[t][b];
                let products = _mm256_cvtepi32_ps(dots[t]);
                sums[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), products, sums[t]);
                offsets[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(x.s), offsets[t]);
            }
        }
        for t in 0..T {
            store(half, _mm256_add_ps(sums[t], offsets[t]), &mut out[t]);
        }
    }
}

/// The same for 8-bit weights.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C ([`available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q8<const T: usize>(w: &[Q8x16], a: &[ActBlock], per_row: usize, out: &mut [[f32; ROWS]]) {
    if T == 1 {
        return q8_one(w, a, &mut out[0]);
    }
    let x = tokens::<_, T>(a, per_row, w.len(), out.len());
    let ones = _mm256_set1_epi16(1);
    for half in 0..2 {
        let mut sums = [_mm256_setzero_ps(); T];
        for (b, group) in w.iter().enumerate() {
            // Lane r of the i32 sums collects row r (an i16 pair holds at most 128·127·2, so each
            // step is widened before the next is added).
            let mut rows = [_mm256_setzero_si256(); T];
            for k in 0..8 {
                // SAFETY: 32 bytes from offset 64k + 32·half of the 512-byte `qs`.
                let wq = unsafe { _mm256_loadu_si256(group.qs.as_ptr().add(64 * k + 32 * half).cast()) };
                // maddubs multiplies unsigned by signed: |w| times a with w's sign.
                let magnitude = _mm256_sign_epi8(wq, wq);
                for (rows, x) in rows.iter_mut().zip(x) {
                    let pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(four(&x[b].qs, 4 * k), wq));
                    *rows = _mm256_add_epi32(*rows, _mm256_madd_epi16(pairs, ones));
                }
            }
            let d = halves(&group.d, 8 * half);
            for t in 0..T {
                let scale = _mm256_mul_ps(d, _mm256_set1_ps(x[t][b].d));
                sums[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(rows[t]), sums[t]);
            }
        }
        for t in 0..T {
            store(half, sums[t], &mut out[t]);
        }
    }
}

/// [`q8`] of one token (the output matrix, which runs only the last token of a batch): the blocks and
/// activations walked together: a quarter less CPU time in Gemma's generation than the `T`-token
/// loop with `T = 1` (perf samples of `bench --vs-llama-cpp`, 1,740 against 1,214–1,300).
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_one(w: &[Q8x16], a: &[ActBlock], out: &mut [f32; ROWS]) {
    assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
    let ones = _mm256_set1_epi16(1);
    for half in 0..2 {
        let mut sums = _mm256_setzero_ps();
        for (group, x) in w.iter().zip(a) {
            let mut rows = _mm256_setzero_si256();
            for k in 0..8 {
                // SAFETY: 32 bytes from offset 64k + 32·half of the 512-byte `qs`.
                let wq = unsafe { _mm256_loadu_si256(group.qs.as_ptr().add(64 * k + 32 * half).cast()) };
                let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(four(&x.qs, 4 * k), wq));
                rows = _mm256_add_epi32(rows, _mm256_madd_epi16(pairs, ones));
            }
            let d = halves(&group.d, 8 * half);
            sums = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), _mm256_cvtepi32_ps(rows), sums);
        }
        store(half, sums, out);
    }
}
