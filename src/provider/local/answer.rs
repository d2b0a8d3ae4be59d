//! The engine in the provider's words: a [`Request`] becomes the engine's [`Ask`] (chat turns,
//! grammar, sampling), its [`Step`]s become [`Event`]s (`Mode`, `Token` + `Probs`, `Usage`, `Finish`),
//! its errors [`LocalError`]s.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::LocalError;
use crate::engine::chat::Turn;
use crate::engine::constraint::Grammar;
use crate::engine::sampler::{RepeatPenalty, Sampling};
use crate::engine::{Ask, Finish, LoadOptions, Step, DEFAULT_MAX_TOKENS};
use crate::provider::{Alternative, Event, FinishReason, ModeReport, Request, StructuredMode, TokenProb, Usage};

/// How the provider loads the engine: its defaults, with the interleaved weights stored in
/// `<cache dir>/weights/`.
pub fn load_options() -> LoadOptions {
    LoadOptions {
        stored_weights: crate::provider::cache_dir::cache_dir().map(|d| d.join("weights")),
        ..LoadOptions::default()
    }
}

/// What an answer under `mode` is held to (`None`: unconstrained): any object for `json-object`, the
/// schema with its objects closed for `json-schema` and `constrained` (any object when there is none);
/// one value, or one per line for a `jsonl` answer.
pub fn grammar(mode: StructuredMode, schema: Option<&Value>, jsonl: bool) -> Option<Grammar> {
    match mode {
        StructuredMode::None => None,
        StructuredMode::JsonObject => Some(Grammar::any_object(jsonl)),
        StructuredMode::JsonSchema | StructuredMode::Constrained => Some(Grammar::closed_schema(schema, jsonl)),
    }
}

/// What a generation produced, in the provider's words (the events carry the same, as they happen).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generated {
    pub tokens: Vec<u32>,
    pub text: String,
    pub prompt_tokens: usize,
    /// Prompt tokens whose keys and values came from the cache of the turn before.
    pub reused_tokens: usize,
    /// Tokens inserted by the grammar without sampling.
    pub forced_tokens: usize,
    pub finish: Option<FinishReason>,
    /// What the model thought before the answer (thinking mode).
    pub thought: Option<crate::engine::thinking::Thought>,
}

/// How the last answer's prompt met the key/value cache of the answer before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PromptReuse {
    pub prompt_tokens: usize,
    /// The prompt's first tokens, whose keys and values were already cached (not run again).
    pub reused_tokens: usize,
}

/// The engine loaded, answering the provider's requests; the engine's own calls (threads, cache,
/// tokenizer, shape) are reached through it as they are.
pub struct Engine {
    engine: crate::engine::Engine,
    last_prompt: Option<PromptReuse>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}

impl std::ops::Deref for Engine {
    type Target = crate::engine::Engine;
    fn deref(&self) -> &Self::Target {
        &self.engine
    }
}

impl std::ops::DerefMut for Engine {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.engine
    }
}

/// The conversation of `request` as the engine's turns.
pub fn turns(request: &Request) -> Vec<Turn<'_>> {
    request.messages.iter().map(|m| Turn { role: m.role.as_str(), content: m.content.as_str() }).collect()
}

/// `request` in the engine's words.
fn ask(request: &Request) -> Ask<'_> {
    Ask {
        turns: turns(request),
        grammar: grammar(request.structured, request.schema.as_ref(), request.jsonl),
        forcing: request.structured == StructuredMode::Constrained,
        max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize,
        sampling: Sampling {
            temperature: request.temperature.unwrap_or(0.0),
            seed: request.seed.unwrap_or(0),
            ..Sampling::default()
        },
        penalty: request.repeat_penalty.and_then(|p| RepeatPenalty::new(p, request.repeat_last_n)),
        stop: &request.stop,
        thinking: request.thinking.map(|budget| budget as usize),
    }
}

impl Engine {
    /// Loads a GGUF file: weights, tokenizer, chat template.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Self, LocalError> {
        Ok(Self { engine: crate::engine::Engine::load(path, options)?, last_prompt: None })
    }

    /// How the last answer's prompt met the cache (`None` before the first answer).
    pub fn last_prompt(&self) -> Option<PromptReuse> {
        self.last_prompt
    }

    /// The prompt text the model sees for `request` (its template's thinking on when it asks for a budget).
    pub fn prompt_text(&self, request: &Request) -> Result<String, LocalError> {
        Ok(self.engine.prompt_for(&ask(request))?)
    }

    /// Runs `request`'s prompt through the model, keeping its keys and values for the next generation
    /// (which then runs only the prompt's last block), and builds the grammar engine when `request` is
    /// constrained. Returns the prompt's tokens.
    pub fn warm(&mut self, request: &Request) -> Result<usize, LocalError> {
        self.warm_while(request, &|| true)
    }

    /// [`Self::warm`], stopping between blocks of the prompt once `go_on()` is false (a run or a newer
    /// warm is waiting: what was run stays cached).
    pub fn warm_while(&mut self, request: &Request, go_on: &dyn Fn() -> bool) -> Result<usize, LocalError> {
        Ok(self.engine.prepare_while(&ask(request), go_on)?)
    }

    /// Answers `request`, calling `emit` with each event (`Mode`, one `Token` and its `Probs` per
    /// generated token, `Usage`, `Finish`); stops early, without an error, when `emit` returns `false`
    /// (cancelled).
    pub fn generate(
        &mut self,
        request: &Request,
        emit: &mut dyn FnMut(Event) -> bool,
    ) -> Result<Generated, LocalError> {
        let mode = ModeReport { requested: request.structured, used: request.structured, ..ModeReport::default() };
        let tokenizer = Arc::clone(self.engine.tokenizer());
        let piece = |id: u32| String::from_utf8_lossy(tokenizer.token_bytes(id)).into_owned();
        let mut on_step = |step: Step| match step {
            Step::Started => emit(Event::Mode(mode.clone())),
            Step::Thinking(produced) => emit(Event::Thinking { id: produced.id, text: produced.text }),
            Step::Token(produced) => {
                let prob = match produced.odds {
                    None => TokenProb::forced(piece(produced.id)),
                    Some(odds) => TokenProb {
                        token: piece(produced.id),
                        p: Some(odds.p),
                        alt: odds.runner_up.map(|(id, p)| Alternative { token: piece(id), p }),
                        forced: false,
                    },
                };
                emit(Event::Token { id: produced.id, text: produced.text }) && emit(Event::Probs(vec![prob]))
            }
        };
        let out = self.engine.answer(&ask(request), &mut on_step)?;
        self.last_prompt = Some(PromptReuse { prompt_tokens: out.prompt_tokens, reused_tokens: out.reused_tokens });
        let finish = out.finish.map(|finish| match finish {
            Finish::Stop => FinishReason::Stop,
            Finish::Length => FinishReason::Length,
        });
        if let Some(finish) = &finish {
            let usage = Usage {
                input_tokens: out.prompt_tokens as u64,
                output_tokens: out.tokens.len() as u64,
                estimated: false,
                cached_input_tokens: out.reused_tokens as u64,
            };
            if emit(Event::Usage(usage)) {
                emit(Event::Finish(finish.clone()));
            }
        }
        Ok(Generated {
            tokens: out.tokens,
            text: out.text,
            prompt_tokens: out.prompt_tokens,
            reused_tokens: out.reused_tokens,
            forced_tokens: out.forced_tokens,
            finish,
            thought: out.thought,
        })
    }
}
