//! Checks graded outside the scorer, after the answer: `command` checks (a program the prompt names),
//! promptfoo's `python` and `javascript` assertions (through the shims in [`shim`]), `judge` checks
//! with promptfoo's `llm-rubric` (a model, [`judge`]), `similar` checks with promptfoo's `similar`
//! when it names an embedder (embeddings, [`similar`]), and the fields whose comparator is one of
//! these graders ([`fields`]). Each is prepared when the prompt is read (the
//! program found, the judge's model resolved: a bad one is an input error before any model runs), then
//! graded per cell (`eval::graded`), whose results the scorer reads as any check's. A grader that
//! fails (missing, non-zero exit, timeout, a verdict of the wrong shape, a judge unreachable or
//! malformed twice) makes its check not evaluated and the cell an `error`, never a `pass`.

pub mod command;
pub mod fields;
pub mod judge;
mod shim;
pub mod similar;
pub mod transform;
mod worker;

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use crate::eval::comparators::FieldGrades;
use crate::prompt::expect::{AssertWhat, CheckKind, CheckSpec};
use crate::provider::embed::EmbedderModel;
pub use command::Program;
pub use fields::FieldGrader;
pub use judge::{JudgeCall, JudgeModel, Judges};
pub use similar::SimilarCheck;

/// A verdict as a grader gives it (promptfoo's `GradingResult`: `pass`, `score`, `reason`).
#[derive(Clone, Debug, PartialEq)]
pub struct Graded {
    pub pass: bool,
    /// 0..=1.
    pub score: f64,
    pub reason: Option<String>,
    /// The grader's code raised (promptfoo fails it, and a `not-` does not turn that into a pass).
    pub raised: bool,
}

impl Graded {
    /// `{"pass": bool, "score": 0..1, "reason": "..."}` read strictly: `pass` is needed; `score`
    /// defaults to 1 for a pass, 0 for a fail.
    pub fn from_verdict(value: &Value) -> Result<Graded, String> {
        let Value::Object(fields) = value else { return Err("a verdict is a JSON object".into()) };
        let pass = match fields.get("pass") {
            Some(Value::Bool(pass)) => *pass,
            Some(other) => return Err(format!("`pass` is true or false, not {other}")),
            None => return Err("the verdict has no `pass`".into()),
        };
        let score = match fields.get("score") {
            None | Some(Value::Null) => f64::from(u8::from(pass)),
            Some(score) => match score.as_f64() {
                Some(n) if (0.0..=1.0).contains(&n) => n,
                _ => return Err(format!("`score` is a number from 0 to 1, not {score}")),
            },
        };
        let reason = match fields.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(reason)) => Some(reason.clone()),
            Some(other) => return Err(format!("`reason` is text, not {other}")),
        };
        let raised = fields.get("raised") == Some(&Value::Bool(true));
        Ok(Graded { pass, score, reason, raised })
    }
}

/// The most credit a failed verdict gives a field or an item: a grader's `pass: false` never earns
/// full credit, whatever its `score` says.
pub const FAILED_CREDIT_MOST: f64 = 0.99;

impl Graded {
    /// The credit this verdict gives a field or an item: its score, below full when it failed.
    pub fn credit(&self) -> f64 {
        if self.pass {
            self.score
        } else {
            self.score.min(FAILED_CREDIT_MOST)
        }
    }
}

/// `check.py:my_fn` into the file and the function (a `:` in a Windows drive is not a function).
pub fn split_function(file: &str) -> (&str, Option<&str>) {
    match file.rsplit_once(':') {
        Some((path, function))
            if !function.is_empty() && !function.contains(['/', '\\']) && !path.is_empty() && path.len() > 1 =>
        {
            (path, Some(function))
        }
        _ => (file, None),
    }
}

/// What a graded check recorded: its score and reason and, for a judge, the call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradeDetail {
    pub pass: bool,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A judge's request, answer and usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeCall>,
    /// The grader's code raised: a `not-` leaves it failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raised: bool,
    /// What a `python` or `javascript` assertion that gave no reason ran on: its code (cut short)
    /// and the case's variables, so its failure says more than its score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<String>,
}

/// How a check is graded, prepared when the prompt is read.
#[derive(Clone, Debug)]
pub enum Grader {
    /// A `command` check: the program gets `{"case", "answer", "expected", "vars"}`.
    Command(Program),
    /// promptfoo's `python` / `javascript`: the shim runs the user's code on `{"output", "context"}`.
    Shim(shim::Shim),
    /// A `judge` check or promptfoo's `llm-rubric`: a model grades against the rubric.
    Judge(judge::JudgeCheck),
    /// A `similar` check or promptfoo's `similar` naming an embedder: embeddings' cosine similarity.
    Similar(SimilarCheck),
}

impl Grader {
    /// The grader `spec` needs, found from `dir` (the prompt's folder); `None`: the scorer judges it.
    /// `Err` says what is wrong (a program not found, a judge model that is not one).
    pub fn of(spec: &CheckSpec, dir: &Path) -> Result<Option<Grader>, String> {
        match spec.kind {
            CheckKind::Command => {
                let argv = spec.command.as_deref().unwrap_or_default();
                let program = Program::find(argv, dir, spec.timeout).map_err(|why| format!("`command`: {why}"))?;
                Ok(Some(Grader::Command(program)))
            }
            CheckKind::Judge => Ok(Some(Grader::Judge(judge::JudgeCheck::of(spec)?))),
            CheckKind::Similar => Ok(Some(Grader::Similar(SimilarCheck::of(spec)?))),
            CheckKind::Assert => match spec.assert.as_ref().map(|a| &a.what) {
                Some(AssertWhat::NotEvaluated(name)) => match name.as_str() {
                    "python" | "javascript" => Ok(Some(Grader::Shim(shim::Shim::of(name, spec, dir)?))),
                    "llm-rubric" => Ok(Some(Grader::Judge(judge::JudgeCheck::of(spec)?))),
                    // Without an embedder of its own it takes the eval's (`--embedder`, `[eval]
                    // embedder`); with none it stays not evaluated, as promptfoo's default (OpenAI's)
                    // is not assumed.
                    "similar" => Ok(Some(Grader::Similar(SimilarCheck::of(spec)?))),
                    _ => Ok(None),
                },
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }
}

/// One cell's graded checks, by the check's index in `expectations.checks` (`None`: the scorer's own,
/// or no answer to grade), and its graded fields' verdicts. `Err` is why the grader gave no verdict.
#[derive(Clone, Debug, Default)]
pub struct Grades {
    pub checks: Vec<Option<Result<GradeDetail, String>>>,
    pub fields: FieldGrades,
    /// The judges of graded fields (`compare = "judge"`): each pair's request, answer and usage.
    pub field_judges: Vec<FieldJudge>,
    /// By check: the answer through the check's `transform` chain (`None`: it has none), or why
    /// there is none (the transform threw).
    pub transformed: Vec<Option<Result<Value, String>>>,
}

/// A field a judge graded (`[eval.fields."/pointer"] compare = "judge"`): the pair it was asked
/// about, and its request, answer and usage, kept with the cell as a judge check's are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldJudge {
    pub field: String,
    pub expected: Value,
    pub got: Value,
    pub call: JudgeCall,
}

/// `question` graded by `grader`; `Err` is why there is no verdict. `embedder` is the prompt's
/// `[eval] embedder`, for a `similar` check that names none (`eval --embedder`, in `judges`, wins).
pub async fn grade(
    grader: &Grader,
    question: &Question,
    judges: &Judges,
    embedder: Option<&EmbedderModel>,
) -> Result<GradeDetail, String> {
    let passed = |graded: Graded| GradeDetail {
        pass: graded.pass,
        score: graded.score,
        reason: graded.reason,
        judge: None,
        raised: graded.raised,
        ran: None,
    };
    match grader {
        Grader::Command(program) => {
            let input = json!({
                "case": question.case,
                "answer": question.answer,
                "expected": question.expected,
                "vars": question.vars,
            });
            program.grade(&input).await.map(passed)
        }
        Grader::Shim(shim) => shim.grade(question).await.map(|graded| {
            let ran = graded.reason.is_none().then(|| shim.ran_on(question));
            GradeDetail { ran, ..passed(graded) }
        }),
        Grader::Judge(judge) => {
            let (graded, call) = judges.grade(judge, question).await?;
            Ok(GradeDetail { judge: Some(call), ..passed(graded) })
        }
        Grader::Similar(similar) => {
            let model = judges.embedder_for(similar.embedder.as_ref(), embedder).ok_or_else(|| {
                "`similar` is not evaluated: it names no embedder (give it one, or `eval --embedder MODEL`)".to_string()
            })?;
            similar.grade(question, judges.embedding(model)?).await.map(passed)
        }
    }
}

/// What a grader is asked about: the case, the answer (parsed and as text), the expected answer and
/// the variables.
#[derive(Clone, Debug)]
pub struct Question {
    pub case: Option<String>,
    pub answer: Value,
    pub output: String,
    /// What promptfoo hands a `javascript` or `python` assertion as `output` when it is not the text:
    /// the answer parsed, for a prompt that asks its provider for JSON (`response_format`).
    pub output_parsed: Option<Value>,
    pub expected: Value,
    pub vars: Value,
}

#[cfg(test)]
mod tests;
