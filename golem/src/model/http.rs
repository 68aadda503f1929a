//! The transport the providers share: timeouts, retries with backoff, response checks,
//! and the redaction of credentials.
//!
//! Transport failures — HTTP 408, 429 and 5xx, timeouts, refused or reset connections —
//! are retried here with exponential backoff and jitter, honouring `retry-after-ms`,
//! `Retry-After` (up to a cap) and `x-should-retry` as the official SDKs do, within an
//! optional overall [`deadline`](HttpSettings::deadline). They are never charged to the
//! self-correction budgets: a run sees either a response or, once retries run out, a
//! [`ModelError`] with the status and the provider's message.
//!
//! # Streaming
//!
//! [`HttpModel`]'s [`request_stream`](crate::model::Model::request_stream) reads the
//! provider's server-sent events (parsed by `eventsource-stream`) into deltas and, at the
//! end, into the body the non-streamed API would have sent, decoded by the same decoder as
//! a whole response. Retries follow one rule: **only before the stream**. A status,
//! timeout or reset before the response headers is retried under the [`RetryPolicy`]
//! within the deadline; once a 200 event stream has begun, nothing is retried, even before
//! its first delta reached the caller. A stream that breaks, ends early, stays silent past
//! [`HttpSettings::idle_timeout`], outlives the attempt's timeout or the deadline, carries
//! a corrupt chunk or an error event, or is not an event stream at all ends in a
//! [`ModelError::Stream`] naming its [`StreamFault`]. Every event's data is redacted
//! before it is read. Dropping the stream closes the connection.
//!
//! # Credentials never leave
//!
//! Every string that leaves the transport — the response body handed to a provider's
//! decoder, every error message (HTTP errors, body snippets, decode errors) and every
//! tracing field — passes one [`Redactor`] holding each credential golem sends (the API
//! key, and every header marked secret), so a server or proxy that echoes request headers
//! cannot make a key appear in a `RunError`, its `Debug`, its `source()` chain or a log.
//!
//! # TLS
//!
//! HTTPS uses rustls. The cargo feature `rustls-tls` (on by default) trusts the bundled
//! Mozilla roots (`webpki-roots`); `rustls-tls-native-roots` trusts the platform's
//! certificate store instead, or as well when both are on (for corporate proxies with
//! their own root). With neither feature only plain `http://` URLs work.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{Client, StatusCode};
use tokio::time::Instant;

use super::{ModelError, StreamFault};

mod model;
mod sse;

pub(crate) use model::sealed::Wire;
pub use model::{HttpBuilder, HttpModel, WireFormat};
pub(crate) use sse::{Assemble, Fault};

/// `retry-after-ms`: OpenAI's and Anthropic's millisecond form of `Retry-After`.
const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
/// `x-should-retry`: the server's own verdict on whether a retry can help.
const SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");

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
    /// How long one request may take in all, its retries and the waits between them
    /// included; `None` (the default) leaves only the per-attempt [`timeout`](Self::timeout)
    /// and the retry policy. An attempt never outlives the deadline, and no retry starts
    /// whose wait would end past it: the last failure is returned instead.
    pub deadline: Option<Duration>,
    /// How long a response stream may go without a byte before it fails as
    /// [`StreamFault::Idle`]; `None` waits as long as
    /// the [`timeout`](Self::timeout) and the deadline allow. Two minutes by default:
    /// providers send keep-alive events (Anthropic's `ping`) well within it.
    pub idle_timeout: Option<Duration>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            max_response_bytes: 16 * 1024 * 1024,
            deadline: None,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }
}

/// [`HttpSettings::idle_timeout`]'s default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

impl HttpSettings {
    /// Sets the connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the total timeout of one attempt.
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

    /// Sets the overall deadline of a request across all its attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use golem::model::http::HttpSettings;
    ///
    /// let settings = HttpSettings::default().deadline(Duration::from_secs(90));
    /// assert_eq!(settings.deadline, Some(Duration::from_secs(90)));
    /// ```
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets how long a response stream may go without a byte; `None` turns the idle
    /// timeout off.
    ///
    /// ```
    /// use std::time::Duration;
    /// use golem::model::http::{DEFAULT_IDLE_TIMEOUT, HttpSettings};
    ///
    /// assert_eq!(HttpSettings::default().idle_timeout, Some(DEFAULT_IDLE_TIMEOUT));
    /// let settings = HttpSettings::default().idle_timeout(Some(Duration::from_secs(20)));
    /// assert_eq!(settings.idle_timeout, Some(Duration::from_secs(20)));
    /// assert_eq!(HttpSettings::default().idle_timeout(None).idle_timeout, None);
    /// ```
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
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
/// off before their announced length; a response header `x-should-retry: true` makes any
/// error status retried, `x-should-retry: false` none. The delay
/// before retry `k` (from 1) is `initial_backoff * 2^(k-1)`, capped at `max_backoff`, with
/// up to half of it taken off at random when `jitter` is on; a `retry-after-ms` header
/// (milliseconds) or else a `Retry-After` header (seconds or HTTP date) replaces it, capped
/// at `max_retry_after`.
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
        self.delay_asked(
            retry,
            retry_after.and_then(|value| parse_retry_after(value, now)),
        )
    }

    /// The delay before retry `retry`, when the server asked for `asked`.
    fn delay_asked(&self, retry: u32, asked: Option<Duration>) -> Duration {
        if let Some(wait) = asked {
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

/// Reads a `retry-after-ms` value: milliseconds, possibly fractional.
fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let millis = value.trim().parse::<f64>().ok()?;
    if !millis.is_finite() || millis < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX))
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
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// What replaces a credential in text golem shows.
pub const REDACTED: &str = "[redacted]";

/// Replaces every credential a provider sends in the text that leaves its transport.
///
/// Each secret is looked for as it is and in the escaped forms a body or an error message
/// may quote it in (JSON strings, Rust's `Debug`). Secrets shorter than
/// [`MIN_SECRET_LEN`](Self::MIN_SECRET_LEN) bytes are not looked for: replacing them would
/// mangle ordinary text (and JSON: a secret `1234` would replace a token count) without
/// protecting anything a real credential needs.
///
/// ```
/// use golem::model::http::Redactor;
///
/// let mut redactor = Redactor::default();
/// redactor.add("sk-secret-123");
/// assert_eq!(
///     redactor.redact("Incorrect API key provided: Bearer sk-secret-123."),
///     "Incorrect API key provided: Bearer [redacted]."
/// );
/// assert_eq!(redactor.redact("nothing here"), "nothing here");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    /// The forms looked for, longest first, so an escaped form is replaced whole.
    needles: Vec<String>,
    /// A searcher per needle, built once: every streamed event is searched.
    finders: Vec<memchr::memmem::Finder<'static>>,
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.needles == other.needles
    }
}

impl Eq for Redactor {}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} form(s))", self.needles.len())
    }
}

impl Redactor {
    /// The shortest secret looked for, in bytes.
    pub const MIN_SECRET_LEN: usize = 8;

    /// Adds a secret.
    pub fn add(&mut self, secret: &str) {
        if secret.len() < Self::MIN_SECRET_LEN {
            return;
        }
        let json = serde_json::to_string(secret).unwrap_or_default();
        let debug = format!("{secret:?}");
        let unquote = |quoted: &str| {
            quoted
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or(quoted)
                .to_owned()
        };
        let forms = [secret.to_owned(), unquote(&json), unquote(&debug)];
        for form in forms {
            if form.len() >= Self::MIN_SECRET_LEN && !self.needles.contains(&form) {
                self.needles.push(form);
            }
        }
        self.needles
            .sort_by_key(|needle| std::cmp::Reverse(needle.len()));
        self.finders = self
            .needles
            .iter()
            .map(|needle| memchr::memmem::Finder::new(needle.as_bytes()).into_owned())
            .collect();
    }

    /// Whether no secret is looked for.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for (needle, finder) in self.needles.iter().zip(&self.finders) {
            if finder.find(text.as_bytes()).is_some() {
                text = Cow::Owned(text.replace(needle.as_str(), REDACTED));
            }
        }
        text
    }

    /// `bytes` with every secret replaced, when they are UTF-8 and hold one.
    fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        if self.needles.is_empty() {
            return bytes;
        }
        match std::str::from_utf8(&bytes).map(|text| self.redact(text)) {
            Ok(Cow::Owned(redacted)) => redacted.into_bytes(),
            // Not UTF-8: no decoder reads it as text, and its snippet is redacted when it
            // is quoted in an error.
            Ok(Cow::Borrowed(_)) | Err(_) => bytes,
        }
    }
}

/// One provider's HTTP client, with its settings.
#[derive(Clone)]
pub(crate) struct Transport {
    client: Client,
    settings: HttpSettings,
    provider: &'static str,
    redactor: Redactor,
    key_env_var: &'static str,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("settings", &self.settings)
            .field("redactor", &self.redactor)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A client that sends `headers` (the credentials among them) with every request and
    /// redacts the secrets `redactor` holds from everything it returns.
    pub(crate) fn new(
        provider: &'static str,
        settings: HttpSettings,
        mut headers: HeaderMap,
        redactor: Redactor,
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
            redactor,
            key_env_var,
        })
    }

    /// POSTs `body` to `url` and returns the JSON response body (redacted), retrying
    /// transport failures as the policy says, within the deadline.
    pub(crate) async fn post_json(
        &self,
        url: &reqwest::Url,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ModelError> {
        match self.post(url, body, Answer::Json).await? {
            Answered::Json(body) => Ok(self.redactor.redact_bytes(body)),
            Answered::Stream(_) => Err(self.invalid("expected a JSON body")),
        }
    }

    /// POSTs `body` to `url` and returns the response once its status says success and its
    /// content type says an event stream; statuses before that are retried as for
    /// [`post_json`](Self::post_json), within the deadline. The stream itself is never
    /// retried. The last attempt's timeout (the deadline's rest, at most
    /// [`HttpSettings::timeout`]) bounds the whole stream.
    pub(crate) async fn post_stream(
        &self,
        url: &reqwest::Url,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, ModelError> {
        match self.post(url, body, Answer::Stream).await? {
            Answered::Stream(response) => Ok(response),
            Answered::Json(_) => Err(self.invalid("expected an event stream")),
        }
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The redactor.
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    async fn post(
        &self,
        url: &reqwest::Url,
        body: Vec<u8>,
        answer: Answer,
    ) -> Result<Answered, ModelError> {
        let policy = &self.settings.retry;
        let deadline = self
            .settings
            .deadline
            .and_then(|deadline| Instant::now().checked_add(deadline));
        // Built once; an attempt with retries left keeps a clone that shares the body's
        // buffer for the next one. The body is never copied.
        let mut request = self
            .client
            .post(url.clone())
            .body(body)
            .build()
            .map_err(|error| self.finish_error(Failure::Transport(error.without_url()), 1))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                *request.timeout_mut() = Some(left.min(self.settings.timeout));
            }
            let retries_left = attempt <= policy.max_retries;
            let spare = retries_left.then(|| request.try_clone()).flatten();
            let outcome = self.send_once(request, attempt, answer).await;
            let (asked, error) = match outcome {
                Ok(answered) => return Ok(answered),
                Err(Attempt::Final(error)) => return Err(error),
                Err(Attempt::Retryable { asked, error }) => (asked, error),
            };
            // A byte body always clones, so `spare` is missing only when no retry is left.
            let Some(spare) = spare else {
                return Err(self.finish_error(error, attempt));
            };
            request = spare;
            let delay = policy.delay_asked(attempt, asked);
            if deadline.is_some_and(|deadline| Instant::now() + delay >= deadline) {
                return Err(self.finish_error(error, attempt));
            }
            tracing::warn!(
                provider = self.provider,
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %self.failure_text(&error),
                "retrying model request"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn send_once(
        &self,
        request: reqwest::Request,
        attempt: u32,
        answer: Answer,
    ) -> Result<Answered, Attempt> {
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
        let expected = match answer {
            Answer::Json => "json",
            Answer::Stream => "text/event-stream",
        };
        let unexpected = (status.is_success() && !content_type.contains(expected))
            .then(|| content_type.to_owned());
        if status.is_success() && unexpected.is_none() && answer == Answer::Stream {
            return Ok(Answered::Stream(response));
        }
        let retryable = !status.is_success()
            && match header(SHOULD_RETRY).map(str::trim) {
                Some("true") => true,
                Some("false") => false,
                _ => is_retryable_status(status),
            };
        let asked = if retryable {
            header(RETRY_AFTER_MS)
                .and_then(parse_retry_after_ms)
                .or_else(|| {
                    header(RETRY_AFTER)
                        .and_then(|value| parse_retry_after(value, SystemTime::now()))
                })
        } else {
            None
        };
        let bytes = self.read_body(response, attempt).await?;
        if status.is_success() {
            if let Some(content_type) = unexpected {
                return Err(Attempt::Final(match answer {
                    Answer::Json => self.invalid(format!(
                        "expected a JSON body, got content type `{content_type}`: {}",
                        self.snippet(&bytes)
                    )),
                    Answer::Stream => self.stream_error(
                        StreamFault::NotEventStream,
                        format!(
                            "expected an event stream, got content type `{content_type}`: {}",
                            self.snippet(&bytes)
                        ),
                        None,
                    ),
                }));
            }
            return Ok(Answered::Json(bytes));
        }
        let failure = Failure::Status {
            status,
            message: self.error_message(&bytes),
        };
        if retryable {
            return Err(Attempt::Retryable {
                asked,
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

    /// A [`Stream`](ModelError::Stream) error, its message redacted.
    pub(crate) fn stream_error(
        &self,
        fault: StreamFault,
        message: impl AsRef<str>,
        source: Option<reqwest::Error>,
    ) -> ModelError {
        ModelError::Stream {
            provider: self.provider.to_owned(),
            fault,
            message: self.redactor.redact(message.as_ref()).into_owned(),
            // The URL stays out, as for every transport error.
            source: source.map(|error| Box::new(error.without_url()) as crate::error::BoxError),
        }
    }

    fn too_large(&self, limit: usize) -> ModelError {
        self.invalid(format!(
            "the response body exceeds the limit of {limit} bytes"
        ))
    }

    /// An [`InvalidResponse`](ModelError::InvalidResponse) error, its message redacted.
    pub(crate) fn invalid(&self, message: impl AsRef<str>) -> ModelError {
        ModelError::InvalidResponse {
            provider: self.provider.to_owned(),
            message: self.redactor.redact(message.as_ref()).into_owned(),
        }
    }

    /// The start of a body, redacted before it is cut so no part of a secret survives.
    fn snippet(&self, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        snippet(&self.redactor.redact(&text))
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
                asked: None,
                error: failure,
            }
        } else {
            Attempt::Final(self.finish_error(failure, attempt))
        }
    }

    /// The provider's own error message (`{"error": {"message": ...}}`, `{"error": ...}`,
    /// or vLLM's top-level `{"message": ...}`), or the body; redacted.
    fn error_message(&self, body: &[u8]) -> String {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| {
                let message = match value.get("error") {
                    Some(error) => error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .or_else(|| error.as_str()),
                    None => value.get("message").and_then(serde_json::Value::as_str),
                };
                message.map(|message| self.redactor.redact(message).into_owned())
            })
            .unwrap_or_else(|| self.snippet(body))
    }

    /// A failure as a log line shows it; redacted.
    fn failure_text(&self, failure: &Failure) -> String {
        match failure {
            Failure::Status { status, message } => format!("HTTP {}: {message}", status.as_u16()),
            Failure::Transport(error) => self.redactor.redact(&error.to_string()).into_owned(),
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

/// What a request's answer must be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    Json,
    Stream,
}

enum Answered {
    Json(Vec<u8>),
    Stream(reqwest::Response),
}

enum Failure {
    Status { status: StatusCode, message: String },
    Transport(reqwest::Error),
}

enum Attempt {
    Retryable {
        /// The wait the server asked for.
        asked: Option<Duration>,
        error: Failure,
    },
    Final(ModelError),
}

fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The start of a text, for error messages.
fn snippet(text: &str) -> String {
    const MAX: usize = 300;
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
        let mut redactor = Redactor::default();
        redactor.add(key.expose());
        assert_eq!(
            redactor.redact("Incorrect API key provided: sk-secret-123."),
            "Incorrect API key provided: [redacted]."
        );
        assert!(!format!("{redactor:?}").contains("secret"));
    }

    #[test]
    fn escaped_forms_of_a_secret_are_redacted_too() {
        let mut redactor = Redactor::default();
        redactor.add("k\\ey/\"quoted\"");
        redactor.add("1234567");
        let json = serde_json::to_string("k\\ey/\"quoted\"").unwrap();
        assert_eq!(redactor.redact(&json), "\"[redacted]\"");
        assert_eq!(
            redactor.redact(&format!("{:?}", "k\\ey/\"quoted\"")),
            "\"[redacted]\""
        );
        assert_eq!(
            redactor.redact("{\"tokens\": 1234567}"),
            "{\"tokens\": 1234567}",
            "too short to look for"
        );
        assert_eq!(
            redactor.redact_bytes(b"{\"echo\": \"k\\\\ey/\\\"quoted\\\"\"}".to_vec()),
            b"{\"echo\": \"[redacted]\"}".to_vec()
        );
    }

    #[test]
    fn retry_after_ms_is_read_as_milliseconds() {
        assert_eq!(
            parse_retry_after_ms("1500"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after_ms("2.5"),
            Some(Duration::from_micros(2500))
        );
        assert_eq!(parse_retry_after_ms("-1"), None);
        assert_eq!(parse_retry_after_ms("soon"), None);
        assert_eq!(parse_retry_after_ms("1e300"), Some(Duration::MAX));
    }

    #[test]
    fn long_bodies_are_cut_for_messages() {
        let body = "é".repeat(400);
        let cut = snippet(&body);
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= 304);
    }
}
