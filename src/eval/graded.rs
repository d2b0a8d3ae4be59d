//! Each cell's graded checks (`command`, `judge`, `similar`, promptfoo's
//! `python`/`javascript`/`llm-rubric`/`similar`) and graded fields (`[eval.fields]` compared by
//! `similar`, `judge` or `command`) run on its answer, beside the eval's runs: the question put to
//! each grader, the graders run in the check's order, then the fields' pairs; and the judges and
//! embedders an eval needs set up before any model is called.

use serde_json::Value;

use super::grade::{self, FieldGrader, Grader, Grades, JudgeModel, Judges, Question};
use super::plan::EvalPlan;
use super::score::Expectations;
use crate::prompt::expect::resolve::ExpectedAnswer;
use crate::prompt::expect::CheckKind;
use crate::prompt::template::Variables;
use crate::run::RunRecord;

/// One cell's run scored again against `expectations` (the prompt as it is now: after an approve), its
/// graded checks graded again (`vars`: the case's variables as rendered): never the verdict its
/// graders gave before. The judges and embedders are the ones its checks and fields name (the
/// embedders: else the prompt's `[eval] embedder`), under the response cache `cache`; one that names
/// none, or whose model cannot be set up, grades as an error (the cell is `error`).
pub async fn rescore(
    expectations: &Expectations,
    record: &RunRecord,
    vars: &Variables,
    cache: crate::run::CacheMode,
) -> super::score::CaseScore {
    let mut judges = Judges::none();
    // A judge or embedder that cannot be set up is left out: its check or field then grades as an error.
    for check in &expectations.checks {
        match &check.grader {
            Some(Grader::Judge(judge)) => {
                if let Some(model) = judge.model.clone() {
                    let _ = judges.add(model, cache, None);
                }
            }
            Some(Grader::Similar(similar)) => {
                if let Some(model) =
                    judges.embedder_for(similar.embedder.as_ref(), expectations.embedder.as_ref()).cloned()
                {
                    let _ = judges.add_embedder(&model, cache, None);
                }
            }
            _ => {}
        }
    }
    for grader in expectations.field_graders.values() {
        match grader {
            FieldGrader::Judge(judge) => {
                if let Some(model) = judge.model.clone() {
                    let _ = judges.add(model, cache, None);
                }
            }
            FieldGrader::Similar { embedder, .. } => {
                if let Some(model) = judges.embedder_for(embedder.as_ref(), expectations.embedder.as_ref()).cloned() {
                    let _ = judges.add_embedder(&model, cache, None);
                }
            }
            FieldGrader::Command(_) => {}
        }
    }
    let grades = grade_cell(expectations, record, vars, &judges).await;
    super::score::score_graded(expectations, record, &grades)
}

/// Whether any of `expectations`' checks is graded by a program or a model.
pub fn any(expectations: &Expectations) -> bool {
    expectations.checks.iter().any(|check| check.grader.is_some() || check.transform.is_some())
        || !expectations.field_graders.is_empty()
}

/// Grades the graded checks of `expectations` on `record`'s answer (none when the run got no answer);
/// `vars` are the case's variables as rendered. Dropping the future stops the programs it started.
pub async fn grade_cell(expectations: &Expectations, record: &RunRecord, vars: &Variables, judges: &Judges) -> Grades {
    let output = record.turns.last().map(|t| t.output.as_str()).unwrap_or_default();
    if !any(expectations) || output.trim().is_empty() || record.cancelled {
        return Grades { checks: vec![None; expectations.checks.len()], ..Default::default() };
    }
    let question = question(expectations, record, vars);
    let mut checks = Vec::with_capacity(expectations.checks.len());
    let mut transformed = Vec::with_capacity(expectations.checks.len());
    for check in &expectations.checks {
        // The answer through the check's transforms (as promptfoo hands it: the parsed value where it
        // parses the answer), and the question its grader is asked about that.
        let output = match &check.transform {
            None => None,
            Some(transform) => {
                let given = question.output_parsed.clone().unwrap_or_else(|| Value::String(question.output.clone()));
                Some(transform.apply(given, &question.vars).await)
            }
        };
        let asked = match &output {
            Some(Ok(value)) => Some(Question {
                output: grade::transform::text_of(value),
                output_parsed: (!value.is_string()).then(|| value.clone()),
                ..question.clone()
            }),
            _ => None,
        };
        checks.push(match (&check.grader, &output) {
            (None, _) => None,
            (Some(_), Some(Err(why))) => Some(Err(why.clone())),
            (Some(grader), _) => {
                let asked = asked.as_ref().unwrap_or(&question);
                Some(grade::grade(grader, asked, judges, expectations.embedder.as_ref()).await)
            }
        });
        transformed.push(output);
    }
    let (fields, field_judges) = if expectations.field_graders.is_empty() {
        Default::default()
    } else {
        let pairs = super::verdict::graded_pairs(expectations, record);
        let context = grade::fields::PairContext {
            case: question.case.as_deref(),
            vars: &question.vars,
            judges,
            embedder: expectations.embedder.as_ref(),
        };
        grade::fields::grade_pairs(&expectations.field_graders, &pairs, &context).await
    };
    Grades { checks, fields, field_judges, transformed }
}

/// What the graders are asked about `record`'s answer.
fn question(expectations: &Expectations, record: &RunRecord, vars: &Variables) -> Question {
    let output = record.turns.last().map(|t| t.output.clone()).unwrap_or_default();
    let expected = match &expectations.expected {
        Some(ExpectedAnswer::Items(items)) => Value::Array(items.clone()),
        Some(ExpectedAnswer::Value(value)) => value.clone(),
        None => Value::Null,
    };
    let answer = match &record.result {
        Value::Null => Value::String(output.clone()),
        other => other.clone(),
    };
    let vars = Value::Object(vars.clone());
    // promptfoo parses the answer of a provider asked for JSON (its text when it is not JSON).
    let output_parsed = (expectations.settings.parsed_output == Some(true))
        .then(|| serde_json::from_str::<Value>(output.trim()).ok())
        .flatten();
    let case = record.case.clone().or_else(|| expectations.case.clone());
    Question { case, answer, output, output_parsed, expected, vars }
}

/// Every judge `plan`'s checks name (or its `--judge` for those that name none), set up under the
/// plan's response cache. `Err` names the check that has no judge, or the judge that cannot be set up.
pub fn judges_for(plan: &EvalPlan) -> Result<Judges, String> {
    let mut judges = Judges::with_default(plan.judge.clone()).with_embedder(plan.embedder.clone());
    let Some(first) = plan.columns.first() else { return Ok(judges) };
    let (cache, cache_dir) = (first.setup.cache, first.setup.cache_dir.clone());
    plan.each_graded(|column, expectations| {
        for check in &expectations.checks {
            let at = || check.spec.at.or(|| format!("prompt `{}`", column.setup.prompt.id));
            let judge = match &check.grader {
                Some(Grader::Judge(judge)) => judge,
                Some(Grader::Similar(similar)) => {
                    let own = similar.embedder.as_ref();
                    match judges.embedder_for(own, expectations.embedder.as_ref()).cloned() {
                        Some(model) => judges
                            .add_embedder(&model, cache, cache_dir.clone())
                            .map_err(|e| format!("{}: {e}", at()))?,
                        // A promptfoo `similar` with no embedder anywhere stays not evaluated.
                        None if check.spec.kind == CheckKind::Assert => {}
                        None => {
                            let none = "and there is no `[eval] embedder` or --embedder";
                            return Err(format!(
                                "{}: check `{}` names no `embedder`, {none}",
                                at(),
                                check.spec.label()
                            ));
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            let model: JudgeModel = judge.model.clone().or_else(|| plan.judge.clone()).ok_or_else(|| {
                format!("{}: check `{}` names no `judge` model, and no --judge was given", at(), check.spec.label())
            })?;
            judges.add(model, cache, cache_dir.clone())?;
        }
        for (pointer, grader) in &expectations.field_graders {
            let settings = &expectations.settings;
            let whole = pointer == grade::fields::WHOLE_ITEM;
            let at = || {
                let place = if whole { Some(&settings.items_at) } else { settings.field_at.get(pointer) };
                place.map_or_else(|| format!("prompt `{}`", column.setup.prompt.id), |at| at.or(String::new))
            };
            let what = || if whole { "`[eval.items]`: items are".to_string() } else { format!("field {pointer:?} is") };
            match grader {
                FieldGrader::Similar { embedder, .. } => {
                    let needs =
                        "the `similar` comparator needs an `embedder` (there, in `[eval] embedder` or --embedder)";
                    let model = judges
                        .embedder_for(embedder.as_ref(), expectations.embedder.as_ref())
                        .cloned()
                        .ok_or_else(|| format!("{}: `[eval.fields.{pointer:?}]`: {needs}", at()))?;
                    judges
                        .add_embedder(&model, cache, cache_dir.clone())
                        .map_err(|e| format!("{}: field {pointer:?}: {e}", at()))?
                }
                FieldGrader::Judge(judge) => {
                    let model = judge.model.clone().or_else(|| plan.judge.clone()).ok_or_else(|| {
                        format!(
                            "{}: {} compared by a judge that names no `judge` model, and no --judge was given",
                            at(),
                            what()
                        )
                    })?;
                    judges.add(model, cache, cache_dir.clone())?;
                }
                FieldGrader::Command(_) => {}
            }
        }
        Ok(())
    })?;
    Ok(judges)
}
