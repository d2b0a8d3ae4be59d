//! Whether a candidate's gain over the baseline is more than noise: the exact two-sided sign test
//! over paired held-out cases (McNemar's exact test when the scores are pass/fail) and a seeded
//! percentile-bootstrap confidence interval for the mean per-case delta.

use serde::{Deserialize, Serialize};

use super::seeded::Seeded;

/// Resamples drawn for the bootstrap interval.
pub const RESAMPLES: usize = 2000;

/// A candidate against the baseline over the same cases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Cases the candidate scored higher on, lower on, the same on.
    pub better: usize,
    pub worse: usize,
    pub same: usize,
    /// The exact two-sided sign test's p-value over the cases that differ (1 when none does).
    pub p_value: f64,
    /// The mean per-case score delta (candidate minus baseline) and its 95% bootstrap interval.
    pub mean_delta: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// `candidate` against `baseline`, case by case (the same cases in the same order).
pub fn paired(baseline: &[f64], candidate: &[f64], seed: u64) -> Paired {
    let deltas: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c - b).collect();
    let better = deltas.iter().filter(|d| **d > 1e-12).count();
    let worse = deltas.iter().filter(|d| **d < -1e-12).count();
    let (ci_low, ci_high) = bootstrap_interval(&deltas, seed);
    Paired {
        better,
        worse,
        same: deltas.len() - better - worse,
        p_value: sign_test(better, worse),
        mean_delta: mean(&deltas),
        ci_low,
        ci_high,
    }
}

/// The exact two-sided sign test: the chance, with no real difference (each differing case a fair
/// coin), of a split at least as uneven as `wins` to `losses`. Computed in log space, so it holds
/// for thousands of cases.
pub fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    if n == 0 {
        return 1.0;
    }
    let k = wins.min(losses);
    let mut log_pmf = -(n as f64) * std::f64::consts::LN_2;
    let mut tail = 0.0;
    for i in 0..=k {
        tail += log_pmf.exp();
        log_pmf += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (2.0 * tail).min(1.0)
}

/// The 95% percentile-bootstrap interval of the mean of `values` ([`RESAMPLES`] resamples drawn with
/// `seed`); `(0, 0)` for no values.
pub fn bootstrap_interval(values: &[f64], seed: u64) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let mut rng = Seeded::new(seed);
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| (0..values.len()).map(|_| values.get(rng.below(values.len())).copied().unwrap_or(0.0)).sum::<f64>())
        .map(|sum| sum / values.len() as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means.get(((RESAMPLES as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
    (at(0.025), at(0.975))
}

/// The mean (0 for none).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_sign_test_gives_the_exact_binomial_values() {
        // Known values of the two-sided exact binomial test at p = 1/2 (R: binom.test(k, n)$p.value).
        assert!(close(sign_test(5, 0), 0.0625));
        assert!(close(sign_test(0, 5), 0.0625));
        assert!(close(sign_test(9, 1), 0.021484375));
        assert!(close(sign_test(8, 2), 0.109375));
        assert!(close(sign_test(3, 3), 1.0));
        assert!(close(sign_test(1, 0), 1.0));
        assert!(close(sign_test(0, 0), 1.0));
        assert!(close(sign_test(15, 5), 0.04138946533203125));
        // Thousands of cases do not underflow: 600 to 400 is far from a fair coin.
        let p = sign_test(600, 400);
        assert!(p > 0.0 && p < 1e-9, "{p}");
    }

    #[test]
    fn the_bootstrap_interval_holds_the_mean_and_is_seeded() {
        assert_eq!(bootstrap_interval(&[0.25; 6], 1), (0.25, 0.25));
        let values = [0.0, 0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 0.5];
        let (low, high) = bootstrap_interval(&values, 3);
        assert!(low < mean(&values) && mean(&values) < high, "{low} {high}");
        assert!(low >= 0.0 && high <= 1.0);
        assert_eq!((low, high), bootstrap_interval(&values, 3));
        // A clear gain excludes 0; a mixed one does not.
        let (low, _) = bootstrap_interval(&[1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0], 5);
        assert!(low > 0.0);
        let (low, high) = bootstrap_interval(&[1.0, -1.0, 1.0, -1.0, 0.0, 1.0, -1.0, 0.0], 5);
        assert!(low < 0.0 && high > 0.0);
    }

    #[test]
    fn paired_counts_better_worse_and_same() {
        let p = paired(&[1.0, 0.0, 0.5, 1.0], &[1.0, 1.0, 1.0, 0.0], 9);
        assert_eq!((p.better, p.worse, p.same), (2, 1, 1));
        assert!(close(p.mean_delta, 0.125));
        assert!(close(p.p_value, 1.0));
    }
}
