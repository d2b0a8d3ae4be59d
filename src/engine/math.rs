//! The f32 functions of the forward pass that vectorize: `exp` (a Cephes-style polynomial, written out
//! operation by operation so every path rounds alike), `x·silu(x)·y` of the feed-forward layer, and the
//! horizontal sum of sixteen lanes. The portable bodies are compiled a second time for AVX2 (the same
//! operations, so the same bits), and [`exp512`] is the AVX-512 twin of [`exp`].

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

/// The reference arithmetic of [`silu_mul`] (compiled as is for other CPUs, and for AVX2).
#[inline(always)]
pub(super) fn silu_mul_lanes(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + exp(-*g)) * u;
    }
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
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
        super::silu_mul_lanes(gate, up)
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
    fn sixteen_lanes_sum_in_halves() {
        let lanes: [f32; 16] = std::array::from_fn(|i| (i * i) as f32);
        assert_eq!(sum16(&lanes), lanes.iter().sum::<f32>());
    }
}
