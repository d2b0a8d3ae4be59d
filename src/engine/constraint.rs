//! Schema-constrained decoding with llguidance: the grammar a request's mode and response type call
//! for, and this crate's own small adapter from the model's tokenizer to llguidance's token trie.
//!
//! - `json-object`: any JSON object. `json-schema` / `constrained`: the request's JSON Schema; for a
//!   JSONL answer, one compact JSON object per line, each valid against the schema (a Lark grammar
//!   over `%json`). `constrained` also inserts forced tokens (the schema's fixed parts) without sampling.
//! - Objects are written compactly (`,` and `:` with no spaces, no newlines), so a JSONL line is one object.
//! - Under `json-schema` and `constrained`, an object schema that lists its keys is closed to them
//!   ([`closed`](super::closed)): a missing `additionalProperties` reads as `false`.
//! - A grammar is compiled once and kept (the last [`KEPT`] ones): the cases of a run or an eval, held
//!   to the same schema, each start from a copy of its fresh parser, sharing its lexer's built states.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{SimpleVob, TokEnv, TokRxInfo, TokTrie, TokenizerEnv};
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

use super::closed::closed;
use super::grammar::{jsonl_lark, with_options};
use super::tokenizer::{TextTokenizer, TokenId};
use super::EngineError;

/// The model's tokenizer as llguidance sees it: every token's bytes (control tokens behind the trie's
/// special marker) and a canonical tokenization of any bytes.
struct TokenizerAdapter {
    tokenizer: Arc<TextTokenizer>,
    trie: TokTrie,
}

impl TokenizerEnv for TokenizerAdapter {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(s, |text| self.tokenizer.encode_plain(text).unwrap_or_default())
    }
}

/// Compiled grammars kept for the next answers (an eval's columns: a schema, any object).
pub const KEPT: usize = 4;

/// Builds matchers for requests; one per loaded model (the token trie is built once), each grammar
/// compiled once while it is among the last [`KEPT`] used.
pub struct Constraints {
    factory: ParserFactory,
    /// The grammars compiled, most recently used last, each with its fresh matcher.
    compiled: Mutex<Vec<(GrammarKey, Matcher)>>,
    /// Grammars compiled so far (a grammar used again while kept is not compiled again).
    compiles: AtomicUsize,
}

impl std::fmt::Debug for Constraints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Constraints")
    }
}

/// What the answer is held to.
#[derive(Clone, Debug, PartialEq)]
pub enum Grammar {
    /// One JSON value valid against the schema.
    Json(Value),
    /// One compact JSON value per line, each valid against the schema.
    Jsonl(Value),
}

impl Grammar {
    /// Any JSON object (one, or one per line for a `jsonl` answer).
    pub fn any_object(jsonl: bool) -> Self {
        Self::shaped(serde_json::json!({"type": "object"}), jsonl)
    }

    /// `schema` with its objects closed ([`closed`]), any object when there is none; one value, or
    /// one per line for a `jsonl` answer.
    pub fn closed_schema(schema: Option<&Value>, jsonl: bool) -> Self {
        match schema {
            Some(schema) => Self::shaped(closed(schema), jsonl),
            None => Self::any_object(jsonl),
        }
    }

    fn shaped(schema: Value, jsonl: bool) -> Self {
        if jsonl {
            Self::Jsonl(schema)
        } else {
            Self::Json(schema)
        }
    }

    /// The schema each value is held to.
    pub fn schema(&self) -> &Value {
        match self {
            Self::Json(schema) | Self::Jsonl(schema) => schema,
        }
    }

    /// What decides the compiled grammar, to the byte: the form and the schema's text in its own key
    /// order (two schemas equal as JSON values but with their keys in another order compile to
    /// grammars that write the keys in another order).
    fn key(&self) -> GrammarKey {
        match self {
            Self::Json(schema) => GrammarKey { jsonl: false, schema: schema.to_string() },
            Self::Jsonl(schema) => GrammarKey { jsonl: true, schema: schema.to_string() },
        }
    }

    pub(super) fn top_level(&self) -> TopLevelGrammar {
        match self {
            Self::Json(schema) => TopLevelGrammar::from_json_schema(with_options(schema)),
            Self::Jsonl(schema) => TopLevelGrammar::from_lark(jsonl_lark(schema)),
        }
    }
}

/// A kept grammar's identity ([`Grammar::key`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct GrammarKey {
    jsonl: bool,
    schema: String,
}

impl Constraints {
    pub fn new(tokenizer: Arc<TextTokenizer>) -> Result<Self, EngineError> {
        let mut info = TokRxInfo::new(tokenizer.vocab_size() as u32, tokenizer.eos);
        info.tok_bos = tokenizer.bos;
        info.tok_end_of_turn = Some(tokenizer.end_of_turn);
        let words: Vec<Vec<u8>> = (0..tokenizer.vocab_size() as u32)
            .map(|t| {
                let bytes = tokenizer.token_bytes(t);
                if tokenizer.is_special(t) {
                    let mut marked = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    marked.extend_from_slice(bytes);
                    marked
                } else {
                    bytes.to_vec()
                }
            })
            .collect();
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(TokenizerAdapter { tokenizer, trie });
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| EngineError::Constraint(format!("the constraint engine cannot start: {e}")))?;
        factory.quiet();
        Ok(Self { factory, compiled: Mutex::new(Vec::new()), compiles: AtomicUsize::new(0) })
    }

    /// A fresh matcher for `grammar`: a copy of the one kept for it, else compiled (and kept); a
    /// schema llguidance cannot compile is an error naming why (and is not kept).
    pub fn matcher(&self, grammar: &Grammar) -> Result<Constraint, EngineError> {
        let mut compiled = self.compiled.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let key = grammar.key();
        if let Some(at) = compiled.iter().position(|(kept, _)| *kept == key) {
            // Used again: it moves to the end (most recently used), and the answer gets a copy.
            let entry = compiled.remove(at);
            let matcher = entry.1.clone();
            compiled.push(entry);
            return Ok(Constraint { matcher });
        }
        let parser = self
            .factory
            .create_parser(grammar.top_level())
            .map_err(|e| EngineError::Constraint(format!("the schema cannot be enforced: {e}")))?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let matcher = Matcher::new(Ok(parser));
        if compiled.len() == KEPT {
            compiled.remove(0);
        }
        compiled.push((key, matcher.clone()));
        Ok(Constraint { matcher })
    }

    /// Grammars compiled so far by this model's constraint engine.
    pub fn compiles(&self) -> usize {
        self.compiles.load(Ordering::Relaxed)
    }
}

/// One answer's constraint state.
pub struct Constraint {
    matcher: Matcher,
}

impl Constraint {
    fn check(&self) -> Result<(), EngineError> {
        match self.matcher.get_error() {
            Some(error) => Err(EngineError::Constraint(error)),
            None => Ok(()),
        }
    }

    /// The tokens the grammar forces next (the schema's fixed text); [`Self::consume`] them.
    pub fn forced(&mut self) -> Result<Vec<TokenId>, EngineError> {
        let tokens = self.matcher.compute_ff_tokens();
        self.check()?;
        Ok(tokens)
    }

    /// Marks the tokens llguidance accepts next; `-inf` for every other logit. EOS is allowed when
    /// the answer is complete.
    pub fn mask(&mut self, logits: &mut [f32]) -> Result<(), EngineError> {
        let allowed: SimpleVob =
            self.matcher.compute_mask_or_eos().map_err(|e| EngineError::Constraint(e.to_string()))?;
        for (token, logit) in logits.iter_mut().enumerate() {
            if !allowed.is_allowed(token as TokenId) {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    /// Advances past `tokens` (sampled or forced).
    pub fn consume(&mut self, tokens: &[TokenId]) -> Result<(), EngineError> {
        self.matcher.consume_tokens(tokens).map_err(|e| EngineError::Constraint(e.to_string()))
    }

    /// The grammar is complete and nothing more may follow.
    pub fn is_stopped(&self) -> bool {
        self.matcher.is_stopped()
    }
}
