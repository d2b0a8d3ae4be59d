//! Models in Ollama's store, read in place: `ollama:NAME[:TAG]` names
//! `manifests/<host>/<namespace>/<name>/<tag>` under `$OLLAMA_MODELS` (else `~/.ollama/models`), a
//! JSON manifest whose layer of media type `application/vnd.ollama.image.model` has the digest
//! `sha256:<64 hex>` of the GGUF at `blobs/sha256-<64 hex>`. Names and digests are hostile: each part
//! is held to Ollama's characters before it becomes a path, and every error names the bad value and
//! the manifest file.

use std::path::{Path, PathBuf};

/// The prefix of a model in Ollama's store: `ollama:qwen3:0.6b`.
pub const PREFIX: &str = "ollama:";
/// The variable that moves Ollama's store.
pub const STORE_VAR: &str = "OLLAMA_MODELS";
/// The registry and namespace a short name is in.
pub const DEFAULT_HOST: &str = "registry.ollama.ai";
pub const DEFAULT_NAMESPACE: &str = "library";
pub const DEFAULT_TAG: &str = "latest";
/// The media type of the layer that holds the GGUF.
const MODEL_LAYER: &str = "application/vnd.ollama.image.model";
/// A manifest is a few hundred bytes; one past this is not a manifest.
const MANIFEST: crate::files::Limit = crate::files::Limit { kind: "an Ollama manifest", bytes: 1 << 20 };
/// Manifests listed at most (a store is a few dozen).
const MOST_LISTED: usize = 10_000;

/// Ollama's store: `$OLLAMA_MODELS` if set and not empty, else `~/.ollama/models` (`None` without a home).
pub fn store_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(STORE_VAR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    directories::BaseDirs::new().map(|dirs| dirs.home_dir().join(".ollama").join("models"))
}

/// A model's name in Ollama's store, each part checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OllamaName {
    pub host: String,
    pub namespace: String,
    pub model: String,
    pub tag: String,
}

impl OllamaName {
    /// Reads `[host/][namespace/]model[:tag]` (after `ollama:`); an error names the value and the part
    /// at fault.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: String| format!("ollama:{text} is not a model name in Ollama's store: {why}");
        let (path, tag) = match text.rsplit_once(':') {
            Some((path, tag)) if !tag.contains('/') => (path, tag),
            _ => (text, DEFAULT_TAG),
        };
        let parts: Vec<&str> = path.split('/').collect();
        let (host, namespace, model) = match parts.as_slice() {
            [model] => (DEFAULT_HOST, DEFAULT_NAMESPACE, *model),
            [namespace, model] => (DEFAULT_HOST, *namespace, *model),
            [host, namespace, model] => (*host, *namespace, *model),
            _ => return Err(bad("write NAME, NAME:TAG, NAMESPACE/NAME:TAG or HOST/NAMESPACE/NAME:TAG".into())),
        };
        for (what, part) in [("host", host), ("namespace", namespace), ("name", model), ("tag", tag)] {
            check_part(part).map_err(|why| bad(format!("its {what} {part:?} {why}")))?;
        }
        Ok(Self { host: host.into(), namespace: namespace.into(), model: model.into(), tag: tag.into() })
    }

    /// As `model list` and the picker show it: `qwen3:0.6b`, `user/model:tag`, `hf.co/user/model:tag`.
    pub fn shown(&self) -> String {
        let Self { host, namespace, model, tag } = self;
        match (host.as_str(), namespace.as_str()) {
            (DEFAULT_HOST, DEFAULT_NAMESPACE) => format!("{PREFIX}{model}:{tag}"),
            (DEFAULT_HOST, _) => format!("{PREFIX}{namespace}/{model}:{tag}"),
            _ => format!("{PREFIX}{host}/{namespace}/{model}:{tag}"),
        }
    }

    /// The manifest's path inside `store`.
    pub fn manifest(&self, store: &Path) -> PathBuf {
        store.join("manifests").join(&self.host).join(&self.namespace).join(&self.model).join(&self.tag)
    }
}

/// One part of a name: Ollama's characters (letters, digits, `_`, `-`, `.`), starting with a letter,
/// digit or `_`, at most 128 of them, never `..`.
fn check_part(part: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if part.is_empty() {
        return Err("is empty".into());
    }
    if part.len() > 128 {
        return Err("is longer than 128 characters".into());
    }
    if let Some(c) = part.chars().find(|c| !allowed(*c)) {
        return Err(format!("holds {c:?}: a name holds letters, digits, '_', '-' and '.'"));
    }
    if part.contains("..") || !part.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return Err("must start with a letter, a digit or '_' and hold no \"..\"".into());
    }
    Ok(())
}

/// The GGUF `ollama:NAME[:TAG]` names in `store` (`name`: what follows `ollama:`), checked to be a
/// regular file; a name not in the store lists a few that are.
pub fn resolve(store: &Path, name: &str) -> Result<PathBuf, String> {
    let parsed = OllamaName::parse(name)?;
    let manifest = parsed.manifest(store);
    if !manifest.is_file() {
        let there = list(store);
        let mut shown: Vec<String> = there.iter().take(5).map(|(name, _)| name.shown()).collect();
        if there.len() > shown.len() {
            shown.push(format!("and {} more", there.len() - shown.len()));
        }
        let listed =
            if shown.is_empty() { "it holds no models".to_string() } else { format!("it holds {}", shown.join(", ")) };
        return Err(format!(
            "ollama:{name} is not in Ollama's store at {} (no manifest {}): {listed}; `ollama pull` it, or set {STORE_VAR}",
            store.display(),
            manifest.display()
        ));
    }
    blob_of(store, &manifest)
}

/// The model blob the manifest at `manifest` names, checked to be a regular file in `store/blobs`.
pub fn blob_of(store: &Path, manifest: &Path) -> Result<PathBuf, String> {
    #[derive(serde::Deserialize)]
    struct Manifest {
        #[serde(default)]
        layers: Vec<Layer>,
    }
    #[derive(serde::Deserialize)]
    struct Layer {
        #[serde(rename = "mediaType", default)]
        media_type: String,
        #[serde(default)]
        digest: String,
    }
    let shown = manifest.display();
    let text = crate::files::read_text(manifest, MANIFEST).map_err(|e| e.to_string())?;
    let read: Manifest =
        serde_json::from_str(&text).map_err(|e| format!("the Ollama manifest {shown} is not a manifest: {e}"))?;
    let layer = read.layers.iter().find(|l| l.media_type == MODEL_LAYER).ok_or_else(|| {
        format!("the Ollama manifest {shown} has no layer of mediaType {MODEL_LAYER:?}: it holds no GGUF model")
    })?;
    let hex = layer
        .digest
        .strip_prefix("sha256:")
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .ok_or_else(|| {
            format!(
                "the Ollama manifest {shown}: the model layer's digest {:?} is not \"sha256:\" and 64 lowercase hex digits",
                layer.digest
            )
        })?;
    let blob = store.join("blobs").join(format!("sha256-{hex}"));
    match std::fs::metadata(&blob) {
        Ok(metadata) if metadata.is_file() => Ok(blob),
        Ok(_) => Err(format!("the Ollama manifest {shown} names the blob {}, which is not a file", blob.display())),
        Err(e) => {
            Err(format!("the Ollama manifest {shown} names the blob {}, which cannot be read: {e}", blob.display()))
        }
    }
}

/// Every manifest in `store` (`manifests/<host>/<namespace>/<name>/<tag>`, each part a name Ollama
/// could have written; anything else is passed over), sorted by name, with its manifest's path.
pub fn list(store: &Path) -> Vec<(OllamaName, PathBuf)> {
    let mut found = Vec::new();
    let dirs = |dir: &Path, want_dirs: bool| -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| if want_dirs { t.is_dir() } else { t.is_file() }))
            .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
            .filter(|(name, _)| check_part(name).is_ok())
            .collect()
    };
    'all: for (host, host_dir) in dirs(&store.join("manifests"), true) {
        for (namespace, namespace_dir) in dirs(&host_dir, true) {
            for (model, model_dir) in dirs(&namespace_dir, true) {
                for (tag, manifest) in dirs(&model_dir, false) {
                    let name =
                        OllamaName { host: host.clone(), namespace: namespace.clone(), model: model.clone(), tag };
                    found.push((name, manifest));
                    if found.len() >= MOST_LISTED {
                        break 'all;
                    }
                }
            }
        }
    }
    found.sort_by_key(|(name, _)| name.shown());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(manifest: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("manifests/registry.ollama.ai/library/tiny");
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("q4"), manifest).unwrap();
        std::fs::create_dir_all(dir.path().join("blobs")).unwrap();
        let path = dir.path().to_path_buf();
        (dir, path)
    }

    fn manifest(digest: &str) -> String {
        format!(
            r#"{{"schemaVersion":2,"layers":[{{"mediaType":"application/vnd.ollama.image.license","digest":"sha256:{}"}},{{"mediaType":"application/vnd.ollama.image.model","digest":"{digest}","size":4}}]}}"#,
            "0".repeat(64)
        )
    }

    #[test]
    fn names_take_the_default_registry_namespace_and_tag() {
        let name = OllamaName::parse("qwen3").unwrap();
        assert_eq!(
            (name.host.as_str(), name.namespace.as_str(), name.tag.as_str()),
            (DEFAULT_HOST, DEFAULT_NAMESPACE, "latest")
        );
        assert_eq!(name.shown(), "ollama:qwen3:latest");
        let name = OllamaName::parse("hf.co/unsloth/Qwen3-0.6B-GGUF:Q4_K_M").unwrap();
        assert_eq!(name.manifest(Path::new("/s")), Path::new("/s/manifests/hf.co/unsloth/Qwen3-0.6B-GGUF/Q4_K_M"));
        assert_eq!(OllamaName::parse("user/m:1.5b").unwrap().shown(), "ollama:user/m:1.5b");
    }

    #[test]
    fn hostile_names_never_become_paths() {
        for bad in [
            "..",
            "../x",
            "a/../b:c",
            "x:..",
            "/etc/passwd",
            "a//b",
            "",
            "x:",
            "a/b/c/d",
            "m:t/../..",
            "q\\x",
            ".hidden",
        ] {
            let error = OllamaName::parse(bad).unwrap_err();
            assert!(error.contains(&format!("ollama:{bad} ")), "{bad:?}: {error}");
        }
    }

    #[test]
    fn a_manifest_leads_to_its_model_blob() {
        let hex = "ab".repeat(32);
        let (_dir, store) = store_with(&manifest(&format!("sha256:{hex}")));
        std::fs::write(store.join(format!("blobs/sha256-{hex}")), b"GGUF").unwrap();
        assert_eq!(resolve(&store, "tiny:q4").unwrap(), store.join(format!("blobs/sha256-{hex}")));
        let listed: Vec<String> = list(&store).iter().map(|(name, _)| name.shown()).collect();
        assert_eq!(listed, ["ollama:tiny:q4"]);
    }

    #[test]
    fn a_bad_digest_is_refused_naming_it_and_the_manifest() {
        for digest in
            ["sha256:../../x", "sha256:ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB", "md5:00", ""]
        {
            let (_dir, store) = store_with(&manifest(digest));
            let error = resolve(&store, "tiny:q4").unwrap_err();
            assert!(error.contains(&format!("{digest:?}")) && error.contains("library/tiny/q4"), "{error}");
        }
    }

    #[test]
    fn a_model_not_in_the_store_lists_what_is() {
        let hex = "cd".repeat(32);
        let (_dir, store) = store_with(&manifest(&format!("sha256:{hex}")));
        let error = resolve(&store, "qwen3:8b").unwrap_err();
        assert!(
            error.contains("ollama:qwen3:8b is not in Ollama's store") && error.contains("ollama:tiny:q4"),
            "{error}"
        );
        let error = resolve(&store, "tiny:q4").unwrap_err();
        assert!(error.contains(&format!("sha256-{hex}")) && error.contains("cannot be read"), "{error}");
    }
}
