//! Picking the next token from the logits: greedy (argmax, the default and deterministic), or
//! temperature with nucleus (top-p) sampling from a seeded generator, so the same seed gives the same answer.

use super::model::argmax;

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
}

impl Sampler {
    pub fn new(sampling: Sampling) -> Self {
        Self { sampling, state: sampling.seed ^ 0x9E37_79B9_7F4A_7C15 }
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
        let max = logits.iter().copied().filter(|v| v.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return None;
        }
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| (i as u32, ((v - max) / t).exp()))
            .collect();
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: f32 = candidates.iter().map(|c| c.1).sum();
        let top_p = self.sampling.top_p.clamp(0.0, 1.0) as f32;
        let mut kept = 0.0;
        let mut keep = candidates.len();
        for (n, c) in candidates.iter().enumerate() {
            kept += c.1 / total;
            if kept >= top_p {
                keep = n + 1;
                break;
            }
        }
        candidates.truncate(keep.max(1));
        let mass: f32 = candidates.iter().map(|c| c.1).sum();
        let mut target = self.next_unit() as f32 * mass;
        for (token, weight) in &candidates {
            if target < *weight {
                return Some(*token);
            }
            target -= weight;
        }
        candidates.last().map(|c| c.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_best_unmasked_token() {
        let mut sampler = Sampler::new(Sampling::default());
        assert_eq!(sampler.pick(&[0.1, 2.0, f32::NEG_INFINITY, 2.0]), Some(1));
        assert_eq!(sampler.pick(&[f32::NEG_INFINITY; 3]), None);
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
