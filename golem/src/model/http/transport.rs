//! One provider's HTTP client: sending a request with its retries within the deadline,
//! checking the answer's status and content type, reading the body under its size limit,
//! and turning every failure into a redacted [`ModelError`].

use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Client, StatusCode};
use tokio::time::Instant;

use super::retry::{
    RETRY_AFTER_MS, SHOULD_RETRY, is_retryable_status, parse_retry_after, parse_retry_after_ms,
};
use super::{HttpSettings, Redactor};
use crate::model::{ModelError, StreamFault};

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
            // No client-wide timeout: reqwest's would bound a stream's whole body. golem
            // bounds each attempt itself (see `post`).
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
        match self.post(url, body, Answer::Json).await?.0 {
            Answered::Json(body) => Ok(self.redactor.redact_bytes(body)),
            Answered::Stream(_) => Err(self.invalid("expected a JSON body")),
        }
    }

    /// POSTs `body` to `url` and returns the response once its status says success and its
    /// content type says an event stream, with the instant the request's deadline ends;
    /// statuses before that are retried as for [`post_json`](Self::post_json), within the
    /// deadline. Each attempt's timeout (the deadline's rest, at most
    /// [`HttpSettings::timeout`]) bounds the wait for its response headers only: the
    /// stream's body is bounded by the idle timeout and the deadline, and never retried.
    pub(crate) async fn post_stream(
        &self,
        url: &reqwest::Url,
        body: Vec<u8>,
    ) -> Result<(reqwest::Response, Option<Instant>), ModelError> {
        match self.post(url, body, Answer::Stream).await? {
            (Answered::Stream(response), deadline) => Ok((response, deadline)),
            (Answered::Json(_), _) => Err(self.invalid("expected an event stream")),
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
    ) -> Result<(Answered, Option<Instant>), ModelError> {
        let policy = &self.settings.retry;
        let deadline = self
            .settings
            .deadline
            .and_then(|deadline| Instant::now().checked_add(deadline));
        // Each attempt's request shares the body's buffer: the body is never copied. The
        // request is handed to reqwest before the first wait, so that this future (boxed
        // with the model's) holds no request across it.
        let body = Bytes::from(body);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let timeout = match deadline {
                Some(deadline) => deadline
                    .saturating_duration_since(Instant::now())
                    .min(self.settings.timeout),
                None => self.settings.timeout,
            };
            let sent = match self.client.post(url.clone()).body(body.clone()).build() {
                Ok(request) => self.client.execute(request),
                Err(error) => {
                    return Err(self.finish_error(Failure::Transport(error.without_url()), attempt));
                }
            };
            let outcome = match answer {
                // A JSON answer's timeout bounds its body too; a stream's, its headers only
                // (see `send_once`). Kept here rather than in reqwest's request, whose
                // timeout costs two allocations a request.
                Answer::Json => {
                    tokio::time::timeout(timeout, self.send_once(sent, attempt, answer, timeout))
                        .await
                        .unwrap_or_else(|_| Err(Attempt::timed_out(timeout, "whole response")))
                }
                Answer::Stream => self.send_once(sent, attempt, answer, timeout).await,
            };
            let (asked, error) = match outcome {
                Ok(answered) => return Ok((answered, deadline)),
                Err(Attempt::Final(error)) => return Err(error),
                Err(Attempt::Retryable { asked, error }) => (asked, error),
            };
            if attempt > policy.max_retries {
                return Err(self.finish_error(error, attempt));
            }
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
        sent: impl Future<Output = reqwest::Result<reqwest::Response>>,
        attempt: u32,
        answer: Answer,
        timeout: Duration,
    ) -> Result<Answered, Attempt> {
        let mut response = match answer {
            Answer::Json => sent.await,
            Answer::Stream => match tokio::time::timeout(timeout, sent).await {
                Ok(response) => response,
                Err(_) => return Err(Attempt::timed_out(timeout, "response headers")),
            },
        }
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
        let bytes = self.read_body(&mut response, attempt).await?;
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
            credentials: refuses_credentials(status, &bytes),
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
        response: &mut reqwest::Response,
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
            Failure::Status {
                status, message, ..
            } => format!("HTTP {}: {message}", status.as_u16()),
            Failure::Transport(error) => self.redactor.redact(&error.to_string()).into_owned(),
            Failure::TimedOut(error) => error.to_string(),
        }
    }

    fn finish_error(&self, failure: Failure, attempts: u32) -> ModelError {
        let provider = self.provider.to_owned();
        match failure {
            Failure::Status {
                status,
                message,
                credentials: true,
            } => ModelError::Auth {
                provider,
                status: status.as_u16(),
                message,
                env_var: self.key_env_var.to_owned(),
            },
            Failure::Status {
                status, message, ..
            } => ModelError::Http {
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
            Failure::TimedOut(error) => ModelError::Transport {
                provider,
                attempts,
                source: Box::new(error),
            },
        }
    }
}

/// Whether an answer of `status` with `body` refuses the credentials: HTTP 401 or 403, or
/// a 400 that says the key is invalid (as Google's APIs answer a wrong key:
/// `"reason": "API_KEY_INVALID"`).
fn refuses_credentials(status: StatusCode, body: &[u8]) -> bool {
    status == StatusCode::UNAUTHORIZED
        || status == StatusCode::FORBIDDEN
        || (status == StatusCode::BAD_REQUEST
            && body
                .windows(b"API_KEY_INVALID".len())
                .any(|window| window == b"API_KEY_INVALID"))
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
    Status {
        status: StatusCode,
        message: String,
        /// Whether the provider refused the credentials.
        credentials: bool,
    },
    Transport(reqwest::Error),
    TimedOut(TimedOut),
}

/// The error of an attempt that timed out: a JSON request whose whole response, or a
/// stream request whose response headers, did not arrive within the attempt's timeout. The
/// source of a [`ModelError::Transport`], for which [`ModelError::is_timeout`] is true.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no {waiting_for} arrived within {} ms", after.as_millis())]
pub(crate) struct TimedOut {
    after: Duration,
    waiting_for: &'static str,
}

enum Attempt {
    Retryable {
        /// The wait the server asked for.
        asked: Option<Duration>,
        error: Failure,
    },
    Final(ModelError),
}

impl Attempt {
    /// An attempt that ran out of its timeout `after` waiting for `waiting_for`: retried.
    fn timed_out(after: Duration, waiting_for: &'static str) -> Self {
        Attempt::Retryable {
            asked: None,
            error: Failure::TimedOut(TimedOut { after, waiting_for }),
        }
    }
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
    fn long_bodies_are_cut_for_messages() {
        let body = "é".repeat(400);
        let cut = snippet(&body);
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= 304);
    }
}
