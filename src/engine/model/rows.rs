//! The forward pass's row operations on plain f32 buffers: RMS norm, activation quantization, residual
//! add, the rotary tables, and the greedy pick of a logit.

use super::super::kernels::Kernels;
use super::super::quant::{ActBlock, BLOCK};
use super::Config;

/// Each row of `x` divided by its root mean square, times `weight`, into `out`.
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

/// Quantizes each `width`-value row of `x` into `acts`, row after row.
pub(super) fn quantize_rows(x: &[f32], width: usize, acts: &mut [ActBlock], kernels: Kernels) {
    let per_row = width / BLOCK;
    for (t, row) in x.chunks_exact(width).enumerate() {
        kernels.quantize(row, &mut acts[t * per_row..(t + 1) * per_row]);
    }
}

pub(super) fn add(x: &mut [f32], delta: &[f32]) {
    for (x, d) in x.iter_mut().zip(delta) {
        *x += d;
    }
}

/// Rotary tables: position × pair `i` (of `head_dim / 2`), angle `p / base^(2i / head_dim)`.
pub(super) fn rope_tables(c: &Config) -> (Vec<f32>, Vec<f32>) {
    let freqs = c.rope_frequencies();
    let angles: Vec<f32> = (0..c.context).flat_map(|p| freqs.iter().map(move |f| p as f32 * f)).collect();
    (angles.iter().map(|a| a.cos()).collect(), angles.iter().map(|a| a.sin()).collect())
}

/// The index of the largest logit (the lowest index on ties).
pub fn argmax(logits: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, v) in logits.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| *v > b) {
            best = Some((i, *v));
        }
    }
    best.map(|(i, _)| i)
}
