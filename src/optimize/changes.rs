//! A candidate's effect case by case: each case it was scored on (train and held-out) against the
//! baseline's score of the same case in the same set, improved, regressed or the same.

use serde::Serialize;

use super::record::{Candidate, CaseResult};
use crate::eval::score::Verdict;

/// How a case moved from the baseline to a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moved {
    Improved,
    Regressed,
    Same,
    /// The baseline has no score of this case in this set (it was not run there).
    Unpaired,
}

/// One case of a candidate beside the baseline's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseChange {
    pub case: String,
    pub held_out: bool,
    pub moved: Moved,
    pub before: Option<Verdict>,
    pub after: Verdict,
    /// The candidate's score minus the baseline's (0 when unpaired).
    pub delta: f64,
}

/// `candidate`'s cases against `baseline`'s: improved first, then regressed, then the rest, each in
/// the candidate's order (train before held-out).
pub fn case_changes(baseline: &Candidate, candidate: &Candidate) -> Vec<CaseChange> {
    let before = |case: &CaseResult| baseline.cases.iter().find(|b| b.case == case.case && b.held_out == case.held_out);
    let mut changes: Vec<CaseChange> = candidate
        .cases
        .iter()
        .map(|case| {
            let old = before(case);
            let delta = old.map_or(0.0, |b| case.score - b.score);
            let moved = match old {
                None => Moved::Unpaired,
                Some(_) if delta > 1e-12 => Moved::Improved,
                Some(_) if delta < -1e-12 => Moved::Regressed,
                Some(_) => Moved::Same,
            };
            CaseChange {
                case: case.case.clone(),
                held_out: case.held_out,
                moved,
                before: old.map(|b| b.verdict),
                after: case.verdict,
                delta,
            }
        })
        .collect();
    let rank = |m: Moved| match m {
        Moved::Improved => 0,
        Moved::Regressed => 1,
        Moved::Same => 2,
        Moved::Unpaired => 3,
    };
    changes.sort_by_key(|c| rank(c.moved));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, held_out: bool, verdict: Verdict, score: f64) -> CaseResult {
        CaseResult { case: name.into(), held_out, verdict, f1: None, score, reason: String::new() }
    }

    #[test]
    fn cases_are_paired_within_their_set_and_ordered_improved_regressed_same() {
        let baseline = Candidate {
            cases: vec![
                case("a", false, Verdict::Fail, 0.0),
                case("b", false, Verdict::Pass, 1.0),
                case("c", true, Verdict::Pass, 1.0),
                case("a", true, Verdict::Pass, 1.0),
            ],
            ..Candidate::default()
        };
        let candidate = Candidate {
            cases: vec![
                case("a", false, Verdict::Pass, 1.0),
                case("b", false, Verdict::Pass, 1.0),
                case("c", true, Verdict::Fail, 0.25),
                case("d", true, Verdict::Pass, 1.0),
            ],
            ..Candidate::default()
        };
        let changes = case_changes(&baseline, &candidate);
        let shown: Vec<(&str, bool, Moved)> = changes.iter().map(|c| (c.case.as_str(), c.held_out, c.moved)).collect();
        assert_eq!(
            shown,
            [
                ("a", false, Moved::Improved),
                ("c", true, Moved::Regressed),
                ("b", false, Moved::Same),
                ("d", true, Moved::Unpaired)
            ]
        );
        assert_eq!(changes[1].before, Some(Verdict::Pass));
        assert!((changes[1].delta + 0.75).abs() < 1e-9);
    }
}
