//! The model's tokenizer, read from the GGUF as llama.cpp reads it: the vocabulary, each token's type,
//! the special tokens cut out of the text first (control tokens only when asked, user-defined ones
//! always, longest first), then the text between them through the file's model — byte-level BPE
//! (`gpt2`, [`bpe`]) or SentencePiece (`llama`, [`spm`]) — and BOS/EOS added as the file says
//! (`tokenizer.ggml.add_bos_token`). Also each token's bytes (what the constraint engine needs) and the
//! tokens that end a generation.

mod bpe;
mod spm;

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};

use super::EngineError;

/// A token id of the model's vocabulary.
pub type TokenId = u32;

/// What a token is, from `tokenizer.ggml.token_type` (llama.cpp's `LLAMA_TOKEN_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
    Undefined,
}

impl Kind {
    fn of(value: i64) -> Self {
        match value {
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => Self::Undefined,
        }
    }

    /// Cut out of the text before the model runs (llama.cpp's special-token cache).
    fn is_cut_out(self) -> bool {
        matches!(self, Self::Control | Self::UserDefined | Self::Unknown)
    }
}

/// Token texts that end a generation (llama.cpp's list, as far as these families use it); such a token
/// is a control token whatever the file says.
const END_OF_GENERATION: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
];

/// The end-of-turn token, by text, in llama.cpp's order (when the file names none).
const END_OF_TURN: &[&str] = &["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"];

/// The vocabulary: each token's text, type and score, and the id of each text.
struct Vocab {
    texts: Vec<String>,
    kinds: Vec<Kind>,
    scores: Vec<f32>,
    ids: HashMap<String, TokenId>,
}

impl Vocab {
    fn id(&self, text: &str) -> Option<TokenId> {
        self.ids.get(text).copied()
    }
}

/// The file's tokenization model.
enum Model {
    Bpe(Box<bpe::ByteLevelBpe>),
    Spm,
}

/// One piece of the text once the special tokens are cut out.
#[derive(Clone, Copy, Debug)]
enum Piece<'t> {
    Text(&'t str),
    Token(TokenId),
}

/// Text to token ids and back, plus each token's raw bytes (what the constraint engine needs).
pub struct TextTokenizer {
    vocab: Vocab,
    model: Model,
    /// Tokens cut out of the text before the model runs, longest text first.
    cut_out: Vec<TokenId>,
    /// Each token's bytes (a control token's own text; nothing for unused tokens).
    bytes: Vec<Vec<u8>>,
    end_of_generation: Vec<TokenId>,
    add_bos: bool,
    add_eos: bool,
    add_space_prefix: bool,
    pub eos: TokenId,
    pub bos: Option<TokenId>,
    /// The token that ends the assistant's turn (`<|im_end|>`, `<end_of_turn>`, `<|eot_id|>`), else EOS.
    pub end_of_turn: TokenId,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer").field("vocab", &self.bytes.len()).field("eos", &self.eos).finish()
    }
}

fn bad(key: &str, what: impl std::fmt::Display) -> EngineError {
    EngineError::Model(format!("the GGUF's `{key}` {what}"))
}

fn meta<'a>(content: &'a Content, key: &str) -> Result<&'a Value, EngineError> {
    content.metadata.get(key).ok_or_else(|| EngineError::Model(format!("the GGUF has no `{key}`")))
}

fn text(content: &Content, key: &str) -> Result<Option<String>, EngineError> {
    content
        .metadata
        .get(key)
        .map(|v| v.to_string().cloned().map_err(|e| bad(key, format!("is not text: {e}"))))
        .transpose()
}

fn list<'a>(content: &'a Content, key: &str) -> Result<Option<&'a Vec<Value>>, EngineError> {
    content.metadata.get(key).map(|v| v.to_vec().map_err(|e| bad(key, format!("is not a list: {e}")))).transpose()
}

/// The texts of a list key, borrowed from the header (no copy: the merges are read once).
fn texts_of<'a>(content: &'a Content, key: &str) -> Result<Vec<&'a str>, EngineError> {
    let values = meta(content, key)?.to_vec().map_err(|e| bad(key, format!("is not a list: {e}")))?;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| v.to_string().map(String::as_str).map_err(|e| bad(key, format!("entry {i} is not text: {e}"))))
        .collect()
}

fn strings(content: &Content, key: &str) -> Result<Vec<String>, EngineError> {
    Ok(texts_of(content, key)?.into_iter().map(str::to_owned).collect())
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::U8(v) => Some(i64::from(*v)),
        Value::I8(v) => Some(i64::from(*v)),
        Value::U16(v) => Some(i64::from(*v)),
        Value::I16(v) => Some(i64::from(*v)),
        Value::U32(v) => Some(i64::from(*v)),
        Value::I32(v) => Some(i64::from(*v)),
        Value::U64(v) => i64::try_from(*v).ok(),
        Value::I64(v) => Some(*v),
        _ => None,
    }
}

fn flag(content: &Content, key: &str) -> Result<Option<bool>, EngineError> {
    content.metadata.get(key).map(|v| v.to_bool().map_err(|e| bad(key, format!("is not true/false: {e}")))).transpose()
}

/// A token id key; one outside the vocabulary is ignored, as llama.cpp does.
fn token_key(content: &Content, key: &str, n_tokens: usize) -> Result<Option<TokenId>, EngineError> {
    let Some(value) = content.metadata.get(key) else { return Ok(None) };
    let id = integer(value).ok_or_else(|| bad(key, "is not a token id"))?;
    Ok(usize::try_from(id).ok().filter(|i| *i < n_tokens).map(|i| i as TokenId))
}

/// The byte a `<0xNN>` token stands for.
fn byte_of(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2).then(|| u8::from_str_radix(hex, 16).ok()).flatten()
}

/// The file's tokenization model as its header names it.
#[derive(Clone, Copy, Debug)]
enum Form {
    Bpe,
    Spm,
}

/// `tokenizer.ggml.model`, and for byte-level BPE the pre-tokenizer `tokenizer.ggml.pre` names (returned):
/// a vocabulary this build does not read is refused with the value and what does run.
fn form_of(content: &Content) -> Result<(Form, Option<String>), EngineError> {
    let kind = text(content, "tokenizer.ggml.model")?
        .ok_or_else(|| EngineError::Model("the GGUF has no `tokenizer.ggml.model`".into()))?;
    let pre = text(content, "tokenizer.ggml.pre")?;
    match kind.as_str() {
        "gpt2" => bpe::check_pre(pre.as_deref()).map(|()| (Form::Bpe, pre)),
        "llama" => Ok((Form::Spm, pre)),
        other => Err(EngineError::Model(format!(
            "tokenizer.ggml.model is {other:?}: this build reads \"gpt2\" (byte-level BPE) and \"llama\" \
             (SentencePiece) vocabularies"
        ))),
    }
}

impl TextTokenizer {
    /// Whether the header names a vocabulary this build reads (its model, and its pre-tokenizer): a few
    /// keys, so a load refuses such a file before it reads the weights. [`Self::from_gguf`] checks the rest.
    pub fn check(content: &Content) -> Result<(), EngineError> {
        form_of(content).map(|_| ())
    }

    /// Builds the tokenizer from the GGUF metadata (`tokenizer.ggml.*`): `gpt2` (byte-level BPE with one
    /// of the pre-tokenizers in [`bpe::PRE_TOKENIZERS`]) or `llama` (SentencePiece) vocabularies.
    pub fn from_gguf(content: &Content) -> Result<Self, EngineError> {
        let (form, pre) = form_of(content)?;
        let texts = strings(content, "tokenizer.ggml.tokens")?;
        let n = texts.len();
        if n == 0 {
            return Err(bad("tokenizer.ggml.tokens", "is empty"));
        }
        let mut kinds: Vec<Kind> = match list(content, "tokenizer.ggml.token_type")? {
            Some(values) => values.iter().map(|v| integer(v).map_or(Kind::Undefined, Kind::of)).collect(),
            None => vec![Kind::Normal; n],
        };
        if kinds.len() < n {
            return Err(bad("tokenizer.ggml.token_type", format!("has {} entries for {n} tokens", kinds.len())));
        }
        kinds.truncate(n);
        let scores: Vec<f32> = match list(content, "tokenizer.ggml.scores")? {
            Some(values) if values.len() >= n => values
                .iter()
                .take(n)
                .map(|v| v.to_f32().ok().or_else(|| integer(v).map(|i| i as f32)).unwrap_or(0.0))
                .collect(),
            Some(values) => {
                return Err(bad("tokenizer.ggml.scores", format!("has {} entries for {n} tokens", values.len())))
            }
            None => vec![0.0; n],
        };
        let mut ids = HashMap::with_capacity(n);
        for (i, t) in texts.iter().enumerate() {
            if let Some(first) = ids.insert(t.clone(), i as TokenId) {
                return Err(bad("tokenizer.ggml.tokens", format!("holds {t:?} twice (ids {first} and {i})")));
            }
        }
        for (t, kind) in texts.iter().zip(kinds.iter_mut()) {
            if END_OF_GENERATION.contains(&t.as_str()) {
                *kind = Kind::Control;
            }
        }
        let vocab = Vocab { texts, kinds, scores, ids };

        // llama.cpp's defaults per model, then the file's keys.
        let (model, mut add_bos, mut add_space_prefix, default_bos, default_eos) = match form {
            Form::Bpe => {
                let merges = texts_of(content, "tokenizer.ggml.merges")?;
                let (bpe, add_bos) = bpe::ByteLevelBpe::new(&vocab.texts, &merges, pre.as_deref())?;
                (Model::Bpe(Box::new(bpe)), add_bos, false, None, None)
            }
            Form::Spm => (Model::Spm, true, true, Some(1), Some(2)),
        };
        if let Some(prefix) = flag(content, "tokenizer.ggml.add_space_prefix")? {
            add_space_prefix = prefix;
        }
        if let Some(bos) = flag(content, "tokenizer.ggml.add_bos_token")? {
            add_bos = bos;
        }
        let add_eos = flag(content, "tokenizer.ggml.add_eos_token")?.unwrap_or(false);
        let in_vocab = |id: Option<u32>| id.filter(|i| (*i as usize) < n);
        let bos = token_key(content, "tokenizer.ggml.bos_token_id", n)?.or(in_vocab(default_bos));
        let eos = token_key(content, "tokenizer.ggml.eos_token_id", n)?
            .or(in_vocab(default_eos))
            .ok_or_else(|| EngineError::Model("the GGUF names no end-of-sequence token".into()))?;
        if add_bos && bos.is_none() {
            return Err(bad("tokenizer.ggml.add_bos_token", "is true, but the file names no BOS token"));
        }
        let end_of_turn = match token_key(content, "tokenizer.ggml.eot_token_id", n)? {
            Some(id) => id,
            None => END_OF_TURN.iter().find_map(|t| vocab.id(t)).unwrap_or(eos),
        };
        let mut end_of_generation: Vec<TokenId> =
            END_OF_GENERATION.iter().filter_map(|t| vocab.id(t)).chain([eos, end_of_turn]).collect();
        if let Some(eom) = token_key(content, "tokenizer.ggml.eom_token_id", n)? {
            end_of_generation.push(eom);
        }
        end_of_generation.sort_unstable();
        end_of_generation.dedup();

        let mut cut_out: Vec<TokenId> = (0..n as TokenId).filter(|i| vocab.kinds[*i as usize].is_cut_out()).collect();
        cut_out.sort_by_key(|i| std::cmp::Reverse(vocab.texts[*i as usize].len()));
        let bytes = (0..n).map(|i| token_bytes_of(&vocab, &model, i)).collect();
        Ok(Self {
            vocab,
            model,
            cut_out,
            bytes,
            end_of_generation,
            add_bos,
            add_eos,
            add_space_prefix,
            eos,
            bos,
            end_of_turn,
        })
    }

    /// llama.cpp's `llama_tokenize(text, add_special, parse_special)`: control tokens written in the text
    /// are read as such only with `parse_special`; BOS/EOS are added with `add_special` as the file says.
    pub fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<TokenId>, EngineError> {
        self.tokenize_with(text, add_special, parse_special, self.add_space_prefix)
    }

    fn tokenize_with(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
        space_prefix: bool,
    ) -> Result<Vec<TokenId>, EngineError> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_special && self.add_bos {
            out.extend(self.bos);
        }
        let pieces = if text.is_empty() { Vec::new() } else { self.cut(text, parse_special) };
        // SentencePiece puts a space before the text that starts the input or follows a special token.
        let mut after_special = true;
        for piece in pieces {
            match piece {
                Piece::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
                Piece::Text(text) => {
                    match &self.model {
                        Model::Bpe(bpe) => bpe.encode(text, &mut out)?,
                        Model::Spm => {
                            let mut escaped = String::with_capacity(text.len() + 3);
                            if space_prefix && after_special {
                                escaped.push('\u{2581}');
                            }
                            for c in text.chars() {
                                escaped.push(if c == ' ' { '\u{2581}' } else { c });
                            }
                            spm::encode(&self.vocab, &escaped, &mut out)?;
                        }
                    }
                    after_special = false;
                }
            }
        }
        if add_special && self.add_eos {
            out.push(self.eos);
        }
        Ok(out)
    }

    /// `text` cut at the special tokens in it (llama.cpp's partition: each special token in turn, longest
    /// first, splits every piece of text still left; control and unknown ones only with `parse_special`).
    fn cut<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Piece<'t>> {
        let mut pieces = vec![Piece::Text(text)];
        for &id in &self.cut_out {
            let kind = self.vocab.kinds[id as usize];
            if !parse_special && matches!(kind, Kind::Control | Kind::Unknown) {
                continue;
            }
            let special = self.vocab.texts[id as usize].as_str();
            if special.is_empty() || !pieces.iter().any(|p| matches!(p, Piece::Text(t) if t.contains(special))) {
                continue;
            }
            let mut next = Vec::with_capacity(pieces.len() + 2);
            for piece in pieces {
                let Piece::Text(mut rest) = piece else {
                    next.push(piece);
                    continue;
                };
                while let Some(at) = rest.find(special) {
                    if at > 0 {
                        next.push(Piece::Text(&rest[..at]));
                    }
                    next.push(Piece::Token(id));
                    rest = &rest[at + special.len()..];
                }
                if !rest.is_empty() {
                    next.push(Piece::Text(rest));
                }
            }
            pieces = next;
        }
        pieces
    }

    /// The prompt's tokens: the rendered chat template with its control tokens read as such, BOS added
    /// when the file asks for it — once: a template that writes BOS itself does not get a second one
    /// (llama.cpp strips the template's BOS text and lets the tokenizer add the token).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, EngineError> {
        let mut text = text;
        if self.add_bos {
            if let Some(bos) = self.bos {
                let bos_text = self.vocab.texts[bos as usize].as_str();
                if !bos_text.is_empty() {
                    text = text.strip_prefix(bos_text).unwrap_or(text);
                }
            }
        }
        self.tokenize(text, true, true)
    }

    /// Token ids of `text` read as plain text (`<|im_end|>` written in it is not a control token), no
    /// BOS, and no SentencePiece space before it: the tokens spell exactly `text`.
    pub fn encode_plain(&self, text: &str) -> Result<Vec<TokenId>, EngineError> {
        self.tokenize_with(text, false, false, false)
    }

    /// The bytes a token stands for (a control token's own text).
    pub fn token_bytes(&self, token: TokenId) -> &[u8] {
        self.bytes.get(token as usize).map_or(&[], Vec::as_slice)
    }

    /// The text of `tokens` (bytes that are not UTF-8 become U+FFFD).
    pub fn decode(&self, tokens: &[TokenId]) -> String {
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| self.token_bytes(*t).iter().copied()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A control or unknown token (`<|im_end|>`, `<bos>`, `<unk>`): not text the answer can contain.
    pub fn is_special(&self, token: TokenId) -> bool {
        self.vocab.kinds.get(token as usize).is_some_and(|k| matches!(k, Kind::Control | Kind::Unknown))
    }

    /// A token that ends a generation (EOS, the end of a turn, `<|endoftext|>` ...), as llama.cpp counts them.
    pub fn ends_generation(&self, token: TokenId) -> bool {
        self.end_of_generation.binary_search(&token).is_ok()
    }

    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    /// The id of a control token by its text (`<|im_end|>`).
    pub fn special_id(&self, text: &str) -> Option<TokenId> {
        self.vocab.id(text).filter(|id| self.is_special(*id))
    }

    /// The id of a token by its text, whatever its type (`<think>`).
    pub fn token_id(&self, text: &str) -> Option<TokenId> {
        self.vocab.id(text)
    }
}

/// The bytes token `i` stands for, as llama.cpp's `token_to_piece` (special tokens shown) gives them.
fn token_bytes_of(vocab: &Vocab, model: &Model, i: usize) -> Vec<u8> {
    let text = &vocab.texts[i];
    match vocab.kinds[i] {
        Kind::Control | Kind::Unknown | Kind::UserDefined => text.as_bytes().to_vec(),
        Kind::Byte => byte_of(text).map_or_else(Vec::new, |b| vec![b]),
        Kind::Normal => match model {
            Model::Bpe(_) => bpe::decode_token(text),
            Model::Spm => text.replace('\u{2581}', " ").into_bytes(),
        },
        Kind::Unused | Kind::Undefined => Vec::new(),
    }
}
