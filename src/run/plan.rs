//! What one run sends and how it reads the answer: settings resolved from the command line over the
//! prompt file over defaults, the rendered request, and the structured-output mode it asks for.
//!
//! Structured output per response type: `json` asks for the requested mode with the schema of the
//! whole answer (the provider falls back when a server refuses it); `jsonl` never asks a server for a
//! schema or json-object mode, since either forces the whole answer into ONE value, so the per-line
//! schema is described in the system prompt instead; `text` is sent as written.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::limits::Limits;
use super::target::Target;
use super::RunError;
use crate::output::{Profile, ResponseType};
use crate::prompt::file::{PromptFile, ProviderSettings, SchemaOrigin};
use crate::prompt::signature::Signature;
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::provider::{Fallback, Message, ModeReport, Request, Role, StructuredMode};
use crate::schema::Check;

/// Context window assumed when none is given: what a retry's messages must fit in.
pub const DEFAULT_CONTEXT_TOKENS: u32 = 8192;

/// The settings of a run, resolved: the command line over the prompt's `[provider]` over defaults.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSettings {
    pub provider: ProviderKind,
    /// May be empty (servers that serve one model).
    pub model: String,
    pub base_url: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    /// The structured-output mode asked for.
    pub structured: StructuredMode,
    /// Turns allowed (1 = no retry).
    pub max_turns: u32,
    /// The model's context window in tokens, which caps the feedback of retries.
    pub context_tokens: u32,
    /// What the client holds on its own side: the run's deadline, the answer-size cap, a jsonl
    /// answer's items and repeated lines.
    #[serde(default)]
    pub limits: Limits,
    /// The local model's repetition penalty (`None`: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_last_n: Option<u32>,
    /// Ask the server for each token's probability (OpenAI-compatible servers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// The local model thinks first, at most this many tokens (`None`: no thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u32>,
}

impl RunSettings {
    /// The settings of a replay of recorded answers: nothing to choose but the provider.
    pub fn replay() -> Self {
        Self {
            provider: ProviderKind::Replay,
            model: String::new(),
            base_url: None,
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            structured: StructuredMode::None,
            max_turns: 1,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            limits: Limits::default(),
            repeat_penalty: None,
            repeat_last_n: None,
            logprobs: false,
            thinking: None,
        }
    }

    /// The front end's `target` and `overrides` (the rest of the command line: sampling, limits) over
    /// the prompt's `[provider]` table and `max_turns`, over the defaults (local, else openai; no model;
    /// prompt-only, or `constrained` for a json/jsonl prompt on `local`; 1 turn, 8,192 context tokens;
    /// on `local`, the repetition penalty [`LOCAL_REPEAT_PENALTY`]). Called by the run setup alone
    /// (`run::setup::settings`), so the rules live in one place.
    pub(super) fn resolve(
        prompt: &PromptFile,
        target: &Target,
        overrides: &ProviderSettings,
        max_turns: Option<u32>,
        context_tokens: Option<u32>,
    ) -> Result<Self, RunError> {
        if let Some(what) = Target::named_in(overrides) {
            return Err(RunError::Setting(format!(
                "{what} is named in the provider settings laid over the prompt: a front end names it in the run's target"
            )));
        }
        let file = &prompt.provider;
        // A base URL names a server: with no provider named, it is an OpenAI-compatible one.
        let has_url = target.base_url.is_some() || file.base_url.is_some();
        let named = match &file.name {
            Some(name) => Some(
                ProviderKind::parse(name)
                    .ok_or_else(|| setting(name, FILE, &format!("a provider: {}", ProviderKind::names())))?,
            ),
            None => None,
        };
        let provider = match (target.provider, named) {
            (Some(kind), _) => kind,
            (None, None) if has_url => ProviderKind::Openai,
            (None, None) => ProviderKind::DEFAULT,
            (None, Some(kind)) => kind,
        };
        // The prompt's model, server and structured mode are its own provider's: another provider named
        // by the front end (`--provider local` on a prompt written for ollama) starts from none of them.
        let file = &if named.is_some_and(|named| named != provider) {
            ProviderSettings { model: None, base_url: None, structured: None, thinking: None, ..file.clone() }
        } else {
            file.clone()
        };
        let structured = match (target.structured, &file.structured) {
            (Some(mode), _) => mode,
            (None, None) => default_structured(provider, prompt.response_type),
            (None, Some(text)) => StructuredMode::parse(text.trim())
                .ok_or_else(|| setting(text, FILE, "a structured mode: none, json-object, json-schema, constrained"))?,
        };
        let temperature = overrides.temperature.or(file.temperature);
        if let Some(t) = temperature.filter(|t| !t.is_finite() || *t < 0.0) {
            return Err(RunError::Setting(format!("temperature {t} is not a number of 0 or more")));
        }
        let max_turns = max_turns.or(prompt.max_turns).unwrap_or(1);
        if max_turns == 0 {
            return Err(RunError::Setting("max_turns is 0: a run needs at least 1 turn".into()));
        }
        let context_tokens = context_tokens.unwrap_or(DEFAULT_CONTEXT_TOKENS);
        let max_tokens = target.max_tokens.or(file.max_tokens);
        if max_tokens == Some(0) {
            return Err(RunError::Setting("max_tokens is 0: the model could not answer at all".into()));
        }
        let limits = limits(overrides, file)?;
        let thinking = thinking(provider, overrides, file)?;
        let repeat_penalty = match pick_number(overrides.repeat_penalty, file.repeat_penalty, "--repeat-penalty") {
            Some((penalty, origin)) if !penalty.is_finite() || penalty <= 0.0 => {
                return Err(RunError::Setting(format!(
                    "repeat_penalty {penalty} (from {origin}) is not a number above 0 (1 is off)"
                )))
            }
            Some((penalty, _)) => Some(penalty),
            None if provider == ProviderKind::Local => LOCAL_REPEAT_PENALTY,
            None => None,
        };
        Ok(Self {
            provider,
            model: target.model.clone().or_else(|| file.model.clone()).unwrap_or_default(),
            base_url: target.base_url.clone().or_else(|| file.base_url.clone()),
            temperature,
            max_tokens,
            stop: if overrides.stop.is_empty() { file.stop.clone() } else { overrides.stop.clone() },
            structured,
            max_turns,
            context_tokens,
            limits,
            repeat_penalty: repeat_penalty.filter(|p| *p != 1.0),
            repeat_last_n: overrides.repeat_last_n.or(file.repeat_last_n),
            logprobs: overrides.logprobs.or(file.logprobs).unwrap_or(false),
            thinking,
        })
    }
}

/// The thinking budget: the command line's `--think` over the prompt's `thinking`. Only the local
/// model thinks: a server's reasoning does not map onto it (OpenAI's `reasoning_effort` is a level,
/// not a budget, and its thought is not returned; Anthropic's `thinking` budget comes back as blocks
/// apart but is not one of these servers' schema-constrained modes; Ollama's `think` has no budget),
/// so another provider is refused, naming it; a replay plays what was recorded and ignores it.
fn thinking(
    provider: ProviderKind,
    overrides: &ProviderSettings,
    file: &ProviderSettings,
) -> Result<Option<u32>, RunError> {
    let (asked, origin) = match (overrides.thinking, file.thinking) {
        (Some(asked), _) => (asked, "--think"),
        (None, Some(asked)) => (asked, "the prompt's [provider] thinking"),
        (None, None) => return Ok(None),
    };
    match (asked.budget(), provider) {
        (None, _) | (_, ProviderKind::Replay) => Ok(None),
        (Some(budget), ProviderKind::Local) => Ok(Some(budget)),
        (Some(_), other) => Err(RunError::Setting(format!(
            "thinking (from {origin}) is the local model's thinking mode, and provider {other} has none that maps onto \
             it (a budget of thinking tokens, then the answer held to the schema): run it with --provider local, or \
             without thinking"
        ))),
    }
}

/// The structured mode a run asks for when neither the command line (or the workbench's choice) nor
/// the prompt names one: the one place it is decided, so `tunebench run` and the workbench send the
/// same request. The local model holds a json/jsonl answer to its schema itself (`constrained`); a
/// server is asked for nothing (the schema goes into the prompt only if a mode says so).
pub fn default_structured(provider: ProviderKind, response_type: ResponseType) -> StructuredMode {
    if provider == ProviderKind::Local && response_type != ResponseType::Text {
        StructuredMode::Constrained
    } else {
        StructuredMode::None
    }
}

/// The repetition penalty a run on the local model uses when neither the command line nor the prompt
/// sets one (chosen by running the sample prompts: see README, "Runaway lists").
pub const LOCAL_REPEAT_PENALTY: Option<f64> = Some(1.1);

/// A number and where it came from (command line first).
fn pick_number(cli: Option<f64>, file: Option<f64>, flag: &'static str) -> Option<(f64, &'static str)> {
    match (cli, file) {
        (Some(value), _) => Some((value, flag)),
        (None, Some(value)) => Some((value, "the prompt's [provider]")),
        (None, None) => None,
    }
}

/// The client's limits: the command line over the prompt's `[provider]` over the defaults.
fn limits(overrides: &ProviderSettings, file: &ProviderSettings) -> Result<Limits, RunError> {
    let mut limits = Limits::default();
    if let Some(seconds) = overrides.timeout.or(file.timeout) {
        let origin = if overrides.timeout.is_some() { "--timeout" } else { "timeout in the prompt's [provider]" };
        limits.timeout = Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| RunError::Setting(format!("{origin} {seconds} is not a number of seconds above 0")))?;
    }
    if let Some(bytes) = overrides.max_answer_bytes.or(file.max_answer_bytes) {
        if bytes == 0 {
            return Err(RunError::Setting("max_answer_bytes is 0: no answer could be read".into()));
        }
        limits.max_answer_bytes = bytes;
    }
    if let Some(items) = overrides.max_items.or(file.max_items) {
        if items == 0 {
            return Err(RunError::Setting("max_items is 0: no item could be kept".into()));
        }
        limits.max_items = Some(items);
    }
    if let Some(repeats) = overrides.max_repeats.or(file.max_repeats) {
        limits.max_repeats = repeats;
    }
    Ok(limits)
}

/// Where a setting of the prompt file comes from, in errors.
const FILE: &str = "the prompt's [provider]";

fn setting(value: &str, origin: &str, expected: &str) -> RunError {
    RunError::Setting(format!("{value:?} (from {origin}) is not {expected}"))
}

/// How answers are read and checked (what `cli::input::ParseOptions::setup` resolves for a prompt).
#[derive(Clone)]
pub struct Reading {
    pub response_type: ResponseType,
    pub profile: Profile,
    /// The whole answer for json, each line for jsonl.
    pub check: Option<Arc<dyn Check>>,
}

/// What a failed answer is told to look like in the retry feedback.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// A PtcRunner signature: its example answer (and PtcRunner's own feedback text for json).
    Signature(Signature),
    /// A JSON Schema (of the whole answer for json, of each line for jsonl).
    Schema(Value),
    /// No schema: only well-formed JSON is expected.
    Nothing,
}

/// Opt-in: each turn's answer is swept as it streams ([`RunEvent::Cut`](super::RunEvent::Cut) when
/// the items at the new cut change, [`RunEvent::Swept`](super::RunEvent::Swept) when it ends). A
/// front end that shows no truncation chart leaves it off and pays nothing.
#[derive(Clone, Default)]
pub struct LiveSweep {
    /// What one item is checked against (the sweep's count), compiled once per run setup.
    pub item_check: Option<Arc<dyn Check>>,
}

/// Everything one run of one case sends and checks.
#[derive(Clone)]
pub struct RunPlan {
    /// The prompt's id.
    pub prompt: String,
    pub case: Option<String>,
    /// The `--var` values laid over the case (kept in the record).
    pub variables: Variables,
    pub reading: Reading,
    pub expected: Expected,
    /// Turn 1's request: the rendered messages, sampling settings and structured mode.
    pub request: Request,
    /// How the mode was settled before the provider saw it (the provider's own steps are added).
    pub mode: ModeReport,
    pub max_turns: u32,
    pub context_tokens: u32,
    /// What the client holds on its own side, whatever the server does.
    pub limits: Limits,
    /// Sweep each answer as it streams (off unless a front end asks).
    pub live_sweep: Option<LiveSweep>,
}

impl RunPlan {
    /// Renders `prompt` for `case` with `overrides` and builds turn 1's request under `settings`.
    /// `base_dir` is the prompt file's directory (for `schema_file`).
    pub fn new(
        prompt: &PromptFile,
        base_dir: &Path,
        case: Option<&str>,
        overrides: &Variables,
        settings: &RunSettings,
        reading: Reading,
    ) -> Result<Self, RunError> {
        let rendered = prompt.render(case, overrides)?;
        let resolved = prompt.resolve_schema(base_dir)?;
        let schema = resolved.as_ref().map(|r| r.schema.clone());
        let expected = match resolved.map(|r| (r.schema, r.origin)) {
            Some((_, SchemaOrigin::Signature(sig))) => Expected::Signature(sig),
            Some((schema, _)) => Expected::Schema(schema),
            None => Expected::Nothing,
        };
        let mut request = Request::new(settings.model.clone());
        if let Some(system) = rendered.system {
            request = request.system(system);
        }
        request = request.user(rendered.user).stop(settings.stop.clone());
        request.temperature = settings.temperature;
        request.max_tokens = settings.max_tokens;
        request.repeat_penalty = settings.repeat_penalty;
        request.repeat_last_n = settings.repeat_penalty.and(settings.repeat_last_n);
        request.logprobs = settings.logprobs;
        request.thinking = settings.thinking;
        // The local model constrains a jsonl answer line by line; a vLLM server does with a line grammar.
        let by_line = settings.provider == ProviderKind::Local
            || (settings.provider == ProviderKind::Vllm && settings.structured == StructuredMode::JsonSchema);
        let (request, mode) = structure(request, reading.response_type, settings.structured, schema, by_line);
        Ok(Self {
            prompt: prompt.id.clone(),
            case: case.map(str::to_string),
            variables: overrides.clone(),
            reading,
            expected,
            request,
            mode,
            max_turns: settings.max_turns,
            context_tokens: settings.context_tokens,
            limits: settings.limits,
            live_sweep: None,
        })
    }

    /// The mode report of a turn: this plan's own steps, then the provider's (`None` before the
    /// server accepted the request).
    pub fn mode_with(&self, provider: Option<&ModeReport>) -> ModeReport {
        let Some(provider) = provider else { return self.mode.clone() };
        let mut fallbacks = self.mode.fallbacks.clone();
        fallbacks.extend(provider.fallbacks.iter().cloned());
        ModeReport {
            requested: self.mode.requested,
            used: provider.used,
            schema_in_prompt: self.mode.schema_in_prompt || provider.schema_in_prompt,
            fallbacks,
        }
    }
}

/// Sets the request's structured mode for the response type; the report says what was asked and why
/// it differs. A provider that constrains a jsonl answer line by line (`by_line`: the local model, or
/// vLLM's line grammar) keeps the mode.
fn structure(
    request: Request,
    response_type: ResponseType,
    requested: StructuredMode,
    schema: Option<Value>,
    by_line: bool,
) -> (Request, ModeReport) {
    let mut mode = ModeReport { requested, used: requested, ..ModeReport::default() };
    match response_type {
        ResponseType::Json => (request.structured(requested, schema), mode),
        _ if requested == StructuredMode::None => (request.structured(StructuredMode::None, schema), mode),
        ResponseType::Jsonl if by_line => {
            mode.schema_in_prompt = schema.is_some();
            let request = match &schema {
                Some(schema) => with_system_text(request, &jsonl_instructions(schema)),
                None => with_system_text(request, JSONL_WITHOUT_SCHEMA),
            };
            let mut request = request.structured(requested, schema);
            request.jsonl = true;
            (request, mode)
        }
        ResponseType::Text => {
            let reason = "a text answer is not JSON: the prompt is sent as written".to_string();
            mode.fallbacks.push(Fallback { from: requested, to: StructuredMode::None, reason });
            mode.used = StructuredMode::None;
            (request.structured(StructuredMode::None, None), mode)
        }
        ResponseType::Jsonl => {
            let reason = format!(
                "a jsonl answer holds one JSON value per line, and {requested} would force the whole answer into one value: {}",
                if schema.is_some() { "the schema of each line is described in the prompt" } else { "JSONL is asked for by the prompt alone" }
            );
            mode.fallbacks.push(Fallback { from: requested, to: StructuredMode::None, reason });
            mode.used = StructuredMode::None;
            mode.schema_in_prompt = schema.is_some();
            let request = match &schema {
                Some(schema) => with_system_text(request, &jsonl_instructions(schema)),
                None => request,
            };
            (request.structured(StructuredMode::None, schema), mode)
        }
    }
}

/// The prompt text asking for JSON Lines when there is no schema.
const JSONL_WITHOUT_SCHEMA: &str =
    "Answer in JSON Lines: one JSON object per line, each written on a single line, with no prose and no code fence.";

/// The prompt text asking for JSON Lines whose every line matches `schema`.
pub fn jsonl_instructions(schema: &Value) -> String {
    let schema_text = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "Answer in JSON Lines: one JSON value per line, each written on a single line, with no prose and no code fence. Every line must validate against this JSON Schema:\n{schema_text}"
    )
}

/// `request` with `text` added to its last system message (or as a new first system message).
fn with_system_text(mut request: Request, text: &str) -> Request {
    match request.messages.iter_mut().rev().find(|m| m.role == Role::System) {
        Some(system) => {
            system.content.push_str("\n\n");
            system.content.push_str(text);
        }
        None => request.messages.insert(0, Message { role: Role::System, content: text.to_string() }),
    }
    request
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
