//! The response cache's key: what makes two requests the same request. For an HTTP provider, the
//! provider, the model and the exact request it sends (method, URL with the base URL, body bytes), built
//! by the providers' `first_request`, the code the request preview uses; for the local model, the
//! model file's identity (path, size, modification time) and the request itself. The key is kept as
//! canonical text (stored beside the answer, so a hash collision is caught) and its SHA-256 names the
//! entry.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde_json::json;
use sha2::{Digest, Sha256};

use super::super::factory::{local_model_file, Lookup, ProviderChoice};
use crate::provider::kind::ProviderKind;
use crate::provider::{Outgoing, Request};

/// The key format: a change here makes every older entry a miss.
const KEY_VERSION: u32 = 1;

/// How the local model holds an answer to its schema: a change here makes every older local entry a
/// miss (2: an object schema that lists its keys is closed to them).
const LOCAL_DECODING: u32 = 2;

/// One request's key: its canonical text and the SHA-256 of that text (lowercase hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheKey {
    pub text: String,
    pub hash: String,
}

impl CacheKey {
    fn of(text: String) -> Self {
        let digest = Sha256::digest(text.as_bytes());
        let hash = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        Self { text, hash }
    }

    /// The key of the HTTP request `outgoing` that `provider` sends for `model`. Headers are left out:
    /// they carry the API key (never part of a key) and the content type.
    pub fn http(provider: &str, model: &str, outgoing: &Outgoing) -> Self {
        Self::of(
            json!({
                "cache": KEY_VERSION,
                "provider": provider,
                "model": model,
                "method": outgoing.method.as_str(),
                "url": outgoing.url,
                "body": outgoing.body_text(),
            })
            .to_string(),
        )
    }

    /// The key of `request` sent to the local model in `file`.
    pub fn local(model: &str, file: &ModelFile, request: &Request) -> Self {
        Self::of(
            json!({
                "cache": KEY_VERSION,
                "provider": ProviderKind::Local.name(),
                "decoding": LOCAL_DECODING,
                "model": model,
                "file": {"path": file.path.to_string_lossy(), "size": file.size, "modified_ns": file.modified_ns},
                "request": request,
            })
            .to_string(),
        )
    }
}

/// A model file as the key knows it: a changed file (replaced, re-downloaded) is a different model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelFile {
    pub path: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 where the platform has none).
    pub modified_ns: u128,
}

impl ModelFile {
    /// The file at `path` as it is now; `None` when it cannot be read.
    pub fn read(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos());
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Some(Self { path, size: metadata.len(), modified_ns })
    }
}

/// How one provider's requests become keys. Built once per provider; the environment it needs (the
/// base URL variable, whether a key is set, never the key) is read then.
#[derive(Clone, Debug)]
pub enum Keys {
    Http {
        choice: ProviderChoice,
        /// The base URL variable's value when the provider was built.
        url_var: Option<String>,
        /// Whether an API key was set (the request names the key's variable when it is).
        has_key: bool,
    },
    Local {
        model: String,
        file: ModelFile,
    },
}

impl Keys {
    /// The keys of `choice`'s requests; `None` for a provider whose answers are never cached (replay)
    /// or whose model file cannot be read.
    pub fn for_choice(choice: &ProviderChoice, lookup: Lookup) -> Option<Self> {
        match choice.kind {
            ProviderKind::Replay => None,
            ProviderKind::Local => {
                let path = local_model_file(&choice.model).ok()?;
                Some(Self::Local { model: choice.model.clone(), file: ModelFile::read(&path)? })
            }
            kind => {
                let vars = kind.endpoint()?;
                Some(Self::Http {
                    choice: choice.clone(),
                    url_var: lookup(vars.url_var),
                    has_key: lookup(vars.key_var).is_some_and(|key| !key.trim().is_empty()),
                })
            }
        }
    }

    /// The key of `request`; `None` when its HTTP request cannot be built (the provider then fails
    /// the same way, uncached).
    pub fn key(&self, request: &Request) -> Option<CacheKey> {
        match self {
            Self::Local { model, file } => Some(CacheKey::local(model, file, request)),
            Self::Http { choice, url_var, has_key } => {
                let vars = choice.kind.endpoint()?;
                let lookup = |name: &str| match name {
                    _ if name == vars.url_var => url_var.clone(),
                    // Only whether a key is set shapes the request (its header names the variable).
                    _ if name == vars.key_var && *has_key => Some("set".to_string()),
                    _ => None,
                };
                let (outgoing, _) = choice.first_request(request, &lookup).ok()??;
                Some(CacheKey::http(choice.kind.name(), &request.model, &outgoing))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::replay::Pace;
    use crate::run::RunSettings;

    fn choice(kind: ProviderKind, model: &str, base_url: &str) -> ProviderChoice {
        let mut choice = ProviderChoice::new(&RunSettings::replay(), None, Pace::Instant);
        (choice.kind, choice.model, choice.base_url) = (kind, model.into(), Some(base_url.into()));
        choice
    }

    fn request(model: &str, text: &str) -> Request {
        Request { max_tokens: Some(64), temperature: Some(0.0), ..Request::new(model).system("Be brief.").user(text) }
    }

    fn key(kind: ProviderKind, base_url: &str, request: &Request) -> CacheKey {
        let choice = choice(kind, &request.model, base_url);
        Keys::for_choice(&choice, &|_| None).and_then(|keys| keys.key(request)).unwrap()
    }

    #[test]
    fn the_same_request_has_the_same_key_and_any_change_another() {
        let base = "http://127.0.0.1:9/v1";
        let first = key(ProviderKind::Openai, base, &request("m", "Define ATP."));
        assert_eq!(first, key(ProviderKind::Openai, base, &request("m", "Define ATP.")));
        assert_eq!(first.hash.len(), 64);
        assert_eq!(first.hash, CacheKey::of(first.text.clone()).hash);
        assert!(first.text.contains("http://127.0.0.1:9/v1/chat/completions"), "{}", first.text);
        assert!(first.text.contains("Define ATP."), "{}", first.text);
        let others = [
            key(ProviderKind::Openai, "http://127.0.0.1:10/v1", &request("m", "Define ATP.")),
            key(ProviderKind::Openai, base, &request("m2", "Define ATP.")),
            key(ProviderKind::Openai, base, &request("m", "Define ADP.")),
            key(ProviderKind::Openai, base, &Request { max_tokens: Some(65), ..request("m", "Define ATP.") }),
            key(ProviderKind::Vllm, base, &request("m", "Define ATP.")),
            key(ProviderKind::Ollama, "http://127.0.0.1:9", &request("m", "Define ATP.")),
        ];
        for other in &others {
            assert_ne!(other.hash, first.hash, "{}", other.text);
        }
    }

    #[test]
    fn the_base_url_variable_and_the_flag_give_the_key_of_the_url_sent() {
        let mut from_env = choice(ProviderKind::Openai, "m", "");
        from_env.base_url = None;
        let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_string());
        let keys = Keys::for_choice(&from_env, &env).unwrap();
        let flagged = key(ProviderKind::Openai, "http://127.0.0.1:9/v1", &request("m", "x"));
        assert_eq!(keys.key(&request("m", "x")), Some(flagged));
        // The key's value is never part of the key, only that one is set.
        let with_key = |value: &'static str| {
            move |name: &str| match name {
                "OPENAI_API_KEY" => Some(value.to_string()),
                _ => None,
            }
        };
        let choice = choice(ProviderKind::Openai, "m", "http://127.0.0.1:9/v1");
        let a = Keys::for_choice(&choice, &with_key("sk-one")).unwrap().key(&request("m", "x")).unwrap();
        let b = Keys::for_choice(&choice, &with_key("sk-two")).unwrap().key(&request("m", "x")).unwrap();
        assert_eq!(a, b);
        assert!(!a.text.contains("sk-one"));
    }

    #[test]
    fn replay_has_no_key_and_a_local_file_is_known_by_its_identity() {
        let replay = choice(ProviderKind::Replay, "m", "");
        assert!(Keys::for_choice(&replay, &|_| None).is_none());
        let dir = tempfile::tempdir().unwrap();
        let gguf = dir.path().join("m.gguf");
        std::fs::write(&gguf, b"GGUF one").unwrap();
        let file = ModelFile::read(&gguf).unwrap();
        let one = CacheKey::local("m.gguf", &file, &request("", "x"));
        assert_eq!(one, CacheKey::local("m.gguf", &file, &request("", "x")));
        assert_ne!(one, CacheKey::local("m.gguf", &file, &Request { seed: Some(7), ..request("", "x") }));
        std::fs::write(&gguf, b"GGUF two, longer").unwrap();
        let changed = ModelFile::read(&gguf).unwrap();
        assert_ne!(one, CacheKey::local("m.gguf", &changed, &request("", "x")));
    }
}
