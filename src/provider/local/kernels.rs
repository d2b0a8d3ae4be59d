//! The inner loops of the forward pass: a quantized weight matrix times quantized activations, and f32
//! dot products, each with an AVX2 path chosen at run time and a portable path (the one the tests hold
//! the AVX2 path to, and the one other CPUs run).

use std::ops::Range;

use super::quant::{interleaved, ActBlock, Blocks, Matrix, Q4x8, Q8x8};

/// Whether this CPU runs the AVX2 paths (with FMA and F16C, which every AVX2 CPU has).
pub fn simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Which kernels run: the AVX2 ones only when this CPU has AVX2, FMA and F16C. The field is private, so
/// a value that asks for AVX2 code is a proof that the CPU runs it ([`Kernels::detect`]); safe code
/// cannot make one on a CPU without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernels {
    avx2: bool,
}

impl Kernels {
    /// The fastest kernels this CPU runs.
    pub fn detect() -> Self {
        Self { avx2: simd() }
    }

    /// The portable kernels (every CPU; the reference the AVX2 ones are tested against).
    pub fn portable() -> Self {
        Self { avx2: false }
    }

    /// Whether these are the AVX2 kernels.
    pub fn avx2(self) -> bool {
        self.avx2
    }
}

/// `out[t·n + r − rows.start] = w[r] · x[t]` for the weight rows `rows` and the `tokens` activation rows of
/// `x` (each `w.row_blocks()` blocks), `n` being `rows.len()`.
pub fn matmul(w: &Matrix, x: &[ActBlock], tokens: usize, rows: Range<usize>, out: &mut [f32]) {
    matmul_on(w, x, tokens, rows, out, Kernels::detect())
}

fn matmul_on(w: &Matrix, x: &[ActBlock], tokens: usize, rows: Range<usize>, out: &mut [f32], kernels: Kernels) {
    let n = rows.len();
    let groups = rows.start / GROUP..rows.end.div_ceil(GROUP);
    matmul_groups(w, x, tokens, groups, kernels, &mut |t, g, sums| {
        for (r, sum) in sums.iter().enumerate() {
            let row = GROUP * g + r;
            if rows.contains(&row) {
                out[t * n + row - rows.start] = *sum;
            }
        }
    });
}

/// Rows per interleaved group.
pub const GROUP: usize = 8;

/// Row groups of `w` (the last one padded with zero rows).
pub fn groups(w: &Matrix) -> usize {
    w.rows.div_ceil(GROUP)
}

/// For each row group `g` of `groups` and each of the `tokens` activation rows of `x` (each
/// `w.row_blocks()` blocks): `write(t, g, sums)`, `sums[r]` being row `GROUP·g + r` times token `t`.
/// Group by group, token after token (the group's weights stay in L1 while the tokens use them). A
/// token's sums do not depend on the batch it runs in, nor on the groups asked for.
pub fn matmul_groups(
    w: &Matrix,
    x: &[ActBlock],
    tokens: usize,
    groups: Range<usize>,
    kernels: Kernels,
    write: &mut impl FnMut(usize, usize, &[f32; GROUP]),
) {
    let per_row = w.row_blocks();
    for g in groups {
        for t in 0..tokens {
            let a = &x[t * per_row..(t + 1) * per_row];
            let sums = match &w.blocks {
                Blocks::Q4x8(all) => dot_q4x8(&all[g * per_row..(g + 1) * per_row], a, kernels),
                Blocks::Q8x8(all) => dot_q8x8(&all[g * per_row..(g + 1) * per_row], a, kernels),
            };
            write(t, g, &sums);
        }
    }
}

/// Eight interleaved 4-bit weight rows times one activation row.
fn dot_q4x8(w: &[Q4x8], a: &[ActBlock], kernels: Kernels) -> [f32; 8] {
    #[cfg(target_arch = "x86_64")]
    if kernels.avx2 {
        // SAFETY: `Kernels { avx2: true }` is made only by `Kernels::detect`, on a CPU with AVX2, FMA, F16C.
        return unsafe { avx2::dot_q4x8(w, a) };
    }
    let _ = kernels;
    std::array::from_fn(|r| {
        w.iter()
            .zip(a)
            .map(|(g, a)| {
                let mut sum = 0i32;
                for j in 0..16 {
                    let q = g.qs[interleaved(r, j)];
                    sum += i32::from(q & 0x0F) * i32::from(a.qs[j]) + i32::from(q >> 4) * i32::from(a.qs[j + 16]);
                }
                g.d[r].to_f32() * a.d * sum as f32 + g.m[r].to_f32() * a.s
            })
            .sum()
    })
}

/// Eight interleaved 8-bit weight rows times one activation row.
fn dot_q8x8(w: &[Q8x8], a: &[ActBlock], kernels: Kernels) -> [f32; 8] {
    #[cfg(target_arch = "x86_64")]
    if kernels.avx2 {
        // SAFETY: `Kernels { avx2: true }` is made only by `Kernels::detect`, on a CPU with AVX2, FMA, F16C.
        return unsafe { avx2::dot_q8x8(w, a) };
    }
    let _ = kernels;
    std::array::from_fn(|r| {
        w.iter()
            .zip(a)
            .map(|(g, a)| {
                let sum: i32 = (0..32).map(|j| i32::from(g.qs[interleaved(r, j)]) * i32::from(a.qs[j])).sum();
                g.d[r].to_f32() * a.d * sum as f32
            })
            .sum()
    })
}

/// One head's attention for one query: `scores[p] = q·k_p·scale` over `positions` cached keys, softmax,
/// then `out = Σ scores[p]·v_p`. Key and value `p` start at `p·stride` in `keys` and `values`.
pub struct Attend<'a> {
    pub query: &'a [f32],
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub stride: usize,
    pub positions: usize,
    pub scale: f32,
}

impl Attend<'_> {
    /// Writes the head's output into `out` (`query.len()` values), using `scores` (`positions` values).
    pub fn run(&self, scores: &mut [f32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if simd() {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { avx2::attend(self, scores, out) };
        }
        self.body(scores, out)
    }

    #[inline(always)]
    fn body(&self, scores: &mut [f32], out: &mut [f32]) {
        let hd = self.query.len();
        let scores = &mut scores[..self.positions];
        for (p, s) in scores.iter_mut().enumerate() {
            *s = dot_lanes(self.query, &self.keys[p * self.stride..][..hd]) * self.scale;
        }
        let max = scores.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        let mut sum = 0.0;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        let inverse = 1.0 / sum;
        out.fill(0.0);
        for (p, s) in scores.iter().enumerate() {
            axpy_lanes(out, s * inverse, &self.values[p * self.stride..][..hd]);
        }
    }
}

/// `a · b` in f32.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if simd() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2::dot(a, b) };
    }
    dot_lanes(a, b)
}

/// Eight running sums, so the compiler keeps them in one vector register.
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[inline(always)]
fn axpy_lanes(y: &mut [f32], s: f32, x: &[f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += s * x;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::quant::{ActBlock, Q4x8, Q8x8};

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        super::dot_lanes(a, b)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn attend(attend: &super::Attend, scores: &mut [f32], out: &mut [f32]) {
        attend.body(scores, out)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q4x8(w: &[Q4x8], a: &[ActBlock]) -> [f32; 8] {
        assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
        let (low, ones) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi16(1));
        let (mut sums, mut offsets) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for (group, x) in w.iter().zip(a) {
            // Each i16 pair of lanes 2r, 2r+1 collects row r: 8 products of at most 15·127·2 in all
            // (30,480), inside i16.
            let mut pairs = _mm256_setzero_si256();
            for k in 0..4 {
                // SAFETY: 32 bytes from offset 32k of the 128-byte `qs`; 4 bytes from offsets 4k and
                // 16+4k of the 32-byte `qs`.
                let (packed, first, second) = unsafe {
                    (
                        _mm256_loadu_si256(group.qs.as_ptr().add(32 * k) as *const __m256i),
                        std::ptr::read_unaligned(x.qs.as_ptr().add(4 * k) as *const i32),
                        std::ptr::read_unaligned(x.qs.as_ptr().add(16 + 4 * k) as *const i32),
                    )
                };
                let lo = _mm256_and_si256(packed, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
                pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(lo, _mm256_set1_epi32(first)));
                pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(hi, _mm256_set1_epi32(second)));
            }
            let products = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
            // SAFETY: 16 bytes: the eight f16 scales, and the eight offsets.
            let (d, m) = unsafe {
                (
                    _mm256_cvtph_ps(_mm_loadu_si128(group.d.as_ptr() as *const __m128i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(group.m.as_ptr() as *const __m128i)),
                )
            };
            sums = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), products, sums);
            offsets = _mm256_fmadd_ps(m, _mm256_set1_ps(x.s), offsets);
        }
        let mut out = [0f32; 8];
        // SAFETY: eight floats into an array of eight.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(sums, offsets)) };
        out
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q8x8(w: &[Q8x8], a: &[ActBlock]) -> [f32; 8] {
        assert!(a.len() >= w.len(), "the activation row is shorter than the weight rows");
        let ones = _mm256_set1_epi16(1);
        let mut sums = _mm256_setzero_ps();
        for (group, x) in w.iter().zip(a) {
            // Lane r of the i32 sums collects row r (an i16 pair holds at most 127·127·2, so each
            // step is widened before the next is added).
            let mut rows = _mm256_setzero_si256();
            for k in 0..8 {
                // SAFETY: 32 bytes from offset 32k of the 256-byte `qs`; 4 bytes from offset 4k of 32.
                let (wq, four) = unsafe {
                    (
                        _mm256_loadu_si256(group.qs.as_ptr().add(32 * k) as *const __m256i),
                        std::ptr::read_unaligned(x.qs.as_ptr().add(4 * k) as *const i32),
                    )
                };
                // maddubs multiplies unsigned by signed: |w| times a with w's sign.
                let aq = _mm256_set1_epi32(four);
                let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(aq, wq));
                rows = _mm256_add_epi32(rows, _mm256_madd_epi16(pairs, ones));
            }
            // SAFETY: 16 bytes: the eight f16 scales.
            let d = unsafe { _mm256_cvtph_ps(_mm_loadu_si128(group.d.as_ptr() as *const __m128i)) };
            sums = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d)), _mm256_cvtepi32_ps(rows), sums);
        }
        let mut out = [0f32; 8];
        // SAFETY: eight floats into an array of eight.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sums) };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::quant::{quantize_activations, quantize_weights, Q4Block};
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn q4_matrix(rows: usize, cols: usize) -> Matrix {
        let blocks = (0..rows * cols / 32)
            .map(|i| {
                let v = values(18, i as u32);
                let mut qs = [0u8; 16];
                for (j, q) in qs.iter_mut().enumerate() {
                    *q = ((v[j] + 1.0) * 127.9) as u8;
                }
                Q4Block { d: half::f16::from_f32(v[16].abs() / 10.0 + 0.001), m: half::f16::from_f32(v[17] / 5.0), qs }
            })
            .collect::<Vec<_>>();
        Matrix::from_q4(rows, cols, &blocks)
    }

    fn activations(tokens: usize, cols: usize) -> Vec<ActBlock> {
        let x = values(tokens * cols, 7);
        let mut blocks = vec![ActBlock::default(); tokens * cols / 32];
        quantize_activations(&x, &mut blocks);
        blocks
    }

    /// The dot product of the dequantized weights and activations, in f64.
    fn exact(w: &Matrix, r: usize, a: &[ActBlock]) -> f64 {
        let mut row = vec![0f32; w.cols];
        w.dequantize_row(r, &mut row);
        let x: Vec<f64> = a.iter().flat_map(|b| b.qs.map(|q| f64::from(b.d) * f64::from(q))).collect();
        row.iter().zip(x).map(|(w, x)| f64::from(*w) * x).sum()
    }

    #[test]
    fn both_paths_agree_with_the_exact_sum_for_4_and_8_bit_rows() {
        // 576 columns: 18 blocks; 608: 19; 32: one. 3 rows: one group padded with five zero rows.
        for cols in [576, 608, 32] {
            let (rows, tokens, per_row) = (3, 2, cols / 32);
            let w8 = Matrix::from_q8(rows, cols, &quantize_weights(&values(rows * cols, 3)));
            let a = activations(tokens, cols);
            for w in [&q4_matrix(rows, cols), &w8] {
                for kernels in [Kernels::portable(), Kernels::detect()] {
                    let mut out = vec![0f32; tokens * rows];
                    matmul_on(w, &a, tokens, 0..rows, &mut out, kernels);
                    for t in 0..tokens {
                        for r in 0..rows {
                            let want = exact(w, r, &a[t * per_row..(t + 1) * per_row]);
                            let got = f64::from(out[t * rows + r]);
                            assert!(
                                (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                                "{cols} cols, row {r}, {kernels:?}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_token_gets_the_same_bits_alone_as_in_a_batch_and_in_any_row_range() {
        let (rows, cols, tokens) = (16, 608, 5);
        let w4 = q4_matrix(rows, cols);
        let w8 = Matrix::from_q8(rows, cols, &quantize_weights(&values(rows * cols, 5)));
        let a = activations(tokens, cols);
        for w in [&w4, &w8] {
            for kernels in [Kernels::portable(), Kernels::detect()] {
                let mut batch = vec![0f32; tokens * rows];
                matmul_on(w, &a, tokens, 0..rows, &mut batch, kernels);
                for t in 0..tokens {
                    let at = &a[t * 19..(t + 1) * 19];
                    let mut one = vec![0f32; rows];
                    matmul_on(w, at, 1, 0..rows, &mut one, kernels);
                    assert_eq!(one, batch[t * rows..(t + 1) * rows], "token {t}: the same bits alone as in a batch");
                    for (r, got) in one.iter().enumerate() {
                        let want = exact(w, r, at);
                        assert!((f64::from(*got) - want).abs() < 1e-3 * (1.0 + want.abs()), "row {r}: {got} vs {want}");
                    }
                    // A range that cuts groups.
                    let mut part = vec![0f32; 7];
                    matmul_on(w, at, 1, 5..12, &mut part, kernels);
                    assert_eq!(part, one[5..12]);
                }
            }
        }
    }

    #[test]
    fn f32_dot_matches_a_plain_loop() {
        for n in [64, 67, 3] {
            let (a, b) = (values(n, 1), values(n, 2));
            let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - want).abs() < 1e-4);
        }
    }

    #[test]
    fn attention_is_a_softmax_weighted_sum_of_values() {
        let (hd, stride, positions) = (64, 192, 5);
        let query = values(hd, 11);
        let (keys, vals) = (values(stride * positions, 12), values(stride * positions, 13));
        let mut scores = vec![0f32; positions];
        let mut out = vec![0f32; hd];
        Attend { query: &query, keys: &keys, values: &vals, stride, positions, scale: 0.125 }
            .run(&mut scores, &mut out);
        let raw: Vec<f64> = (0..positions)
            .map(|p| (0..hd).map(|i| f64::from(query[i]) * f64::from(keys[p * stride + i])).sum::<f64>() * 0.125)
            .collect();
        let max = raw.iter().cloned().fold(f64::MIN, f64::max);
        let weights: Vec<f64> = raw.iter().map(|r| (r - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        for i in 0..hd {
            let want: f64 = (0..positions).map(|p| weights[p] / total * f64::from(vals[p * stride + i])).sum();
            assert!((f64::from(out[i]) - want).abs() < 1e-5, "{i}: {} vs {want}", out[i]);
        }
    }
}
