//! What picking a token at a temperature costs, for `tunebench bench`: the sampler's nucleus (only the
//! likeliest candidates sorted) against sorting every candidate, as it picked before, on logits of
//! Qwen's vocabulary size.

use serde::Serialize;

use crate::engine::sampler::{Sampler, Sampling};

/// Qwen 2.5's and Qwen 3's vocabulary.
pub const VOCABULARY: usize = 151_936;

/// A common setting for sampled answers.
pub const SAMPLING: Sampling = Sampling { temperature: 0.7, top_p: 0.95, seed: 1 };

/// Picks measured a round (each from logits of its own).
pub const PICKS: usize = 32;

#[derive(Clone, Debug, Serialize)]
pub struct SamplingFigures {
    pub vocabulary: usize,
    pub temperature: f64,
    pub top_p: f64,
    /// Median time of one pick, microseconds.
    pub ours_us: f64,
    pub sorting_every_candidate_us: f64,
    pub sorting_vs_ours: f64,
}

/// Logits shaped as a model's next-token scores: a broad spread with a few tokens well above it.
pub fn logits(pick: u64) -> Vec<f32> {
    let mut state = pick.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut unit = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut logits: Vec<f32> = (0..VOCABULARY).map(|_| 2.5 * (unit() + unit() + unit() - 1.5)).collect();
    for likely in 0..4 {
        logits[(unit() * VOCABULARY as f32) as usize % VOCABULARY] = 14.0 - 2.0 * likely as f32;
    }
    logits
}

/// The baseline: every allowed candidate weighed and sorted, then the nucleus taken and `draw` (in
/// 0..1) drawn from it.
pub fn pick_sorting_every_candidate(logits: &[f32], sampling: Sampling, draw: f32) -> Option<u32> {
    let t = sampling.temperature as f32;
    let max = logits.iter().copied().filter(|v| v.is_finite()).fold(f32::NEG_INFINITY, f32::max);
    let mut candidates: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| (i as u32, ((v - max) / t).exp()))
        .collect();
    candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: f32 = candidates.iter().map(|c| c.1).sum();
    let mut kept = 0.0;
    let keep = candidates.iter().position(|c| {
        kept += c.1 / total;
        kept >= sampling.top_p as f32
    });
    candidates.truncate(keep.map_or(candidates.len(), |n| n + 1));
    let mut target = draw * candidates.iter().map(|c| c.1).sum::<f32>();
    for (token, weight) in &candidates {
        if target < *weight {
            return Some(*token);
        }
        target -= weight;
    }
    candidates.last().map(|c| c.0)
}

/// [`PICKS`] picks by the sampler, and by the baseline, on the same logits; `medians` times the two
/// closures in alternating rounds and gives each one's median round.
pub fn measure(medians: impl FnOnce(&mut dyn FnMut(), &mut dyn FnMut()) -> [f64; 2]) -> SamplingFigures {
    let all: Vec<Vec<f32>> = (0..PICKS as u64).map(logits).collect();
    let mut sampler = Sampler::new(SAMPLING);
    let [ours, sorting] = medians(
        &mut || {
            for logits in &all {
                assert!(sampler.pick(std::hint::black_box(logits)).is_some());
            }
        },
        &mut || {
            for (n, logits) in all.iter().enumerate() {
                let draw = n as f32 / PICKS as f32;
                assert!(pick_sorting_every_candidate(std::hint::black_box(logits), SAMPLING, draw).is_some());
            }
        },
    );
    let per_pick = |round: f64| round * 1e6 / PICKS as f64;
    SamplingFigures {
        vocabulary: VOCABULARY,
        temperature: SAMPLING.temperature,
        top_p: SAMPLING.top_p,
        ours_us: per_pick(ours),
        sorting_every_candidate_us: per_pick(sorting),
        sorting_vs_ours: if ours > 0.0 { sorting / ours } else { 0.0 },
    }
}

/// The figures as `tunebench bench` prints them.
pub fn human(s: &SamplingFigures) -> String {
    format!(
        "picking a token at temperature {}, top-p {}, from {} logits (median round):\n\
         \x20 {:.0} µs (baseline, sorting every candidate: {:.0} µs) → {:.1}×\n",
        s.temperature, s.top_p, s.vocabulary, s.ours_us, s.sorting_every_candidate_us, s.sorting_vs_ours
    )
}
