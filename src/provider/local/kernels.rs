//! The inner loops of the forward pass: a quantized weight matrix times quantized activations, and f32
//! dot products, each with an AVX2 path chosen at run time and a portable path (the one the tests hold
//! the AVX2 path to, and the one other CPUs run).

use std::ops::Range;

use super::quant::{ActBlock, Blocks, Matrix, Q4Block, Q4x8, Q8Block, Q8x8};

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

/// `out[t·n + r − rows.start] = w[r] · x[t]` for the weight rows `rows` and the `tokens` activation rows of
/// `x` (each `w.row_blocks()` blocks), `n` being `rows.len()`.
pub fn matmul(w: &Matrix, x: &[ActBlock], tokens: usize, rows: Range<usize>, out: &mut [f32]) {
    let simd = simd();
    let per_row = w.row_blocks();
    match &w.blocks {
        Blocks::Q4x8(groups) => grouped(groups, per_row, x, tokens, rows, out, |w, a| dot_q4x8(w, a, simd)),
        Blocks::Q8x8(groups) => grouped(groups, per_row, x, tokens, rows, out, |w, a| dot_q8x8(w, a, simd)),
        Blocks::Q4(blocks) if tokens == 1 => {
            gemv(blocks, per_row, x, rows, out, |w, a| dot_q4(w, a, simd), |w, a| rows4_q4(w, a, simd))
        }
        Blocks::Q8(blocks) if tokens == 1 => {
            gemv(blocks, per_row, x, rows, out, |w, a| dot_q8(w, a, simd), |w, a| rows4_q8(w, a, simd))
        }
        Blocks::Q4(blocks) => {
            run(blocks, per_row, x, tokens, rows, out, |w, a| dot_q4(w, a, simd), |w, a| dot_q4_x4(w, a, simd))
        }
        Blocks::Q8(blocks) => {
            run(blocks, per_row, x, tokens, rows, out, |w, a| dot_q8(w, a, simd), |w, a| dot_q8_x4(w, a, simd))
        }
    }
}

/// Rows in groups of eight: each group's eight sums at once, token after token (the group's weights stay
/// in L1 while the tokens use them).
#[inline(always)]
fn grouped<G>(
    groups: &[G],
    per_row: usize,
    x: &[ActBlock],
    tokens: usize,
    rows: Range<usize>,
    out: &mut [f32],
    dot8: impl Fn(&[G], &[ActBlock]) -> [f32; 8],
) {
    let n = rows.len();
    for g in rows.start / 8..rows.end.div_ceil(8) {
        let group = &groups[g * per_row..(g + 1) * per_row];
        for t in 0..tokens {
            let sums = dot8(group, &x[t * per_row..(t + 1) * per_row]);
            for (r, sum) in sums.into_iter().enumerate() {
                if rows.contains(&(8 * g + r)) {
                    out[t * n + 8 * g + r - rows.start] = sum;
                }
            }
        }
    }
}

/// Eight interleaved 4-bit weight rows times one activation row.
pub fn dot_q4x8(w: &[Q4x8], a: &[ActBlock], simd: bool) -> [f32; 8] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q4x8(w, a) };
    }
    let _ = simd;
    std::array::from_fn(|r| {
        let rows: Vec<Q4Block> = w.iter().map(|g| g.row(r)).collect();
        portable_dot_q4(&rows, a)
    })
}

/// Eight interleaved 8-bit weight rows times one activation row.
pub fn dot_q8x8(w: &[Q8x8], a: &[ActBlock], simd: bool) -> [f32; 8] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q8x8(w, a) };
    }
    let _ = simd;
    std::array::from_fn(|r| {
        let rows: Vec<Q8Block> = w.iter().map(|g| g.row(r)).collect();
        portable_dot_q8(&rows, a)
    })
}

/// One token: four weight rows at a time.
#[inline(always)]
fn gemv<B>(
    blocks: &[B],
    per_row: usize,
    x: &[ActBlock],
    rows: Range<usize>,
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock]) -> f32,
    dot4: impl Fn([&[B]; 4], &[ActBlock]) -> [f32; 4],
) {
    let x = &x[..per_row];
    let row = |r: usize| &blocks[r * per_row..(r + 1) * per_row];
    let (start, n) = (rows.start, rows.len());
    let quads = n / 4 * 4;
    for j in (0..quads).step_by(4) {
        let r = start + j;
        out[j..j + 4].copy_from_slice(&dot4([row(r), row(r + 1), row(r + 2), row(r + 3)], x));
    }
    for (j, out) in out.iter_mut().enumerate().take(n).skip(quads) {
        *out = dot(row(start + j), x);
    }
}

/// Weight row by weight row (each read once, from memory, and kept in L1 while every token uses it),
/// four tokens at a time.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run<B>(
    blocks: &[B],
    per_row: usize,
    x: &[ActBlock],
    tokens: usize,
    rows: Range<usize>,
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock]) -> f32,
    dot4: impl Fn(&[B], [&[ActBlock]; 4]) -> [f32; 4],
) {
    let n = rows.len();
    let token = |t: usize| &x[t * per_row..(t + 1) * per_row];
    for (j, r) in rows.enumerate() {
        let row = &blocks[r * per_row..(r + 1) * per_row];
        let mut t = 0;
        while t + 4 <= tokens {
            let sums = dot4(row, [token(t), token(t + 1), token(t + 2), token(t + 3)]);
            for (i, sum) in sums.into_iter().enumerate() {
                out[(t + i) * n + j] = sum;
            }
            t += 4;
        }
        for t in t..tokens {
            out[t * n + j] = dot(row, token(t));
        }
    }
}

/// One 4-bit weight row times one activation row.
pub fn dot_q4(w: &[Q4Block], a: &[ActBlock], simd: bool) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q4(w, a) };
    }
    let _ = simd;
    portable_dot_q4(w, a)
}

/// One 8-bit weight row times one activation row.
pub fn dot_q8(w: &[Q8Block], a: &[ActBlock], simd: bool) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q8(w, a) };
    }
    let _ = simd;
    portable_dot_q8(w, a)
}

/// One 4-bit weight row times four activation rows.
pub fn dot_q4_x4(w: &[Q4Block], a: [&[ActBlock]; 4], simd: bool) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q4_x4(w, a) };
    }
    a.map(|a| portable_dot_q4(w, a))
}

/// One 8-bit weight row times four activation rows.
pub fn dot_q8_x4(w: &[Q8Block], a: [&[ActBlock]; 4], simd: bool) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::dot_q8_x4(w, a) };
    }
    a.map(|a| portable_dot_q8(w, a))
}

/// Four 4-bit weight rows times one activation row.
pub fn rows4_q4(w: [&[Q4Block]; 4], a: &[ActBlock], simd: bool) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::rows4_q4(w, a) };
    }
    w.map(|w| portable_dot_q4(w, a))
}

/// Four 8-bit weight rows times one activation row.
pub fn rows4_q8(w: [&[Q8Block]; 4], a: &[ActBlock], simd: bool) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only when the CPU has AVX2, FMA and F16C.
        return unsafe { avx2::rows4_q8(w, a) };
    }
    w.map(|w| portable_dot_q8(w, a))
}

pub fn portable_dot_q4(w: &[Q4Block], a: &[ActBlock]) -> f32 {
    w.iter()
        .zip(a)
        .map(|(w, a)| {
            let mut sum = 0i32;
            for (j, q) in w.qs.iter().enumerate() {
                sum += i32::from(q & 0x0F) * i32::from(a.qs[j]) + i32::from(q >> 4) * i32::from(a.qs[j + 16]);
            }
            w.d.to_f32() * a.d * sum as f32 + w.m.to_f32() * a.s
        })
        .sum()
}

pub fn portable_dot_q8(w: &[Q8Block], a: &[ActBlock]) -> f32 {
    w.iter()
        .zip(a)
        .map(|(w, a)| {
            let sum: i32 = w.qs.iter().zip(a.qs).map(|(x, y)| i32::from(*x) * i32::from(y)).sum();
            w.d.to_f32() * a.d * sum as f32
        })
        .sum()
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

    use super::super::quant::{ActBlock, Q4Block, Q4x8, Q8Block, Q8x8};

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        super::dot_lanes(a, b)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn attend(attend: &super::Attend, scores: &mut [f32], out: &mut [f32]) {
        attend.body(scores, out)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q4(w: &[Q4Block], a: &[ActBlock]) -> f32 {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { dot_n(w, [a])[0] }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q4_x4(w: &[Q4Block], a: [&[ActBlock]; 4]) -> [f32; 4] {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { dot_n(w, a) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn rows4_q4(w: [&[Q4Block]; 4], a: &[ActBlock]) -> [f32; 4] {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { rows_n(w, a) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn rows4_q8(w: [&[Q8Block]; 4], a: &[ActBlock]) -> [f32; 4] {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { rows_n(w, a) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q8(w: &[Q8Block], a: &[ActBlock]) -> f32 {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { dot_n(w, [a])[0] }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn dot_q8_x4(w: &[Q8Block], a: [&[ActBlock]; 4]) -> [f32; 4] {
        // SAFETY: this function runs only with AVX2, FMA and F16C.
        unsafe { dot_n(w, a) }
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

    /// A weight block as the dot products read it.
    trait Block {
        /// The block's bytes in registers, ready for any number of activation blocks.
        type Ready: Copy;
        /// # Safety
        /// F16C only.
        unsafe fn scale(&self) -> f32;
        /// The part that does not depend on the quantized products (4-bit offsets).
        /// # Safety
        /// F16C only.
        unsafe fn offset(&self, a: &ActBlock) -> f32;
        /// # Safety
        /// AVX2 only.
        unsafe fn ready(&self) -> Self::Ready;
        /// The eight partial sums of `q_w·q_a`, as floats.
        /// # Safety
        /// AVX2 only.
        unsafe fn products(ready: Self::Ready, a: &ActBlock) -> __m256;
    }

    impl Block for Q4Block {
        type Ready = __m256i;
        #[inline(always)]
        unsafe fn scale(&self) -> f32 {
            unsafe { half(self.d.to_bits()) }
        }
        #[inline(always)]
        unsafe fn offset(&self, a: &ActBlock) -> f32 {
            unsafe { half(self.m.to_bits()) * a.s }
        }
        #[inline(always)]
        unsafe fn ready(&self) -> __m256i {
            // Low nibbles are values 0..16, high nibbles 16..32.
            unsafe {
                let packed = _mm_loadu_si128(self.qs.as_ptr() as *const __m128i);
                _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F))
            }
        }
        #[inline(always)]
        unsafe fn products(nibbles: __m256i, a: &ActBlock) -> __m256 {
            unsafe {
                let aq = _mm256_loadu_si256(a.qs.as_ptr() as *const __m256i);
                let pairs = _mm256_maddubs_epi16(nibbles, aq);
                _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
            }
        }
    }

    impl Block for Q8Block {
        type Ready = (__m256i, __m256i);
        #[inline(always)]
        unsafe fn scale(&self) -> f32 {
            unsafe { half(self.d.to_bits()) }
        }
        #[inline(always)]
        unsafe fn offset(&self, _: &ActBlock) -> f32 {
            0.0
        }
        #[inline(always)]
        unsafe fn ready(&self) -> (__m256i, __m256i) {
            // maddubs multiplies unsigned by signed: |w|, and w to sign the activations with.
            unsafe {
                let wq = _mm256_loadu_si256(self.qs.as_ptr() as *const __m256i);
                (_mm256_sign_epi8(wq, wq), wq)
            }
        }
        #[inline(always)]
        unsafe fn products((magnitude, signs): (__m256i, __m256i), a: &ActBlock) -> __m256 {
            unsafe {
                let aq = _mm256_loadu_si256(a.qs.as_ptr() as *const __m256i);
                let pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(aq, signs));
                _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
            }
        }
    }

    /// An f16 (its bits) as f32, by F16C.
    #[inline(always)]
    unsafe fn half(bits: u16) -> f32 {
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(bits)))) }
    }

    #[inline(always)]
    unsafe fn sum8(v: __m256) -> f32 {
        unsafe {
            let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
            _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)))
        }
    }

    /// One weight row times `N` activation rows, each weight block made ready once for all `N`. Every
    /// row's sums are added in the same order whatever `N` is, so a token's numbers do not depend on
    /// the batch it runs in.
    #[inline(always)]
    unsafe fn dot_n<B: Block, const N: usize>(w: &[B], a: [&[ActBlock]; N]) -> [f32; N] {
        let len = w.len();
        for row in &a {
            assert!(row.len() >= len, "an activation row is shorter than the weight row");
        }
        unsafe {
            // Two accumulators per row, so consecutive blocks do not wait on each other's add.
            let mut even = [_mm256_setzero_ps(); N];
            let mut odd = [_mm256_setzero_ps(); N];
            let mut offsets = [0f32; N];
            if len % 2 == 1 {
                let (b, last) = (&w[len - 1], len - 1);
                let ready = b.ready();
                for t in 0..N {
                    let x = &a[t][last];
                    even[t] = _mm256_mul_ps(_mm256_set1_ps(b.scale() * x.d), B::products(ready, x));
                    offsets[t] += b.offset(x);
                }
            }
            for i in (0..len - len % 2).step_by(2) {
                let (b0, b1) = (&w[i], &w[i + 1]);
                let (r0, r1) = (b0.ready(), b1.ready());
                for t in 0..N {
                    let (x0, x1) = (&a[t][i], &a[t][i + 1]);
                    even[t] = _mm256_fmadd_ps(_mm256_set1_ps(b0.scale() * x0.d), B::products(r0, x0), even[t]);
                    odd[t] = _mm256_fmadd_ps(_mm256_set1_ps(b1.scale() * x1.d), B::products(r1, x1), odd[t]);
                    offsets[t] += b0.offset(x0) + b1.offset(x1);
                }
            }
            let mut out = [0f32; N];
            for t in 0..N {
                out[t] = sum8(_mm256_add_ps(even[t], odd[t])) + offsets[t];
            }
            out
        }
    }

    /// `N` weight rows times one activation row (generating a token: `N` streams of weights in flight).
    /// Each row's sums are added in the same order as in [`dot_n`].
    #[inline(always)]
    unsafe fn rows_n<B: Block, const N: usize>(w: [&[B]; N], a: &[ActBlock]) -> [f32; N] {
        let len = a.len();
        for row in &w {
            assert!(row.len() == len, "a weight row and the activation row differ in length");
        }
        unsafe {
            let mut even = [_mm256_setzero_ps(); N];
            let mut odd = [_mm256_setzero_ps(); N];
            let mut offsets = [0f32; N];
            if len % 2 == 1 {
                let (x, last) = (&a[len - 1], len - 1);
                for r in 0..N {
                    let b = &w[r][last];
                    even[r] = _mm256_mul_ps(_mm256_set1_ps(b.scale() * x.d), B::products(b.ready(), x));
                    offsets[r] += b.offset(x);
                }
            }
            for i in (0..len - len % 2).step_by(2) {
                let (x0, x1) = (&a[i], &a[i + 1]);
                for r in 0..N {
                    let (b0, b1) = (&w[r][i], &w[r][i + 1]);
                    even[r] = _mm256_fmadd_ps(_mm256_set1_ps(b0.scale() * x0.d), B::products(b0.ready(), x0), even[r]);
                    odd[r] = _mm256_fmadd_ps(_mm256_set1_ps(b1.scale() * x1.d), B::products(b1.ready(), x1), odd[r]);
                    offsets[r] += b0.offset(x0) + b1.offset(x1);
                }
            }
            let mut out = [0f32; N];
            for r in 0..N {
                out[r] = sum8(_mm256_add_ps(even[r], odd[r])) + offsets[r];
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::quant::{quantize_activations, quantize_weights};
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
            .collect();
        Matrix { rows, cols, blocks: Blocks::Q4(blocks) }
    }

    /// The same rows, interleaved in groups of eight.
    fn grouped(m: &Matrix) -> Matrix {
        let Blocks::Q4(blocks) = &m.blocks else { unreachable!() };
        let per_row = m.row_blocks();
        let groups = (0..m.rows / 8)
            .flat_map(|g| (0..per_row).map(move |b| (g, b)))
            .map(|(g, b)| Q4x8::new(std::array::from_fn(|r| blocks[(8 * g + r) * per_row + b])))
            .collect();
        Matrix { rows: m.rows, cols: m.cols, blocks: Blocks::Q4x8(groups) }
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
    fn both_paths_of_the_4_bit_dot_product_agree_with_the_exact_sum() {
        // 576 columns: 18 blocks, an even count; 608: 19, an odd one.
        for cols in [576, 608, 32] {
            let w = q4_matrix(3, cols);
            let a = activations(2, cols);
            let per_row = cols / 32;
            let Blocks::Q4(blocks) = &w.blocks else { unreachable!() };
            for r in 0..3 {
                for t in 0..2 {
                    let (wr, ar) = (&blocks[r * per_row..(r + 1) * per_row], &a[t * per_row..(t + 1) * per_row]);
                    let want = exact(&w, r, ar);
                    for simd in [false, simd()] {
                        let got = f64::from(dot_q4(wr, ar, simd));
                        assert!(
                            (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                            "{cols} cols, simd {simd}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn both_paths_of_the_8_bit_dot_product_agree_with_the_exact_sum() {
        for cols in [576, 608] {
            let w = Matrix { rows: 2, cols, blocks: Blocks::Q8(quantize_weights(&values(2 * cols, 3))) };
            let a = activations(1, cols);
            let Blocks::Q8(blocks) = &w.blocks else { unreachable!() };
            let per_row = cols / 32;
            for r in 0..2 {
                let want = exact(&w, r, &a);
                for simd in [false, simd()] {
                    let got = f64::from(dot_q8(&blocks[r * per_row..(r + 1) * per_row], &a, simd));
                    assert!(
                        (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                        "{cols} cols, simd {simd}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn matmul_lays_out_token_rows_for_a_range_of_weight_rows() {
        let (rows, cols, tokens) = (6, 64, 3);
        let w = q4_matrix(rows, cols);
        let a = activations(tokens, cols);
        let mut out = vec![0f32; tokens * 4];
        matmul(&w, &a, tokens, 1..5, &mut out);
        for t in 0..tokens {
            for (j, r) in (1..5).enumerate() {
                let want = exact(&w, r, &a[t * 2..(t + 1) * 2]);
                assert!((f64::from(out[t * 4 + j]) - want).abs() < 1e-3 * (1.0 + want.abs()));
            }
        }
    }

    #[test]
    fn four_tokens_or_rows_at_once_give_the_same_bits_as_one_at_a_time() {
        let (rows, cols, tokens) = (5, 608, 6);
        let w = q4_matrix(rows, cols);
        let w8 = Matrix { rows, cols, blocks: Blocks::Q8(quantize_weights(&values(rows * cols, 5))) };
        let a = activations(tokens, cols);
        for w in [&w, &w8] {
            let mut batch = vec![0f32; tokens * rows];
            matmul(w, &a, tokens, 0..rows, &mut batch);
            for t in 0..tokens {
                let mut one = vec![0f32; rows];
                matmul(w, &a[t * 19..(t + 1) * 19], 1, 0..rows, &mut one);
                assert_eq!(one, batch[t * rows..(t + 1) * rows]);
                // And one weight row at a time (the rows left over after groups of four).
                for (r, want) in one.iter().enumerate() {
                    let mut single = [0f32];
                    matmul(w, &a[t * 19..(t + 1) * 19], 1, r..r + 1, &mut single);
                    assert_eq!(single[0], *want);
                }
            }
        }
    }

    #[test]
    fn interleaved_rows_give_the_plain_rows_sums_whatever_the_batch() {
        let (rows, cols, tokens) = (16, 608, 5);
        let plain = q4_matrix(rows, cols);
        let w = grouped(&plain);
        let a = activations(tokens, cols);
        let mut batch = vec![0f32; tokens * rows];
        matmul(&w, &a, tokens, 0..rows, &mut batch);
        for t in 0..tokens {
            let at = &a[t * 19..(t + 1) * 19];
            let mut one = vec![0f32; rows];
            matmul(&w, at, 1, 0..rows, &mut one);
            assert_eq!(one, batch[t * rows..(t + 1) * rows], "token {t}: the same bits alone as in a batch");
            for (r, got) in one.iter().enumerate() {
                let want = exact(&plain, r, at);
                assert!((f64::from(*got) - want).abs() < 1e-3 * (1.0 + want.abs()), "row {r}: {got} vs {want}");
            }
            // A range that cuts groups.
            let mut part = vec![0f32; 7];
            matmul(&w, at, 1, 5..12, &mut part);
            assert_eq!(part, one[5..12]);
        }
        // 8-bit rows interleaved the same way.
        let w8 = Matrix { rows, cols, blocks: Blocks::Q8(quantize_weights(&values(rows * cols, 5))) };
        let Blocks::Q8(blocks8) = &w8.blocks else { unreachable!() };
        let groups8: Vec<Q8x8> = (0..rows / 8)
            .flat_map(|g| (0..19).map(move |b| (g, b)))
            .map(|(g, b)| Q8x8::new(std::array::from_fn(|r| blocks8[(8 * g + r) * 19 + b])))
            .collect();
        let g8 = Matrix { rows, cols, blocks: Blocks::Q8x8(groups8.clone()) };
        let mut batch8 = vec![0f32; tokens * rows];
        matmul(&g8, &a, tokens, 0..rows, &mut batch8);
        for t in 0..tokens {
            let at = &a[t * 19..(t + 1) * 19];
            for r in 0..rows {
                let want = exact(&w8, r, at);
                let got = f64::from(batch8[t * rows + r]);
                assert!((got - want).abs() < 1e-3 * (1.0 + want.abs()), "8-bit row {r}: {got} vs {want}");
            }
            let portable = dot_q8x8(&groups8[..19], at, false);
            for (r, got) in portable.iter().enumerate() {
                let want = exact(&w8, r, at);
                assert!((f64::from(*got) - want).abs() < 1e-3 * (1.0 + want.abs()));
            }
        }
        // The portable path agrees with the plain rows too.
        let Blocks::Q4x8(groups) = &w.blocks else { unreachable!() };
        let portable = dot_q4x8(&groups[..19], &a[..19], false);
        for (r, got) in portable.iter().enumerate() {
            let want = exact(&plain, r, &a[..19]);
            assert!((f64::from(*got) - want).abs() < 1e-3 * (1.0 + want.abs()));
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
