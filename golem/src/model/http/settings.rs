//! The settings of a provider's HTTP transport: timeouts, the retry policy, the response
//! size limit, the overall deadline and the idle timeout of streams.

use std::time::Duration;

use super::RetryPolicy;
#[cfg(doc)]
use crate::model::StreamFault;

/// The HTTP settings of a provider: its timeouts, retry policy, response size limit,
/// overall deadline and the idle timeout of its streams.
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
    /// How long one attempt may take: a JSON request in all, body included; a streamed
    /// request until its response headers arrive (its body is bounded by the
    /// [`idle_timeout`](Self::idle_timeout) and the [`deadline`](Self::deadline), so a
    /// long answer that keeps coming is not cut off).
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
    /// [`StreamFault::Idle`]; `None` waits as long as the deadline allows (for ever
    /// without one). Two minutes by default: providers send keep-alive events
    /// (Anthropic's `ping`) well within it.
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

    /// Sets the timeout of one attempt: a JSON request's in all, a stream's until its
    /// response headers.
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
