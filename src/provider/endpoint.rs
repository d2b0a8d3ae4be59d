//! Where an HTTP provider sends its requests, as the provider's own tools decide it: the base URL given
//! on the command line, else the provider's environment variable, else its default (with a hint naming
//! which, for error messages), and the key from the provider's key variable.

use super::{ApiKey, ProviderError};

/// The environment variables and default of one provider.
pub struct Vars {
    pub provider: &'static str,
    pub url_var: &'static str,
    pub key_var: &'static str,
    pub default_url: &'static str,
    /// The hint when the default is used, e.g. "the default; set OPENAI_BASE_URL or --base-url".
    pub default_hint: &'static str,
    /// Whether the default URL needs a key, and advice added to the error when it is missing
    /// (`None`: a key is optional there).
    pub key_required: Option<&'static str>,
}

/// The server a grader or an embedder is called at, as the config that names it says: its base URL,
/// the variable its key is read from, or a key written in the config (held in memory, never shown).
/// Empty: the provider's own variables and default, as a run's are found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Server {
    pub base_url: Option<String>,
    pub key_env: Option<String>,
    pub key: Option<ApiKey>,
}

impl Server {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Server::default()
    }

    /// The value of the variable `name` as this server reads it: its own key (or `key_env`'s value) in
    /// place of the provider's key variable `key_var`, the rest through `lookup`.
    pub fn read(&self, key_var: &str, name: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        match (&self.key, &self.key_env) {
            (Some(key), _) if name == key_var => Some(key.expose().to_string()),
            (None, Some(own)) if name == key_var => lookup(own),
            _ => lookup(name),
        }
    }

    /// ` at URL` when a base URL is set (what a model's name shows), else nothing.
    pub fn shown(&self) -> String {
        self.base_url.as_deref().map(|url| format!(" at {url}")).unwrap_or_default()
    }
}

/// A resolved endpoint: the base URL, where it came from, and the key.
pub struct Endpoint {
    pub url: String,
    pub hint: &'static str,
    pub key: Option<ApiKey>,
}

/// Resolves `given` (from `--base-url`) against the variables read through `lookup`.
pub fn resolve(
    vars: &Vars,
    given: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Endpoint, ProviderError> {
    let from_env = lookup(vars.url_var).filter(|v| !v.trim().is_empty());
    let (url, hint) = match (given, from_env) {
        (Some(url), _) => (url.to_string(), "--base-url"),
        (None, Some(url)) => (url, vars.url_var),
        (None, None) => (vars.default_url.to_string(), vars.default_hint),
    };
    let key = lookup(vars.key_var).and_then(ApiKey::new);
    if let Some(advice) = vars.key_required {
        if key.is_none() && url.trim_end_matches('/') == vars.default_url {
            let message = format!("no API key for {}: set {}{advice}", vars.default_url, vars.key_var);
            return Err(ProviderError::Config { provider: vars.provider.to_string(), message });
        }
    }
    Ok(Endpoint { url, hint, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: Vars = Vars {
        provider: "p",
        url_var: "P_URL",
        key_var: "P_KEY",
        default_url: "https://p.example/v1",
        default_hint: "the default",
        key_required: Some(""),
    };

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_flag_wins_then_the_variable_then_the_default() {
        let e = resolve(&VARS, Some("http://a"), env(&[("P_URL", "http://b")])).ok().unwrap();
        assert_eq!((e.url.as_str(), e.hint), ("http://a", "--base-url"));
        let e = resolve(&VARS, None, env(&[("P_URL", "http://b")])).ok().unwrap();
        assert_eq!((e.url.as_str(), e.hint), ("http://b", "P_URL"));
        let e = resolve(&VARS, None, env(&[("P_URL", "  "), ("P_KEY", "k")])).ok().unwrap();
        assert_eq!((e.url.as_str(), e.hint), ("https://p.example/v1", "the default"));
        assert!(e.key.is_some());
    }

    #[test]
    fn the_default_url_without_a_key_is_an_error_naming_the_variable() {
        let error = resolve(&VARS, None, env(&[])).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("P_KEY"), "{error}");
        assert!(resolve(&VARS, Some("http://local"), env(&[])).is_ok());
        let optional = Vars { key_required: None, ..VARS };
        assert!(resolve(&optional, None, env(&[])).is_ok());
    }
}
