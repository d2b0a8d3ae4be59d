//! The CPU dispatch and the inner loops of the forward pass. Every vector kernel (a quantized weight
//! matrix times quantized activations, f32 dot products, activation quantizing, SiLU, attention's
//! three steps) comes in three paths: AVX-512 VNNI ([`super::avx512`]) and AVX2 ([`super::avx2`]),
//! both up to four tokens per pass over the weights, and a portable one (other CPUs, and the reference the tests
//! hold the others to). Each path's kernels are listed once, in its table; [`Kernels`] is the table
//! chosen once, at load, and every call site calls through it. All three make each sum by the same
//! arithmetic — exact integer block sums, then `fma(d_w·d_a, Σ, sums)` block after block (and
//! `fma(m_w, s_a, offsets)` for 4-bit offsets; the K-quant forms', per 256 values, and Q5_0's in
//! [`super::kquant_portable`]) — so they give the same bits. Those forms have portable and AVX2
//! kernels ([`super::avx2_k`]); the AVX-512 table runs the AVX2 ones.

use std::ops::Range;

use super::attention::Heads;
use super::kquant::{KActBlock, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16};
use super::quant::{interleaved, ActBlock, Blocks, Matrix, Q4x16, Q8x16, ROWS};

/// The matrix kernels' paths, slowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Portable,
    Avx2,
    Avx512,
}

/// Sixteen interleaved weight rows times `n` (1 to [`TILE`]) activation rows of `a` (blocks of 32
/// values, or of 256 for the K forms), each `per_row` blocks, into `out[..n]`.
type Matmul<W, A = ActBlock> = unsafe fn(&[W], &[A], usize, usize, &mut [[f32; ROWS]; TILE]);

/// Attention's three steps ([`Heads::scores`], [`Heads::softmax`], [`Heads::weigh`]).
type Scores = unsafe fn(&Heads<'_>, &[f32], Range<usize>, &mut [f32]);
type Softmax = unsafe fn(&Heads<'_>, &mut [f32], &mut [f32]);
type Weigh = unsafe fn(&Heads<'_>, &[f32], &[f32], Range<usize>, &mut [f32]);

/// One path's kernels: every vector kernel the forward pass calls, one entry each. The three tables
/// below are the only place a path is chosen for a kernel; an entry may use its path's CPU features,
/// which is why a table is reached only through [`Kernels`].
struct Table {
    level: Level,
    q4: Matmul<Q4x16>,
    q8: Matmul<Q8x16>,
    /// The forms of [`super::kquant`] (portable and AVX2 kernels; AVX-512 runs the AVX2 ones).
    q5_0: Matmul<Q5x16>,
    q4_k: Matmul<Q4Kx16, KActBlock>,
    q5_k: Matmul<Q5Kx16, KActBlock>,
    q6_k: Matmul<Q6Kx16, KActBlock>,
    /// `a · b` in f32.
    dot: unsafe fn(&[f32], &[f32]) -> f32,
    /// Activations (a multiple of 32 values) into one block per 32 values.
    quantize: unsafe fn(&[f32], &mut [ActBlock]),
    /// Activations (a multiple of 256 values) into one K-form block per 256 values.
    quantize_k: unsafe fn(&[f32], &mut [KActBlock]),
    /// `gate[i] ← silu(gate[i])·up[i]`.
    silu_mul: unsafe fn(&mut [f32], &[f32]),
    /// Attention's three steps.
    scores: Scores,
    softmax: Softmax,
    weigh: Weigh,
}

/// Every CPU: the reference arithmetic the other paths are held to, bit for bit.
static PORTABLE: Table = Table {
    level: Level::Portable,
    q4: portable_q4,
    q8: portable_q8,
    q5_0: |w, a, per_row, n, out| one_at_a_time(super::kquant_portable::q5_0, w, a, per_row, n, out),
    q4_k: |w, a, per_row, n, out| one_at_a_time(super::kquant_portable::q4_k, w, a, per_row, n, out),
    q5_k: |w, a, per_row, n, out| one_at_a_time(super::kquant_portable::q5_k, w, a, per_row, n, out),
    q6_k: |w, a, per_row, n, out| one_at_a_time(super::kquant_portable::q6_k, w, a, per_row, n, out),
    dot: dot_lanes,
    quantize: super::quant::quantize_lanes,
    quantize_k: super::kquant::quantize_k_lanes,
    silu_mul: super::math::silu_mul_lanes,
    scores: super::attention::portable::scores,
    softmax: super::attention::portable::softmax,
    weigh: super::attention::portable::weigh,
};

/// AVX2 with FMA and F16C: the reference arithmetic compiled for them, up to four tokens per pass over
/// the weights.
#[cfg(target_arch = "x86_64")]
static AVX2: Table = Table {
    level: Level::Avx2,
    q4: avx2_q4,
    q8: avx2_q8,
    q5_0: avx2_q5_0,
    q4_k: avx2_q4_k,
    q5_k: avx2_q5_k,
    q6_k: avx2_q6_k,
    dot: avx2_dot,
    quantize: super::quant::quantize_avx2,
    quantize_k: super::kquant::quantize_k_avx2,
    silu_mul: super::math::avx2::silu_mul,
    scores: super::attention::avx2::scores,
    softmax: super::attention::avx2::softmax,
    weigh: super::attention::avx2::weigh,
};

/// AVX-512 VNNI (F, BW and F16C; AVX2 too): up to four tokens per pass over the weights; attention's
/// AVX-512 shapes, else its AVX2 steps.
#[cfg(target_arch = "x86_64")]
static AVX512: Table = Table {
    level: Level::Avx512,
    q4: avx512_q4,
    q8: avx512_q8,
    // No AVX-512 kernels of these forms yet (none could be run here to test them): every AVX-512
    // CPU runs AVX2 (`Kernels::at` checks both).
    q5_0: avx2_q5_0,
    q4_k: avx2_q4_k,
    q5_k: avx2_q5_k,
    q6_k: avx2_q6_k,
    dot: avx2_dot,
    quantize: super::avx512::quantize,
    quantize_k: super::kquant::quantize_k_avx2,
    silu_mul: super::math::avx512::silu_mul,
    scores: super::attention_avx512::scores_shaped,
    softmax: super::attention_avx512::softmax,
    weigh: super::attention_avx512::weigh_shaped,
};

/// Which kernels run: one path's table, chosen once ([`Kernels::detect`] at load). The field is
/// private, so a value that holds the AVX2 or AVX-512 table is a proof that the CPU runs it
/// ([`Kernels::at`]); safe code cannot make one on a CPU without it.
#[derive(Clone, Copy)]
pub struct Kernels {
    table: &'static Table,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernels({:?})", self.table.level)
    }
}

impl PartialEq for Kernels {
    fn eq(&self, other: &Self) -> bool {
        self.table.level == other.table.level
    }
}

impl Eq for Kernels {}

impl Kernels {
    /// The fastest kernels this CPU runs.
    pub fn detect() -> Self {
        [Level::Avx512, Level::Avx2].into_iter().find_map(Self::at).unwrap_or(Self::portable())
    }

    /// The kernels of `level`, if this CPU runs them.
    pub fn at(level: Level) -> Option<Self> {
        let table: &'static Table = match level {
            Level::Portable => &PORTABLE,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => (super::avx2::available()).then_some(&AVX2)?,
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => (super::avx512::available() && super::avx2::available()).then_some(&AVX512)?,
            #[cfg(not(target_arch = "x86_64"))]
            _ => return None,
        };
        Some(Self { table })
    }

    /// The portable kernels (every CPU; the reference the others are tested against).
    pub fn portable() -> Self {
        Self { table: &PORTABLE }
    }

    pub fn level(self) -> Level {
        self.table.level
    }

    /// `a · b` in f32.
    pub fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        // SAFETY (each call below): a table is held only on a CPU that runs its path (`Kernels::at`).
        unsafe { (self.table.dot)(a, b) }
    }

    /// Quantizes activations `x` (a multiple of 32 values) into `out`, one block per 32 values.
    pub fn quantize(self, x: &[f32], out: &mut [ActBlock]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.quantize)(x, out) }
    }

    /// Quantizes activations `x` (a multiple of 256 values) into `out`, one K-form block per 256.
    pub fn quantize_k(self, x: &[f32], out: &mut [KActBlock]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.quantize_k)(x, out) }
    }

    /// `gate[i] ← silu(gate[i])·up[i]`, i.e. `g / (1 + e^−g) · u`.
    pub fn silu_mul(self, gate: &mut [f32], up: &[f32]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.silu_mul)(gate, up) }
    }

    /// [`Heads::scores`]' kernel (its buffers checked there).
    pub(super) fn scores(self, heads: &Heads<'_>, q: &[f32], tiles: Range<usize>, out: &mut [f32]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.scores)(heads, q, tiles, out) }
    }

    /// [`Heads::softmax`]' kernel (its buffers checked there).
    pub(super) fn softmax(self, heads: &Heads<'_>, scores: &mut [f32], inverse: &mut [f32]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.softmax)(heads, scores, inverse) }
    }

    /// [`Heads::weigh`]' kernel (its buffers checked there).
    pub(super) fn weigh(self, heads: &Heads<'_>, w: &[f32], inverse: &[f32], dims: Range<usize>, out: &mut [f32]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.weigh)(heads, w, inverse, dims, out) }
    }
}

/// Row groups of `w` (the last one padded with zero rows).
pub fn groups(w: &Matrix) -> usize {
    w.rows.div_ceil(ROWS)
}

/// Most tokens per pass over a group's weights (the AVX-512 and AVX2 paths; the portable one takes one
/// at a time).
const TILE: usize = 4;

/// Activation rows in the three forms the weights are multiplied by: 8-bit blocks of 32 (`cols / 32`
/// a row, for the 32-value block forms), of 256 (`cols / 256` a row, for the K forms) and f32 values
/// (`cols` a row, for [`Blocks::Dense`]); a form no matrix of the call reads may be empty.
#[derive(Clone, Copy, Default)]
pub struct Activations<'a> {
    pub blocks: &'a [ActBlock],
    pub supers: &'a [KActBlock],
    pub values: &'a [f32],
}

/// For each row group `g` of `groups` and each of the `tokens` activation rows of `x` (each
/// `w.row_blocks()` blocks, or `w.cols` values): `write(t, g, sums)`, `sums[r]` being row `ROWS·g + r` times token `t`.
/// Group by group (the group's weights stay in L1 while the tokens use them). A token's sums do not
/// depend on the batch it runs in, nor on the groups asked for.
pub fn matmul_groups(
    w: &Matrix,
    x: Activations<'_>,
    tokens: usize,
    groups: Range<usize>,
    kernels: Kernels,
    write: &mut impl FnMut(usize, usize, &[f32; ROWS]),
) {
    if let Blocks::Dense(values) = &w.blocks {
        return matmul_dense(values, w.rows, w.cols, x.values, tokens, groups, kernels, write);
    }
    // A row of activations is as many blocks as a row of weights has units.
    let units = w.row_units();
    let mut out = [[0f32; ROWS]; TILE];
    for g in groups {
        let mut t = 0;
        while t < tokens {
            let n = (tokens - t).min(TILE);
            let (table, group, a) = (kernels.table, g * units..(g + 1) * units, t * units..(t + n) * units);
            let (blocks, supers) = (|| &x.blocks[a.clone()], || &x.supers[a.clone()]);
            // SAFETY: as in `Kernels::dot`.
            unsafe {
                match &w.blocks {
                    Blocks::Q4x16(all) => (table.q4)(&all[group], blocks(), units, n, &mut out),
                    Blocks::Q8x16(all) => (table.q8)(&all[group], blocks(), units, n, &mut out),
                    Blocks::Q5x16(all) => (table.q5_0)(&all[group], blocks(), units, n, &mut out),
                    Blocks::Q4Kx16(all) => (table.q4_k)(&all[group], supers(), units, n, &mut out),
                    Blocks::Q5Kx16(all) => (table.q5_k)(&all[group], supers(), units, n, &mut out),
                    Blocks::Q6Kx16(all) => (table.q6_k)(&all[group], supers(), units, n, &mut out),
                    Blocks::Dense(_) => {}
                }
            }
            for (i, sums) in out[..n].iter().enumerate() {
                write(t + i, g, sums);
            }
            t += n;
        }
    }
}

/// [`matmul_groups`] for f32 rows ([`Blocks::Dense`]: `rows × cols` values) times `tokens` f32
/// activation rows of `x` (`cols` each): `sums[r]` the [`Kernels::dot`] of row `ROWS·g + r` and token
/// `t` (0 past the last row).
#[allow(clippy::too_many_arguments)]
fn matmul_dense(
    values: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    tokens: usize,
    groups: Range<usize>,
    kernels: Kernels,
    write: &mut impl FnMut(usize, usize, &[f32; ROWS]),
) {
    for g in groups {
        let live = ROWS.min(rows - ROWS * g);
        for t in 0..tokens {
            let token = &x[t * cols..(t + 1) * cols];
            let mut sums = [0f32; ROWS];
            for (r, sum) in sums[..live].iter_mut().enumerate() {
                *sum = kernels.dot(&values[(ROWS * g + r) * cols..][..cols], token);
            }
            write(t, g, &sums);
        }
    }
}

/// The AVX-512 matrix kernels, `n` tokens in one pass over the weights.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
unsafe fn avx512_q4(w: &[Q4x16], a: &[ActBlock], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
    match n {
        1 => super::avx512::q4::<1>(w, a, per_row, out),
        2 => super::avx512::q4::<2>(w, a, per_row, out),
        3 => super::avx512::q4::<3>(w, a, per_row, out),
        _ => super::avx512::q4::<4>(w, a, per_row, out),
    }
}

/// The same for 8-bit weights.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VNNI and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
unsafe fn avx512_q8(w: &[Q8x16], a: &[ActBlock], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
    match n {
        1 => super::avx512::q8::<1>(w, a, per_row, out),
        2 => super::avx512::q8::<2>(w, a, per_row, out),
        3 => super::avx512::q8::<3>(w, a, per_row, out),
        _ => super::avx512::q8::<4>(w, a, per_row, out),
    }
}

/// The AVX2 matrix kernels, `n` tokens in passes of up to `tile`: each form's fastest of 1 to 4 on a
/// 2-core Zen 3 (CPU time in the kernel during `bench --vs-llama-cpp` prefill). The 4-bit form's four
/// tokens need more than AVX2's sixteen registers; two do not. A token's sums are the same bits
/// whatever the split.
macro_rules! avx2_tiled {
    ($($name:ident: $form:ty, $act:ty => $file:ident::$kernel:ident, $tile:literal;)*) => {$(
        /// # Safety
        /// The CPU has AVX2, FMA and F16C.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn $name(w: &[$form], a: &[$act], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
            let mut t = 0;
            while t < n.min(TILE) {
                let take = (n - t).min($tile);
                let (a, out) = (&a[t * per_row..], &mut out[t..]);
                // SAFETY: the CPU has AVX2, FMA and F16C (this function's contract).
                unsafe {
                    match take {
                        1 => super::$file::$kernel::<1>(w, a, per_row, out),
                        2 => super::$file::$kernel::<2>(w, a, per_row, out),
                        3 => super::$file::$kernel::<3>(w, a, per_row, out),
                        _ => super::$file::$kernel::<4>(w, a, per_row, out),
                    }
                }
                t += take;
            }
        }
    )*};
}

avx2_tiled! {
    avx2_q4: Q4x16, ActBlock => avx2::q4, 2;
    avx2_q8: Q8x16, ActBlock => avx2::q8, 4;
    avx2_q5_0: Q5x16, ActBlock => avx2_k::q5_0, 4;
    avx2_q4_k: Q4Kx16, KActBlock => avx2_k::q4_k, 4;
    avx2_q5_k: Q5Kx16, KActBlock => avx2_k::q5_k, 4;
    avx2_q6_k: Q6Kx16, KActBlock => avx2_k::q6_k, 4;
}

/// A portable kernel of one token (`row`), `n` tokens one at a time.
fn one_at_a_time<W, A>(
    row: fn(&[W], &[A]) -> [f32; ROWS],
    w: &[W],
    a: &[A],
    per_row: usize,
    n: usize,
    out: &mut [[f32; ROWS]; TILE],
) {
    for (t, out) in out[..n].iter_mut().enumerate() {
        *out = row(w, &a[t * per_row..]);
    }
}

/// The portable matrix kernels, one token at a time.
fn portable_q4(w: &[Q4x16], a: &[ActBlock], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
    for (t, out) in out[..n].iter_mut().enumerate() {
        *out = portable_q4_row(w, &a[t * per_row..]);
    }
}

/// The same for 8-bit weights.
fn portable_q8(w: &[Q8x16], a: &[ActBlock], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
    for (t, out) in out[..n].iter_mut().enumerate() {
        *out = portable_q8_row(w, &a[t * per_row..]);
    }
}

/// Sixteen 4-bit rows times one activation row, the reference arithmetic.
fn portable_q4_row(w: &[Q4x16], a: &[ActBlock]) -> [f32; ROWS] {
    std::array::from_fn(|r| {
        let (mut sums, mut offsets) = (0f32, 0f32);
        for (g, a) in w.iter().zip(a) {
            let mut sum = 0i32;
            for j in 0..16 {
                let q = g.qs[interleaved(r, j)];
                sum += i32::from(q & 0x0F) * i32::from(a.qs[j]) + i32::from(q >> 4) * i32::from(a.qs[j + 16]);
            }
            sums = (g.d[r].to_f32() * a.d).mul_add(sum as f32, sums);
            offsets = g.m[r].to_f32().mul_add(a.s, offsets);
        }
        sums + offsets
    })
}

/// Sixteen 8-bit rows times one activation row, the reference arithmetic.
fn portable_q8_row(w: &[Q8x16], a: &[ActBlock]) -> [f32; ROWS] {
    std::array::from_fn(|r| {
        let mut sums = 0f32;
        for (g, a) in w.iter().zip(a) {
            let sum: i32 = (0..32).map(|j| i32::from(g.qs[interleaved(r, j)]) * i32::from(a.qs[j])).sum();
            sums = (g.d[r].to_f32() * a.d).mul_add(sum as f32, sums);
        }
        sums
    })
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

/// [`dot_lanes`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn avx2_dot(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::quant::{Q4Block, Q8Block};
    use super::*;

    /// Deterministic values in [-1, 1) (the local model's kernel tests share them).
    pub(in crate::engine) fn values(n: usize, seed: u32) -> Vec<f32> {
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

    /// Random 4-bit blocks: every byte value, scales and offsets of both signs.
    fn q4_matrix(rows: usize, cols: usize, seed: u32) -> Matrix {
        let blocks = (0..rows * cols / 32)
            .map(|i| {
                let v = values(18, seed.wrapping_mul(7919).wrapping_add(i as u32));
                let qs = std::array::from_fn(|j| ((v[j] + 1.0) * 127.99) as u8);
                Q4Block { d: half::f16::from_f32(v[16] / 10.0), m: half::f16::from_f32(v[17] / 5.0), qs }
            })
            .collect::<Vec<_>>();
        Matrix::from_q4(rows, cols, &blocks)
    }

    /// Random 8-bit blocks, −128 (which a Q8_0 file may hold) and 127 among them.
    fn q8_matrix(rows: usize, cols: usize, seed: u32) -> Matrix {
        let blocks = (0..rows * cols / 32)
            .map(|i| {
                let v = values(33, seed.wrapping_mul(104_729).wrapping_add(i as u32));
                let qs = std::array::from_fn(|j| match (i + j) % 29 {
                    0 => i8::MIN,
                    1 => i8::MAX,
                    _ => (v[j] * 128.0) as i8,
                });
                Q8Block { d: half::f16::from_f32(v[32] / 20.0), qs }
            })
            .collect::<Vec<_>>();
        Matrix::from_q8(rows, cols, &blocks)
    }

    /// Activation rows of `cols` values in both quantized forms (of 256 when `cols` is a multiple).
    struct Acts {
        cols: usize,
        blocks: Vec<ActBlock>,
        supers: Vec<KActBlock>,
    }

    impl Acts {
        /// Tokens `tokens` of them.
        fn rows(&self, tokens: Range<usize>) -> Activations<'_> {
            let (per_block, per_super) = (self.cols / 32, self.cols / 256);
            Activations {
                blocks: &self.blocks[tokens.start * per_block..tokens.end * per_block],
                supers: &self.supers[tokens.start * per_super..tokens.end * per_super],
                values: &[],
            }
        }

        /// Every activation ±127 (the largest products): a block's sign alternating block by block.
        fn largest(&mut self) {
            for (i, b) in self.blocks.iter_mut().enumerate() {
                b.qs = [if i % 2 == 0 { 127 } else { -127 }; 32];
                b.sum = 32 * i32::from(b.qs[0]);
                b.s = b.d * b.sum as f32;
            }
            for (i, b) in self.supers.iter_mut().enumerate() {
                let q: i8 = if i % 2 == 0 { 127 } else { -127 };
                *b = KActBlock {
                    d: b.d,
                    sums: [32 * i16::from(q); 8],
                    bsums: [16 * i16::from(q); 16],
                    qs: [[q; 32]; 8],
                };
            }
        }
    }

    fn activations(tokens: usize, cols: usize, seed: u32) -> Acts {
        let mut x = values(tokens * cols, seed);
        // A zero block and a block of one spike among them; a zero token (every block of it 0).
        let first = 32.min(x.len());
        x[..first].fill(0.0);
        if x.len() >= 64 {
            x[32..64].fill(0.0);
            x[40] = 3.0;
        }
        if tokens > 2 {
            x[2 * cols..3 * cols].fill(0.0);
        }
        let mut blocks = vec![ActBlock::default(); tokens * cols / 32];
        Kernels::detect().quantize(&x, &mut blocks);
        let mut supers = vec![KActBlock::default(); tokens * (cols / 256)];
        if cols.is_multiple_of(256) {
            Kernels::detect().quantize_k(&x, &mut supers);
        }
        Acts { cols, blocks, supers }
    }

    /// `tokens × rows` sums of the row groups `groups` (others left 0).
    fn product(w: &Matrix, a: Activations<'_>, tokens: usize, groups: Range<usize>, kernels: Kernels) -> Vec<f32> {
        let mut out = vec![0f32; tokens * w.rows];
        matmul_groups(w, a, tokens, groups, kernels, &mut |t, g, sums| {
            for (r, sum) in sums.iter().enumerate().filter(|(r, _)| ROWS * g + r < w.rows) {
                out[t * w.rows + ROWS * g + r] = *sum;
            }
        });
        out
    }

    /// [`product`] of all the groups, the `tokens` tokens handed over `batch` at a time (so the
    /// kernels see passes of every size up to `batch`).
    fn in_batches(w: &Matrix, a: &Acts, tokens: usize, batch: usize, kernels: Kernels) -> Vec<f32> {
        (0..tokens)
            .step_by(batch)
            .flat_map(|t| {
                let n = batch.min(tokens - t);
                product(w, a.rows(t..t + n), n, 0..groups(w), kernels)
            })
            .collect()
    }

    /// The dot product of the dequantized weights and token `t`'s activations (in the form `w` is
    /// multiplied by), in f64, and the sum of its products' magnitudes (the scale of f32's rounding).
    fn exact(w: &Matrix, r: usize, a: &Acts, t: usize) -> (f64, f64) {
        let mut row = vec![0f32; w.cols];
        w.dequantize_row(r, &mut row);
        let a = a.rows(t..t + 1);
        let x: Vec<f64> = match w.blocks {
            Blocks::Q4Kx16(_) | Blocks::Q5Kx16(_) | Blocks::Q6Kx16(_) => a
                .supers
                .iter()
                .flat_map(|b| b.qs.as_flattened().iter().map(|q| f64::from(b.d) * f64::from(*q)))
                .collect(),
            _ => a.blocks.iter().flat_map(|b| b.qs.map(|q| f64::from(b.d) * f64::from(q))).collect(),
        };
        let products = row.iter().zip(x).map(|(w, x)| f64::from(*w) * x);
        products.fold((0.0, 0.0), |(sum, size), p| (sum + p, size + p.abs()))
    }

    fn paths() -> Vec<Kernels> {
        let paths: Vec<Kernels> =
            [Level::Portable, Level::Avx2, Level::Avx512].into_iter().filter_map(Kernels::at).collect();
        eprintln!("paths on this CPU: {:?}", paths.iter().map(|k| k.level()).collect::<Vec<_>>());
        paths
    }

    /// Every block form: 4-bit, 8-bit, and those of [`super::super::kquant`] (K forms when `cols` is a
    /// multiple of 256), with random bytes; `full`: every quantized bit set (the largest sums).
    fn matrices(rows: usize, cols: usize, seed: u32, full: bool) -> Vec<Matrix> {
        let mut all = if full { vec![] } else { vec![q4_matrix(rows, cols, seed), q8_matrix(rows, cols, seed)] };
        all.extend(super::super::kquant::tests::random_matrices(rows, cols, seed, full));
        all
    }

    #[test]
    fn every_path_gives_the_portable_bits_and_the_exact_sum() {
        // 35 rows: three groups, the last padded; 32 columns: one block; 608: 19; 256 and 1536: one and
        // six K super-blocks.
        let cases =
            [(32, 1, false), (576, 2, false), (608, 3, false), (1536, 4, false), (256, 5, false), (512, 6, true)];
        let mut forms = std::collections::HashSet::new();
        for (cols, seed, full) in cases {
            let rows = 35;
            for w in matrices(rows, cols, seed, full) {
                forms.insert(std::mem::discriminant(&w.blocks));
                let tokens = 9;
                let mut a = activations(tokens, cols, seed + 10);
                if full {
                    a.largest();
                }
                let want = product(&w, a.rows(0..tokens), tokens, 0..groups(&w), Kernels::portable());
                for t in 0..tokens {
                    for r in 0..rows {
                        let (exact, size) = exact(&w, r, &a, t);
                        let got = f64::from(want[t * rows + r]);
                        assert!(
                            (got - exact).abs() < 1e-4 * (1.0 + exact.abs()) + 2e-5 * size,
                            "{cols} cols, {:?}, token {t}, row {r}: {got} vs {exact}",
                            std::mem::discriminant(&w.blocks)
                        );
                    }
                }
                for kernels in paths() {
                    // Passes of 1 to 4 tokens (9 tokens in batches of 1, 2, 3, 4 and all at once).
                    for batch in [1, 2, 3, 4, tokens] {
                        let got = in_batches(&w, &a, tokens, batch, kernels);
                        let differ = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
                        assert_eq!(differ, None, "{kernels:?}, {cols} cols, batches of {batch}: not the portable bits");
                    }
                }
            }
        }
        assert_eq!(forms.len(), 6, "every block form");
    }

    #[test]
    fn a_token_gets_the_same_bits_alone_as_in_a_batch_and_in_any_group_range() {
        let (rows, tokens) = (48, 7);
        for cols in [608, 768] {
            for w in matrices(rows, cols, 5, false) {
                let a = activations(tokens, cols, 9);
                for kernels in paths() {
                    let batch = product(&w, a.rows(0..tokens), tokens, 0..3, kernels);
                    for size in 2..=4 {
                        let other = in_batches(&w, &a, tokens, size, kernels);
                        assert_eq!(other, batch, "{kernels:?}: batches of {size} as one of {tokens}");
                    }
                    for t in 0..tokens {
                        let token = a.rows(t..t + 1);
                        let one = product(&w, token, 1, 0..3, kernels);
                        assert_eq!(one, batch[t * rows..(t + 1) * rows], "{kernels:?}, token {t}: alone as in a batch");
                        let part = product(&w, token, 1, 1..2, kernels);
                        assert_eq!(part[16..32], one[16..32], "{kernels:?}, token {t}: group 1 alone");
                    }
                }
            }
        }
    }

    /// f32 rows (float weights) times f32 activations: the f64 sum on every path, the
    /// last group's missing rows 0, any group range alike.
    #[test]
    fn f32_rows_give_the_exact_sum_on_every_path() {
        let (rows, cols, tokens) = (35, 96, 3);
        let w = Matrix { rows, cols, blocks: Blocks::Dense(values(rows * cols, 11)) };
        let x = values(tokens * cols, 12);
        let Blocks::Dense(weights) = &w.blocks else { unreachable!() };
        for kernels in paths() {
            let mut out = vec![f32::NAN; tokens * rows];
            matmul_groups(
                &w,
                Activations { values: &x, ..Activations::default() },
                tokens,
                0..groups(&w),
                kernels,
                &mut |t, g, sums| {
                    for (r, sum) in sums.iter().enumerate() {
                        if ROWS * g + r < rows {
                            out[t * rows + ROWS * g + r] = *sum;
                        } else {
                            assert_eq!(*sum, 0.0, "row {} past the last", ROWS * g + r);
                        }
                    }
                },
            );
            for t in 0..tokens {
                for r in 0..rows {
                    let exact: f64 =
                        (0..cols).map(|c| f64::from(weights[r * cols + c]) * f64::from(x[t * cols + c])).sum();
                    let got = f64::from(out[t * rows + r]);
                    assert!((got - exact).abs() < 1e-5, "{kernels:?}, token {t}, row {r}: {got} vs {exact}");
                }
            }
        }
    }

    #[test]
    fn f32_dot_matches_a_plain_loop() {
        for n in [64, 67, 3] {
            let (a, b) = (values(n, 1), values(n, 2));
            let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            for kernels in paths() {
                assert!((kernels.dot(&a, &b) - want).abs() < 1e-4, "{kernels:?}");
            }
        }
    }
}
