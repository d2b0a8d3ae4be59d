//! Evaluating a candidate: the prompt with its `system` and/or `template` replaced in memory, run on a
//! subset of the cases through the eval plan and the one eval pipeline (the response cache included,
//! so the baseline or a repeated candidate costs no new model call), each case scored as an eval
//! scores it.

use futures_util::future::{BoxFuture, Shared};

use super::record::{CaseResult, RoleCost};
use crate::eval::pipeline::{self, Pipeline};
use crate::eval::score::{Difference, Verdict};
use crate::eval::{EvalError, EvalPlan};
use crate::run::Stop;

/// The optimization's cancel, polled by every eval it runs.
pub type Cancel = Shared<BoxFuture<'static, Stop>>;

/// What a candidate changes: the whole new text of the system prompt and of the template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub system: Option<String>,
    pub template: String,
}

/// A case scored, with what the proposer reads of it.
#[derive(Clone, Debug)]
pub struct Scored {
    pub result: CaseResult,
    /// The answer as the model gave it (a demonstration when it passed).
    pub answer: String,
    pub differences: Vec<Difference>,
    /// Each failed check: what it is and why.
    pub failed_checks: Vec<String>,
}

/// A candidate on a set of cases.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub cases: Vec<Scored>,
    pub cost: RoleCost,
    pub cancelled: bool,
}

/// `base` (one column: the prompt as read) with `edit` in place of its text, running only `cases`.
pub fn plan_for(base: &EvalPlan, edit: &Edit, cases: &[String]) -> EvalPlan {
    let mut plan = base.clone();
    for column in &mut plan.columns {
        column.setup.prompt.system.clone_from(&edit.system);
        column.setup.prompt.template.clone_from(&edit.template);
    }
    let rows = plan.rows.clone();
    plan.cells.retain(|cell| rows.get(cell.row).cloned().flatten().is_some_and(|case| cases.contains(&case)));
    plan
}

/// Whether `edit` renders for every case of `base`; `Err` names the case and the error.
pub fn renders(base: &EvalPlan, edit: &Edit) -> Result<(), String> {
    let plan = plan_for(base, edit, &[]);
    for column in &plan.columns {
        // Every case the column runs (a dataset's rows read again, one at a time).
        let mut failed = None;
        let walked = column.cases.each_case(|case| {
            column.run_plan(case).map(drop).map_err(|e| {
                failed = Some(match case {
                    Some(case) => format!("it does not render for case {:?}: {e}", case.name),
                    None => format!("it does not render: {e}"),
                });
                crate::eval::EvalError::Input(String::new())
            })
        });
        if let Some(why) = failed {
            return Err(why);
        }
        walked.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Runs `plan`'s cells (its cases are `held_out` or train), `concurrency` at once, stopped by
/// `cancel` (cells not run are left out, so a cancelled outcome holds only what was scored).
pub async fn evaluate(
    plan: &EvalPlan,
    held_out: bool,
    concurrency: usize,
    cancel: Cancel,
) -> Result<Outcome, EvalError> {
    let pipeline = Pipeline { plan, concurrency, record_history: false, wrap: None };
    let ran = pipeline::run(pipeline, |_| {}, cancel).await?;
    let mut outcome = Outcome { cancelled: ran.record.cancelled, ..Outcome::default() };
    for cell in &ran.record.cells {
        let Some(case) = cell.case.clone() else { continue };
        let never_ran = cell.run.not_run;
        if ran.record.cancelled && (never_ran || cell.run.cancelled) {
            continue;
        }
        let (score, brief) = (&cell.score, &cell.run);
        outcome.cost.calls += 1;
        outcome.cost.cached += usize::from(brief.cached);
        outcome.cost.tokens_in += brief.tokens_in;
        outcome.cost.tokens_out += brief.tokens_out;
        let f1 = score.f1();
        let value = case_score(score.verdict == Verdict::Pass, f1);
        outcome.cases.push(Scored {
            result: CaseResult {
                case,
                held_out,
                verdict: score.verdict,
                f1,
                score: value,
                reason: score.reason.clone(),
            },
            answer: brief.answer.clone(),
            differences: score.differences.clone(),
            failed_checks: score
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.check, c.message.as_deref().unwrap_or("failed")))
                .collect(),
        });
    }
    Ok(outcome)
}

/// A case's score, 0 to 1: the mean of its pass (1 or 0) and its F1 (its pass again when there is no
/// expected answer), so a failed case whose items all paired (a check failed, a field differed) still
/// scores below a passed one.
pub fn case_score(passed: bool, f1: Option<f64>) -> f64 {
    let pass = if passed { 1.0 } else { 0.0 };
    (pass + f1.unwrap_or(pass)) / 2.0
}

/// The figures of `cases`.
pub fn figures(cases: &[&CaseResult]) -> super::select::Figures {
    let n = cases.len().max(1) as f64;
    let f1s: Vec<f64> = cases.iter().filter_map(|c| c.f1).collect();
    super::select::Figures {
        pass_rate: cases.iter().filter(|c| c.verdict == Verdict::Pass).count() as f64 / n,
        mean_f1: (!f1s.is_empty()).then(|| super::stats::mean(&f1s)),
        mean_score: cases.iter().map(|c| c.score).sum::<f64>() / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_case_scores_below_a_passed_one_even_when_every_item_paired() {
        assert_eq!(case_score(true, Some(1.0)), 1.0);
        assert_eq!(case_score(false, Some(1.0)), 0.5);
        assert_eq!(case_score(false, Some(0.0)), 0.0);
        assert_eq!(case_score(true, None), 1.0);
        assert_eq!(case_score(false, None), 0.0);
    }
}
