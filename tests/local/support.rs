//! The models the tests run, each loaded once per test binary: the default model (fetched first when
//! the cache has none, as `tunebench model fetch` does: same progress on stderr, same checks, one
//! fetch at a time across test binaries through the fetch's lock file), the tiny random-weight qwen3
//! fixture, and the real Gemma 3 270M (fetched by name; skipped with a message when it cannot be had,
//! unless `TUNEBENCH_REQUIRE_MODELS=1`, which CI sets); helpers to run requests on them, and to write a
//! fixture again with one metadata key changed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use tunebench::provider::local::{fetch, Engine, Generated, Local};
use tunebench::provider::{Event, Request, StructuredMode};

/// A model the shared checks (streaming, constrained decoding, token confidence, truncation) run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// The default model, SmolLM2-135M-Instruct (llama family, Q4_1).
    SmolLM2,
    /// `tests/fixtures/families/qwen3-Q4_K_M.gguf`: random weights, the qwen3 family, a K-quant mix.
    TinyQwen3,
    /// The real Gemma 3 270M, Q4_K_M (`tunebench model fetch gemma-3-270m`).
    Gemma3,
}

/// The default model, loaded once (the tests share it and take turns).
pub fn local() -> &'static Local {
    loaded(Model::SmolLM2).expect("the default model is always there")
}

/// `model`, loaded once per test binary; `None` when it cannot be had (the real Gemma offline, the
/// test then skipped with a message; a failure with `TUNEBENCH_REQUIRE_MODELS=1`).
pub fn loaded(model: Model) -> Option<&'static Local> {
    static MODELS: [OnceLock<Option<Local>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    MODELS[model as usize]
        .get_or_init(|| {
            let path = file_of(model)?;
            Some(Local::open(Some(&path)).unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display())))
        })
        .as_ref()
}

/// The file of `model`, fetched first when it is one fetched by name and the cache has none.
pub fn file_of(model: Model) -> Option<PathBuf> {
    match model {
        Model::SmolLM2 => Some(model_file()),
        Model::TinyQwen3 => {
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families/qwen3-Q4_K_M.gguf"))
        }
        Model::Gemma3 => gemma3_file(),
    }
}

/// The default model's file, fetched first when the cache has none (pip's and the extraction's
/// progress on stderr, the size and SHA-256 checked, as `tunebench model fetch`).
pub fn model_file() -> PathBuf {
    if let Ok(path) = fetch::installed_model() {
        return path;
    }
    let fetched = fetch::fetch(&mut tunebench::cli::model::show_progress)
        .unwrap_or_else(|e| panic!("the local-model tests need the real model: {e}"));
    if !fetched.already_present {
        eprintln!("fetched {} ({} bytes, sha256 {})", fetched.path.display(), fetched.bytes, fetched.sha256);
    }
    fetched.path
}

/// The real Gemma 3 270M's file, fetched as `tunebench model fetch gemma-3-270m` when the cache has
/// none; `None` (and a SKIPPED line) when that fails, unless `TUNEBENCH_REQUIRE_MODELS` is set.
pub fn gemma3_file() -> Option<PathBuf> {
    static FILE: OnceLock<Option<PathBuf>> = OnceLock::new();
    FILE.get_or_init(|| {
        let gemma = fetch::known("gemma-3-270m").expect("a known model");
        if let Ok(path) = fetch::installed(gemma) {
            return Some(path);
        }
        match fetch::fetch_model(gemma, &mut |p| tunebench::cli::model::show_progress_of(gemma, p), true) {
            Ok(fetched) => Some(fetched.path),
            Err(error) => {
                let message = format!(
                    "the real Gemma 3 tests need gemma-3-270m ({error}); run `tunebench model fetch gemma-3-270m` once online"
                );
                if std::env::var_os("TUNEBENCH_REQUIRE_MODELS").is_some() {
                    panic!("{message}");
                }
                eprintln!("SKIPPED: {message}");
                None
            }
        }
    })
    .clone()
}

/// Runs `request` to the end on the default model; returns what was generated and every event.
pub fn generate(request: &Request) -> (Generated, Vec<Event>) {
    generate_with(local(), request)
}

/// [`generate`] on `model`.
pub fn generate_with(model: &Local, request: &Request) -> (Generated, Vec<Event>) {
    model.with_engine(|engine: &mut Engine| run(engine, request))
}

/// The same on `threads` threads (set back to the default after).
pub fn generate_on(threads: usize, request: &Request) -> (Generated, Vec<Event>) {
    generate_on_with(local(), threads, request)
}

/// [`generate_on`] on `model`.
pub fn generate_on_with(model: &Local, threads: usize, request: &Request) -> (Generated, Vec<Event>) {
    model.with_engine(|engine: &mut Engine| {
        let default = engine.threads();
        engine.set_threads(threads).unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        let out = run(engine, request);
        engine.set_threads(default).unwrap_or_else(|e| panic!("{default} threads: {e}"));
        out
    })
}

fn run(engine: &mut Engine, request: &Request) -> (Generated, Vec<Event>) {
    {
        let mut events = Vec::new();
        let generated = engine
            .generate(request, &mut |event| {
                events.push(event);
                true
            })
            .unwrap_or_else(|e| panic!("generation failed: {e}"));
        (generated, events)
    }
}

/// The JSON Schema of the sample jsonl prompt `agent-kg-extract`: a `oneOf` union told apart by `type`.
pub fn union_schema() -> Value {
    serde_json::json!({"oneOf": [
        {"type": "object",
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}, "definition": {"type": "string"}},
         "required": ["type", "entity", "definition"]},
        {"type": "object",
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"},
                        "predicate": {"type": "string"}, "object": {"type": "string"},
                        "object-entity": {"type": "boolean"}},
         "required": ["type", "subject", "predicate", "object", "object-entity"]}
    ]})
}

/// A jsonl extraction request, constrained line by line.
pub fn jsonl_request(max_tokens: u32) -> Request {
    let mut request = Request::new("")
        .system("You extract facts as JSON Lines: one compact JSON object per line.")
        .user(
            "Extract definitions and relationships from: DNA is the molecule that carries genetic instructions. \
             RNA polymerase copies DNA into messenger RNA. Ribosomes translate mRNA into proteins.",
        )
        .max_tokens(max_tokens)
        .structured(StructuredMode::Constrained, Some(union_schema()));
    request.jsonl = true;
    request
}

/// One test per [`Model`] of the check `$check(model, local)`, in a module named after it
/// (`$check::smollm2`, `$check::tiny_qwen3`, `$check::gemma3`); a model that cannot be had is skipped
/// as [`loaded`] says.
macro_rules! on_every_model {
    ($check:ident) => {
        $crate::support::on_models!($check; smollm2 => SmolLM2, tiny_qwen3 => TinyQwen3, gemma3 => Gemma3);
    };
}

/// [`on_every_model`] on the models listed (`test_name => Model`).
macro_rules! on_models {
    ($check:ident; $($test:ident => $model:ident),+) => {
        mod $check {
            use super::super::support::{loaded, Model};

            fn on(model: Model) {
                if let Some(local) = loaded(model) {
                    super::$check(model, local);
                }
            }

            $(
                #[test]
                fn $test() {
                    on(Model::$model);
                }
            )+
        }
    };
}
pub(crate) use {on_every_model, on_models};

/// The family fixture `source` written again at `out` with metadata `key` set to `value` (its tensors
/// as they are): a file that differs from a real one in that key alone.
pub fn gguf_with(source: &str, key: &str, value: candle_core::quantized::gguf_file::Value, out: &Path) {
    use candle_core::quantized::gguf_file::{self, Content};
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families").join(source);
    let mut reader = std::fs::File::open(&source).unwrap();
    let content = Content::read(&mut reader).unwrap();
    let mut metadata: Vec<(String, _)> =
        content.metadata.iter().filter(|(k, _)| *k != key).map(|(k, v)| (k.clone(), v.clone())).collect();
    metadata.push((key.to_string(), value));
    let tensors: Vec<(String, _)> = content
        .tensor_infos
        .keys()
        .map(|name| (name.clone(), content.tensor(&mut reader, name, &candle_core::Device::Cpu).unwrap()))
        .collect();
    let metadata: Vec<(&str, &_)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &_)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    gguf_file::write(&mut std::fs::File::create(out).unwrap(), &metadata, &tensors).unwrap();
}
