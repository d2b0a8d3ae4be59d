//! Whether this build runs a GGUF, and what it is, from its header alone (no weight is read): its
//! family, parameter count, quantisation and size, and "runs here" or the reason it does not (an
//! architecture this build lacks, a key or tensor its family needs, a vocabulary or chat template the
//! engine cannot read, weights too large for the memory available). `tunebench model list`, `model
//! info` and the workbench's model picker all ask [`describe`].

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::GgmlDType;

use super::EngineError;

/// A GGUF as its header describes it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Described {
    /// `general.architecture` (`None` when the file names none).
    pub family: Option<String>,
    /// Weights in all, counted from the tensors' shapes.
    pub parameters: u64,
    /// The file type (`Q4_K_M`), else the tensor type holding the most weights.
    pub quantisation: String,
    /// Size on disk.
    pub bytes: u64,
    /// `None`: this build runs it; else why not.
    pub why_not: Option<String>,
}

impl Described {
    /// "runs here", or the reason it does not.
    pub fn verdict(&self) -> &str {
        self.why_not.as_deref().unwrap_or("runs here")
    }
}

/// Reads the header of the GGUF at `path` and describes it; an error when the file cannot be read as
/// a GGUF at all (the message names the file and what is wrong).
pub fn describe(path: &Path) -> Result<Described, EngineError> {
    let (content, reader) = super::gguf::open(path)?;
    let bytes = reader.get_ref().metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Described {
        family: content.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned(),
        parameters: parameters(&content),
        quantisation: quantisation(&content),
        bytes,
        why_not: runs_here(path, &content).err().map(|e| e.to_string()),
    })
}

/// Whether this build runs the model whose header is `content` (read from `path`): its family's keys
/// and tensors, its vocabulary, its chat template, and its weights against the memory available.
/// The checks loading makes, in the same order, before any weight is read.
pub fn runs_here(path: &Path, content: &Content) -> Result<(), EngineError> {
    let plan = super::arch::Plan::of(content)?;
    let tokenizer = super::tokenizer::TextTokenizer::from_gguf(content)?;
    super::chat::ChatTemplate::of_gguf(path, content, &tokenizer)?;
    super::quant::fits_in_memory(content, &format!("this {} model", plan.config.family))
}

/// Weights in all tensors.
pub fn parameters(content: &Content) -> u64 {
    content.tensor_infos.values().map(|i| i.shape.elem_count() as u64).fold(0, u64::saturating_add)
}

/// The quantisation: `general.file_type` by llama.cpp's names (`Q4_K_M`), else (no key, or a number
/// llama.cpp does not name) the tensor type that holds the most weights (`Q8_0`).
pub fn quantisation(content: &Content) -> String {
    let file_type = content.metadata.get("general.file_type").and_then(super::gguf::unsigned);
    if let Some(name) = file_type.and_then(file_type_name) {
        return name.to_string();
    }
    let mut weights = HashMap::<String, u64>::new();
    for info in content.tensor_infos.values() {
        *weights.entry(type_name(info.ggml_dtype)).or_default() += info.shape.elem_count() as u64;
    }
    let mut types: Vec<(String, u64)> = weights.into_iter().collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    types.into_iter().next().map_or_else(|| "no tensors".to_string(), |(name, _)| name)
}

/// llama.cpp's `llama_ftype` names (`LLAMA_FTYPE_MOSTLY_Q4_K_M` is 15).
fn file_type_name(number: u64) -> Option<&'static str> {
    Some(match number {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        _ => return None,
    })
}

/// A tensor type as llama.cpp writes it (`Q4_K`, `Q8_0`, `F32`).
fn type_name(dtype: GgmlDType) -> String {
    match dtype {
        GgmlDType::Q2K => "Q2_K".into(),
        GgmlDType::Q3K => "Q3_K".into(),
        GgmlDType::Q4K => "Q4_K".into(),
        GgmlDType::Q5K => "Q5_K".into(),
        GgmlDType::Q6K => "Q6_K".into(),
        GgmlDType::Q8K => "Q8_K".into(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::gguf_file::Value;

    const FAMILIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");

    #[test]
    fn a_family_fixture_is_described_from_its_header_and_runs_here() {
        let path = Path::new(FAMILIES).join("qwen3-Q4_K_M.gguf");
        let described = describe(&path).unwrap();
        assert_eq!(described.family.as_deref(), Some("qwen3"));
        assert_eq!(described.quantisation, "Q4_K_M");
        assert_eq!(described.bytes, std::fs::metadata(&path).unwrap().len());
        assert_eq!(described.verdict(), "runs here");
        let (content, _) = super::super::gguf::open(&path).unwrap();
        assert_eq!(described.parameters, parameters(&content));
        assert!(described.parameters > 0);
    }

    #[test]
    fn without_a_file_type_the_type_holding_most_weights_is_shown() {
        let path = Path::new(FAMILIES).join("gemma3-Q8_0.gguf");
        let (mut content, _) = super::super::gguf::open(&path).unwrap();
        content.metadata.remove("general.file_type");
        assert_eq!(quantisation(&content), "Q8_0");
        content.metadata.insert("general.file_type".into(), Value::U32(15));
        assert_eq!(quantisation(&content), "Q4_K_M");
    }

    #[test]
    fn a_model_this_build_does_not_run_says_why() {
        let path = Path::new(FAMILIES).join("qwen2-F32.gguf");
        let (mut content, _) = super::super::gguf::open(&path).unwrap();
        content.metadata.insert("general.architecture".into(), Value::String("phi3".into()));
        let why = runs_here(&path, &content).unwrap_err().to_string();
        assert!(why.contains("\"phi3\"") && why.contains("qwen2, qwen3"), "{why}");
        let (mut content, _) = super::super::gguf::open(&path).unwrap();
        content.metadata.insert("tokenizer.ggml.model".into(), Value::String("bert".into()));
        let why = runs_here(&path, &content).unwrap_err().to_string();
        assert!(why.contains("\"bert\""), "{why}");
        let (mut content, _) = super::super::gguf::open(&path).unwrap();
        content.tensor_infos.remove("blk.0.attn_q.bias");
        let why = runs_here(&path, &content).unwrap_err().to_string();
        assert!(why.contains("blk.0.attn_q.bias"), "{why}");
    }
}
