//! When and how a failed request is sent again: the [`RetryPolicy`] and the reading of the
//! headers a server answers with (`Retry-After`, `retry-after-ms`, `x-should-retry`).

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderName;

/// `retry-after-ms`: OpenAI's and Anthropic's millisecond form of `Retry-After`.
pub(super) const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
/// `x-should-retry`: the server's own verdict on whether a retry can help.
pub(super) const SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");

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
    pub(super) fn delay_asked(&self, retry: u32, asked: Option<Duration>) -> Duration {
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
pub(super) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
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
pub(super) fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let millis = value.trim().parse::<f64>().ok()?;
    if !millis.is_finite() || millis < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX))
}

/// Whether an error status is worth a retry when the server does not say: 408, 429, 5xx.
pub(super) fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
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
}
