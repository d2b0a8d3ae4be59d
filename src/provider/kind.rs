//! The providers a run can use, in one list: each one's name, the environment variables its own tools
//! read (base URL and key), its default base URL, how many requests it answers at once, and whether
//! it runs on this machine. The CLI, the workbench, batches and the benches all ask here.

use serde::{Deserialize, Serialize};

use super::endpoint::Vars;
use super::{anthropic, ollama, openai};

/// A provider, by the name users give it (`--provider`, `[provider] name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible server (OpenAI, llama.cpp, LM Studio, ...).
    Openai,
    /// A vLLM server (OpenAI-compatible, with its own variables and line grammars).
    Vllm,
    /// An Ollama server.
    Ollama,
    /// Anthropic's Messages API.
    Anthropic,
    /// The embedded model, run in this process.
    Local,
    /// A recorded transcript played back.
    Replay,
}

/// How many runs of a batch go at once, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    pub runs: usize,
    pub reason: &'static str,
}

pub const OPENAI: Vars = Vars {
    provider: "openai",
    url_var: "OPENAI_BASE_URL",
    key_var: "OPENAI_API_KEY",
    default_url: openai::DEFAULT_BASE_URL,
    default_hint: "the default; set OPENAI_BASE_URL or --base-url",
    key_required: Some(", or --base-url for a local server"),
};

pub const VLLM: Vars = Vars {
    provider: "vllm",
    url_var: "VLLM_BASE_URL",
    key_var: "VLLM_API_KEY",
    default_url: openai::VLLM_BASE_URL,
    default_hint: "the default; set VLLM_BASE_URL or --base-url",
    key_required: None,
};

pub const ANTHROPIC: Vars = Vars {
    provider: "anthropic",
    url_var: "ANTHROPIC_BASE_URL",
    key_var: "ANTHROPIC_API_KEY",
    default_url: anthropic::DEFAULT_BASE_URL,
    default_hint: "the default; set ANTHROPIC_BASE_URL or --base-url",
    key_required: Some(""),
};

pub const OLLAMA: Vars = Vars {
    provider: "ollama",
    url_var: "OLLAMA_HOST",
    key_var: "OLLAMA_API_KEY",
    default_url: ollama::DEFAULT_HOST,
    default_hint: "the default; set OLLAMA_HOST or --base-url",
    key_required: None,
};

impl ProviderKind {
    /// Every provider, in the order they are offered.
    pub const ALL: [ProviderKind; 6] =
        [Self::Openai, Self::Vllm, Self::Ollama, Self::Anthropic, Self::Local, Self::Replay];

    /// The provider of a run that names none and gives no base URL: the embedded model when this build
    /// has it (with a base URL, `openai`).
    pub const DEFAULT: ProviderKind = if cfg!(feature = "local") { Self::Local } else { Self::Openai };

    /// The name users give it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Vllm => "vllm",
            Self::Ollama => "ollama",
            Self::Anthropic => "anthropic",
            Self::Local => "local",
            Self::Replay => "replay",
        }
    }

    /// The provider named `name` (as users write it, trimmed).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name.trim())
    }

    /// `openai, vllm, ollama, anthropic, local, replay`: for messages that list the choices.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// Where an HTTP provider is found: its variables and default URL (`None` for local and replay).
    pub fn endpoint(self) -> Option<&'static Vars> {
        match self {
            Self::Openai => Some(&OPENAI),
            Self::Vllm => Some(&VLLM),
            Self::Ollama => Some(&OLLAMA),
            Self::Anthropic => Some(&ANTHROPIC),
            Self::Local | Self::Replay => None,
        }
    }

    /// Whether a run must name a model (the server serves many and has no default).
    pub fn needs_model(self) -> bool {
        matches!(self, Self::Ollama | Self::Anthropic)
    }

    /// Whether it answers on this machine: the embedded model, or a server whose base URL (`base_url`,
    /// else the provider's variable read through `lookup`, else its default) is a loopback address.
    pub fn on_this_machine(self, base_url: Option<&str>, lookup: impl Fn(&str) -> Option<String>) -> bool {
        let Some(vars) = self.endpoint() else { return self == Self::Local };
        let url = base_url
            .map(str::to_string)
            .or_else(|| lookup(vars.url_var).filter(|v| !v.trim().is_empty()))
            .unwrap_or_else(|| vars.default_url.to_string());
        let url = if self == Self::Ollama { ollama::normalize_host(&url) } else { url };
        reqwest::Url::parse(url.trim())
            .is_ok_and(|url| super::http::is_loopback(&url) || url.host_str() == Some("0.0.0.0"))
    }

    /// How many runs go at once when none is given: 8 for replay, 16 for vLLM, 1 for the embedded model
    /// or a server on this machine (llama.cpp-style servers answer one request at a time, and by
    /// default cut a running stream off when the next arrives), 4 for a remote API.
    pub fn concurrency(self, base_url: Option<&str>, lookup: impl Fn(&str) -> Option<String>) -> Concurrency {
        match self {
            Self::Replay => Concurrency { runs: 8, reason: "replayed transcripts" },
            Self::Vllm => Concurrency { runs: 16, reason: "vLLM batches concurrent requests on the GPU" },
            Self::Local => Concurrency { runs: 1, reason: "the embedded model generates one answer at a time" },
            _ if self.on_this_machine(base_url, lookup) => Concurrency {
                runs: 1,
                reason: "a server on this machine answers one request at a time (llama.cpp cuts a running stream off)",
            },
            _ => Concurrency { runs: 4, reason: "a remote API serves several requests at once" },
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn names_round_trip_and_every_provider_is_listed_once() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.name()), Some(kind));
            assert_eq!(serde_json::to_value(kind).ok(), Some(serde_json::json!(kind.name())));
        }
        assert_eq!(ProviderKind::names(), "openai, vllm, ollama, anthropic, local, replay");
        assert_eq!(ProviderKind::parse("gpt"), None);
    }

    #[test]
    fn concurrency_follows_where_the_server_is() {
        let none = env(&[]);
        assert_eq!(ProviderKind::Openai.concurrency(None, &none).runs, 4);
        assert_eq!(ProviderKind::Openai.concurrency(Some("http://127.0.0.1:8080/v1"), &none).runs, 1);
        assert_eq!(ProviderKind::Openai.concurrency(Some("http://[::1]:8080/v1"), &none).runs, 1);
        assert_eq!(ProviderKind::Openai.concurrency(Some("http://0.0.0.0:8080/v1"), &none).runs, 1);
        let local_env = env(&[("OPENAI_BASE_URL", "http://localhost:1234/v1")]);
        assert_eq!(ProviderKind::Openai.concurrency(None, &local_env).runs, 1);
        assert_eq!(ProviderKind::Ollama.concurrency(None, &none).runs, 1, "Ollama's default is this machine");
        assert_eq!(ProviderKind::Ollama.concurrency(None, env(&[("OLLAMA_HOST", "gpu-box")])).runs, 4);
        assert_eq!(ProviderKind::Anthropic.concurrency(None, &none).runs, 4);
        assert_eq!(ProviderKind::Vllm.concurrency(None, &none).runs, 16);
        assert_eq!(ProviderKind::Local.concurrency(None, &none).runs, 1);
        assert_eq!(ProviderKind::Replay.concurrency(None, &none).runs, 8);
    }
}
