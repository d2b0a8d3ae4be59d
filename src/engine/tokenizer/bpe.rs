//! Byte-level BPE (`tokenizer.ggml.model` = "gpt2"): the text split by the pre-tokenizer's regular
//! expressions (llama.cpp's for each `tokenizer.ggml.pre` name, applied in turn), each piece's bytes
//! written in GPT-2's printable alphabet and merged by the file's merge ranks. The `tokenizers` crate
//! runs the splits and the merges.

use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{SplitDelimiterBehavior, Tokenizer};

use super::TokenId;
use crate::engine::EngineError;

/// GPT-2's word split.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// Llama 3's (the case-insensitive contractions spelled out, as llama.cpp does).
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's: Llama 3's with every digit alone.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// GPT-4o's (o200k), its letter case classes written with look-aheads as llama.cpp does.
const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The `tokenizer.ggml.pre` names this build reads.
pub const PRE_TOKENIZERS: &[&str] = &[
    "default",
    "gpt-2",
    "smollm",
    "starcoder",
    "refact",
    "qwen2",
    "deepseek-r1-qwen",
    "llama-bpe",
    "llama3",
    "llama-v3",
    "smaug-bpe",
    "dbrx",
    "gpt-4o",
];

/// What a pre-tokenizer name means: its regular expressions (applied in turn), whether a piece that is
/// a whole token skips the merges (`ignore_merges`), and whether BOS is added unless the file says.
struct Pre {
    regexes: &'static [&'static str],
    ignore_merges: bool,
    add_bos: bool,
}

fn pre_of(name: &str) -> Option<Pre> {
    let pre = |regexes, ignore_merges, add_bos| Some(Pre { regexes, ignore_merges, add_bos });
    match name {
        "default" => pre(&[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"], false, false),
        "gpt-2" => pre(&[GPT2], false, false),
        "smollm" | "starcoder" | "refact" => pre(&[r"\p{N}", GPT2], false, false),
        "qwen2" | "deepseek-r1-qwen" => pre(&[QWEN2], false, false),
        "llama-bpe" | "llama3" | "llama-v3" => pre(&[LLAMA3], true, true),
        "smaug-bpe" | "dbrx" => pre(&[LLAMA3], false, false),
        "gpt-4o" => pre(&[GPT4O], false, false),
        _ => None,
    }
}

/// The pre-tokenizer `pre` names (none: llama.cpp's default), with its name; one this build does not
/// read is refused with the value and the names it reads.
fn named(pre: Option<&str>) -> Result<(&str, Pre), EngineError> {
    let name = pre.unwrap_or("default");
    pre_of(name).map(|pre| (name, pre)).ok_or_else(|| {
        EngineError::Model(format!(
            "tokenizer.ggml.pre is {name:?}: this build reads the pre-tokenizers {}",
            PRE_TOKENIZERS.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// Whether this build reads the pre-tokenizer `pre` names ([`named`]).
pub fn check_pre(pre: Option<&str>) -> Result<(), EngineError> {
    named(pre).map(|_| ())
}

/// A byte-level BPE vocabulary with its pre-tokenizer.
pub struct ByteLevelBpe {
    inner: Tokenizer,
}

impl ByteLevelBpe {
    /// The tokenizer of `tokens` and `merges` (`"a b"` each) with the pre-tokenizer named `pre` (none:
    /// llama.cpp's default); also whether this pre-tokenizer adds BOS when the file does not say.
    pub fn new(tokens: &[String], merges: &[&str], pre: Option<&str>) -> Result<(Self, bool), EngineError> {
        let (name, pre) = named(pre)?;
        let merges = merges
            .iter()
            .enumerate()
            .map(|(i, m)| {
                // llama.cpp splits at the first space after the first character.
                let at = m.char_indices().skip(1).find(|(_, c)| *c == ' ').map(|(at, _)| at);
                at.map(|at| (m[..at].to_string(), m[at + 1..].to_string())).ok_or_else(|| {
                    EngineError::Model(format!(
                        "the GGUF's `tokenizer.ggml.merges` entry {i} ({m:?}) is not two tokens"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let vocab: tokenizers::models::bpe::Vocab =
            tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .ignore_merges(pre.ignore_merges)
            .build()
            .map_err(|e| EngineError::Model(format!("the GGUF's vocabulary and merges do not form a BPE: {e}")))?;
        let mut steps: Vec<PreTokenizerWrapper> = Vec::with_capacity(pre.regexes.len() + 1);
        for regex in pre.regexes {
            let split = Split::new(SplitPattern::Regex((*regex).to_string()), SplitDelimiterBehavior::Isolated, false)
                .map_err(|e| EngineError::Model(format!("the {name:?} pre-tokenizer does not compile: {e}")))?;
            steps.push(split.into());
        }
        steps.push(ByteLevel::new(false, false, false).into());
        let mut inner = Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(Sequence::new(steps)));
        Ok((Self { inner }, pre.add_bos))
    }

    /// Appends the tokens of `text` (no special tokens in it) to `out`.
    pub fn encode(&self, text: &str, out: &mut Vec<TokenId>) -> Result<(), EngineError> {
        let encoding =
            self.inner.encode_fast(text, false).map_err(|e| EngineError::Model(format!("tokenizing failed: {e}")))?;
        out.extend_from_slice(encoding.get_ids());
        Ok(())
    }
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

/// The bytes a normal token's text stands for; a character outside the alphabet stays as its UTF-8
/// (some vocabularies hold raw text).
pub fn decode_token(text: &str) -> Vec<u8> {
    static REVERSE: std::sync::OnceLock<std::collections::HashMap<char, u8>> = std::sync::OnceLock::new();
    let reverse =
        REVERSE.get_or_init(|| byte_alphabet().iter().enumerate().map(|(byte, c)| (*c, byte as u8)).collect());
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match reverse.get(&c) {
            Some(b) => out.push(*b),
            None => out.extend_from_slice(c.to_string().as_bytes()),
        }
    }
    out
}
