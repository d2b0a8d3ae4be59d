//! Picking the next token from the logits: greedy (argmax, the default and deterministic), or
//! temperature with nucleus (top-p) sampling from a seeded generator, so the same seed gives the same answer.
//! Before the grammar's mask, the llama.cpp-style repetition penalty ([`RepeatPenalty`]) lowers the
//! tokens of the last N; after it, [`odds`] says how likely the picked token and its runner-up were.

use super::kernels::Kernels;
use super::math::{exp_sum, weights};
use super::model::{argmax, first_largest};

/// llama.cpp's repetition penalty (`--repeat-penalty`, `--repeat-last-n`): every distinct token among
/// the last `last_n` tokens the model chose has its logit divided by `penalty` when positive and
/// multiplied by it when negative, so it is less likely to come again. 1 is off. The engine leaves
/// the tokens a grammar forced out of the window: they are the schema's text, not the model's
/// repetition, and penalising them (`"` closes every string) makes strings run on (measured on the
/// sample prompts: README, "Runaway lists").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepeatPenalty {
    pub penalty: f32,
    pub last_n: usize,
}

impl RepeatPenalty {
    /// The window when none is given (llama.cpp's default).
    pub const DEFAULT_LAST_N: usize = 64;

    /// The penalty `penalty` over the last `last_n` tokens; `None` when it changes nothing (a penalty
    /// of 1, not a number above 0, or an empty window).
    pub fn new(penalty: f64, last_n: Option<u32>) -> Option<Self> {
        let last_n = last_n.map_or(Self::DEFAULT_LAST_N, |n| n as usize);
        let useful = penalty.is_finite() && penalty > 0.0 && penalty != 1.0 && last_n > 0;
        useful.then_some(Self { penalty: penalty as f32, last_n })
    }

    /// Lowers the logits of the distinct tokens among `answer`'s last `last_n` (out-of-range ids and
    /// masked logits are left alone).
    pub fn apply(&self, logits: &mut [f32], answer: &[u32]) {
        let mut recent = answer.get(answer.len().saturating_sub(self.last_n)..).unwrap_or_default().to_vec();
        recent.sort_unstable();
        recent.dedup();
        for token in recent {
            if let Some(logit) = logits.get_mut(token as usize) {
                *logit = if *logit > 0.0 { *logit / self.penalty } else { *logit * self.penalty };
            }
        }
    }
}

/// How likely a picked token was among the tokens allowed (the logits after penalty and mask, at
/// temperature 1), and the most likely other token with its probability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Odds {
    pub p: f32,
    pub runner_up: Option<(u32, f32)>,
}

/// Logits this far below the best add less than 4e-11 each to the softmax's sum: skipped, so the
/// odds cost two plain passes over the vocabulary and few `exp`s.
const NEGLIGIBLE: f32 = 24.0;

/// The [`Odds`] of `picked` under `logits` (masked ones are `-inf`); `None` when `picked` is masked or
/// out of range.
pub fn odds(logits: &[f32], picked: u32) -> Option<Odds> {
    let chosen = *logits.get(picked as usize)?;
    if !chosen.is_finite() {
        return None;
    }
    // The best of the others: the first of the largest before the picked token, else after it.
    let (before, after) = (&logits[..picked as usize], &logits[picked as usize + 1..]);
    let runner_up = match (first_largest(before, f32::is_finite), first_largest(after, f32::is_finite)) {
        (Some((i, a)), Some((_, b))) if a >= b => Some((i as u32, a)),
        (_, Some((j, b))) => Some((picked + 1 + j as u32, b)),
        (first, None) => first.map(|(i, a)| (i as u32, a)),
    };
    let max = runner_up.map_or(chosen, |(_, v)| v.max(chosen));
    let floor = max - NEGLIGIBLE;
    let sum = exp_sum(logits, max, floor, Kernels::detect());
    let probability = |logit: f32| ((logit - max).exp() / sum).clamp(0.0, 1.0);
    Some(Odds { p: probability(chosen), runner_up: runner_up.map(|(token, logit)| (token, probability(logit))) })
}

/// How tokens are picked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// 0 (or less) is greedy.
    pub temperature: f64,
    pub top_p: f64,
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Self { temperature: 0.0, top_p: 0.95, seed: 0 }
    }
}

/// A seeded picker (splitmix64: small, fast, reproducible across platforms).
#[derive(Debug)]
pub struct Sampler {
    sampling: Sampling,
    state: u64,
    /// Each token's weight, and the candidates (token, weight) searched for the nucleus: kept between
    /// picks (a vocabulary's worth each token).
    weights: Vec<f32>,
    candidates: Vec<(u32, f32)>,
}

impl Sampler {
    pub fn new(sampling: Sampling) -> Self {
        Self { sampling, state: sampling.seed ^ 0x9E37_79B9_7F4A_7C15, weights: Vec::new(), candidates: Vec::new() }
    }

    fn next_unit(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next token among the logits that are not `-inf` (masked); `None` when every one is masked.
    pub fn pick(&mut self, logits: &[f32]) -> Option<u32> {
        let greedy = self.sampling.temperature <= 0.0 || !self.sampling.temperature.is_finite();
        if greedy {
            return argmax(logits).filter(|i| logits[*i].is_finite()).map(|i| i as u32);
        }
        let t = self.sampling.temperature as f32;
        // (Weights e^((v − max)/t) from the largest allowed logit: the likeliest weighs 1.)
        let max = logits.iter().copied().filter(|v| v.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return None;
        }
        let draw = self.next_unit() as f32;
        self.weights.resize(logits.len(), 0.0);
        let total = weights(logits, max, 1.0 / t, &mut self.weights, Kernels::detect());
        let top_p = self.sampling.top_p.clamp(0.0, 1.0) as f32;
        let keep = nucleus(&mut self.candidates, &self.weights, total, top_p);
        let candidates = &self.candidates[..keep.max(1)];
        let mass: f32 = candidates.iter().map(|c| c.1).sum();
        let mut target = draw * mass;
        for (token, weight) in candidates {
            if target < *weight {
                return Some(*token);
            }
            target -= weight;
        }
        candidates.last().map(|c| c.0)
    }
}

/// Most likely first, the lower token first among equals.
fn likelier(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// A weight up to this share of the total is left out of the first search for the nucleus.
const UNLIKELY: f32 = 1e-6;

/// The nucleus of the tokens of `weights` (summing to `total`; a masked token weighs 0): puts the
/// likeliest into `candidates`, in order, and returns how many of them it takes for their share to
/// reach `top_p` (all when it never does). First among the tokens above a millionth of the total: when
/// their share reaches `top_p` they hold the nucleus, since every other one is less likely than each of
/// them (a model's answer usually puts nearly all its weight on a few tokens). Else among all the
/// tokens weighing more than 0.
fn nucleus(candidates: &mut Vec<(u32, f32)>, weights: &[f32], total: f32, top_p: f32) -> usize {
    for floor in [total * UNLIKELY, 0.0] {
        candidates.clear();
        candidates.extend(weights.iter().enumerate().filter(|(_, w)| **w > floor).map(|(i, w)| (i as u32, *w)));
        if let Some(keep) = nucleus_among(candidates, total, top_p) {
            return keep;
        }
    }
    candidates.len()
}

/// [`nucleus`] among `candidates`, `None` when all of them fall short of `top_p`. Only the likeliest
/// are sorted: the first 64, then 8× more each time they fall short.
fn nucleus_among(candidates: &mut [(u32, f32)], total: f32, top_p: f32) -> Option<usize> {
    let mut first = 64;
    loop {
        let sorted = first.min(candidates.len());
        if sorted < candidates.len() {
            candidates.select_nth_unstable_by(sorted, likelier);
        }
        candidates[..sorted].sort_unstable_by(likelier);
        let mut kept = 0.0;
        for (n, c) in candidates[..sorted].iter().enumerate() {
            kept += c.1 / total;
            if kept >= top_p {
                return Some(n + 1);
            }
        }
        if sorted == candidates.len() {
            return None;
        }
        first *= 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_penalty_lowers_recent_tokens_once_each_as_llama_cpp_does() {
        let penalty = RepeatPenalty::new(2.0, Some(3)).unwrap();
        let mut logits = vec![4.0, -1.0, 3.0, 2.0, f32::NEG_INFINITY];
        // Token 2 twice and token 1 in the window, token 0 just out of it, token 4 masked, token 9 unknown.
        penalty.apply(&mut logits, &[0, 9, 4, 2, 1, 2]);
        assert_eq!(logits, [4.0, -2.0, 1.5, 2.0, f32::NEG_INFINITY]);
        let mut sampler = Sampler::new(Sampling::default());
        assert_eq!(sampler.pick(&logits), Some(0));
        assert_eq!(RepeatPenalty::new(1.0, None), None);
        assert_eq!(RepeatPenalty::new(1.1, Some(0)), None);
        assert_eq!(RepeatPenalty::new(f64::NAN, None), None);
        assert_eq!(RepeatPenalty::new(1.1, None).map(|p| p.last_n), Some(RepeatPenalty::DEFAULT_LAST_N));
    }

    #[test]
    fn odds_are_the_softmax_of_the_allowed_tokens() {
        let logits = [0.0, (3.0f32).ln(), f32::NEG_INFINITY, -100.0];
        let odds = odds(&logits, 1).unwrap();
        assert!((odds.p - 0.75).abs() < 1e-6, "{odds:?}");
        let (token, p) = odds.runner_up.unwrap();
        assert_eq!(token, 0);
        assert!((p - 0.25).abs() < 1e-6, "{p}");
        assert_eq!(super::odds(&logits, 2), None, "a masked token was not picked from the distribution");
        let alone = super::odds(&[f32::NEG_INFINITY, 5.0], 1).unwrap();
        assert_eq!((alone.p, alone.runner_up), (1.0, None));
        // The runner-up is the first of the largest others, on either side of the pick.
        let token = |logits: &[f32], picked| super::odds(logits, picked).unwrap().runner_up.unwrap().0;
        assert_eq!(token(&[1.0, 2.0, 1.0], 1), 0);
        assert_eq!(token(&[1.0, 2.0, 1.5, 1.5], 1), 2);
        assert_eq!(token(&[f32::INFINITY, 3.0, f32::NAN, 2.0], 1), 3);
        assert_eq!(token(&[2.0, 3.0, 2.0], 0), 1, "the picked token need not be the largest");
    }

    #[test]
    fn greedy_takes_the_best_unmasked_token() {
        let mut sampler = Sampler::new(Sampling::default());
        assert_eq!(sampler.pick(&[0.1, 2.0, f32::NEG_INFINITY, 2.0]), Some(1));
        assert_eq!(sampler.pick(&[f32::NEG_INFINITY; 3]), None);
    }

    /// The nucleus found among the likeliest is the one a sort of every allowed token finds, whatever
    /// the share asked for, on flat and peaked weights with ties (both searches taken: among the
    /// tokens of a millionth of the total, and among all).
    #[test]
    fn the_nucleus_is_the_full_sorts() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut both = [false; 2];
        for (len, peak) in [(1, 1.0), (10, 1.0), (100, 30.0), (5000, 1.0), (5000, 40.0), (70_000, 25.0)] {
            // Weights on 64 levels (many equal), every 13th token masked (weighed 0, as `weights` does).
            let allowed = |i: usize| i % 13 != 5;
            let weights: Vec<f32> = (0..len)
                .map(|i| if allowed(i) { (peak * ((next() * 64.0).floor() / 64.0 - 1.0)).exp() } else { 0.0 })
                .collect();
            let total: f32 = weights.iter().sum();
            let mut sorted: Vec<(u32, f32)> =
                weights.iter().enumerate().filter(|(i, _)| allowed(*i)).map(|(i, w)| (i as u32, *w)).collect();
            sorted.sort_by(likelier);
            for top_p in [0.0, 0.1, 0.5, 0.9, 0.95, 0.999, 1.0] {
                let mut kept = 0.0;
                let expected = sorted.iter().position(|c| {
                    kept += c.1 / total;
                    kept >= top_p
                });
                let expected = expected.map_or(sorted.len(), |n| n + 1);
                let mut ours = Vec::new();
                let keep = nucleus(&mut ours, &weights, total, top_p);
                assert_eq!(keep, expected, "{len} candidates, peak {peak}, top_p {top_p}");
                assert_eq!(ours[..keep], sorted[..keep], "{len} candidates, peak {peak}, top_p {top_p}");
                // All the allowed tokens searched, more than the likely ones: the second search.
                let likely = weights.iter().filter(|w| **w > total * UNLIKELY).count();
                both[usize::from(ours.len() > likely)] = true;
            }
        }
        assert_eq!(both, [true, true], "only one of the two searches was taken");
    }

    #[test]
    fn the_same_seed_picks_the_same_tokens() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32 * 0.3).collect();
        let sampling = Sampling { temperature: 1.0, top_p: 0.9, seed: 42 };
        let run = |s: Sampling| {
            let mut sampler = Sampler::new(s);
            (0..40).map(|_| sampler.pick(&logits).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(run(sampling), run(sampling));
        assert_ne!(run(sampling), run(Sampling { seed: 43, ..sampling }));
        let mut masked = vec![f32::NEG_INFINITY; 50];
        masked[7] = 0.0;
        let mut sampler = Sampler::new(sampling);
        assert!((0..20).all(|_| sampler.pick(&masked) == Some(7)));
    }
}
