//! The train / held-out split of an optimization: seeded, stratified by the last eval's verdicts
//! (passed vs not) when there is one, each side at least one case; the record keeps it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::seeded::Seeded;

/// Which cases tune the prompt (`train`) and which judge the tuned prompt (`held_out`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub seed: u64,
    /// `--split`: the held-out fraction of the cases.
    pub held_out_fraction: f64,
    /// The eval whose verdicts stratified the split (`None`: no earlier eval of the prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stratified_by: Option<String>,
    /// In the prompt's order.
    pub train: Vec<String>,
    pub held_out: Vec<String>,
}

impl Split {
    /// Whether `case` is held out.
    pub fn is_held_out(&self, case: &str) -> bool {
        self.held_out.iter().any(|c| c == case)
    }
}

/// Splits `cases` (at least 2, in the prompt's order): about `fraction` of them held out, drawn with
/// `seed`; with `passed` (the last eval's verdict per case, and its id) the passing and the other
/// cases are split apart, so both sides see both kinds. `Err` names the bad value.
pub fn split(
    cases: &[String],
    passed: Option<(&str, &HashMap<String, bool>)>,
    fraction: f64,
    seed: u64,
) -> Result<Split, String> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(format!("--split {fraction}: the held-out fraction must be between 0 and 1 (e.g. 0.5)"));
    }
    if cases.len() < 2 {
        return Err(format!(
            "the prompt has {} case{}: an optimization needs at least 2 (one to tune on, one held out)",
            cases.len(),
            if cases.len() == 1 { "" } else { "s" }
        ));
    }
    let mut rng = Seeded::new(seed);
    let strata: Vec<Vec<usize>> = match passed {
        Some((_, verdicts)) => {
            let (pass, other): (Vec<usize>, Vec<usize>) =
                (0..cases.len()).partition(|&i| cases.get(i).and_then(|c| verdicts.get(c)).copied().unwrap_or(false));
            vec![pass, other]
        }
        None => vec![(0..cases.len()).collect()],
    };
    let mut chosen: Vec<Vec<usize>> = Vec::new();
    let mut rest: Vec<Vec<usize>> = Vec::new();
    for mut stratum in strata {
        rng.shuffle(&mut stratum);
        let take = ((stratum.len() as f64) * fraction).round() as usize;
        let kept = stratum.split_off(take.min(stratum.len()));
        chosen.push(stratum);
        rest.push(kept);
    }
    // Each side keeps at least one case: move one from the largest stratum of the other side.
    let total: usize = chosen.iter().map(Vec::len).sum();
    if total == 0 {
        move_one(&mut rest, &mut chosen);
    } else if total == cases.len() {
        move_one(&mut chosen, &mut rest);
    }
    let mut held: Vec<usize> = chosen.into_iter().flatten().collect();
    held.sort_unstable();
    let name = |i: &usize| cases.get(*i).cloned().unwrap_or_default();
    let held_out: Vec<String> = held.iter().map(name).collect();
    let train: Vec<String> = (0..cases.len()).filter(|i| held.binary_search(i).is_err()).map(|i| name(&i)).collect();
    Ok(Split {
        seed,
        held_out_fraction: fraction,
        stratified_by: passed.map(|(id, _)| id.to_string()),
        train,
        held_out,
    })
}

/// Moves one case from the largest stratum of `from` to the same stratum of `to`.
fn move_one(from: &mut [Vec<usize>], to: &mut [Vec<usize>]) {
    let largest = (0..from.len()).max_by_key(|&i| from.get(i).map_or(0, Vec::len));
    if let Some(i) = largest {
        if let (Some(case), Some(side)) = (from.get_mut(i).and_then(Vec::pop), to.get_mut(i)) {
            side.push(case);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("case{i}")).collect()
    }

    #[test]
    fn a_split_is_seeded_covers_every_case_once_and_keeps_a_case_on_each_side() {
        let cases = names(10);
        let a = split(&cases, None, 0.3, 1).unwrap();
        assert_eq!(a, split(&cases, None, 0.3, 1).unwrap(), "the same seed, the same split");
        assert_eq!(a.held_out.len(), 3);
        assert_eq!(a.train.len(), 7);
        let mut all: Vec<String> = a.train.iter().chain(&a.held_out).cloned().collect();
        all.sort();
        let mut sorted = cases.clone();
        sorted.sort();
        assert_eq!(all, sorted);
        let others: Vec<Vec<String>> = (2..12).map(|seed| split(&cases, None, 0.3, seed).unwrap().held_out).collect();
        assert!(others.iter().any(|h| *h != a.held_out), "another seed draws another split");
        let tiny = split(&names(2), None, 0.01, 3).unwrap();
        assert_eq!((tiny.train.len(), tiny.held_out.len()), (1, 1));
        let most = split(&names(2), None, 0.99, 3).unwrap();
        assert_eq!((most.train.len(), most.held_out.len()), (1, 1));
    }

    #[test]
    fn a_split_is_stratified_by_the_last_verdicts() {
        let cases = names(8);
        // Cases 0..4 passed, 4..8 did not.
        let verdicts: HashMap<String, bool> = cases.iter().enumerate().map(|(i, c)| (c.clone(), i < 4)).collect();
        for seed in 0..20 {
            let s = split(&cases, Some(("E1", &verdicts)), 0.5, seed).unwrap();
            let held_passing = s.held_out.iter().filter(|c| verdicts[*c]).count();
            assert_eq!((s.held_out.len(), held_passing), (4, 2), "seed {seed}: half of each kind held out");
            assert_eq!(s.stratified_by.as_deref(), Some("E1"));
        }
    }

    #[test]
    fn a_fraction_outside_zero_to_one_or_fewer_than_two_cases_is_refused_by_name() {
        assert!(split(&names(4), None, 0.0, 1).unwrap_err().contains("--split 0"));
        assert!(split(&names(4), None, 1.0, 1).unwrap_err().contains("--split 1"));
        assert!(split(&names(4), None, f64::NAN, 1).unwrap_err().contains("--split NaN"));
        assert!(split(&names(1), None, 0.5, 1).unwrap_err().contains("at least 2"));
    }
}
