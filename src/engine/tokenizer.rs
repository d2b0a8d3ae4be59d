//! The model's tokenizer, built from the GGUF's own vocabulary and merges: byte-level BPE with the
//! `smollm` pre-tokenizer (every digit split off alone, GPT-2 word splits, no prefix space), and the
//! control tokens (`<|im_start|>`, `<|im_end|>`, ...) as specials. The `tokenizers` crate runs it.

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

use super::EngineError;

/// GGUF token type of control tokens (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
const CONTROL: i64 = 3;

/// A token id of the model's vocabulary.
pub type TokenId = u32;

/// Text to token ids and back, plus each token's raw bytes (what the constraint engine needs).
pub struct TextTokenizer {
    inner: Tokenizer,
    /// The same tokenizer reading control-token texts as plain text (for answer text and the constraint engine).
    plain: Tokenizer,
    /// Each token's bytes: the decoded byte-level string, or a special token's own text.
    bytes: Vec<Vec<u8>>,
    special: Vec<bool>,
    pub eos: TokenId,
    pub bos: Option<TokenId>,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer").field("vocab", &self.bytes.len()).field("eos", &self.eos).finish()
    }
}

fn meta<'a>(content: &'a Content, key: &str) -> Result<&'a Value, EngineError> {
    content.metadata.get(key).ok_or_else(|| EngineError::Model(format!("the GGUF has no `{key}`")))
}

fn strings(content: &Content, key: &str) -> Result<Vec<String>, EngineError> {
    let bad = |e: candle_core::Error| EngineError::Model(format!("`{key}`: {e}"));
    meta(content, key)?.to_vec().map_err(bad)?.iter().map(|v| v.to_string().cloned().map_err(bad)).collect()
}

fn id(content: &Content, key: &str) -> Option<TokenId> {
    content.metadata.get(key).and_then(|v| v.to_u32().ok().or_else(|| v.to_i32().ok().map(|i| i as u32)))
}

fn integer(value: &Value) -> Option<i64> {
    value.to_i32().map(i64::from).ok().or_else(|| value.to_u32().map(i64::from).ok())
}

/// GPT-2's byte-level alphabet: the printable character that stands for each byte.
fn byte_alphabet() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 0u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[byte as usize] = if printable {
            char::from(byte)
        } else {
            next += 1;
            char::from_u32(255 + next).unwrap_or('\0')
        };
    }
    table
}

impl TextTokenizer {
    /// Builds the tokenizer from the GGUF metadata (`tokenizer.ggml.*`); only `gpt2` (byte-level BPE)
    /// vocabularies are read.
    pub fn from_gguf(content: &Content) -> Result<Self, EngineError> {
        let kind = meta(content, "tokenizer.ggml.model")?.to_string().map_err(|e| EngineError::Model(e.to_string()))?;
        if kind != "gpt2" {
            return Err(EngineError::Model(format!(
                "tokenizer.ggml.model is {kind:?}: only byte-level BPE (\"gpt2\") vocabularies are supported"
            )));
        }
        let pre = content.metadata.get("tokenizer.ggml.pre").and_then(|v| v.to_string().ok()).cloned();
        let tokens = strings(content, "tokenizer.ggml.tokens")?;
        let merges = strings(content, "tokenizer.ggml.merges")?
            .into_iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| EngineError::Model(format!("bad merge {m:?} in tokenizer.ggml.merges")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let types: Vec<i64> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(value) => value
                .to_vec()
                .map_err(|e| EngineError::Model(format!("tokenizer.ggml.token_type: {e}")))?
                .iter()
                .map(|v| integer(v).unwrap_or(1))
                .collect(),
            None => vec![1; tokens.len()],
        };
        let vocab: tokenizers::models::bpe::Vocab =
            tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| EngineError::Model(format!("the GGUF's vocabulary and merges do not form a BPE: {e}")))?;
        let mut inner = Tokenizer::new(bpe);
        let byte_level = ByteLevel::new(false, true, true);
        // `smollm`, `starcoder` and `refact` split digits one by one before the GPT-2 splits.
        match pre.as_deref() {
            Some("smollm" | "starcoder" | "refact") | None => {
                inner.with_pre_tokenizer(Some(Sequence::new(vec![Digits::new(true).into(), byte_level.into()])));
            }
            Some("gpt2" | "default") => {
                inner.with_pre_tokenizer(Some(byte_level));
            }
            Some(other) => {
                return Err(EngineError::Model(format!(
                "tokenizer.ggml.pre is {other:?}: this build reads \"smollm\", \"starcoder\", \"refact\" and \"gpt2\" \
                     pre-tokenizers"
            )))
            }
        }
        inner.with_decoder(Some(ByteLevel::new(false, true, true)));
        let special: Vec<bool> = (0..tokens.len()).map(|i| types.get(i).copied() == Some(CONTROL)).collect();
        let added: Vec<AddedToken> =
            tokens.iter().zip(&special).filter(|(_, s)| **s).map(|(t, _)| AddedToken::from(t.clone(), true)).collect();
        inner
            .add_special_tokens(added)
            .map_err(|e| EngineError::Model(format!("the GGUF's control tokens cannot be added: {e}")))?;
        let mut plain = inner.clone();
        plain.set_encode_special_tokens(true);
        let alphabet = byte_alphabet();
        let mut reverse = std::collections::HashMap::with_capacity(256);
        for (byte, c) in alphabet.iter().enumerate() {
            reverse.insert(*c, byte as u8);
        }
        let bytes = tokens
            .iter()
            .zip(&special)
            .map(|(t, s)| {
                if *s {
                    t.as_bytes().to_vec()
                } else {
                    // A character outside the alphabet stays as its UTF-8 (some vocabularies hold raw text).
                    let mut out = Vec::with_capacity(t.len());
                    for c in t.chars() {
                        match reverse.get(&c) {
                            Some(b) => out.push(*b),
                            None => out.extend_from_slice(c.to_string().as_bytes()),
                        }
                    }
                    out
                }
            })
            .collect();
        let eos = id(content, "tokenizer.ggml.eos_token_id")
            .ok_or_else(|| EngineError::Model("the GGUF names no end-of-sequence token".into()))?;
        Ok(Self { inner, plain, bytes, special, eos, bos: id(content, "tokenizer.ggml.bos_token_id") })
    }

    /// Token ids of `text`; control tokens written in the text (`<|im_start|>`) become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, EngineError> {
        let encoding =
            self.inner.encode_fast(text, false).map_err(|e| EngineError::Model(format!("tokenizing failed: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Token ids of `text` read as plain text: `<|im_end|>` written in it is not a control token.
    pub fn encode_plain(&self, text: &str) -> Result<Vec<TokenId>, EngineError> {
        let encoding =
            self.plain.encode_fast(text, false).map_err(|e| EngineError::Model(format!("tokenizing failed: {e}")))?;
        Ok(encoding.get_ids().to_vec())
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

    pub fn is_special(&self, token: TokenId) -> bool {
        self.special.get(token as usize).copied().unwrap_or(false)
    }

    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    /// The id of a control token by its text (`<|im_end|>`).
    pub fn special_id(&self, text: &str) -> Option<TokenId> {
        self.bytes.iter().zip(&self.special).position(|(b, s)| *s && b == text.as_bytes()).map(|i| i as TokenId)
    }
}
