//! The tokenizer on real vocabularies against llama.cpp's own test vectors (`tests/fixtures/families/
//! vocab/`: llama.cpp's `ggml-vocab-*.gguf.inp/.out`): Qwen2/2.5/3 (`qwen2`), Llama 3 (`llama-bpe`) and
//! Llama 2 style SentencePiece (`llama-spm`). The vocabulary GGUFs are not committed: they are taken
//! out of llama-cpp-python's source package by `tests/fixtures/families/vocab.sh` into the cache
//! directory, as the model tests fetch the model. Offline, the test says so and what to run, and passes;
//! with `TUNEBENCH_REQUIRE_VOCAB=1` (CI) it fails instead.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::tokenizer::tokenizer_of;

/// The folder holding the vocabulary GGUFs, fetched once per test binary; `None` when they cannot be had.
fn vocab_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tunebench::provider::local::fetch::cache_dir().expect("a cache directory").join("vocab");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families/vocab.sh");
        let status = std::process::Command::new("bash").arg(&script).arg(&dir).status();
        match status {
            Ok(s) if s.success() => Some(dir),
            other => {
                let message = format!(
                    "the real-vocabulary tokenizer tests need llama.cpp's vocabulary files ({other:?}); \
                     run `bash {} {}` once online",
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
    })
    .as_deref()
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
