//! Which candidates survive and which wins: the Pareto front over per-case train scores (a candidate
//! stays when it is best on some case and no other does at least as well everywhere), and the final
//! ranking on the held-out cases (mean score, then pass rate; the baseline wins a tie).

use serde::{Deserialize, Serialize};

/// A candidate's figures over a set of cases.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Cases that passed, of those run.
    pub pass_rate: f64,
    /// The mean F1 of the cases with an expected answer (`None`: no case has one).
    pub mean_f1: Option<f64>,
    /// The mean per-case score (the mean of a case's pass, 1 or 0, and its F1;
    /// [`super::evaluate::case_score`]): what the front and the ranking compare.
    pub mean_score: f64,
}

/// The indices of `scores` (one row per candidate, one column per case) on the Pareto front: best on
/// some case, and not dominated (another at least as good on every case and better on one, or the
/// same on every case and earlier).
pub fn pareto_front(scores: &[Vec<f64>]) -> Vec<usize> {
    let cases = scores.iter().map(Vec::len).max().unwrap_or(0);
    let at = |i: usize, j: usize| scores.get(i).and_then(|row| row.get(j)).copied().unwrap_or(0.0);
    let best: Vec<f64> = (0..cases).map(|j| (0..scores.len()).map(|i| at(i, j)).fold(f64::MIN, f64::max)).collect();
    let dominated = |i: usize| {
        (0..scores.len()).any(|k| {
            let at_least = (0..cases).all(|j| at(k, j) >= at(i, j));
            let better = (0..cases).any(|j| at(k, j) > at(i, j));
            k != i && at_least && (better || k < i)
        })
    };
    (0..scores.len())
        .filter(|&i| (0..cases).any(|j| best.get(j).is_some_and(|b| at(i, j) >= *b)) || cases == 0)
        .filter(|&i| !dominated(i))
        .collect()
}

/// `held_out` (candidate index, figures) ranked best first: mean score, then pass rate, then the
/// earlier candidate (the baseline, index 0, wins a tie: an edit must earn its place).
pub fn rank(mut held_out: Vec<(usize, Figures)>) -> Vec<usize> {
    held_out.sort_by(|(a, fa), (b, fb)| {
        fb.mean_score.total_cmp(&fa.mean_score).then(fb.pass_rate.total_cmp(&fa.pass_rate)).then(a.cmp(b))
    });
    held_out.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_keeps_the_best_on_some_case_and_drops_the_dominated() {
        let scores = vec![
            vec![1.0, 0.0, 0.5], // 0: best on case 0 (tied with 3)
            vec![0.0, 1.0, 0.5], // 1: best on case 1
            vec![0.5, 0.5, 0.5], // 2: best on nothing
            vec![1.0, 0.0, 0.5], // 3: the same as 0, later: dropped
            vec![1.0, 0.0, 0.6], // 4: best on case 2 and dominates 0 and 3
        ];
        assert_eq!(pareto_front(&scores), vec![1, 4]);
        assert_eq!(pareto_front(&[vec![0.2, 0.2]]), vec![0]);
        assert_eq!(pareto_front(&[vec![0.2], vec![0.2]]), vec![0], "a tie keeps the earlier");
        assert!(pareto_front(&[]).is_empty());
    }

    #[test]
    fn the_ranking_puts_the_best_held_out_first_and_the_baseline_wins_a_tie() {
        let f = |mean_score, pass_rate| Figures { pass_rate, mean_f1: Some(mean_score), mean_score };
        assert_eq!(rank(vec![(0, f(0.5, 0.5)), (2, f(0.9, 0.5)), (1, f(0.4, 1.0))]), vec![2, 0, 1]);
        assert_eq!(rank(vec![(3, f(0.5, 0.5)), (0, f(0.5, 0.5))]), vec![0, 3]);
        assert_eq!(rank(vec![(3, f(0.5, 1.0)), (0, f(0.5, 0.5))]), vec![3, 0]);
    }
}
