//! The HTTP request a provider sends, as data: method, URL, headers and JSON body. Each HTTP provider's
//! `stream` sends exactly what its `outgoing` builds, and each one's `first_request` gives the same
//! request without a client (what the workbench previews and copies as curl), the API key named by
//! the variable it is read from (`$OPENAI_API_KEY`), never its value.

use reqwest::Method;
use serde_json::Value;

use super::ApiKey;

/// One HTTP request of a provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    pub method: Method,
    pub url: String,
    /// In the order they are sent; the body's `content-type` first.
    pub headers: Vec<Header>,
    /// Sent compact ([`Self::body_text`]).
    pub body: Value,
}

/// One header of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Lowercase.
    pub name: &'static str,
    pub value: HeaderValue,
}

/// A header's value: text, or the API key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    Text(String),
    /// The key after `prefix` (`Bearer `); `var` is the environment variable it is read from.
    Key {
        prefix: &'static str,
        var: &'static str,
    },
}

impl Header {
    pub fn text(name: &'static str, value: impl Into<String>) -> Self {
        Self { name, value: HeaderValue::Text(value.into()) }
    }

    pub fn key(name: &'static str, prefix: &'static str, var: &'static str) -> Self {
        Self { name, value: HeaderValue::Key { prefix, var } }
    }

    /// The value as shown: the key as `$VAR`.
    pub fn shown(&self) -> String {
        match &self.value {
            HeaderValue::Text(text) => text.clone(),
            HeaderValue::Key { prefix, var } => format!("{prefix}${var}"),
        }
    }
}

impl Outgoing {
    /// A POST of `body` as JSON to `url`.
    pub fn post(url: String, body: Value) -> Self {
        Self { method: Method::POST, url, headers: vec![Header::text("content-type", "application/json")], body }
    }

    /// Adds a header.
    pub fn header(mut self, header: Header) -> Self {
        self.headers.push(header);
        self
    }

    /// Adds the key header when there is a key (`key_var` names its variable).
    pub fn key_header(self, name: &'static str, prefix: &'static str, key_var: Option<&'static str>) -> Self {
        match key_var {
            Some(var) => self.header(Header::key(name, prefix, var)),
            None => self,
        }
    }

    /// The body as sent.
    pub fn body_text(&self) -> String {
        self.body.to_string()
    }

    /// A shell command that sends this request with curl: the key read from its variable, the body
    /// pretty-printed (the same JSON value; the provider sends it compact).
    pub fn curl(&self) -> String {
        let mut text = String::from("curl -sN");
        if self.method != Method::POST {
            text.push_str(&format!(" -X {}", self.method));
        }
        text.push_str(&format!(" {} \\\n", quote(&self.url)));
        for header in &self.headers {
            let arg = match &header.value {
                HeaderValue::Text(value) => quote(&format!("{}: {value}", header.name)),
                // Static names the shell reads as they are: only the variable expands.
                HeaderValue::Key { prefix, var } => format!("\"{}: {prefix}${{{var}}}\"", header.name),
            };
            text.push_str(&format!("  -H {arg} \\\n"));
        }
        let body = serde_json::to_string_pretty(&self.body).unwrap_or_else(|_| self.body_text());
        text.push_str(&format!("  --data-raw {}\n", quote(&body)));
        text
    }

    /// The request builder that sends this request with `client`; `key` fills the key header.
    pub(crate) fn builder(&self, client: &reqwest::Client, key: Option<&ApiKey>) -> reqwest::RequestBuilder {
        let mut builder = client.request(self.method.clone(), &self.url);
        for header in &self.headers {
            builder = match (&header.value, key) {
                (HeaderValue::Text(value), _) => builder.header(header.name, value.as_str()),
                (HeaderValue::Key { prefix, .. }, Some(key)) => {
                    let value = format!("{prefix}{}", key.expose());
                    match reqwest::header::HeaderValue::from_str(&value) {
                        Ok(mut value) => {
                            value.set_sensitive(true);
                            builder.header(header.name, value)
                        }
                        // The builder keeps the error and reports it when the request is sent.
                        Err(_) => builder.header(header.name, value),
                    }
                }
                (HeaderValue::Key { .. }, None) => builder,
            };
        }
        builder.body(self.body_text())
    }
}

/// `text` in single quotes for a POSIX shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn curl_names_the_key_and_quotes_the_rest() {
        let request = Outgoing::post("http://h/v1/x".into(), json!({"q": "it's"}))
            .header(Header::text("anthropic-version", "1"))
            .key_header("authorization", "Bearer ", Some("OPENAI_API_KEY"))
            .key_header("x-api-key", "", None);
        let curl = request.curl();
        assert_eq!(
            curl,
            "curl -sN 'http://h/v1/x' \\\n  -H 'content-type: application/json' \\\n  -H 'anthropic-version: 1' \\\n  \
             -H \"authorization: Bearer ${OPENAI_API_KEY}\" \\\n  --data-raw '{\n  \"q\": \"it'\\''s\"\n}'\n"
        );
        assert_eq!(request.headers[2].shown(), "Bearer $OPENAI_API_KEY");
        assert_eq!(request.body_text(), r#"{"q":"it's"}"#);
    }
}
