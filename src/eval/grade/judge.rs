//! A model as judge (`judge` checks, promptfoo's `llm-rubric`): the answer (or the value at the check's
//! `path`) and the rubric sent to a model (`local`, `openai:gpt-4o-mini`, … on the check, else the
//! eval's `--judge`), which answers promptfoo's grader shape `{"reason", "pass", "score"}`. The judge's
//! run is a prompt of its own set up through [`RunSetup`] (one owner: settings, the structured mode,
//! the provider, the response cache), so the local model decodes the verdict constrained, a server in
//! its JSON-schema mode, a malformed verdict is asked again once (the run's second turn, with the
//! validation error fed back) and a re-run is answered from the cache unless the answer or rubric
//! changed. The request, the answer and the usage are kept with the check's result.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::similar::Embedding;
use super::{Graded, Question};
use crate::prompt::expect::{CheckKind, CheckSpec};
use crate::prompt::file::PromptFile;
use crate::prompt::template::Variables;
use crate::provider::embed::EmbedderModel;
use crate::provider::endpoint::Server;
use crate::provider::kind::ProviderKind;
use crate::provider::{Provider, StructuredMode, Usage};
use crate::run::cache::CacheMode;
use crate::run::setup::{RunSetup, SetupOptions, Target};

/// The judge's prompt: promptfoo's llm-rubric grading instructions, the verdict's schema, one retry.
const JUDGE_PROMPT: &str = r#"id = "judge"
response_type = "json"
max_turns = 2
system = '''You are grading output according to a user-specified rubric. If the statement in the rubric is true of the output, the output passes the test. Answer with one JSON object and nothing else: {"reason": "<why, in one or two sentences>", "pass": true or false, "score": <a number from 0.0 to 1.0>}.'''
template = '''<Output>
{{output}}
</Output>
<Rubric>
{{rubric}}
</Rubric>'''
schema = '''{"type": "object", "properties": {"reason": {"type": "string"}, "pass": {"type": "boolean"}, "score": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["reason", "pass", "score"], "additionalProperties": false}'''

[provider]
temperature = 0.0
max_tokens = 400
"#;

/// A judge's model: a provider and a model name (`local` alone: the default local model).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JudgeModel {
    pub provider: ProviderKind,
    pub model: Option<String>,
    /// Where it is called (a promptfoo grader's `config.apiBaseUrl` and key, a check's `base_url` and
    /// `key_env`); empty: the provider's own variables.
    pub server: Server,
}

impl JudgeModel {
    /// `local`, `local:MODEL`, `openai:gpt-4o-mini`, `ollama:qwen2.5`, `anthropic:…`, `vllm:…`.
    pub fn parse(text: &str) -> Result<JudgeModel, String> {
        let (name, model) = match text.trim().split_once(':') {
            Some((name, model)) => (name, Some(model.trim().to_string()).filter(|m| !m.is_empty())),
            None => (text.trim(), None),
        };
        let provider = ProviderKind::parse(name)
            .filter(|kind| *kind != ProviderKind::Replay)
            .ok_or_else(|| format!("judge {text:?} is not a model: write `local` or PROVIDER:MODEL (openai:gpt-4o-mini; providers: openai, vllm, ollama, anthropic, local)"))?;
        if model.is_none() && provider.needs_model() {
            return Err(format!("judge {text:?} names no model: write {name}:MODEL"));
        }
        Ok(JudgeModel { provider, model, server: Server::default() })
    }

    /// This model called at `server`.
    pub fn at(self, server: Server) -> JudgeModel {
        JudgeModel { server, ..self }
    }

    /// As written: `openai:gpt-4o-mini`, `local`.
    pub fn shown(&self) -> String {
        let at = self.server.shown();
        match &self.model {
            Some(model) => format!("{}:{model}{at}", self.provider.name()),
            None => format!("{}{at}", self.provider.name()),
        }
    }
}

/// A judge check as prepared: the rubric, the model it names (else the eval's `--judge`), the
/// threshold its score must reach (besides the judge's pass), the pointer to judge.
#[derive(Clone, Debug)]
pub struct JudgeCheck {
    pub rubric: String,
    pub model: Option<JudgeModel>,
    pub threshold: Option<f64>,
    pub path: Option<String>,
    /// A promptfoo `llm-rubric` (an `assert` check): graded as promptfoo grades it, asked once; an
    /// answer with no verdict in it fails the assertion ("Could not extract JSON"), a score is taken
    /// as given (not clamped to 0..1).
    pub promptfoo: bool,
}

impl JudgeCheck {
    /// A `judge` check's (`rubric`, `judge`) or an `llm-rubric` assertion's (`value`, `judge`).
    pub fn of(spec: &CheckSpec) -> Result<JudgeCheck, String> {
        let rubric = match spec.kind {
            CheckKind::Judge => spec.rubric.clone(),
            _ => spec.value.as_ref().and_then(Value::as_str).map(str::to_string),
        };
        let rubric = rubric.filter(|r| !r.trim().is_empty()).ok_or("a judge needs its rubric")?;
        let model =
            spec.judge.as_deref().map(JudgeModel::parse).transpose().map_err(|why| format!("`judge`: {why}"))?;
        let model = model.map(|m| m.at(spec.server()));
        if let Some(threshold) = spec.threshold.filter(|t| !(0.0..=1.0).contains(t)) {
            return Err(format!("`threshold` {threshold} of a judge is outside 0..1"));
        }
        let promptfoo = spec.kind == CheckKind::Assert;
        Ok(JudgeCheck { rubric, model, threshold: spec.threshold, path: spec.path.clone(), promptfoo })
    }
}

/// What a judge was asked and answered, kept with the check's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeCall {
    /// `openai:gpt-4o-mini`.
    pub model: String,
    /// The first turn's request as sent.
    pub request: Value,
    /// The judge's last answer, as it wrote it.
    pub answer: String,
    /// Turns taken (2: the first verdict was malformed and asked again).
    pub turns: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Answered from the response cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

/// The models an eval's graders call: the judges and the embedders (`similar`), each set up once
/// (its provider built, a missing key an error before any model runs); `default` is the eval's
/// `--judge`.
#[derive(Clone, Default)]
pub struct Judges {
    setups: HashMap<JudgeModel, (Arc<RunSetup>, Arc<dyn Provider>)>,
    default: Option<JudgeModel>,
    embedders: HashMap<EmbedderModel, Arc<Embedding>>,
    /// The eval's `--embedder`, for `similar` checks and fields that name none (over `[eval] embedder`).
    default_embedder: Option<EmbedderModel>,
}

impl Judges {
    /// No judges (an eval without judge checks).
    pub fn none() -> Judges {
        Judges::default()
    }

    /// Judges with `default` (the eval's `--judge`) for the checks that name none.
    pub fn with_default(default: Option<JudgeModel>) -> Judges {
        Judges { default, ..Judges::default() }
    }

    /// `model` set up (its provider built: a missing key is an error here, before any model runs),
    /// its runs under the response cache `cache` in `cache_dir`.
    pub fn add(
        &mut self,
        model: JudgeModel,
        cache: CacheMode,
        cache_dir: Option<std::path::PathBuf>,
    ) -> Result<(), String> {
        if self.setups.contains_key(&model) {
            return Ok(());
        }
        let setup = judge_setup(&model, cache, cache_dir)?;
        let provider = setup.provider(None).map_err(|e| format!("judge {}: {e}", model.shown()))?;
        self.setups.insert(model, (Arc::new(setup), provider));
        Ok(())
    }

    /// The embedder `model` set up (a missing key or a bad URL is an error here, before any model
    /// runs), its requests under the response cache `cache` in `cache_dir`.
    pub fn add_embedder(
        &mut self,
        model: &EmbedderModel,
        cache: CacheMode,
        cache_dir: Option<std::path::PathBuf>,
    ) -> Result<(), String> {
        if !self.embedders.contains_key(model) {
            self.embedders.insert(model.clone(), Arc::new(Embedding::new(model, cache, cache_dir)?));
        }
        Ok(())
    }

    /// These judges with `embedder` (the eval's `--embedder`) for the `similar` checks and fields
    /// that name none.
    pub fn with_embedder(self, embedder: Option<EmbedderModel>) -> Judges {
        Judges { default_embedder: embedder, ..self }
    }

    /// The embedder of a `similar` check or field: its own, else the eval's `--embedder`, else the
    /// prompt's `[eval] embedder` (`prompt`); `None` when none is given.
    pub fn embedder_for<'a>(
        &'a self,
        own: Option<&'a EmbedderModel>,
        prompt: Option<&'a EmbedderModel>,
    ) -> Option<&'a EmbedderModel> {
        own.or(self.default_embedder.as_ref()).or(prompt)
    }

    /// The embedder `model`, set up by [`Judges::add_embedder`].
    pub fn embedding(&self, model: &EmbedderModel) -> Result<&Embedding, String> {
        self.embedders.get(model).map(Arc::as_ref).ok_or_else(|| format!("embedder {} was not set up", model.shown()))
    }

    /// `judge` asked about `question` (the default judge when the check names none).
    pub async fn grade(&self, judge: &JudgeCheck, question: &Question) -> Result<(Graded, JudgeCall), String> {
        let model = judge.model.as_ref().or(self.default.as_ref()).ok_or("no judge model (set `judge` or --judge)")?;
        let (setup, provider) =
            self.setups.get(model).ok_or_else(|| format!("judge {} was not set up", model.shown()))?;
        let judged = match judge.path.as_deref().filter(|p| !p.is_empty()) {
            None => question.output.clone(),
            Some(pointer) => match question.answer.pointer(pointer) {
                Some(Value::String(text)) => text.clone(),
                Some(value) => value.to_string(),
                None => return Err(format!("the answer has nothing at {pointer} to judge")),
            },
        };
        let mut variables = Variables::new();
        variables.insert("output".into(), Value::String(judged));
        variables.insert("rubric".into(), Value::String(judge.rubric.clone()));
        let mut plan =
            setup.plan_as(None, &variables, &setup.settings).map_err(|e| format!("judge {}: {e}", model.shown()))?;
        if judge.promptfoo {
            plan.max_turns = 1;
        }
        let record = crate::run::engine::run(provider.as_ref(), &plan, |_| {}).await;
        let last = record.turns.last();
        let call = JudgeCall {
            model: model.shown(),
            request: serde_json::to_value(&plan.request).unwrap_or(Value::Null),
            answer: last.map(|t| t.output.clone()).unwrap_or_default(),
            turns: record.turns.len(),
            usage: sum_usage(&record),
            cached: record.turns.iter().any(|t| t.cached),
        };
        if let Some(error) = record.error.clone().or_else(|| last.and_then(|t| t.error.as_ref()).map(|e| e.to_string()))
        {
            return Err(format!("judge {} failed: {error}", model.shown()));
        }
        if judge.promptfoo {
            let graded = promptfoo_verdict(&call.answer, judge.threshold);
            return Ok((graded, call));
        }
        if !record.ok {
            return Err(format!(
                "judge {} answered no verdict twice (last: {:?})",
                model.shown(),
                crate::eval::values::cut(&call.answer, 120)
            ));
        }
        let mut graded = Graded::from_verdict(&record.result)
            .map_err(|why| format!("judge {} answered a malformed verdict: {why}", model.shown()))?;
        if let Some(threshold) = judge.threshold {
            graded.pass = graded.pass && graded.score >= threshold;
        }
        Ok((graded, call))
    }
}

/// A grader's answer read as promptfoo's `llm-rubric` reads it: the first JSON object in the text with
/// a boolean `pass` (a missing score is 1 for a pass, 0 for a fail; a score as given), failing when
/// there is none; the threshold, when given, must be reached too.
fn promptfoo_verdict(answer: &str, threshold: Option<f64>) -> Graded {
    // The objects `contains-json` finds in a text: the first with a boolean `pass` is the verdict.
    let found = crate::eval::values::json_objects(answer).into_iter().find_map(|value| match value {
        Value::Object(fields) if matches!(fields.get("pass"), Some(Value::Bool(_))) => Some(fields),
        _ => None,
    });
    let Some(fields) = found else {
        return Graded {
            pass: false,
            score: 0.0,
            reason: Some(format!(
                "Could not extract JSON from llm-rubric response: {:?}",
                crate::eval::values::cut(answer, 120)
            )),
            raised: false,
        };
    };
    let pass = fields.get("pass") == Some(&Value::Bool(true));
    let score = fields.get("score").and_then(Value::as_f64).unwrap_or(if pass { 1.0 } else { 0.0 });
    let reason = fields.get("reason").map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_string));
    let pass = pass && threshold.is_none_or(|t| score >= t);
    Graded { pass, score, reason, raised: false }
}

/// The judge's run setup: its prompt on `model`, the server's JSON-schema mode (the local model's
/// default: constrained), under the eval's response cache.
fn judge_setup(
    model: &JudgeModel,
    cache: CacheMode,
    cache_dir: Option<std::path::PathBuf>,
) -> Result<RunSetup, String> {
    let path = Path::new("judge.toml");
    let prompt = PromptFile::from_toml_str(JUDGE_PROMPT, path).map_err(|e| format!("the judge's prompt: {e}"))?;
    let structured = (model.provider != ProviderKind::Local).then_some(StructuredMode::JsonSchema);
    let target = Target {
        provider: Some(model.provider),
        model: model.model.clone(),
        structured,
        base_url: model.server.base_url.clone(),
        key_env: model.server.key_env.clone(),
        key: model.server.key.clone(),
        ..Target::default()
    };
    let options = SetupOptions { target, cache, cache_dir, ..SetupOptions::default() };
    RunSetup::new(prompt, path, options).map_err(|e| format!("judge {}: {e:#}", model.shown()))
}

/// Every turn's usage added up (none when no turn reported any).
fn sum_usage(record: &crate::run::RunRecord) -> Option<Usage> {
    let reported: Vec<Usage> = record.turns.iter().filter_map(|t| t.usage).collect();
    reported.into_iter().reduce(|a, b| Usage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        estimated: a.estimated || b.estimated,
        cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    })
}
