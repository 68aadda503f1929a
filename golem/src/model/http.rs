//! The transport the providers share: timeouts, retries with backoff, response checks.
//!
//! Transport failures — HTTP 408, 429 and 5xx, timeouts, refused or reset connections —
//! are retried here with exponential backoff and jitter, honouring `Retry-After` up to a
//! cap. They are never charged to the self-correction budgets: a run sees either a response
//! or, once retries run out, a [`ModelError`] with the status and the provider's message.

use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Client, StatusCode};

use super::ModelError;

/// How a provider talks HTTP.
///
/// ```
/// use std::time::Duration;
/// use golem::model::http::{HttpSettings, RetryPolicy};
///
/// let settings = HttpSettings::default()
///     .timeout(Duration::from_secs(30))
///     .retry(RetryPolicy::default().max_retries(5));
/// assert_eq!(settings.retry_policy().max_retries, 5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpSettings {
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long a whole request may take, body included.
    pub timeout: Duration,
    /// When and how failed requests are retried.
    pub retry: RetryPolicy,
    /// The largest response body accepted, in bytes.
    pub max_response_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            max_response_bytes: 16 * 1024 * 1024,
        }
    }
}

impl HttpSettings {
    /// Sets the connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the total timeout of one request.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the largest response body accepted.
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// When and how a failed request is sent again.
///
/// Retried: HTTP 408, 429 and 5xx, timeouts, connections refused or reset, and bodies cut
/// off before their announced length. The delay
/// before retry `k` (from 1) is `initial_backoff * 2^(k-1)`, capped at `max_backoff`, with
/// up to half of it taken off at random when `jitter` is on; a `Retry-After` header
/// (seconds or HTTP date) replaces it, capped at `max_retry_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 turns retrying off.
    pub max_retries: u32,
    /// The delay before the first retry.
    pub initial_backoff: Duration,
    /// The longest computed delay.
    pub max_backoff: Duration,
    /// The longest delay a `Retry-After` header may ask for.
    pub max_retry_after: Duration,
    /// Whether to randomise delays, so clients do not retry in lockstep.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Sets how many retries follow the first attempt.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first delay and the cap of computed delays.
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the cap on delays asked for by `Retry-After`.
    #[must_use]
    pub fn max_retry_after(mut self, cap: Duration) -> Self {
        self.max_retry_after = cap;
        self
    }

    /// Turns jitter on or off.
    #[must_use]
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delay before retry number `retry` (from 1), given the response's `Retry-After`
    /// value, if any, and the time now.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use golem::model::http::RetryPolicy;
    ///
    /// let policy = RetryPolicy::default()
    ///     .backoff(Duration::from_millis(100), Duration::from_secs(1))
    ///     .jitter(false);
    /// let now = SystemTime::now();
    /// assert_eq!(policy.delay(1, None, now), Duration::from_millis(100));
    /// assert_eq!(policy.delay(3, None, now), Duration::from_millis(400));
    /// assert_eq!(policy.delay(9, None, now), Duration::from_secs(1));
    /// assert_eq!(policy.delay(1, Some("7"), now), Duration::from_secs(7));
    /// assert_eq!(policy.delay(1, Some("86400"), now), Duration::from_secs(60));
    /// ```
    pub fn delay(&self, retry: u32, retry_after: Option<&str>, now: SystemTime) -> Duration {
        if let Some(wait) = retry_after.and_then(|value| parse_retry_after(value, now)) {
            return wait.min(self.max_retry_after);
        }
        let exponent = retry.saturating_sub(1).min(31);
        let delay = self
            .initial_backoff
            .saturating_mul(1_u32 << exponent)
            .min(self.max_backoff);
        if self.jitter {
            // Up to half of the delay taken off at random.
            delay.mul_f64(1.0 - fastrand::f64() / 2.0)
        } else {
            delay
        }
    }
}

/// Reads a `Retry-After` value: delay-seconds or an HTTP date.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>()
        && seconds.is_finite()
        && seconds >= 0.0
    {
        // Too large for a `Duration`: wait as long as allowed.
        return Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An API key: sent in a sensitive header, never shown by `Debug`, and redacted from
/// provider messages that echo it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps `key`.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// One provider's HTTP client, with its settings.
#[derive(Clone)]
pub(crate) struct Transport {
    client: Client,
    settings: HttpSettings,
    provider: &'static str,
    key: Option<ApiKey>,
    key_env_var: &'static str,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("settings", &self.settings)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A client that sends `headers` (the key's among them) with every request.
    pub(crate) fn new(
        provider: &'static str,
        settings: HttpSettings,
        mut headers: HeaderMap,
        key: Option<ApiKey>,
        key_env_var: &'static str,
    ) -> Result<Self, reqwest::Error> {
        for value in headers.values_mut() {
            // Keeps keys out of reqwest's and hyper's debug output.
            value.set_sensitive(true);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let client = Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .default_headers(headers)
            .user_agent(concat!("golem/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Transport {
            client,
            settings,
            provider,
            key,
            key_env_var,
        })
    }

    /// POSTs `body` to `url` and returns the JSON response body, retrying transport
    /// failures as the policy says.
    pub(crate) async fn post_json(&self, url: &str, body: Vec<u8>) -> Result<Vec<u8>, ModelError> {
        let policy = &self.settings.retry;
        // Built once; an attempt with retries left keeps a clone that shares the body's
        // buffer for the next one. The body is never copied.
        let mut request = self
            .client
            .post(url)
            .body(body)
            .build()
            .map_err(|error| self.finish_error(Failure::Transport(error), 1))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let retries_left = attempt <= policy.max_retries;
            let spare = retries_left.then(|| request.try_clone()).flatten();
            let outcome = self.send_once(request, attempt).await;
            let (retry_after, error) = match outcome {
                Ok(body) => return Ok(body),
                Err(Attempt::Final(error)) => return Err(error),
                Err(Attempt::Retryable { retry_after, error }) => (retry_after, error),
            };
            // A byte body always clones, so `spare` is missing only when no retry is left.
            let Some(spare) = spare else {
                return Err(self.finish_error(error, attempt));
            };
            request = spare;
            let delay = policy.delay(attempt, retry_after.as_deref(), SystemTime::now());
            tracing::warn!(
                provider = self.provider,
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %self.finish_error_ref(&error),
                "retrying model request"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn send_once(&self, request: reqwest::Request, attempt: u32) -> Result<Vec<u8>, Attempt> {
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|error| self.transport_error(error, attempt))?;
        let status = response.status();
        // What is needed from the headers, taken before reading the body consumes them.
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value: &HeaderValue| value.to_str().ok())
        };
        let content_type = header(CONTENT_TYPE).unwrap_or("");
        let not_json = (status.is_success() && !content_type.contains("json"))
            .then(|| content_type.to_owned());
        let retry_after = is_retryable_status(status)
            .then(|| header(RETRY_AFTER).map(str::to_owned))
            .flatten();
        let bytes = self.read_body(response, attempt).await?;
        if status.is_success() {
            if let Some(content_type) = not_json {
                return Err(Attempt::Final(self.invalid(format!(
                    "expected a JSON body, got content type `{content_type}`: {}",
                    snippet(&bytes)
                ))));
            }
            return Ok(bytes);
        }
        let message = self.error_message(&bytes);
        let failure = Failure::Status {
            status,
            message: message.clone(),
        };
        if is_retryable_status(status) {
            return Err(Attempt::Retryable {
                retry_after,
                error: failure,
            });
        }
        Err(Attempt::Final(self.finish_error(failure, attempt)))
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
        attempt: u32,
    ) -> Result<Vec<u8>, Attempt> {
        let limit = self.settings.max_response_bytes;
        if let Some(length) = response.content_length()
            && length > limit as u64
        {
            return Err(Attempt::Final(self.too_large(limit)));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| self.transport_error(error, attempt))?
        {
            if body.len() + chunk.len() > limit {
                return Err(Attempt::Final(self.too_large(limit)));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn too_large(&self, limit: usize) -> ModelError {
        self.invalid(format!(
            "the response body exceeds the limit of {limit} bytes"
        ))
    }

    pub(crate) fn invalid(&self, message: impl Into<String>) -> ModelError {
        ModelError::InvalidResponse {
            provider: self.provider.to_owned(),
            message: message.into(),
        }
    }

    fn transport_error(&self, error: reqwest::Error, attempt: u32) -> Attempt {
        let retryable = error.is_timeout()
            || error.is_connect()
            || error.is_request()
            || error.is_body()
            || error.is_decode();
        // The URL stays out of logs and errors: a compatible server may carry a key in it.
        let failure = Failure::Transport(error.without_url());
        if retryable {
            Attempt::Retryable {
                retry_after: None,
                error: failure,
            }
        } else {
            Attempt::Final(self.finish_error(failure, attempt))
        }
    }

    /// The provider's own error message (`{"error": {"message": ...}}`), or the body.
    fn error_message(&self, body: &[u8]) -> String {
        let message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| {
                let error = value.get("error")?;
                error
                    .get("message")
                    .and_then(serde_json::Value::as_str)
                    .or_else(|| error.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| snippet(body));
        match &self.key {
            Some(key) => key.redact(&message),
            None => message,
        }
    }

    fn finish_error_ref(&self, failure: &Failure) -> String {
        match failure {
            Failure::Status { status, message } => format!("HTTP {}: {message}", status.as_u16()),
            Failure::Transport(error) => error.to_string(),
        }
    }

    fn finish_error(&self, failure: Failure, attempts: u32) -> ModelError {
        let provider = self.provider.to_owned();
        match failure {
            Failure::Status { status, message }
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
            {
                ModelError::Auth {
                    provider,
                    status: status.as_u16(),
                    message,
                    env_var: self.key_env_var.to_owned(),
                }
            }
            Failure::Status { status, message } => ModelError::Http {
                provider,
                status: status.as_u16(),
                message,
                attempts,
            },
            Failure::Transport(error) => ModelError::Transport {
                provider,
                attempts,
                source: Box::new(error),
            },
        }
    }
}

enum Failure {
    Status { status: StatusCode, message: String },
    Transport(reqwest::Error),
}

enum Attempt {
    Retryable {
        retry_after: Option<String>,
        error: Failure,
    },
    Final(ModelError),
}

fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The start of a body, for error messages.
fn snippet(body: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("12", now), Some(Duration::from_secs(12)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        // Too large for a `Duration`: no panic, and the policy's cap applies.
        assert_eq!(parse_retry_after("1e20", now), Some(Duration::MAX));
        assert_eq!(
            RetryPolicy::default().delay(1, Some("1e20"), now),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn jitter_takes_at_most_half_off() {
        let policy =
            RetryPolicy::default().backoff(Duration::from_millis(400), Duration::from_secs(9));
        for _ in 0..100 {
            let delay = policy.delay(2, None, SystemTime::now());
            assert!(delay <= Duration::from_millis(800) && delay >= Duration::from_millis(400));
        }
    }

    #[test]
    fn keys_never_show() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(
            key.redact("Incorrect API key provided: sk-secret-123."),
            "Incorrect API key provided: [redacted]."
        );
    }

    #[test]
    fn long_bodies_are_cut_for_messages() {
        let body = "é".repeat(400);
        let cut = snippet(body.as_bytes());
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= 304);
    }
}
