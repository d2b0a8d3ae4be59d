//! The f32 functions of the forward pass that vectorize: `exp` (a Cephes-style polynomial, written out
//! operation by operation so every path rounds alike), `silu(x)·y` and `gelu(x)·y` of the feed-forward
//! layer (both `x / (1 + e^z)·y`), a softmax's sum of `e^(x − max)`, and the horizontal sum of sixteen
//! lanes. `exp256` and [`exp512`] are the AVX2 and AVX-512 twins of [`exp`], and the vector bodies do
//! the portable ones' operations in the same order, so every path gives the same bits.

use super::kernels::Kernels;

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two, so `x − n·ln 2` loses nothing: `LN2_HI` has few significant bits.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];
/// Inputs are clamped to this range, where `2^n` stays a normal float.
const LOWEST: f32 = -87.0;
const HIGHEST: f32 = 88.0;

/// `e^x` within two ulps (inputs clamped to −87..88; `e^−87` ≈ 1.6e-38 stands for 0).
#[inline(always)]
#[allow(clippy::manual_clamp)] // max then min, as the vector instructions do (NaN becomes LOWEST)
pub fn exp(x: f32) -> f32 {
    let x = x.max(LOWEST).min(HIGHEST);
    let n = (x * LOG2E).round_ties_even();
    let r = n.mul_add(-LN2_HI, x);
    let r = n.mul_add(-LN2_LO, r);
    let mut p = P[0].mul_add(r, P[1]);
    for c in &P[2..] {
        p = p.mul_add(r, *c);
    }
    let y = p.mul_add(r * r, r) + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// `gate[i] ← silu(gate[i])·up[i]`, i.e. `g / (1 + e^−g) · u`, on the `kernels`' path.
pub fn silu_mul(gate: &mut [f32], up: &[f32], kernels: Kernels) {
    kernels.silu_mul(gate, up)
}

/// The reference arithmetic of [`silu_mul`] (compiled as is for other CPUs).
#[inline(always)]
pub(super) fn silu_mul_lanes(gate: &mut [f32], up: &[f32]) {
    gated_lanes(gate, up, |g| -g)
}

/// `gate[i] ← g / (1 + e^exponent(g)) · up[i]`: the form SiLU and GELU share.
#[inline(always)]
fn gated_lanes(gate: &mut [f32], up: &[f32], exponent: impl Fn(f32) -> f32) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + exp(exponent(*g))) * u;
    }
}

/// √(2/π), of GELU's tanh approximation.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
const GELU_CUBE: f32 = 0.044_715;

/// `gate[i] ← gelu(gate[i])·up[i]`, GELU's tanh approximation `g/2 · (1 + tanh(√(2/π)·(g + 0.044715·g³)))`
/// written as `g / (1 + e^−2y)` (the same function, through [`exp`]), on the `kernels`' path.
pub fn gelu_mul(gate: &mut [f32], up: &[f32], kernels: Kernels) {
    kernels.gelu_mul(gate, up)
}

/// The reference arithmetic of [`gelu_mul`] (compiled as is for other CPUs).
#[inline(always)]
pub(super) fn gelu_mul_lanes(gate: &mut [f32], up: &[f32]) {
    gated_lanes(gate, up, |x| -2.0 * (SQRT_2_OVER_PI * x * (1.0 + GELU_CUBE * x * x)))
}

/// `Σ e^(x − max)` over the finite `x ≥ floor` (a softmax's denominator, the rest negligible), summed
/// in sixteen lanes (`x[i]` in lane `i mod 16`), on the `kernels`' path.
pub fn exp_sum(xs: &[f32], max: f32, floor: f32, kernels: Kernels) -> f32 {
    kernels.exp_sum(xs, max, floor)
}

/// The reference arithmetic of [`exp_sum`] (compiled as is for other CPUs).
pub(super) fn exp_sum_lanes(xs: &[f32], max: f32, floor: f32) -> f32 {
    let mut lanes = [0f32; 16];
    for (i, x) in xs.iter().enumerate() {
        if *x >= floor && *x < f32::INFINITY {
            lanes[i % 16] += exp(x - max);
        }
    }
    sum16(&lanes)
}

/// `out[i] ← e^((x[i] − max)·scale)` for the finite `x[i]`, 0 for the others (a token's weights at a
/// temperature: `scale` is its inverse); returns their sum, in sixteen lanes.
pub fn weights(xs: &[f32], max: f32, scale: f32, out: &mut [f32], kernels: Kernels) -> f32 {
    kernels.weights(xs, max, scale, out)
}

/// The reference arithmetic of [`weights`] (compiled as is for other CPUs).
pub(super) fn weights_lanes(xs: &[f32], max: f32, scale: f32, out: &mut [f32]) -> f32 {
    let mut lanes = [0f32; 16];
    for (i, (x, w)) in xs.iter().zip(out.iter_mut()).enumerate() {
        *w = if x.is_finite() { exp((x - max) * scale) } else { 0.0 };
        lanes[i % 16] += *w;
    }
    sum16(&lanes)
}

/// The sum of sixteen lanes, halves added pairwise (`l[i] + l[i+8]`, then `+4`, `+2`, `+1`): the order
/// a vector register reduces in.
pub fn sum16(lanes: &[f32; 16]) -> f32 {
    let h8: [f32; 8] = std::array::from_fn(|i| lanes[i] + lanes[i + 8]);
    let h4: [f32; 4] = std::array::from_fn(|i| h8[i] + h8[i + 4]);
    let h2: [f32; 2] = std::array::from_fn(|i| h4[i] + h4[i + 2]);
    h2[0] + h2[1]
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use super::{GELU_CUBE, HIGHEST, LN2_HI, LN2_LO, LOG2E, LOWEST, P, SQRT_2_OVER_PI};

    /// [`super::exp`] on eight lanes, operation for operation.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C (callers from outside such code).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn exp256(x: __m256) -> __m256 {
        let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(LOWEST)), _mm256_set1_ps(HIGHEST));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
            x,
            _mm256_set1_ps(LOG2E),
        ));
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
        let mut p = _mm256_fmadd_ps(_mm256_set1_ps(P[0]), r, _mm256_set1_ps(P[1]));
        for c in &P[2..] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(*c));
        }
        let y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0));
        let bits = _mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)));
        _mm256_mul_ps(y, _mm256_castsi256_ps(bits))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
        let tail = gated(gate, up, |g| _mm256_sub_ps(_mm256_setzero_ps(), g));
        super::silu_mul_lanes(&mut gate[tail..], &up[tail..]);
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn gelu_mul(gate: &mut [f32], up: &[f32]) {
        let (one, scale, cube) = (_mm256_set1_ps(1.0), _mm256_set1_ps(SQRT_2_OVER_PI), _mm256_set1_ps(GELU_CUBE));
        let tail = gated(gate, up, |x| {
            // The portable `a * b * c` is `(a·b)·c`, and `1.0 + c·x·x` is `1 + (c·x)·x`.
            let inner = _mm256_add_ps(one, _mm256_mul_ps(_mm256_mul_ps(cube, x), x));
            _mm256_mul_ps(_mm256_set1_ps(-2.0), _mm256_mul_ps(_mm256_mul_ps(scale, x), inner))
        });
        super::gelu_mul_lanes(&mut gate[tail..], &up[tail..]);
    }

    /// [`super::gated_lanes`] eight values at a time over the whole eights; returns where the rest starts.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn gated(gate: &mut [f32], up: &[f32], exponent: impl Fn(__m256) -> __m256) -> usize {
        let (whole, one) = (gate.len().min(up.len()) / 8 * 8, _mm256_set1_ps(1.0));
        for i in (0..whole).step_by(8) {
            // SAFETY: eight values from `i`, inside both slices (`i + 8 ≤ whole`).
            unsafe {
                let g = _mm256_loadu_ps(gate.as_ptr().add(i));
                let u = _mm256_loadu_ps(up.as_ptr().add(i));
                let e = exp256(exponent(g));
                _mm256_storeu_ps(gate.as_mut_ptr().add(i), _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u));
            }
        }
        whole
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn weights(xs: &[f32], max: f32, scale: f32, out: &mut [f32]) -> f32 {
        let n = xs.len().min(out.len());
        let (m, by) = (_mm256_set1_ps(max), _mm256_set1_ps(scale));
        let (sign, infinity) = (_mm256_set1_ps(-0.0), _mm256_set1_ps(f32::INFINITY));
        let mut sums = [_mm256_setzero_ps(); 2];
        let whole = n / 16 * 16;
        for at in (0..whole).step_by(16) {
            for (h, sum) in sums.iter_mut().enumerate() {
                // SAFETY: eight values from `at + 8h`, below `whole`, inside both slices.
                let x = unsafe { _mm256_loadu_ps(xs.as_ptr().add(at + 8 * h)) };
                // Finite: |x| below infinity (a NaN compares false).
                let live = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_andnot_ps(sign, x), infinity);
                let w = _mm256_and_ps(live, exp256(_mm256_mul_ps(_mm256_sub_ps(x, m), by)));
                // SAFETY: as above.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(at + 8 * h), w) };
                *sum = _mm256_add_ps(*sum, w);
            }
        }
        let mut lanes = [0f32; 16];
        // SAFETY: two times eight floats into an array of sixteen.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), sums[0]);
            _mm256_storeu_ps(lanes.as_mut_ptr().add(8), sums[1]);
        }
        for i in whole..n {
            let x = xs[i];
            out[i] = if x.is_finite() { super::exp((x - max) * scale) } else { 0.0 };
            lanes[i % 16] += out[i];
        }
        super::sum16(&lanes)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn exp_sum(xs: &[f32], max: f32, floor: f32) -> f32 {
        let (m, low, high) = (_mm256_set1_ps(max), _mm256_set1_ps(floor), _mm256_set1_ps(f32::INFINITY));
        let mut sums = [_mm256_setzero_ps(); 2];
        let chunks = xs.chunks_exact(16);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (h, sum) in sums.iter_mut().enumerate() {
                // SAFETY: eight values from `8h`, inside the chunk of sixteen.
                let x = unsafe { _mm256_loadu_ps(chunk.as_ptr().add(8 * h)) };
                let live = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(x, low), _mm256_cmp_ps::<_CMP_LT_OQ>(x, high));
                *sum = _mm256_add_ps(*sum, _mm256_and_ps(live, exp256(_mm256_sub_ps(x, m))));
            }
        }
        let mut lanes = [0f32; 16];
        // SAFETY: two times eight floats into an array of sixteen.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), sums[0]);
            _mm256_storeu_ps(lanes.as_mut_ptr().add(8), sums[1]);
        }
        for (lane, x) in lanes.iter_mut().zip(rest) {
            if *x >= floor && *x < f32::INFINITY {
                *lane += super::exp(x - max);
            }
        }
        super::sum16(&lanes)
    }
}

#[cfg(target_arch = "x86_64")]
pub use avx512::exp512;

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use std::arch::x86_64::*;

    use super::{HIGHEST, LN2_HI, LN2_LO, LOG2E, LOWEST, P};

    /// [`super::exp`] on sixteen lanes, operation for operation.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, BW, VNNI and F16C (callers from outside such code).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    pub fn exp512(x: __m512) -> __m512 {
        let x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(LOWEST)), _mm512_set1_ps(HIGHEST));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
            x,
            _mm512_set1_ps(LOG2E),
        ));
        let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), x);
        let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
        let mut p = _mm512_fmadd_ps(_mm512_set1_ps(P[0]), r, _mm512_set1_ps(P[1]));
        for c in &P[2..] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(*c));
        }
        let y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0));
        let bits = _mm512_slli_epi32::<23>(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)));
        _mm512_mul_ps(y, _mm512_castsi512_ps(bits))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
        let n = gate.len().min(up.len());
        let (whole, one) = (n / 16 * 16, _mm512_set1_ps(1.0));
        for i in (0..whole).step_by(16) {
            // SAFETY: sixteen values from `i`, inside both slices (`i + 16 ≤ n`).
            unsafe {
                let g = _mm512_loadu_ps(gate.as_ptr().add(i));
                let u = _mm512_loadu_ps(up.as_ptr().add(i));
                let e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
                _mm512_storeu_ps(gate.as_mut_ptr().add(i), _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u));
            }
        }
        super::silu_mul_lanes(&mut gate[whole..n], &up[whole..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::Level;
    use super::*;

    #[test]
    fn exp_is_within_two_ulps_of_libm_and_clamped() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0 + 0.003;
            if x > HIGHEST {
                continue;
            }
            let (got, want) = (exp(x), x.exp());
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
            assert!(ulps <= 2, "exp({x}) = {got}, libm {want}: {ulps} ulps");
        }
        assert!(exp(-1000.0) > 0.0 && exp(-1000.0) < 1e-37);
        assert!(exp(1000.0).is_finite());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn every_path_gives_the_same_silu_bits() {
        let gate: Vec<f32> = (0..53).map(|i| (i as f32 - 26.0) * 0.77).collect();
        let up: Vec<f32> = (0..53).map(|i| (i as f32 * 0.31).sin()).collect();
        let mut want = gate.clone();
        silu_mul_lanes(&mut want, &up);
        for (w, (g, u)) in want.iter().zip(gate.iter().zip(&up)) {
            let exact = f64::from(*g) / (1.0 + (-f64::from(*g)).exp()) * f64::from(*u);
            assert!((f64::from(*w) - exact).abs() < 1e-5 * (1.0 + exact.abs()), "{g}: {w} vs {exact}");
        }
        for level in [Level::Portable, Level::Avx2, Level::Avx512] {
            let Some(kernels) = Kernels::at(level) else { continue };
            let mut got = gate.clone();
            silu_mul(&mut got, &up, kernels);
            assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{level:?}");
        }
    }

    #[test]
    fn every_path_gives_the_same_gelu_bits() {
        let gate: Vec<f32> = (0..61).map(|i| (i as f32 - 30.0) * 0.23).chain([-40.0, 40.0, 0.0, -0.0]).collect();
        let up: Vec<f32> = (0..gate.len()).map(|i| (i as f32 * 0.31).sin() * 3.0).collect();
        let mut want = gate.clone();
        gelu_mul_lanes(&mut want, &up);
        for (w, (g, u)) in want.iter().zip(gate.iter().zip(&up)) {
            let (g, u) = (f64::from(*g), f64::from(*u));
            let exact = 0.5 * g * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (g + 0.044715 * g.powi(3))).tanh()) * u;
            assert!((f64::from(*w) - exact).abs() < 1e-5 * (1.0 + exact.abs()), "{g}: {w} vs {exact}");
        }
        for level in [Level::Portable, Level::Avx2, Level::Avx512] {
            let Some(kernels) = Kernels::at(level) else { continue };
            let mut got = gate.clone();
            gelu_mul(&mut got, &up, kernels);
            assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{level:?}");
        }
    }

    /// 203 values from −15 to 15, with a NaN, +∞ and −∞ among them.
    fn spread_with_nan_and_infinities() -> Vec<f32> {
        let mut xs: Vec<f32> = (0..203).map(|i| ((i * 37) % 101) as f32 * 0.3 - 15.0).collect();
        xs[3] = f32::NAN;
        xs[40] = f32::INFINITY;
        xs[77] = f32::NEG_INFINITY;
        xs
    }

    #[test]
    fn every_path_gives_the_same_exp_sum_bits() {
        let xs = spread_with_nan_and_infinities();
        for n in [0, 7, 16, 35, 203] {
            let (max, floor) = (15.3, -8.7);
            let want = exp_sum_lanes(&xs[..n], max, floor);
            let exact: f64 = xs[..n]
                .iter()
                .filter(|x| x.is_finite() && **x >= floor)
                .map(|x| (f64::from(*x) - f64::from(max)).exp())
                .sum();
            assert!((f64::from(want) - exact).abs() <= 1e-5 * exact, "{n}: {want} vs {exact}");
            for level in [Level::Portable, Level::Avx2, Level::Avx512] {
                let Some(kernels) = Kernels::at(level) else { continue };
                assert_eq!(exp_sum(&xs[..n], max, floor, kernels).to_bits(), want.to_bits(), "{level:?} {n}");
            }
        }
    }

    #[test]
    fn every_path_gives_the_same_weights_bits() {
        let xs = spread_with_nan_and_infinities();
        for n in [0, 7, 16, 35, 203] {
            let (max, scale) = (15.3, 1.0 / 0.7);
            let mut want = vec![f32::NAN; n];
            let total = weights_lanes(&xs[..n], max, scale, &mut want);
            for (x, w) in xs[..n].iter().zip(&want) {
                // e^ of the f32 argument (its own rounding is the argument's, not the exponential's).
                let exact = if x.is_finite() { f64::from((x - max) * scale).exp() } else { 0.0 };
                assert!(
                    (f64::from(*w) - exact).abs() <= 1e-6 * exact,
                    "{n}: e^(({x} − {max})·{scale}) = {w}, not {exact}"
                );
            }
            let exact: f64 = want.iter().map(|w| f64::from(*w)).sum();
            assert!((f64::from(total) - exact).abs() <= 1e-5 * exact, "{n}: {total} vs {exact}");
            for level in [Level::Portable, Level::Avx2, Level::Avx512] {
                let Some(kernels) = Kernels::at(level) else { continue };
                let mut got = vec![f32::NAN; n];
                assert_eq!(
                    weights(&xs[..n], max, scale, &mut got, kernels).to_bits(),
                    total.to_bits(),
                    "{level:?} {n}"
                );
                assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{level:?} {n}");
            }
        }
    }

    #[test]
    fn sixteen_lanes_sum_in_halves() {
        let lanes: [f32; 16] = std::array::from_fn(|i| (i * i) as f32);
        assert_eq!(sum16(&lanes), lanes.iter().sum::<f32>());
    }
}
