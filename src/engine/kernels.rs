//! The CPU dispatch and the inner loops of the forward pass. Every vector kernel (a quantized weight
//! matrix times quantized activations, f32 dot products, activation quantizing, SiLU, attention's
//! three steps) comes in three paths: AVX-512 VNNI ([`super::avx512`]) and AVX2 ([`super::avx2`]),
//! both up to four tokens per pass over the weights, and a portable one (other CPUs, and the reference the tests
//! hold the others to). Each path's kernels are listed once, in its table; [`Kernels`] is the table
//! chosen once, at load, and every call site calls through it. All three make each sum by the same
//! arithmetic — exact integer block sums, then `fma(d_w·d_a, Σ, sums)` block after block (and
//! `fma(m_w, s_a, offsets)` for 4-bit offsets; the K-quant forms', per 256 values, and Q5_0's in
//! [`super::kquant_portable`]) — so they give the same bits. Those forms' vector kernels are in
//! [`super::avx2_k`] and [`super::avx512_k`].

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
    /// The forms of [`super::kquant`].
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
    /// `gate[i] ← gelu(gate[i])·up[i]`.
    gelu_mul: unsafe fn(&mut [f32], &[f32]),
    /// `Σ e^(x − max)` over the finite `x ≥ floor`.
    exp_sum: unsafe fn(&[f32], f32, f32) -> f32,
    /// `out[i] ← e^((x[i] − max)·scale)` for the finite `x[i]`, else 0; their sum.
    weights: unsafe fn(&[f32], f32, f32, &mut [f32]) -> f32,
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
    gelu_mul: super::math::gelu_mul_lanes,
    exp_sum: super::math::exp_sum_lanes,
    weights: super::math::weights_lanes,
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
    gelu_mul: super::math::avx2::gelu_mul,
    exp_sum: super::math::avx2::exp_sum,
    weights: super::math::avx2::weights,
    scores: super::attention::avx2::scores,
    softmax: super::attention::avx2::softmax,
    weigh: super::attention::avx2::weigh,
};

/// AVX-512 VNNI (F, BW and F16C; AVX2 too): up to four tokens per pass over the weights.
#[cfg(target_arch = "x86_64")]
static AVX512: Table = Table {
    level: Level::Avx512,
    q4: avx512_q4,
    q8: avx512_q8,
    q5_0: avx512_q5_0,
    q4_k: avx512_q4_k,
    q5_k: avx512_q5_k,
    q6_k: avx512_q6_k,
    dot: avx2_dot,
    quantize: super::avx512::quantize,
    quantize_k: super::avx512_k::quantize_k,
    silu_mul: super::math::avx512::silu_mul,
    gelu_mul: super::math::avx2::gelu_mul,
    exp_sum: super::math::avx2::exp_sum,
    weights: super::math::avx2::weights,
    scores: super::attention_avx512::scores,
    softmax: super::attention_avx512::softmax,
    weigh: super::attention_avx512::weigh,
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

/// The variable that names the kernels' path (`portable`, `avx2`, `avx512`; unset, the fastest this CPU
/// runs): to compare the paths on one machine, or to rule one out. Every path gives the same bits.
pub const KERNELS_VAR: &str = "TUNEBENCH_KERNELS";

impl Kernels {
    /// The kernels [`KERNELS_VAR`] names when it names a path this CPU runs, else the fastest this CPU
    /// runs (read once; [`Kernels::configured`] says why a value is not taken).
    pub fn detect() -> Self {
        static CHOSEN: std::sync::OnceLock<Kernels> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| Self::configured().unwrap_or_else(|_| Self::fastest()))
    }

    /// The fastest kernels this CPU runs.
    pub fn fastest() -> Self {
        [Level::Avx512, Level::Avx2].into_iter().find_map(Self::at).unwrap_or(Self::portable())
    }

    /// The kernels [`KERNELS_VAR`] names (the fastest this CPU runs when it is unset), or why not: a
    /// value that names no path, or a path this CPU does not run.
    pub fn configured() -> Result<Self, String> {
        let Some(value) = std::env::var_os(KERNELS_VAR) else {
            return Ok(Self::fastest());
        };
        let level = match value.to_str().map(str::trim) {
            Some("portable") => Level::Portable,
            Some("avx2") => Level::Avx2,
            Some("avx512") => Level::Avx512,
            _ => return Err(format!("{KERNELS_VAR}={value:?} names no kernel path: portable, avx2 or avx512")),
        };
        Self::at(level).ok_or_else(|| format!("{KERNELS_VAR}={value:?}: this CPU does not run those kernels"))
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

    /// `gate[i] ← gelu(gate[i])·up[i]` (tanh approximation).
    pub fn gelu_mul(self, gate: &mut [f32], up: &[f32]) {
        // SAFETY: as in `dot`.
        unsafe { (self.table.gelu_mul)(gate, up) }
    }

    /// `Σ e^(x − max)` over the finite `x ≥ floor`, in sixteen lanes.
    pub fn exp_sum(self, xs: &[f32], max: f32, floor: f32) -> f32 {
        // SAFETY: as in `dot`.
        unsafe { (self.table.exp_sum)(xs, max, floor) }
    }

    /// A token's weights at a temperature ([`super::math::weights`]), and their sum in sixteen lanes.
    pub fn weights(self, xs: &[f32], max: f32, scale: f32, out: &mut [f32]) -> f32 {
        // SAFETY: as in `dot`.
        unsafe { (self.table.weights)(xs, max, scale, out) }
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

/// The vector matrix kernels, `n` tokens in passes of up to `tile`: each form's fastest of 1 to 4 (CPU
/// time in the kernel during `bench --vs-llama-cpp` prefill; AVX2 on a 2-core Zen 3, where the 4-bit
/// form's four tokens need more than its sixteen registers, two do not). A token's sums are the same
/// bits whatever the split.
macro_rules! tiled {
    ($features:literal: $($name:ident: $form:ty, $act:ty => $file:ident::$kernel:ident, $tile:literal;)*) => {$(
        /// # Safety
        /// The CPU has the features of this kernel's path (its table is held only then: `Kernels::at`).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(w: &[$form], a: &[$act], per_row: usize, n: usize, out: &mut [[f32; ROWS]; TILE]) {
            let mut t = 0;
            while t < n.min(TILE) {
                let take = (n - t).min($tile);
                let (a, out) = (&a[t * per_row..], &mut out[t..]);
                // SAFETY: the CPU has this path's features (this function's contract).
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

tiled! { "avx2,fma,f16c":
    avx2_q4: Q4x16, ActBlock => avx2::q4, 2;
    avx2_q8: Q8x16, ActBlock => avx2::q8, 4;
    avx2_q5_0: Q5x16, ActBlock => avx2_k::q5_0, 4;
    avx2_q4_k: Q4Kx16, KActBlock => avx2_k::q4_k, 4;
    avx2_q5_k: Q5Kx16, KActBlock => avx2_k::q5_k, 4;
    avx2_q6_k: Q6Kx16, KActBlock => avx2_k::q6_k, 4;
}

tiled! { "avx512f,avx512bw,avx512vnni,f16c,avx2,fma":
    avx512_q4: Q4x16, ActBlock => avx512::q4, 4;
    avx512_q8: Q8x16, ActBlock => avx512::q8, 4;
    avx512_q5_0: Q5x16, ActBlock => avx512_k::q5_0, 4;
    avx512_q4_k: Q4Kx16, KActBlock => avx512_k::q4_k, 4;
    avx512_q5_k: Q5Kx16, KActBlock => avx512_k::q5_k, 4;
    avx512_q6_k: Q6Kx16, KActBlock => avx512_k::q6_k, 4;
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
#[path = "kernels_tests.rs"]
pub(super) mod tests;
