//! The HTTP side shared by the providers: client, timeouts, 429/503 retries, status → error with a
//! hint, content-type checks, and the guarded body stream (read timeout, line-size limit).

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use reqwest::{RequestBuilder, Response};

use super::error::{body_message, chain, snippet};
use super::generate::Emit;
use super::{ApiKey, Event, ProviderError};

/// Timeouts, retries and limits of a provider's HTTP requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// Time allowed to open the TCP connection.
    pub connect_timeout: Duration,
    /// Longest wait for the response headers, and for each next piece of the body.
    pub read_timeout: Duration,
    /// Times a request answered 429, 503 or 529 is sent again.
    pub max_retries: u32,
    /// The longest wait before a retry; a server asking for more is reported at once.
    pub max_retry_wait: Duration,
    /// The largest line (SSE line or NDJSON line) accepted from a stream.
    pub max_line_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
            max_retries: 3,
            max_retry_wait: Duration::from_secs(60),
            max_line_bytes: 32 * 1024 * 1024,
        }
    }
}

/// The most redirects followed for one request (all within the base URL's origin).
pub const MAX_REDIRECTS: usize = 5;

/// An HTTP client for `base_url`, the one client every provider and the batch endpoints use: proxies
/// are skipped for loopback servers, and redirects are followed only within the base URL's origin
/// (scheme, host and port), at most [`MAX_REDIRECTS`] times. A redirect to any other origin is not
/// followed, whatever its code (301/302/303/307/308) and whatever header carries the key: the request,
/// its body and its credentials never leave the origin they were given for. The 3xx answer comes back
/// as the response, and [`Target::status_error`] names where it pointed.
pub(crate) fn client(provider: &str, base_url: &str, options: &HttpOptions) -> Result<reqwest::Client, ProviderError> {
    let url = parse_base(provider, base_url)?;
    let origin = url.origin();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.url().origin() != origin || attempt.previous().len() > MAX_REDIRECTS {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let mut builder =
        reqwest::Client::builder().connect_timeout(options.connect_timeout).tcp_nodelay(true).redirect(redirects);
    if is_loopback(&url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| ProviderError::Config { provider: provider.to_string(), message: chain(&e) })
}

/// `base_url` read as a URL, or the error a provider built on it reports.
pub(crate) fn parse_base(provider: &str, base_url: &str) -> Result<reqwest::Url, ProviderError> {
    reqwest::Url::parse(base_url).map_err(|e| ProviderError::Config {
        provider: provider.to_string(),
        message: format!("the base URL {base_url:?} is not a URL: {e}"),
    })
}

/// Whether `url` names this machine (`localhost`, 127.0.0.0/8, `[::1]`).
pub fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `url` is on the same origin (scheme, host, port) as `base_url`: where a key given for
/// `base_url` may be sent.
pub fn same_origin(base_url: &str, url: &str) -> bool {
    match (reqwest::Url::parse(base_url), reqwest::Url::parse(url)) {
        (Ok(base), Ok(url)) => base.origin() == url.origin(),
        _ => false,
    }
}

/// Where a request goes and what to tell the user when it fails.
pub(crate) struct Target<'a> {
    pub provider: &'a str,
    pub url: &'a str,
    /// The environment variable that holds the key (named in 401/403 hints).
    pub key_var: &'a str,
    pub key: Option<&'a ApiKey>,
    pub model: &'a str,
    /// Where the base URL came from, for 404 hints (`OPENAI_BASE_URL or --base-url`).
    pub base_hint: &'a str,
}

/// A non-2xx answer: the status and the start of its body.
pub(crate) struct Rejected {
    pub status: u16,
    pub body: String,
    /// Where a 3xx answer pointed (a redirect that was not followed).
    pub location: Option<String>,
}

impl Target<'_> {
    fn redact(&self, text: &str) -> String {
        self.key.map_or_else(|| text.to_string(), |key| key.redact(text))
    }

    /// The user-facing error for a non-2xx answer.
    pub(crate) fn status_error(&self, rejected: &Rejected, retries: u32) -> ProviderError {
        let message = body_message(&rejected.body);
        let lower = message.to_ascii_lowercase();
        let hint = match rejected.status {
            401 | 403 if self.key.is_some() => {
                Some(format!("The API key in {} was refused: set {} to a valid key", self.key_var, self.key_var))
            }
            401 | 403 => Some(format!("No API key was sent: set {} to your key", self.key_var)),
            404 => Some(format!(
                "Check the base URL ({}; from {}) and the model name {:?}",
                self.url, self.base_hint, self.model
            )),
            400 if lower.contains("context") => {
                Some("The prompt plus max tokens exceed the model's context window: shorten the prompt or lower --max-tokens".to_string())
            }
            300..=399 => Some(match &rejected.location {
                Some(location) => format!(
                    "The server redirected to {location}, another origin than {}: tunebench does not follow a \
                     redirect off the base URL's origin, so the request and its key stay there; if that server \
                     is the right one, give it as the base URL ({})",
                    self.url, self.base_hint
                ),
                None => "The server answered a redirect with no Location header".to_string(),
            }),
            413 => Some("The request is too large for the server".to_string()),
            429 => Some(format!("Rate limited: gave up after {retries} retries")),
            503 | 529 => Some(format!("The server is unavailable or overloaded: gave up after {retries} retries")),
            _ => None,
        };
        ProviderError::Http {
            provider: self.provider.to_string(),
            url: self.redact(self.url),
            status: rejected.status,
            message: self.redact(&message),
            hint: hint.map(|h| self.redact(&h)),
        }
    }

    fn transport_error(&self, error: &reqwest::Error, options: &HttpOptions) -> ProviderError {
        if error.is_timeout() {
            return ProviderError::Stalled {
                provider: self.provider.to_string(),
                after_ms: options.read_timeout.as_millis() as u64,
            };
        }
        ProviderError::Connect {
            provider: self.provider.to_string(),
            url: self.redact(self.url),
            message: self.redact(&chain(error)),
        }
    }

    /// Sends the request `build` makes, retrying 429/503/529 as the server asks (bounded), and
    /// announcing each wait as an [`Event::Retrying`]. `Ok(Err(..))` is a final non-2xx answer.
    pub(crate) async fn send(
        &self,
        build: impl Fn() -> RequestBuilder,
        options: &HttpOptions,
        emit: &Emit,
    ) -> Result<Result<Response, (Rejected, u32)>, ProviderError> {
        let mut attempt = 0;
        loop {
            let response = match tokio::time::timeout(options.read_timeout, build().send()).await {
                Err(_) => {
                    let after_ms = options.read_timeout.as_millis() as u64;
                    return Err(ProviderError::Stalled { provider: self.provider.to_string(), after_ms });
                }
                Ok(Err(error)) => return Err(self.transport_error(&error, options)),
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            if response.status().is_success() {
                return Ok(Ok(response));
            }
            let wait = retry_wait(response.headers(), attempt);
            let location = response.headers().get(LOCATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let body = self.redact(&read_text(response, options, 64 * 1024).await);
            let retryable = matches!(status, 429 | 503 | 529);
            if !retryable || attempt >= options.max_retries {
                return Ok(Err((Rejected { status, body, location }, attempt)));
            }
            if wait > options.max_retry_wait {
                let mut rejected = Rejected { status, body, location };
                rejected.body = format!(
                    "{}; the server asked to retry after {} s, longer than the {} s limit",
                    body_message(&rejected.body),
                    wait.as_secs(),
                    options.max_retry_wait.as_secs()
                );
                return Ok(Err((rejected, attempt)));
            }
            attempt += 1;
            let reason = format!("HTTP {status}: {}", body_message(&body));
            emit.send(Event::Retrying { attempt, after_ms: wait.as_millis() as u64, reason });
            tokio::time::sleep(wait).await;
        }
    }
}

/// How long to wait before retry number `attempt + 1`: `retry-after-ms`, `Retry-After` seconds, or
/// an exponential backoff from 500 ms.
fn retry_wait(headers: &HeaderMap, attempt: u32) -> Duration {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) =
        header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Duration::from_millis(ms as u64);
    }
    if let Some(secs) =
        header(RETRY_AFTER.as_str()).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
    {
        // As asked, however long: a wait past the limit is refused by the caller, which names it.
        return Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX);
    }
    Duration::from_millis(500u64.saturating_mul(1u64 << attempt.min(10)))
}

/// Up to `limit` bytes of a response body as text (lossy), within the read timeout.
pub(crate) async fn read_text(response: Response, options: &HttpOptions, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < limit {
        match tokio::time::timeout(options.read_timeout, stream.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(limit);
    String::from_utf8_lossy(&body).into_owned()
}

/// The response's media type, lowercased, without parameters (`text/event-stream`).
pub(crate) fn media_type(response: &Response) -> String {
    let value = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// The error for a 2xx answer whose content type is not `expected`.
pub(crate) async fn wrong_content_type(
    target: &Target<'_>,
    response: Response,
    expected: &str,
    options: &HttpOptions,
) -> ProviderError {
    let got = media_type(&response);
    let body = read_text(response, options, 4096).await;
    ProviderError::ContentType {
        provider: target.provider.to_string(),
        url: target.redact(target.url),
        expected: expected.to_string(),
        got: if got.is_empty() { "(none)".to_string() } else { got },
        snippet: target.redact(&snippet(&body)),
    }
}

/// A response body as a stream of byte chunks that fails with `Stalled` when no byte arrives within
/// the read timeout, `Broken` when the connection breaks, and `TooLarge` when a line grows past the limit.
pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

pub(crate) fn guarded_body(provider: &str, response: Response, options: &HttpOptions) -> Body {
    guard(provider, Box::pin(response.bytes_stream().map(|piece| piece.map_err(|error| chain(&error)))), options)
}

/// The bytes of a response body (a failed read as its message), guarded as [`guarded_body`] says.
pub(crate) type RawBody = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// [`guarded_body`] over any byte stream (the fuzz targets feed one from memory).
pub(crate) fn guard(provider: &str, inner: RawBody, options: &HttpOptions) -> Body {
    struct State {
        inner: RawBody,
        provider: String,
        read_timeout: Duration,
        limit: usize,
        received: u64,
        line: usize,
        done: bool,
    }
    let state = State {
        inner,
        provider: provider.to_string(),
        read_timeout: options.read_timeout,
        limit: options.max_line_bytes,
        received: 0,
        line: 0,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let next = tokio::time::timeout(state.read_timeout, state.inner.next()).await;
        let item = match next {
            Err(_) => Err(ProviderError::Stalled {
                provider: state.provider.clone(),
                after_ms: state.read_timeout.as_millis() as u64,
            }),
            Ok(None) => return None,
            Ok(Some(Err(error))) => Err(ProviderError::Broken {
                provider: state.provider.clone(),
                received_bytes: state.received,
                message: error,
            }),
            Ok(Some(Ok(bytes))) => {
                state.received += bytes.len() as u64;
                match longest_line(&mut state.line, &bytes) {
                    longest if longest > state.limit => Err(ProviderError::TooLarge {
                        provider: state.provider.clone(),
                        limit_bytes: state.limit as u64,
                    }),
                    _ => Ok(bytes),
                }
            }
        };
        state.done = item.is_err();
        Some((item, state))
    }))
}

/// Advances the length of the open line by `bytes` and returns the longest line seen in them.
fn longest_line(open: &mut usize, bytes: &[u8]) -> usize {
    let mut longest = 0;
    let mut segments = bytes.split(|b| *b == b'\n' || *b == b'\r').peekable();
    while let Some(segment) = segments.next() {
        let length = *open + segment.len();
        longest = longest.max(length);
        *open = if segments.peek().is_some() { 0 } else { length };
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_waits_follow_the_server_then_back_off() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_wait(&headers, 0), Duration::from_millis(500));
        assert_eq!(retry_wait(&headers, 2), Duration::from_millis(2000));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_wait(&headers, 0), Duration::from_secs(2));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_wait(&headers, 0), Duration::from_millis(150));
        headers.insert("retry-after-ms", HeaderValue::from_static("NaN"));
        assert_eq!(retry_wait(&headers, 0), Duration::from_secs(2));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_wait(&headers, 1), Duration::from_millis(1000));
        assert_eq!(retry_wait(&HeaderMap::new(), 99), Duration::from_millis(512_000));
        // A wait longer than any limit is kept as asked (the caller names it), even past a day.
        headers.insert(RETRY_AFTER, HeaderValue::from_static("999999"));
        assert_eq!(retry_wait(&headers, 0), Duration::from_secs(999_999));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1e300"));
        assert_eq!(retry_wait(&headers, 0), Duration::MAX);
    }

    #[test]
    fn origins_and_loopback_hosts() {
        assert!(same_origin("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/other?x"));
        assert!(!same_origin("http://127.0.0.1:8080/v1", "http://127.0.0.1:8081/v1"));
        assert!(!same_origin("https://api.example/v1", "http://api.example/v1"));
        assert!(!same_origin("https://api.example/v1", "https://api.example.evil/v1"));
        assert!(same_origin("https://api.example/v1", "https://api.example:443/x"));
        assert!(!same_origin("https://api.example/v1", "not a url"));
        let url = |text: &str| reqwest::Url::parse(text).unwrap();
        for local in ["http://localhost:1/v1", "http://127.0.0.9/", "http://[::1]:8080/", "http://LOCALHOST/"] {
            assert!(is_loopback(&url(local)), "{local}");
        }
        for remote in ["http://10.0.0.1/", "https://api.openai.com/v1", "http://localhost.evil/"] {
            assert!(!is_loopback(&url(remote)), "{remote}");
        }
    }

    #[test]
    fn line_lengths_carry_across_chunks() {
        let mut open = 0;
        assert_eq!(longest_line(&mut open, b"abc"), 3);
        assert_eq!(longest_line(&mut open, b"de\nf"), 5);
        assert_eq!(open, 1);
        assert_eq!(longest_line(&mut open, b"\n\n"), 1);
        assert_eq!(open, 0);
        assert_eq!(longest_line(&mut open, b"x\nyyyy\nzz"), 4);
        assert_eq!(open, 2);
    }
}
