//! The reference sums of the K forms and Q5_0 (the portable path of [`super::kernels`], which
//! the vector paths match bit for bit): sixteen rows times one activation row, the integers exact.
//!
//! - Q4_K, Q5_K, per super-block: `Σ_j sc_j·Σ q·a` and `Σ_j m_j·Σa` (`Σa` the activation block's
//!   `sums`) in i32, then `acc = fma(d·d_a, sums, acc)` and `acc = fma(−(dmin·d_a), mins, acc)`;
//! - Q6_K, per super-block: `Σ_s sc_s·(Σ q·a − 32·Σa)` over its sixteens (`Σa` its `bsums`) in i32,
//!   then `acc = fma(d·d_a, sum, acc)`;
//! - Q5_0, per block of 32 (activations of [`ActBlock`]): `acc = fma(d·d_a, Σq·q_a − 16·Σq_a, acc)`.
//!
//! Every i32 is exact (at most 63.5 million for Q5_K); its conversion to f32 rounds alike on every path.

use super::kquant::{paired, KActBlock, KForm, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUBS};
use super::quant::{ActBlock, ROWS};

/// `Σ q(i)·a[i]` over `range`.
fn dot(q: impl Fn(usize) -> u8, a: &[i8; 32], range: std::ops::Range<usize>) -> i32 {
    range.map(|i| i32::from(q(i)) * i32::from(a[i])).sum()
}

/// Q4_K and Q5_K: `q` of the form, its scales, mins, `d` and `dmin` in [`Q4Kx16`].
fn k_row<F: KForm>(w: &[F], a: &[KActBlock]) -> [f32; ROWS] {
    std::array::from_fn(|r| {
        let mut acc = 0f32;
        for (form, a) in w.iter().zip(a) {
            let g = form.low();
            let (mut sums, mut mins) = (0i32, 0i32);
            for (j, qs) in a.qs.iter().enumerate() {
                sums += i32::from(g.scales[16 * j + r]) * dot(|i| form.q(r, 32 * j + i), qs, 0..32);
                mins += i32::from(g.mins[paired(j, r)]) * i32::from(a.sums[j]);
            }
            acc = (g.d[r].to_f32() * a.d).mul_add(sums as f32, acc);
            acc = (-(g.dmin[r].to_f32() * a.d)).mul_add(mins as f32, acc);
        }
        acc
    })
}

pub fn q4_k(w: &[Q4Kx16], a: &[KActBlock]) -> [f32; ROWS] {
    k_row(w, a)
}

pub fn q5_k(w: &[Q5Kx16], a: &[KActBlock]) -> [f32; ROWS] {
    k_row(w, a)
}

pub fn q6_k(w: &[Q6Kx16], a: &[KActBlock]) -> [f32; ROWS] {
    std::array::from_fn(|r| {
        let mut acc = 0f32;
        for (g, a) in w.iter().zip(a) {
            let mut sum = 0i32;
            for s in 0..2 * SUBS {
                let (j, half) = (s / 2, 16 * (s % 2));
                let products = dot(|i| g.q(r, 32 * j + i), &a.qs[j], half..half + 16);
                sum += i32::from(g.scales[paired(s, r)]) * (products - 32 * i32::from(a.bsums[s]));
            }
            acc = (g.d[r].to_f32() * a.d).mul_add(sum as f32, acc);
        }
        acc
    })
}

pub fn q5_0(w: &[Q5x16], a: &[ActBlock]) -> [f32; ROWS] {
    std::array::from_fn(|r| {
        let mut acc = 0f32;
        for (g, a) in w.iter().zip(a) {
            let sum = dot(|i| g.q(r, i), &a.qs, 0..32) - 16 * a.sum;
            acc = (g.d[r].to_f32() * a.d).mul_add(sum as f32, acc);
        }
        acc
    })
}
