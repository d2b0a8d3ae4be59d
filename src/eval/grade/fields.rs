//! Fields compared by a grader (`[eval.fields."/pointer"] compare = "similar" | "judge" | "command"`):
//! each prepared when the prompt is read (the embedder and the judge's model named, the program found
//! in the prompt's folder or on `PATH`: a bad one is an input error naming the field's line, before
//! any model runs), then, per cell, each pair the scorer will compare (`pairing::graded_pairs`)
//! graded by the graders the checks use (the embedder, the judge, the program). The verdicts are kept
//! by the pair they judged (`comparators::pair_key`), where the scorer looks them up.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::judge::{JudgeCheck, JudgeModel};
use super::similar::text_of;
use super::{FieldJudge, Graded, JudgeCall, Judges, Program, Question};
use crate::eval::comparators::{pair_key, FieldGrades, FieldVerdict, GradedPair};
use crate::prompt::expect::{At, Comparator, EvalSettings};
use crate::provider::embed::EmbedderModel;

/// How a field is graded, prepared when the prompt is read.
#[derive(Clone, Debug)]
pub enum FieldGrader {
    /// Cosine similarity of the two values' embeddings at least `threshold` (`embedder`: the field's
    /// own, else the eval's).
    Similar { embedder: Option<EmbedderModel>, threshold: f64 },
    /// A model grades the answer's value against the rubric, told the expected value (under the
    /// pointer `""`: `[eval.items]`, the whole answered item against the whole expected item).
    Judge(JudgeCheck),
    /// A program gets `{"case", "field", "answer", "expected", "item", "expected_item", "vars"}`.
    Command(Program),
}

/// The pointer `[eval.items]`' grader is kept under: the whole item (`[eval.fields]` refuses it).
pub const WHOLE_ITEM: &str = "";

/// The graders of `settings`' graded comparators, by pointer, their programs found from `dir` (the
/// prompt's folder), and `[eval.items]`' judge under [`WHOLE_ITEM`]. `Err` names the field, with
/// where its table is written.
pub fn prepare(settings: &EvalSettings, dir: &Path) -> Result<BTreeMap<String, FieldGrader>, (At, String)> {
    let mut graders = BTreeMap::new();
    if let Some(Comparator::Judge { rubric, judge, threshold }) = &settings.items {
        let model = judge
            .as_deref()
            .map(JudgeModel::parse)
            .transpose()
            .map_err(|why| (settings.items_at.clone(), format!("`[eval.items]`: `judge`: {why}")))?;
        let judge = JudgeCheck { rubric: rubric.clone(), model, threshold: *threshold, path: None, promptfoo: false };
        graders.insert(WHOLE_ITEM.to_string(), FieldGrader::Judge(judge));
    }
    for (pointer, rule) in &settings.fields {
        let at = || settings.field_at.get(pointer).cloned().unwrap_or_default();
        let wrong = |why: String| (at(), format!("`[eval.fields.{pointer:?}]`: {why}"));
        let grader = match rule {
            Comparator::Similar { threshold, embedder } => FieldGrader::Similar {
                embedder: embedder
                    .as_deref()
                    .map(EmbedderModel::parse)
                    .transpose()
                    .map_err(|why| wrong(format!("`embedder`: {why}")))?,
                threshold: *threshold,
            },
            Comparator::Judge { rubric, judge, threshold } => {
                let model = judge
                    .as_deref()
                    .map(JudgeModel::parse)
                    .transpose()
                    .map_err(|why| wrong(format!("`judge`: {why}")))?;
                FieldGrader::Judge(JudgeCheck {
                    rubric: rubric.clone(),
                    model,
                    threshold: *threshold,
                    path: None,
                    promptfoo: false,
                })
            }
            Comparator::Command { command, timeout } => FieldGrader::Command(
                Program::find(command, dir, *timeout).map_err(|why| wrong(format!("`command`: {why}")))?,
            ),
            _ => continue,
        };
        graders.insert(pointer.clone(), grader);
    }
    Ok(graders)
}

/// What a cell's graded pairs are graded in: the case, its variables, the models, and the prompt's
/// `[eval] embedder` (for a `similar` field that names none and no `--embedder`).
pub struct PairContext<'a> {
    pub case: Option<&'a str>,
    pub vars: &'a Value,
    pub judges: &'a Judges,
    pub embedder: Option<&'a EmbedderModel>,
}

/// Every pair of `pairs` graded by its field's grader (each distinct pair once), in `context`; with
/// the judges' calls, in the order the pairs came.
pub async fn grade_pairs(
    graders: &BTreeMap<String, FieldGrader>,
    pairs: &[GradedPair],
    context: &PairContext<'_>,
) -> (FieldGrades, Vec<FieldJudge>) {
    let mut grades = FieldGrades::new();
    let mut calls = Vec::new();
    for pair in pairs {
        let key = pair_key(&pair.pointer, &pair.expected, &pair.got);
        if grades.contains_key(&key) {
            continue;
        }
        let Some(grader) = graders.get(&pair.pointer) else { continue };
        let (graded, call) = grade_pair(grader, pair, context).await;
        if let Some(call) = call {
            let (field, expected, got) = (pair.pointer.clone(), pair.expected.clone(), pair.got.clone());
            calls.push(FieldJudge { field, expected, got, call });
        }
        grades.insert(key, graded);
    }
    (grades, calls)
}

/// One pair graded, with the judge's call when a judge graded it.
async fn grade_pair(
    grader: &FieldGrader,
    pair: &GradedPair,
    context: &PairContext<'_>,
) -> (Result<FieldVerdict, String>, Option<JudgeCall>) {
    match grader {
        FieldGrader::Judge(judge) => match ask_judge(judge, pair, context.case, context.vars, context.judges).await {
            Ok((verdict, call)) => (Ok(verdict), Some(call)),
            Err(why) => (Err(why), None),
        },
        other => (grade_by(other, pair, context).await, None),
    }
}

/// A pair graded by its field's judge.
async fn ask_judge(
    judge: &JudgeCheck,
    pair: &GradedPair,
    case: Option<&str>,
    vars: &Value,
    judges: &Judges,
) -> Result<(FieldVerdict, JudgeCall), String> {
    let what = if pair.pointer == WHOLE_ITEM { "item" } else { "value" };
    let rubric = format!("{}\n\nThe expected {what}, for reference: {}", judge.rubric, text_of(&pair.expected));
    let judge = JudgeCheck { rubric, ..judge.clone() };
    let question = Question {
        case: case.map(str::to_string),
        answer: pair.got.clone(),
        output: text_of(&pair.got),
        output_parsed: None,
        expected: pair.expected.clone(),
        vars: vars.clone(),
    };
    let (graded, call) = judges.grade(&judge, &question).await?;
    Ok((FieldVerdict { pass: graded.pass, score: graded.credit(), reason: graded.reason }, call))
}

/// A pair graded by an embedder or a program.
async fn grade_by(grader: &FieldGrader, pair: &GradedPair, context: &PairContext<'_>) -> Result<FieldVerdict, String> {
    let PairContext { case, vars, judges, .. } = *context;
    let detail = |graded: Graded| FieldVerdict { pass: graded.pass, score: graded.credit(), reason: graded.reason };
    match grader {
        FieldGrader::Similar { embedder, threshold } => {
            if pair.got.is_null() {
                let reason = Some("the answer has no value here".to_string());
                return Ok(FieldVerdict { pass: false, score: 0.0, reason });
            }
            let embedder = judges.embedder_for(embedder.as_ref(), context.embedder).ok_or_else(|| {
                "the `similar` comparator names no embedder (`embedder`, `[eval] embedder` or `eval --embedder`)"
                    .to_string()
            })?;
            let embedding = judges.embedding(embedder)?;
            let best = embedding.best_similarity(&text_of(&pair.got), &[text_of(&pair.expected)]).await?;
            let pass = best >= *threshold;
            let reason = (!pass).then(|| format!("similar {best:.2} < {threshold:.2}"));
            Ok(FieldVerdict { pass, score: best.clamp(0.0, 1.0), reason })
        }
        FieldGrader::Judge(judge) => ask_judge(judge, pair, case, vars, judges).await.map(|(verdict, _)| verdict),
        FieldGrader::Command(program) => {
            let input = json!({
                "case": case,
                "field": pair.pointer,
                "answer": pair.got,
                "expected": pair.expected,
                "item": pair.got_item,
                "expected_item": pair.expected_item,
                "vars": vars,
            });
            program.grade(&input).await.map(detail)
        }
    }
}
