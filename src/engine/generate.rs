//! One loaded model and the generation loop: render the chat prompt, reuse the cached prompt prefix,
//! then token by token — forced tokens in one batched forward pass, masked logits, sampling — with
//! every token sent as it is made and the bytes of a character split across tokens held back; with a
//! thinking budget, the model thinks first, unconstrained, until `</think>` or the budget (then the
//! engine closes the thought), and the answer is constrained from its first token as without. In the
//! engine's own words: an [`Ask`] in, [`Step`]s out, a [`Generated`] at the end.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::chat::{ChatTemplate, Turn};
use super::constraint::{Constraint, Constraints, Grammar};
use super::model::{Backend, Config, StoredWeights, Transformer, WeightsFrom};
use super::sampler::{odds, Odds, RepeatPenalty, Sampler, Sampling};
use super::thinking::{Thought, ThoughtEnd, BUDGET_CLOSE, MODEL_CLOSE};
use super::tokenizer::{TextTokenizer, TokenId};
use super::EngineError;

/// Prompt positions are run in blocks that end at multiples of this (the first one from where the
/// cached prefix ends). A token's numbers do not depend on the batch it runs in (the kernels' and
/// attention's fixed arithmetic), so a cached prefix of any length gives bit-for-bit the numbers of a
/// fresh run (greedy fidelity), and the next case or edit runs only from its first changed token.
const PREFILL_BLOCK: usize = 64;
/// The answer length when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// How a model is loaded. The default keeps no stored weights (the provider names their folder).
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub backend: Backend,
    /// Positions of the key/value cache (prompt + answer).
    pub context: usize,
    /// Threads of our forward pass (`TUNEBENCH_THREADS`, else the machine's available parallelism).
    pub threads: usize,
    /// The folder our interleaved weights are stored in (`None`: rebuilt from the GGUF at every load).
    pub stored_weights: Option<PathBuf>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self { backend: Backend::Native, context: 4096, threads: super::threads::configured(), stored_weights: None }
    }
}

/// A loaded model, ready to answer.
pub struct Engine {
    model: Box<dyn Transformer>,
    tokenizer: Arc<TextTokenizer>,
    template: ChatTemplate,
    /// `general.architecture` (errors name it).
    architecture: String,
    constraints: OnceLock<Result<Constraints, EngineError>>,
    /// The tokens whose keys and values are in the model's cache, in order.
    cached: Vec<TokenId>,
    pub path: PathBuf,
    pub load_ms: u64,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("path", &self.path).field("config", self.model.config()).finish()
    }
}

/// What the engine is asked to answer.
#[derive(Clone, Debug, Default)]
pub struct Ask<'a> {
    /// The conversation, rendered by the model's chat template.
    pub turns: Vec<Turn<'a>>,
    /// What the answer is held to (`None`: unconstrained).
    pub grammar: Option<Grammar>,
    /// The grammar's fixed text is inserted without sampling (forced tokens).
    pub forcing: bool,
    /// The answer's length in tokens at most.
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Over the tokens the model chose, before the grammar's mask.
    pub penalty: Option<RepeatPenalty>,
    /// The answer stops once its text ends with one of these (empty ones never match).
    pub stop: &'a [String],
    /// Think first, at most this many tokens (`None`: the template's thinking off, the answer at once).
    /// Needs a chat template with a thinking mode ([`ChatTemplate::thinks`]).
    pub thinking: Option<usize>,
}

/// Why an answer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The model or the grammar ended it, or a stop text was reached.
    Stop,
    /// The answer reached its length.
    Length,
}

/// What the engine says while it answers, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The prompt is encoded and the grammar built: the answer starts (sent once, first).
    Started,
    /// One token of the thought, before the answer (thinking mode only; never part of the answer).
    Thinking(Produced),
    /// One token of the answer.
    Token(Produced),
}

/// One generated token.
#[derive(Clone, Debug, PartialEq)]
pub struct Produced {
    pub id: TokenId,
    /// The text it completes (empty while a character is split across tokens).
    pub text: String,
    /// How likely it was and its runner-up; `None` for a token the grammar forced.
    pub odds: Option<Odds>,
}

/// What a generation produced (the steps carry the same, as they happen).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generated {
    pub tokens: Vec<TokenId>,
    pub text: String,
    pub prompt_tokens: usize,
    /// Prompt tokens whose keys and values came from the cache of the turn before.
    pub reused_tokens: usize,
    /// Tokens inserted by the grammar without sampling.
    pub forced_tokens: usize,
    /// `None` when the receiver stopped listening (cancelled).
    pub finish: Option<Finish>,
    /// What the model thought before the answer (thinking mode); not in `tokens` nor `text`.
    pub thought: Option<Thought>,
}

/// Holds back the bytes of a character that is split across tokens.
#[derive(Default)]
struct Utf8Buffer {
    pending: Vec<u8>,
}

impl Utf8Buffer {
    /// The text that is complete after adding `bytes`.
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match error.error_len() {
                        // Not UTF-8 at all: the replacement character, then go on.
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                        // A character still incomplete: wait for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }
}

use super::threads::THREADS_VAR;

/// Sets candle's matmul thread count once, before its pool starts: `TUNEBENCH_THREADS`, else 1 (the
/// baseline and reference backends): candle's spinning barrier pool loses badly when its threads share
/// busy cores; `CANDLE_NUM_THREADS` set by the user wins.
fn set_candle_threads() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("CANDLE_NUM_THREADS").is_some() {
            return;
        }
        let threads = std::env::var(THREADS_VAR).ok().and_then(|t| t.trim().parse::<usize>().ok()).filter(|t| *t > 0);
        std::env::set_var("CANDLE_NUM_THREADS", threads.unwrap_or(1).to_string());
    });
}

/// The threads of candle's matmuls (the baseline backend).
pub fn candle_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1)
}

impl Engine {
    /// Loads a GGUF file: weights, tokenizer, chat template.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Self, EngineError> {
        set_candle_threads();
        let started = Instant::now();
        let (content, mut reader) = super::gguf::open(path)?;
        // The family first: an architecture this build does not run, or a file that does not fit its
        // family, is named before the vocabulary is read.
        let architecture = super::arch::Plan::of(&content)?.config.family.to_string();
        // The stored weights: a file named by the GGUF's identity (which is checked again inside it).
        let stored = match (&options.stored_weights, options.backend) {
            (Some(dir), Backend::Native) => super::weights::Identity::of(path)
                .ok()
                .map(|identity| StoredWeights { file: super::weights::file_for(dir, path, &identity), identity }),
            _ => None,
        };
        // The vocabulary is built while the weights load (the 0.6B file's 151,643 tokens and merges
        // take longer than mapping its stored weights); a vocabulary this build does not read is
        // refused first, before any weight is read, and the vocabulary's other errors are named first.
        TextTokenizer::check(&content)?;
        let (tokenizer, model) = std::thread::scope(|scope| {
            let tokenizer = std::thread::Builder::new()
                .name("tunebench-vocabulary".into())
                .spawn_scoped(scope, || TextTokenizer::from_gguf(&content));
            let model = super::model::load(
                &content,
                &mut reader,
                options.backend,
                options.context,
                options.threads,
                stored.as_ref(),
            );
            let tokenizer = match tokenizer {
                Ok(building) => building.join().unwrap_or_else(|_| {
                    Err(EngineError::Model("building the model's vocabulary failed (a bug)".into()))
                }),
                // No thread to spare: built here.
                Err(_) => TextTokenizer::from_gguf(&content),
            };
            (tokenizer, model)
        });
        let tokenizer = Arc::new(tokenizer?);
        let template = ChatTemplate::of_gguf(path, &content, &tokenizer)?;
        let model = model?;
        Ok(Self {
            model,
            tokenizer,
            template,
            architecture,
            constraints: OnceLock::new(),
            cached: Vec::new(),
            path: path.to_path_buf(),
            load_ms: started.elapsed().as_millis() as u64,
        })
    }

    /// Positions in the key/value cache (the last prompt and the answer so far).
    pub fn cached_tokens(&self) -> usize {
        self.cached.len()
    }

    /// The threads our forward pass runs on.
    pub fn threads(&self) -> usize {
        self.model.threads()
    }

    /// Runs later generations on `threads` threads: the same tokens and logits, bit for bit.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), EngineError> {
        self.model.set_threads(threads)
    }

    /// How the weights were loaded: read back from the stored file, or rebuilt from the GGUF (why).
    pub fn weights_from(&self) -> WeightsFrom {
        self.model.weights_from()
    }

    /// The model's shape.
    pub fn config(&self) -> &Config {
        self.model.config()
    }

    /// Bytes of the weight matrices generating one token reads.
    pub fn weight_bytes(&self) -> usize {
        self.model.weight_bytes()
    }

    pub fn tokenizer(&self) -> &Arc<TextTokenizer> {
        &self.tokenizer
    }

    /// The prompt text the model sees for `turns`.
    pub fn prompt_of(&self, turns: &[Turn<'_>]) -> Result<String, EngineError> {
        self.template.render(turns)
    }

    /// Whether the model's chat template has a thinking mode (Qwen3's has).
    pub fn thinks(&self) -> bool {
        self.template.thinks()
    }

    /// The prompt text the model sees for `ask`: thinking on when it asks for a budget (an error,
    /// naming the file, its architecture and its template, when the template has no thinking mode).
    pub fn prompt_for(&self, ask: &Ask<'_>) -> Result<String, EngineError> {
        match ask.thinking {
            None => self.template.render(&ask.turns),
            Some(_) if !self.template.thinks() => Err(EngineError::Model(format!(
                "thinking was asked for (--think, or thinking in the prompt's [provider]), but {} (architecture {:?}) \
                 has no thinking mode: it reads no enable_thinking and writes no <think>; run without thinking, or \
                 with a model whose template thinks (Qwen3)",
                self.template.name(),
                self.architecture,
            ))),
            Some(0) => Err(EngineError::Model("a thinking budget of 0 tokens: the model could not think".into())),
            Some(_) => self.template.render_with(&ask.turns, true),
        }
    }

    fn constraints(&self) -> Result<&Constraints, EngineError> {
        self.constraints.get_or_init(|| Constraints::new(Arc::clone(&self.tokenizer))).as_ref().map_err(Clone::clone)
    }

    /// Builds the constraint engine now (otherwise on the first constrained request).
    pub fn prepare_constraints(&self) -> Result<(), EngineError> {
        self.constraints().map(|_| ())
    }

    /// Grammars compiled so far (a schema used again while it is kept is not compiled again; see
    /// [`super::constraint`]).
    pub fn grammars_compiled(&self) -> usize {
        self.constraints.get().and_then(|built| built.as_ref().ok()).map_or(0, Constraints::compiles)
    }

    /// Runs the prompt through the model, reusing the cached prefix; returns the logits after it.
    fn prefill(&mut self, prompt: &[TokenId]) -> Result<(Vec<f32>, usize), EngineError> {
        self.prefill_while(prompt, &|| true)
    }

    /// [`Self::prefill`], block after block while `go_on()` (the blocks run stay cached).
    fn prefill_while(
        &mut self,
        prompt: &[TokenId],
        go_on: &dyn Fn() -> bool,
    ) -> Result<(Vec<f32>, usize), EngineError> {
        let common = self.cached.iter().zip(prompt).take_while(|(a, b)| a == b).count();
        // Always run at least the last prompt token (its logits start the answer).
        let reuse = common.min(prompt.len().saturating_sub(1));
        self.model.truncate_cache(reuse);
        self.cached.truncate(reuse);
        let mut logits = Vec::new();
        let mut at = reuse;
        while at < prompt.len() && go_on() {
            let end = ((at / PREFILL_BLOCK + 1) * PREFILL_BLOCK).min(prompt.len());
            let block = prompt.get(at..end).unwrap_or_default();
            self.model.forward_into(block, &mut logits).inspect_err(|_| self.forget())?;
            self.cached.extend_from_slice(block);
            at = end;
        }
        Ok((logits, reuse))
    }

    /// Runs `ask`'s prompt through the model, keeping its keys and values for the next generation
    /// (which then runs only the prompt's last block), and builds the grammar engine and compiles
    /// `ask`'s grammar (kept for its answer) when `ask` is constrained; stops between blocks of the
    /// prompt once `go_on()` is false (a run or a newer warm is waiting: what was run stays cached).
    /// Returns the prompt's tokens.
    pub fn prepare_while(&mut self, ask: &Ask<'_>, go_on: &dyn Fn() -> bool) -> Result<usize, EngineError> {
        if let Some(grammar) = &ask.grammar {
            self.constraints()?.matcher(grammar)?;
        }
        let prompt = self.tokenizer.encode(&self.prompt_for(ask)?)?;
        self.prefill_while(&prompt, go_on)?;
        Ok(prompt.len())
    }

    /// Empties the key/value cache (the next prompt runs from scratch).
    pub fn forget_cache(&mut self) {
        self.forget();
    }

    fn forget(&mut self) {
        self.model.truncate_cache(0);
        self.cached.clear();
    }

    /// Runs `tokens` after the cached ones; their logits overwrite `logits` (one buffer a generation).
    fn step(&mut self, tokens: &[TokenId], logits: &mut Vec<f32>) -> Result<(), EngineError> {
        self.model.forward_into(tokens, logits).inspect_err(|_| self.forget())?;
        self.cached.extend_from_slice(tokens);
        Ok(())
    }

    /// Answers `ask`, calling `emit` with each step (`Started`, one `Token` per generated token); stops
    /// early, without an error, when `emit` returns `false` (cancelled: no finish).
    pub fn answer(&mut self, ask: &Ask<'_>, emit: &mut dyn FnMut(Step) -> bool) -> Result<Generated, EngineError> {
        let mut constraint: Option<Constraint> = match &ask.grammar {
            Some(grammar) => Some(self.constraints()?.matcher(grammar)?),
            None => None,
        };
        let forcing = ask.forcing;
        let prompt = self.tokenizer.encode(&self.prompt_for(ask)?)?;
        if !emit(Step::Started) {
            return Ok(Generated::default());
        }
        let (mut logits, reused) = self.prefill(&prompt)?;
        let max = ask.max_tokens;
        let mut sampler = Sampler::new(ask.sampling);
        let penalty = ask.penalty.as_ref();
        let thought = match ask.thinking {
            Some(budget) => match self.think(budget, &mut logits, &mut sampler, penalty, emit)? {
                Some(thought) => Some(thought),
                // Cancelled while thinking.
                None => {
                    return Ok(Generated { prompt_tokens: prompt.len(), reused_tokens: reused, ..Generated::default() })
                }
            },
            None => None,
        };
        // The tokens the model chose (the penalty's window: the grammar's forced text is not a repeat).
        let mut sampled: Vec<TokenId> = Vec::new();
        let mut out = Generated { prompt_tokens: prompt.len(), reused_tokens: reused, thought, ..Generated::default() };
        let mut utf8 = Utf8Buffer::default();
        let finish = 'generation: loop {
            if out.tokens.len() >= max {
                break Finish::Length;
            }
            // The schema's fixed text, inserted without sampling, in one forward pass.
            if let (true, Some(c)) = (forcing, constraint.as_mut()) {
                let mut forced = c.forced()?;
                forced.truncate(max - out.tokens.len());
                if !forced.is_empty() {
                    c.consume(&forced)?;
                    for token in &forced {
                        if !self.send(*token, None, &mut utf8, &mut out, emit) {
                            return Ok(out);
                        }
                    }
                    out.forced_tokens += forced.len();
                    if c.is_stopped() {
                        break Finish::Stop;
                    }
                    if out.tokens.len() >= max {
                        break Finish::Length;
                    }
                    self.step(&forced, &mut logits)?;
                    continue;
                }
            }
            // The penalty applies to the model's logits, before the grammar's mask.
            if let Some(penalty) = penalty {
                penalty.apply(&mut logits, &sampled);
            }
            if let Some(c) = constraint.as_mut() {
                c.mask(&mut logits)?;
            }
            let Some(token) = sampler.pick(&logits) else {
                return Err(EngineError::Constraint("the grammar allows no token here".into()));
            };
            sampled.push(token);
            let odds = odds(&logits, token);
            if self.tokenizer.ends_generation(token) {
                break Finish::Stop;
            }
            if let Some(c) = constraint.as_mut() {
                c.consume(&[token])?;
            }
            if !self.send(token, odds, &mut utf8, &mut out, emit) {
                return Ok(out);
            }
            if constraint.as_ref().is_some_and(Constraint::is_stopped) {
                break Finish::Stop;
            }
            for stop in ask.stop.iter().filter(|s| !s.is_empty()) {
                if out.text.ends_with(stop.as_str()) {
                    break 'generation Finish::Stop;
                }
            }
            if out.tokens.len() >= max {
                break Finish::Length;
            }
            self.step(&[token], &mut logits)?;
        };
        out.finish = Some(finish);
        Ok(out)
    }

    /// The thinking phase: the model generates freely (no grammar, no stop texts) until it writes
    /// `</think>` or `budget` tokens are spent, each token sent as a [`Step::Thinking`]; the engine then
    /// runs the closing text ([`MODEL_CLOSE`] after the model's own `</think>`, [`BUDGET_CLOSE`]
    /// otherwise) through the model, and `logits` are those the answer starts from. A model that ends
    /// its turn while thinking is closed as when the budget is spent (the end token is not kept).
    /// `None` when the receiver stopped listening (cancelled).
    fn think(
        &mut self,
        budget: usize,
        logits: &mut Vec<f32>,
        sampler: &mut Sampler,
        penalty: Option<&RepeatPenalty>,
        emit: &mut dyn FnMut(Step) -> bool,
    ) -> Result<Option<Thought>, EngineError> {
        let mut tokens: Vec<TokenId> = Vec::new();
        let mut raw = String::new();
        let mut utf8 = Utf8Buffer::default();
        let end = loop {
            if tokens.len() >= budget {
                break ThoughtEnd::Budget;
            }
            if let Some(penalty) = penalty {
                penalty.apply(logits, &tokens);
            }
            let Some(token) = sampler.pick(logits) else {
                return Err(EngineError::Model("no token could be sampled while thinking".into()));
            };
            if self.tokenizer.ends_generation(token) {
                break ThoughtEnd::Budget;
            }
            let odds = odds(logits, token);
            let text = utf8.push(self.tokenizer.token_bytes(token));
            tokens.push(token);
            raw.push_str(&text);
            if !emit(Step::Thinking(Produced { id: token, text, odds })) {
                return Ok(None);
            }
            self.step(&[token], logits)?;
            if Thought::closed_by_model(&raw) {
                break ThoughtEnd::Model;
            }
        };
        let close = if end == ThoughtEnd::Model { MODEL_CLOSE } else { BUDGET_CLOSE };
        let closing = self.tokenizer.tokenize(close, false, true)?;
        self.step(&closing, logits)?;
        Ok(Some(Thought { tokens, raw, closing, end }))
    }

    /// Sends one generated token with the text it completes and how likely it was (`odds`: `None`
    /// for a token the grammar forced); `false` when the receiver is gone.
    fn send(
        &self,
        token: TokenId,
        odds: Option<Odds>,
        utf8: &mut Utf8Buffer,
        out: &mut Generated,
        emit: &mut dyn FnMut(Step) -> bool,
    ) -> bool {
        let text = utf8.push(self.tokenizer.token_bytes(token));
        out.tokens.push(token);
        out.text.push_str(&text);
        emit(Step::Token(Produced { id: token, text, odds }))
    }

    /// A token's text as the tokenizer stores it (lossy where it is part of a character).
    pub fn piece(&self, token: TokenId) -> String {
        String::from_utf8_lossy(self.tokenizer.token_bytes(token)).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_are_held_back_until_complete() {
        let mut buffer = Utf8Buffer::default();
        let smile = "🙂".as_bytes();
        assert_eq!(buffer.push(&smile[..2]), "");
        assert_eq!(buffer.push(&smile[2..3]), "");
        assert_eq!(buffer.push(&[smile[3], b'a']), "🙂a");
        assert_eq!(buffer.push(&[0xFF, b'b']), "\u{FFFD}b");
        assert_eq!(buffer.push("é".as_bytes()), "é");
    }
}
