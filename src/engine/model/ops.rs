//! The forward pass's shared operations on plain f32 rows, each family's plan a choice among them:
//! RMS norm (of a token, or of each head), bias, residual add, scaling, the rotary embedding over
//! adjacent or NeoX pairs from a table per frequency base, the gated feed-forward's activations
//! (SiLU through the kernels, GELU-tanh here), and the greedy pick.

use super::super::arch::{rope_frequencies, Activation, RopePairs};
use super::super::kernels::Kernels;

/// Each `weight.len()`-value row of `x` divided by its root mean square (plus `eps`), times `weight`,
/// into `out`.
pub(super) fn rms_norm_rows(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32], kernels: Kernels) {
    let dim = weight.len();
    for (row, out) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mean = kernels.dot(row, row) / dim as f32;
        let inverse = 1.0 / (mean + eps).sqrt();
        for ((o, v), w) in out.iter_mut().zip(row).zip(weight) {
            *o = v * inverse * w;
        }
    }
}

/// [`rms_norm_rows`] in place: each head of `x` (`weight.len()` values) normed by its own RMS (q/k norm).
pub(super) fn rms_norm_heads(x: &mut [f32], weight: &[f32], eps: f32, kernels: Kernels) {
    let dim = weight.len();
    for row in x.chunks_exact_mut(dim) {
        let inverse = 1.0 / (kernels.dot(row, row) / dim as f32 + eps).sqrt();
        for (v, w) in row.iter_mut().zip(weight) {
            *v = *v * inverse * w;
        }
    }
}

/// `x += delta`, value by value (a residual, or a bias).
pub(super) fn add(x: &mut [f32], delta: &[f32]) {
    for (x, d) in x.iter_mut().zip(delta) {
        *x += d;
    }
}

pub(super) fn scale(x: &mut [f32], by: f32) {
    for x in x.iter_mut() {
        *x *= by;
    }
}

/// A frequency base's rotary table: `cos` and `sin` of the angle `p · frequency_i` for each position
/// `p` of `context` and pair `i` of `head_dim / 2` (the frequencies divided by `factors`, if any).
pub(super) struct RopeTable {
    pub base: f32,
    half: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl RopeTable {
    pub fn new(base: f32, head_dim: usize, factors: &[f32], context: usize) -> Self {
        let freqs = rope_frequencies(base, head_dim, factors);
        let angles: Vec<f32> = (0..context).flat_map(|p| freqs.iter().map(move |f| p as f32 * f)).collect();
        Self {
            base,
            half: head_dim / 2,
            cos: angles.iter().map(|a| a.cos()).collect(),
            sin: angles.iter().map(|a| a.sin()).collect(),
        }
    }

    /// Rotates each head of `values` (`2·half` values each) to `position`, its pairs as `pairs` says.
    pub fn rotate(&self, values: &mut [f32], position: usize, pairs: RopePairs) {
        let half = self.half;
        let (cos, sin) = (&self.cos[position * half..][..half], &self.sin[position * half..][..half]);
        for head in values.chunks_exact_mut(2 * half) {
            match pairs {
                RopePairs::Adjacent => {
                    for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                        let (a, b) = (pair[0], pair[1]);
                        pair[0] = a * cos[i] - b * sin[i];
                        pair[1] = a * sin[i] + b * cos[i];
                    }
                }
                RopePairs::NeoX => {
                    let (first, second) = head.split_at_mut(half);
                    for (i, (a, b)) in first.iter_mut().zip(second.iter_mut()).enumerate() {
                        let (x, y) = (*a, *b);
                        *a = x * cos[i] - y * sin[i];
                        *b = x * sin[i] + y * cos[i];
                    }
                }
            }
        }
    }
}

/// `gate[i] ← activation(gate[i])·up[i]`.
pub(super) fn gated(activation: Activation, gate: &mut [f32], up: &[f32], kernels: Kernels) {
    match activation {
        Activation::Silu => kernels.silu_mul(gate, up),
        Activation::GeluTanh => kernels.gelu_mul(gate, up),
    }
}

/// The index of the largest logit (the lowest index on ties), NaNs passed over.
pub fn argmax(logits: &[f32]) -> Option<usize> {
    first_largest(logits, |_| true).map(|(i, _)| i)
}

/// The first of the largest values `keep` accepts (NaNs never), and where it is: sixteen running
/// maxima a pass (they vectorize; a maximum does not depend on the order), then the first value equal
/// to it.
pub fn first_largest(xs: &[f32], keep: impl Fn(f32) -> bool) -> Option<(usize, f32)> {
    let mut lanes = [f32::NEG_INFINITY; 16];
    let mut any = false;
    let chunks = xs.chunks_exact(16);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            let kept = keep(*v) && !v.is_nan();
            any |= kept;
            *lane = if kept && *v > *lane { *v } else { *lane };
        }
    }
    for (lane, v) in lanes.iter_mut().zip(rest) {
        let kept = keep(*v) && !v.is_nan();
        any |= kept;
        *lane = if kept && *v > *lane { *v } else { *lane };
    }
    if !any {
        return None;
    }
    let most = lanes.iter().fold(f32::NEG_INFINITY, |m, v| if *v > m { *v } else { m });
    xs.iter().position(|v| *v == most && keep(*v)).map(|i| (i, most))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first largest by the plain scan, on runs with NaNs, infinities, ties and signed zeros
    /// anywhere (lengths around the sixteen lanes).
    #[test]
    fn the_first_largest_is_the_plain_scans() {
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 0.5];
        let mut state = 7u32;
        for n in [0, 1, 5, 15, 16, 17, 33, 100] {
            for _ in 0..200 {
                let xs: Vec<f32> = (0..n)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 17;
                        state ^= state << 5;
                        special.get(state as usize % 12).copied().unwrap_or((state % 5) as f32 / 4.0)
                    })
                    .collect();
                for finite in [false, true] {
                    let keep = |v: f32| !finite || v.is_finite();
                    let mut want: Option<(usize, f32)> = None;
                    for (i, v) in xs.iter().enumerate() {
                        if !v.is_nan() && keep(*v) && want.is_none_or(|(_, b)| *v > b) {
                            want = Some((i, *v));
                        }
                    }
                    let got = first_largest(&xs, keep);
                    assert_eq!(got.map(|g| g.0), want.map(|w| w.0), "{xs:?} finite {finite}");
                }
                assert_eq!(argmax(&xs), first_largest(&xs, |_| true).map(|g| g.0));
            }
        }
    }

    #[test]
    fn rms_norm_of_a_row_and_of_each_head() {
        let kernels = Kernels::detect();
        let x = [3.0, -4.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let mut out = [0f32; 8];
        rms_norm_rows(&x, &[1.0; 8], 0.0, &mut out, kernels);
        let rms = (29.0f32 / 8.0).sqrt();
        assert!(out.iter().zip(&x).all(|(o, v)| (o - v / rms).abs() < 1e-6), "{out:?}");
        let mut heads = x;
        rms_norm_heads(&mut heads, &[1.0, 2.0, 1.0, 1.0], 0.0, kernels);
        // Head 0: rms √(25/4) = 2.5; head 1: rms 1.
        let want = [1.2, -3.2, 0.0, 0.0, 1.0, 2.0, 1.0, 1.0];
        assert!(heads.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6), "{heads:?}");
    }

    #[test]
    fn rope_rotates_adjacent_or_neox_pairs_by_position_times_frequency() {
        // head_dim 4: pair frequencies 1 and 1/100 (base 10000), position 3.
        let table = RopeTable::new(10_000.0, 4, &[], 8);
        let (a0, a1) = (3.0f32, 3.0f32 / 100.0);
        let rotate = |x: f32, y: f32, a: f32| (x * a.cos() - y * a.sin(), x * a.sin() + y * a.cos());
        let mut adjacent = [1.0, 2.0, 3.0, 4.0];
        table.rotate(&mut adjacent, 3, RopePairs::Adjacent);
        let ((p, q), (r, s)) = (rotate(1.0, 2.0, a0), rotate(3.0, 4.0, a1));
        let want = [p, q, r, s];
        assert!(adjacent.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5), "{adjacent:?} vs {want:?}");
        let mut neox = [1.0, 2.0, 3.0, 4.0];
        table.rotate(&mut neox, 3, RopePairs::NeoX);
        let ((p, r), (q, s)) = (rotate(1.0, 3.0, a0), rotate(2.0, 4.0, a1));
        let want = [p, q, r, s];
        assert!(neox.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5), "{neox:?} vs {want:?}");
        // Factors divide the frequencies; position 0 is no rotation.
        let scaled = RopeTable::new(10_000.0, 4, &[1.0, 4.0], 8);
        let mut x = [0.0, 0.0, 1.0, 0.0];
        scaled.rotate(&mut x, 2, RopePairs::Adjacent);
        assert!((x[2] - (0.02f32 / 4.0).cos()).abs() < 1e-6 && (x[3] - (0.02f32 / 4.0).sin()).abs() < 1e-6);
        let mut still = [1.0, 2.0, 3.0, 4.0];
        table.rotate(&mut still, 0, RopePairs::NeoX);
        assert_eq!(still, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn gated_activations_match_their_formulas() {
        let kernels = Kernels::detect();
        let gate = [-3.0f32, -0.5, 0.0, 0.7, 2.5];
        let up = [2.0f32, 1.0, 5.0, -1.0, 0.5];
        let mut gelu = gate;
        gated(Activation::GeluTanh, &mut gelu, &up, kernels);
        let mut silu = gate;
        gated(Activation::Silu, &mut silu, &up, kernels);
        for i in 0..5 {
            let (g, u) = (f64::from(gate[i]), f64::from(up[i]));
            let gelu_want =
                0.5 * g * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (g + 0.044715 * g.powi(3))).tanh()) * u;
            let silu_want = g / (1.0 + (-g).exp()) * u;
            assert!((f64::from(gelu[i]) - gelu_want).abs() < 1e-6, "gelu({g}): {} vs {gelu_want}", gelu[i]);
            assert!((f64::from(silu[i]) - silu_want).abs() < 1e-5, "silu({g}): {} vs {silu_want}", silu[i]);
        }
    }
}
