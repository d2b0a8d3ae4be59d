//! The GGUFs tunebench can find, for `tunebench model list` and the workbench's model picker: the
//! cache's models folder, every manifest in Ollama's store, and the local models prompt files name;
//! each with how to name it (`ollama:qwen3:0.6b` or its path), what its header says (family,
//! parameters, quantisation, size) and whether this build runs it, or why not
//! ([`crate::engine::runs_here`]). Headers only: no weight is read.

use std::path::{Path, PathBuf};

/// One model found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FoundModel {
    /// How to name it to `--model`: `ollama:qwen3:0.6b`, or the file's path.
    pub name: String,
    /// The GGUF file (`None` when the name leads to none: a manifest or prompt at fault).
    pub path: Option<PathBuf>,
    /// Where it was found: `cache`, `ollama`, or `prompt FILE`.
    pub found_in: String,
    /// `general.architecture`.
    pub family: Option<String>,
    /// Weights counted from the tensors' shapes.
    pub parameters: Option<u64>,
    /// The file type (`Q4_K_M`), else the tensor type holding the most weights.
    pub quantisation: Option<String>,
    /// Size on disk.
    pub bytes: Option<u64>,
    /// Whether this build runs it.
    pub runs_here: bool,
    /// Why not, when it does not (or why it could not be read).
    pub why_not: Option<String>,
}

impl FoundModel {
    fn at(name: String, path: PathBuf, found_in: String) -> Self {
        let mut found = Self::failed(name, found_in, String::new());
        found.path = Some(path.clone());
        match describe(&path) {
            Ok(described) => {
                found.family = described.family;
                found.parameters = Some(described.parameters);
                found.quantisation = Some(described.quantisation);
                found.bytes = Some(described.bytes);
                found.runs_here = described.why_not.is_none();
                found.why_not = described.why_not;
            }
            Err(why) => found.why_not = Some(why),
        }
        found
    }

    fn failed(name: String, found_in: String, why: String) -> Self {
        Self {
            name,
            path: None,
            found_in,
            family: None,
            parameters: None,
            quantisation: None,
            bytes: None,
            runs_here: false,
            why_not: Some(why),
        }
    }

    /// "runs here", or why not.
    pub fn verdict(&self) -> &str {
        match &self.why_not {
            None => "runs here",
            Some(why) => why,
        }
    }

    /// The parameters as model names write them (`0.6B`), or `?`.
    pub fn parameters_shown(&self) -> String {
        self.parameters.map_or_else(|| "?".into(), shown_parameters)
    }
}

#[cfg(feature = "local")]
fn describe(path: &Path) -> Result<crate::engine::runs_here::Described, String> {
    crate::engine::runs_here::describe(path).map_err(|e| e.to_string())
}

#[cfg(not(feature = "local"))]
fn describe(path: &Path) -> Result<Described, String> {
    Err(format!("{}: this build has no local model (built without the `local` feature)", path.display()))
}

#[cfg(not(feature = "local"))]
struct Described {
    family: Option<String>,
    parameters: u64,
    quantisation: String,
    bytes: u64,
    why_not: Option<String>,
}

/// A parameter count as model names write it: `0.6B`, `1.7B`, `8B`, `270M`, `41K`.
pub fn shown_parameters(n: u64) -> String {
    let trimmed = |value: f64, unit: &str| {
        let text = format!("{value:.1}");
        format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
    };
    match n {
        n if n >= 500_000_000 => trimmed(n as f64 / 1e9, "B"),
        n if n >= 1_000_000 => format!("{}M", (n as f64 / 1e6).round()),
        n if n >= 1_000 => format!("{}K", (n as f64 / 1e3).round()),
        n => n.to_string(),
    }
}

/// The models found: the cache's models folder, Ollama's store, then the local models `prompts` name
/// (a model found twice is listed once, where it was found first).
pub fn find_models(prompts: &[PathBuf]) -> Vec<FoundModel> {
    let mut found = Vec::new();
    if let Some(cache) = crate::provider::cache_dir::cache_dir() {
        found.extend(in_folder(&cache.join("models")));
    }
    #[cfg(feature = "local")]
    if let Some(store) = crate::provider::local::ollama_store::store_dir() {
        found.extend(in_ollama_store(&store));
    }
    for prompt in prompts {
        found.extend(named_by_prompt(prompt));
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|model| {
        seen.insert(model.path.clone().map_or_else(|| model.name.clone(), |p| p.display().to_string()))
    });
    found
}

/// The `.gguf` files in `folder` (not below it), sorted by name.
fn in_folder(folder: &Path) -> Vec<FoundModel> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("gguf")))
        .collect();
    files.sort();
    files.into_iter().map(|path| FoundModel::at(cache_name(&path), path, "cache".into())).collect()
}

/// Whether `model` names a model the local provider runs: a `.gguf` path, `ollama:NAME[:TAG]`, or the
/// name of a model tunebench fetches (`smollm2`, `gemma-3-270m`).
pub fn names_a_local_model(model: &str) -> bool {
    #[cfg(feature = "local")]
    if crate::provider::local::fetch::known(model).is_some() {
        return true;
    }
    model.to_ascii_lowercase().ends_with(".gguf") || model.starts_with("ollama:")
}

/// How to name a file of the cache's models folder: the short name of the model tunebench fetched into
/// it (`gemma-3-270m`), else its path.
fn cache_name(path: &Path) -> String {
    #[cfg(feature = "local")]
    {
        let file_name = path.file_name().and_then(|name| name.to_str());
        let known = crate::provider::local::fetch::MODELS.iter().find(|model| Some(model.file_name) == file_name);
        if let Some(known) = known {
            return known.name().to_string();
        }
    }
    path.display().to_string()
}

/// Every manifest of Ollama's store at `store`.
#[cfg(feature = "local")]
pub fn in_ollama_store(store: &Path) -> Vec<FoundModel> {
    use crate::provider::local::ollama_store;
    ollama_store::list(store)
        .into_iter()
        .map(|(name, manifest)| match ollama_store::blob_of(store, &manifest) {
            Ok(blob) => FoundModel::at(name.shown(), blob, "ollama".into()),
            Err(why) => FoundModel::failed(name.shown(), "ollama".into(), why),
        })
        .collect()
}

/// The local model the prompt file at `prompt` names in its `[provider]` (none when it names another
/// provider, or the default model, which the cache lists).
fn named_by_prompt(prompt: &Path) -> Option<FoundModel> {
    let found_in = format!("prompt {}", prompt.display());
    let file = match crate::prompt::file::PromptFile::load(prompt) {
        Ok(file) => file,
        Err(error) => return Some(FoundModel::failed(prompt.display().to_string(), found_in, error.to_string())),
    };
    let model = file.provider.model.clone().unwrap_or_default();
    let local = file.provider.name.as_deref() == Some("local")
        || model.to_ascii_lowercase().ends_with(".gguf")
        || (file.provider.name.is_none() && model.starts_with("ollama:"));
    if !local || model.is_empty() {
        return None;
    }
    Some(match super::factory::local_model_file(&model) {
        Ok(path) => FoundModel::at(model, path, found_in),
        Err(error) => FoundModel::failed(model, found_in, error.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_read_as_model_names_write_them() {
        let shown = [751_632_384, 1_720_000_000, 8_030_000_000, 268_098_176, 40_960, 999].map(shown_parameters);
        assert_eq!(shown, ["0.8B", "1.7B", "8B", "268M", "41K", "999"]);
    }

    /// A model tunebench fetched is listed by the name `--model` takes; any other file by its path.
    #[cfg(feature = "local")]
    #[test]
    fn the_cache_lists_a_fetched_model_by_its_short_name() {
        let dir = tempfile::tempdir().unwrap();
        let gemma = &crate::provider::local::fetch::MODELS[1];
        for name in [gemma.file_name, "mine.gguf"] {
            std::fs::write(dir.path().join(name), b"not a gguf").unwrap();
        }
        let names: Vec<String> = in_folder(dir.path()).into_iter().map(|found| found.name).collect();
        assert_eq!(names, [gemma.name().to_string(), dir.path().join("mine.gguf").display().to_string()]);
        assert_eq!(gemma.name(), "gemma-3-270m");
        assert!(
            names.iter().all(|name| names_a_local_model(name)),
            "{names:?}: each name the list gives is taken back"
        );
        assert!(!names_a_local_model("gemma"), "not a known name, a path or ollama:NAME");
    }
}
