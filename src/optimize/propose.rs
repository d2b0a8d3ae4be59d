//! The reflective proposer: one request to a model (`--proposer`, default the prompt's) with the
//! prompt (system, template, schema with its descriptions), a sample of failed train cases with their
//! differences and failed checks, and the earlier candidates with their scores; it answers
//! `{"rationale", "system"?, "template"?}`. Asked as the judge is: a prompt of its own set up through
//! [`RunSetup`] (constrained on the local model, the JSON-schema mode on a server), a malformed answer
//! asked again once with the error fed back, a repeated request answered from the response cache.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::evaluate::{Cancel, Scored};
use super::record::ProposerCall;
use crate::eval::values::cut;
use crate::prompt::file::PromptFile;
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::provider::{Provider, StructuredMode};
use crate::run::cache::CacheMode;
use crate::run::setup::{RunSetup, SetupOptions, Target};

/// The proposer's prompt: what to do, the answer's schema, one retry.
const PROPOSER_PROMPT: &str = r#"id = "proposer"
response_type = "json"
max_turns = 2
system = '''You improve prompts that ask a model for structured answers. You read a prompt, the cases it failed with what was wrong, and the edits tried before with their scores, and you propose one new version of the prompt that fixes the failures without breaking the cases that pass. Answer with one JSON object and nothing else: {"rationale": "<one line: what you changed and why>", "system": "<the whole new system prompt, only when you change it>", "template": "<the whole new template, only when you change it>"}. Keep every variable the template uses (its names in double braces).'''
template = '''{{context}}'''
schema = '''{"type": "object", "properties": {"rationale": {"type": "string"}, "system": {"type": "string"}, "template": {"type": "string"}}, "required": ["rationale"], "additionalProperties": false}'''

[provider]
temperature = 0.0
max_tokens = 2000
"#;

/// A proposer's model: `local`, or `PROVIDER:MODEL`, with the server and key variable it is reached by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProposerModel {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub key_env: Option<String>,
}

impl ProposerModel {
    /// `--proposer`'s value: `local`, `local:FILE.gguf`, `openai:gpt-4o-mini`, `ollama:qwen2.5`, ….
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, model) = match text.trim().split_once(':') {
            Some((name, model)) => (name.trim(), Some(model.trim().to_string()).filter(|m| !m.is_empty())),
            None => (text.trim(), None),
        };
        let provider = ProviderKind::parse(name).filter(|kind| *kind != ProviderKind::Replay).ok_or_else(|| {
            format!("--proposer {text:?} is not a model: write `local` or PROVIDER:MODEL (openai:gpt-4o-mini; providers: openai, vllm, ollama, anthropic, local)")
        })?;
        if model.is_none() && provider.needs_model() {
            return Err(format!("--proposer {text:?} names no model: write {name}:MODEL"));
        }
        Ok(Self { provider, model, base_url: None, key_env: None })
    }

    /// As written: `openai:gpt-4o-mini`, `local`.
    pub fn shown(&self) -> String {
        match &self.model {
            Some(model) if !model.is_empty() => format!("{}:{model}", self.provider.name()),
            _ => self.provider.name().to_string(),
        }
    }
}

/// What the proposer answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Proposal {
    /// An edit: the fields it gives replace the parent's.
    Edit { rationale: String, system: Option<String>, template: Option<String> },
    /// No usable answer: why.
    Malformed(String),
}

/// The proposer, set up once (its provider built: a missing key is an error before anything runs).
pub struct Proposer {
    setup: RunSetup,
    provider: Arc<dyn Provider>,
    /// The same proposer past the response cache (a fresh answer, kept in place of the cached one):
    /// asked when the cached answer is malformed. Built on first use.
    fresh: std::sync::OnceLock<Result<Arc<dyn Provider>, String>>,
    options: SetupOptions,
    pub model: ProposerModel,
}

impl Proposer {
    /// `model` set up under the response cache `cache` in `cache_dir`.
    pub fn new(model: ProposerModel, cache: CacheMode, cache_dir: Option<std::path::PathBuf>) -> Result<Self, String> {
        let path = Path::new("proposer.toml");
        let prompt =
            PromptFile::from_toml_str(PROPOSER_PROMPT, path).map_err(|e| format!("the proposer's prompt: {e}"))?;
        let structured = (model.provider != ProviderKind::Local).then_some(StructuredMode::JsonSchema);
        let target = Target {
            provider: Some(model.provider),
            model: model.model.clone(),
            base_url: model.base_url.clone(),
            key_env: model.key_env.clone(),
            structured,
            ..Target::default()
        };
        let options = SetupOptions { target, cache, cache_dir, ..SetupOptions::default() };
        let setup =
            RunSetup::new(prompt, path, options.clone()).map_err(|e| format!("--proposer {}: {e:#}", model.shown()))?;
        let provider = setup.provider(None).map_err(|e| format!("--proposer {}: {e}", model.shown()))?;
        Ok(Self { setup, provider, fresh: std::sync::OnceLock::new(), options, model })
    }

    /// The proposer past the cache: every request asked, the answer kept in place of the cached one.
    fn fresh(&self) -> Result<Arc<dyn Provider>, String> {
        self.fresh
            .get_or_init(|| {
                let options = SetupOptions { cache: CacheMode::Refresh, ..self.options.clone() };
                let setup = RunSetup::new(self.setup.prompt.clone(), Path::new("proposer.toml"), options)
                    .map_err(|e| format!("--proposer {}: {e:#}", self.model.shown()))?;
                setup.provider(None).map_err(|e| format!("--proposer {}: {e}", self.model.shown()))
            })
            .clone()
    }

    /// Asks for one edit given `context` ([`context`]); `None` when `cancel` stopped it. A malformed
    /// answer played from the response cache is not trusted: the proposer is asked again, past the
    /// cache (so a bad answer is never the only one a later run sees).
    pub async fn propose(&self, context: &str, cancel: Cancel) -> Option<(Proposal, ProposerCall)> {
        let (proposal, call) = self.ask(self.provider.as_ref(), context, cancel.clone()).await?;
        if !(call.cached && matches!(proposal, Proposal::Malformed(_))) {
            return Some((proposal, call));
        }
        match self.fresh() {
            Ok(fresh) => self.ask(fresh.as_ref(), context, cancel).await,
            Err(why) => Some((Proposal::Malformed(why), call)),
        }
    }

    /// One request of the proposer's prompt with `context` to `provider`; `None` when `cancel` stopped it.
    async fn ask(&self, provider: &dyn Provider, context: &str, cancel: Cancel) -> Option<(Proposal, ProposerCall)> {
        let mut variables = Variables::new();
        variables.insert("context".into(), Value::String(context.to_string()));
        let plan = match self.setup.plan_as(None, &variables, &self.setup.settings) {
            Ok(plan) => plan,
            Err(e) => {
                let call = ProposerCall::default_for(String::new());
                return Some((Proposal::Malformed(format!("the proposer's request: {e}")), call));
            }
        };
        let record = tokio::select! {
            record = crate::run::engine::run(provider, &plan, |_| {}) => record,
            _ = cancel => return None,
        };
        let last = record.turns.last();
        let answer = last.map(|t| t.output.clone()).unwrap_or_default();
        let (tokens_in, tokens_out) = record
            .turns
            .iter()
            .filter_map(|t| t.usage)
            .fold((0, 0), |(i, o), u| (i + u.input_tokens, o + u.output_tokens));
        let call = ProposerCall {
            candidate: String::new(),
            answer: answer.clone(),
            turns: record.turns.len(),
            tokens_in,
            tokens_out,
            cached: !record.turns.is_empty() && record.turns.iter().all(|t| t.cached),
        };
        if let Some(error) = record.error.clone().or_else(|| last.and_then(|t| t.error.as_ref()).map(|e| e.to_string()))
        {
            return Some((Proposal::Malformed(format!("the proposer failed: {error}")), call));
        }
        if !record.ok {
            let why = format!(
                "malformed proposal: not the JSON asked for after {} turns (last answer: {:?})",
                record.turns.len(),
                cut(&answer, 160)
            );
            return Some((Proposal::Malformed(why), call));
        }
        let text = |key: &str| record.result.get(key).and_then(Value::as_str).map(str::to_string);
        let proposal = match text("rationale") {
            Some(rationale) => Proposal::Edit { rationale, system: text("system"), template: text("template") },
            None => {
                Proposal::Malformed(format!("malformed proposal: no \"rationale\" string in {:?}", cut(&answer, 160)))
            }
        };
        Some((proposal, call))
    }
}

impl ProposerCall {
    /// A call with no answer (its request could not be made).
    fn default_for(answer: String) -> Self {
        ProposerCall { candidate: String::new(), answer, turns: 0, tokens_in: 0, tokens_out: 0, cached: false }
    }
}

/// An earlier candidate as the proposer reads it.
pub struct Tried<'a> {
    pub id: &'a str,
    pub rationale: &'a str,
    /// `pass rate 0.50, mean score 0.62 on train`, or why it was rejected.
    pub outcome: String,
}

/// The proposer's request: the parent's text, the schema, the failed cases, the earlier candidates.
pub fn context(
    system: Option<&str>,
    template: &str,
    schema: Option<&Value>,
    failed: &[&Scored],
    variables: &[Variables],
    tried: &[Tried<'_>],
) -> String {
    let mut out = String::from("## The prompt\n\nSystem prompt:\n<<<\n");
    out.push_str(system.unwrap_or("(none)"));
    out.push_str("\n>>>\n\nTemplate:\n<<<\n");
    out.push_str(template);
    out.push_str("\n>>>\n");
    if let Some(schema) = schema {
        out.push_str(&format!(
            "\nThe answer's JSON Schema (with its descriptions):\n{}\n",
            cut(&schema.to_string(), 4000)
        ));
    }
    out.push_str("\n## Cases it failed\n");
    if failed.is_empty() {
        out.push_str("\nNone failed: make the answers closer to the expected ones, or the prompt clearer.\n");
    }
    for (scored, vars) in failed.iter().zip(variables.iter().chain(std::iter::repeat(&Variables::new()))) {
        let result = &scored.result;
        out.push_str(&format!("\n### Case {:?}: {}\n", result.case, cut(&result.reason, 300)));
        out.push_str(&format!("Its variables: {}\n", cut(&Value::Object(vars.clone()).to_string(), 600)));
        out.push_str(&format!("The answer: {}\n", cut(&scored.answer, 800)));
        for difference in scored.differences.iter().take(6) {
            let shown = serde_json::to_string(difference).unwrap_or_default();
            out.push_str(&format!("- difference: {}\n", cut(&shown, 300)));
        }
        for check in scored.failed_checks.iter().take(6) {
            out.push_str(&format!("- failed check: {}\n", cut(check, 300)));
        }
    }
    if !tried.is_empty() {
        out.push_str("\n## Edits tried before\n\n");
        for t in tried {
            out.push_str(&format!("- {}: {} ({})\n", t.id, cut(t.rationale, 200), t.outcome));
        }
    }
    out.push_str("\nPropose one new version: give the whole new text of each field you change.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposer_is_local_or_a_provider_and_model_and_anything_else_is_named() {
        assert_eq!(ProposerModel::parse("local").unwrap().provider, ProviderKind::Local);
        let openai = ProposerModel::parse("openai:gpt-4o-mini").unwrap();
        assert_eq!((openai.provider, openai.shown()), (ProviderKind::Openai, "openai:gpt-4o-mini".to_string()));
        assert!(ProposerModel::parse("bedrock:claude")
            .unwrap_err()
            .contains("--proposer \"bedrock:claude\" is not a model"));
        assert!(ProposerModel::parse("ollama").unwrap_err().contains("names no model"));
    }

    #[test]
    fn the_proposers_prompt_reads_and_its_context_carries_the_failures() {
        PromptFile::from_toml_str(PROPOSER_PROMPT, Path::new("proposer.toml")).unwrap();
        let scored = Scored {
            result: super::super::record::CaseResult {
                case: "alpha".into(),
                held_out: false,
                verdict: crate::eval::score::Verdict::Fail,
                f1: Some(0.5),
                score: 0.5,
                reason: "F1 0.50 < 1".into(),
            },
            answer: "{\"entity\": \"A\"}".into(),
            differences: Vec::new(),
            failed_checks: vec!["regex /entity: no match".into()],
        };
        let tried = [Tried { id: "c1", rationale: "be terse", outcome: "rejected: duplicate".into() }];
        let text = context(Some("SYS"), "T {{x}}", None, &[&scored], &[Variables::new()], &tried);
        for needle in ["SYS", "T {{x}}", "alpha", "F1 0.50", "regex /entity", "c1: be terse"] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
    }
}
