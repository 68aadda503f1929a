//! A model that tries the next of several models when one fails in a way the next may not.
//!
//! [`FallbackModel`] sends a request to its first model; when that fails with an error of a
//! [`FailureClass`] the fallback is set for (by default [`Transport`](FailureClass::Transport),
//! [`RateLimit`](FailureClass::RateLimit), [`ServerError`](FailureClass::ServerError) and
//! [`Overloaded`](FailureClass::Overloaded)), it sends the same request to the next model,
//! and so on. An error the user must fix (a 400 for a bad request, a 401 for a wrong key)
//! is not hidden behind another model: it ends the request at once.
//!
//! A streamed request falls back only before its first event: once a model's deltas have
//! reached the caller, that model answers, or its error ends the stream.
//!
//! The response says which model answered ([`ModelResponse::model_name`], the provider's
//! name for it, or the model's own [`name`](Model::name) when the provider gives none), and
//! a failure is a [`ModelError::Fallback`] whose [`FallbackError`] lists each model tried
//! with its error. Each provider's own transport retries happen first, inside that model.
//!
//! ```
//! use golem::model::fallback::{FailureClass, FallbackModel};
//! use golem::model::function::FunctionModel;
//! use golem::model::{Model, ModelError, ModelResponse, RequestParams};
//!
//! let busy = FunctionModel::new(|_, _| {
//!     Err(ModelError::Http {
//!         provider: "openai".into(),
//!         status: 429,
//!         message: "Rate limit reached".into(),
//!         attempts: 3,
//!     })
//! })
//! .with_name("primary");
//! let backup = FunctionModel::new(|_, _| Ok(ModelResponse::text("Hello"))).with_name("backup");
//! let model = FallbackModel::new(busy).or(backup);
//! assert_eq!(model.name(), "fallback:primary,backup");
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let response = model.request(&[], &RequestParams::text(Vec::new())).await?;
//! assert_eq!(response.text_content(), "Hello");
//! assert_eq!(response.model_name.as_deref(), Some("backup"));
//! # Ok::<_, ModelError>(())
//! # }).unwrap();
//! ```

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt, TryFutureExt, stream};

use super::{
    Message, Model, ModelError, ModelResponse, ModelStream, RequestParams, StreamEvent, StreamFault,
};

/// A kind of model failure, for choosing which ones a [`FallbackModel`] falls back on.
///
/// ```
/// use golem::model::ModelError;
/// use golem::model::fallback::FailureClass;
///
/// let error = ModelError::Http {
///     provider: "anthropic".into(),
///     status: 529,
///     message: "overloaded_error: Overloaded".into(),
///     attempts: 3,
/// };
/// assert_eq!(FailureClass::of(&error), FailureClass::Overloaded);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureClass {
    /// The request did not get through: a refused or reset connection, a timeout (HTTP 408
    /// among them), a stream that broke, went idle or ran out of time.
    Transport,
    /// HTTP 429: the provider's rate limit; also a stream's error that names it
    /// (`rate_limit_error`, `rate_limit_exceeded`, `too_many_requests`, `RESOURCE_EXHAUSTED`).
    RateLimit,
    /// HTTP 5xx, other than an overloaded provider; also a stream's error that names a
    /// failure on the provider's side (`server_error`, `api_error`, `INTERNAL`,
    /// `UNAVAILABLE`).
    ServerError,
    /// The provider is overloaded: HTTP 529, or a 5xx or a stream's error whose message
    /// says "overloaded" (Anthropic's `overloaded_error`, also sent as a stream's first
    /// event).
    Overloaded,
    /// The provider refused the credentials (HTTP 401, 403, or a 400 that says the key is
    /// invalid).
    Auth,
    /// Any other HTTP 4xx: a request the user must fix (a bad field, an unknown model, a
    /// prompt too long for the model); also content the provider does not take, refused
    /// before sending ([`ModelError::UnsupportedContent`]).
    ClientError,
    /// The provider's answer could not be read: a corrupt chunk, no event stream, a stream
    /// that ended early, a body that is not the provider's format.
    InvalidResponse,
    /// The provider sent an error in the stream, or a response it says failed, that is none
    /// of the above (an invalid request found mid-stream, a refusal).
    Provider,
    /// Anything else: a model's own error, a cut-off or filtered response.
    Other,
}

impl FailureClass {
    /// The failure classes a [`FallbackModel`] falls back on unless told otherwise:
    /// transport failures, rate limits, server errors and overloaded providers.
    pub const DEFAULT: [FailureClass; 4] = [
        FailureClass::Transport,
        FailureClass::RateLimit,
        FailureClass::ServerError,
        FailureClass::Overloaded,
    ];

    /// The class of `error`.
    pub fn of(error: &ModelError) -> FailureClass {
        let overloaded = |message: &str| message.to_ascii_lowercase().contains("overloaded");
        match error {
            ModelError::Transport { .. } => FailureClass::Transport,
            ModelError::Http { status: 529, .. } => FailureClass::Overloaded,
            // Only a server error says the provider is overloaded: a 4xx whose message
            // happens to hold the word (a tool named `get_overloaded_nodes`) is the user's.
            ModelError::Http {
                status, message, ..
            } if *status >= 500 && overloaded(message) => FailureClass::Overloaded,
            // The server gave up waiting for the request: a timeout, as the transport
            // treats it, not a request the user must fix.
            ModelError::Http { status: 408, .. } => FailureClass::Transport,
            ModelError::Http { status: 429, .. } => FailureClass::RateLimit,
            ModelError::Http { status, .. } if *status >= 500 => FailureClass::ServerError,
            ModelError::Http { status, .. } if *status >= 400 => FailureClass::ClientError,
            ModelError::Http { .. } => FailureClass::Other,
            ModelError::Auth { .. } => FailureClass::Auth,
            ModelError::UnsupportedContent { .. } => FailureClass::ClientError,
            // A response the provider says failed (the Responses API's `status: failed`) is
            // classed by its code, as the same failure streamed is.
            ModelError::InvalidResponse { message, .. } if message.starts_with(FAILED) => {
                provider_error_class(message)
            }
            ModelError::InvalidResponse { .. } => FailureClass::InvalidResponse,
            ModelError::Stream { fault, message, .. } => match fault {
                StreamFault::Disconnected | StreamFault::Idle | StreamFault::TimedOut => {
                    FailureClass::Transport
                }
                StreamFault::Provider => provider_error_class(message),
                _ => FailureClass::InvalidResponse,
            },
            ModelError::Fallback(error) => FailureClass::of(error.last()),
            _ => FailureClass::Other,
        }
    }
}

/// How a wire's message begins for a response the provider says failed, followed by its
/// code and message.
pub(crate) const FAILED: &str = "the response failed: ";

/// The class of an error a provider sent in a stream or as a failed response, by its code
/// (`rate_limit_error: …`, `RESOURCE_EXHAUSTED: …`, `server_error: …`): the class the same
/// failure has as an HTTP status, so that a stream whose first event is a rate limit falls
/// back as a 429 does.
fn provider_error_class(message: &str) -> FailureClass {
    let text = message.strip_prefix(FAILED).unwrap_or(message);
    let code = text.split(':').next().unwrap_or("").trim();
    match code.to_ascii_lowercase().as_str() {
        "overloaded_error" => FailureClass::Overloaded,
        // OpenAI's, Anthropic's and Gemini's names for a 429.
        "rate_limit_exceeded" | "rate_limit_error" | "too_many_requests" | "resource_exhausted" => {
            FailureClass::RateLimit
        }
        // Their names for a 500, a 503 or a 504.
        "server_error" | "api_error" | "internal" | "internal_error" | "unavailable"
        | "timeout_error" | "deadline_exceeded" => FailureClass::ServerError,
        // Their names for a request the user must fix, whatever its message says.
        "invalid_request_error"
        | "invalid_argument"
        | "not_found_error"
        | "permission_error"
        | "authentication_error"
        | "failed_precondition"
        | "permission_denied"
        | "not_found"
        | "unauthenticated"
        | "request_too_large"
        | "context_length_exceeded" => FailureClass::Provider,
        _ if message.to_ascii_lowercase().contains("overloaded") => FailureClass::Overloaded,
        _ => FailureClass::Provider,
    }
}

/// One model's failure in a [`FallbackError`].
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelFailure {
    /// The model that failed, by its [`name`](Model::name).
    pub model: String,
    /// Its provider, by its [`system`](Model::system) name.
    pub system: String,
    /// How it failed.
    pub error: ModelError,
}

/// Why a [`FallbackModel`] has no response: each model it tried and its error, in order.
/// The last one is why it stopped: no model was left, or its error was not of a class the
/// fallback is set for, or it failed after its stream had begun.
///
/// Its source is the last model's error.
#[derive(Debug)]
pub struct FallbackError {
    failures: Vec<ModelFailure>,
}

impl FallbackError {
    /// Every model that failed, in the order they were tried; never empty.
    pub fn failures(&self) -> &[ModelFailure] {
        &self.failures
    }

    /// The last model's error: why the fallback stopped.
    pub fn last(&self) -> &ModelError {
        &self.last_failure().error
    }

    fn last_failure(&self) -> &ModelFailure {
        // Built with at least one failure, and only ever pushed to.
        self.failures
            .last()
            .unwrap_or_else(|| unreachable!("a FallbackError holds at least one failure"))
    }
}

impl fmt::Display for FallbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.failures.as_slice() {
            [only] => write!(f, "model `{}` failed: {}", only.model, only.error),
            failures => {
                write!(f, "{} models failed", failures.len())?;
                for (index, failure) in failures.iter().enumerate() {
                    let sep = if index == 0 { ": " } else { "; " };
                    write!(f, "{sep}`{}`: {}", failure.model, failure.error)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for FallbackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.last())
    }
}

/// A model made of several: the first answers unless it fails in a way the next may not,
/// then the next, and so on. See [the module](self).
///
/// Cheap to clone: the models are shared.
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
    on: Vec<FailureClass>,
    name: String,
}

impl fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackModel")
            .field("name", &self.name)
            .field("on", &self.on)
            .finish_non_exhaustive()
    }
}

impl FallbackModel {
    /// A fallback model whose first model is `first`, falling back on
    /// [`FailureClass::DEFAULT`]. Add the next models with [`or`](Self::or).
    pub fn new(first: impl Model) -> Self {
        FallbackModel::from_shared(Arc::new(first))
    }

    /// Like [`new`](Self::new), with a model already shared (or chosen at run time).
    pub fn from_shared(first: Arc<dyn Model>) -> Self {
        let name = format!("fallback:{}", first.name());
        FallbackModel {
            models: vec![first],
            on: FailureClass::DEFAULT.to_vec(),
            name,
        }
    }

    /// Adds `next`, tried after the models before it.
    #[must_use]
    pub fn or(self, next: impl Model) -> Self {
        self.or_shared(Arc::new(next))
    }

    /// Like [`or`](Self::or), with a model already shared.
    #[must_use]
    pub fn or_shared(mut self, next: Arc<dyn Model>) -> Self {
        self.name.push(',');
        self.name.push_str(next.name());
        self.models.push(next);
        self
    }

    /// Falls back on exactly the failures of `classes`, instead of
    /// [`FailureClass::DEFAULT`].
    ///
    /// ```
    /// use golem::model::fallback::{FailureClass, FallbackModel};
    /// use golem::model::test::TestModel;
    ///
    /// // Also on a provider's refusal of the credentials:
    /// let model = FallbackModel::new(TestModel::new())
    ///     .or(TestModel::new())
    ///     .fallback_on(FailureClass::DEFAULT.into_iter().chain([FailureClass::Auth]));
    /// assert!(model.falls_back_on(FailureClass::Auth));
    /// assert!(!model.falls_back_on(FailureClass::ClientError));
    /// ```
    #[must_use]
    pub fn fallback_on(mut self, classes: impl IntoIterator<Item = FailureClass>) -> Self {
        self.on = classes.into_iter().collect();
        self
    }

    /// Whether a failure of `class` makes the next model try.
    pub fn falls_back_on(&self, class: FailureClass) -> bool {
        self.on.contains(&class)
    }

    /// The models, in the order they are tried.
    pub fn models(&self) -> &[Arc<dyn Model>] {
        &self.models
    }

    /// Whether model `index`, having failed with `error`, is followed by another try.
    fn next_after(&self, index: usize, error: &ModelError) -> bool {
        index + 1 < self.models.len() && self.falls_back_on(FailureClass::of(error))
    }

    /// `attempt` on each model in turn, until one succeeds or fails in a way this model does
    /// not fall back on.
    async fn in_turn<'a, T>(
        &'a self,
        attempt: impl Fn(&'a dyn Model) -> BoxFuture<'a, Result<T, ModelError>>,
    ) -> Result<T, ModelError> {
        let mut failures = Vec::new();
        for (index, model) in self.models.iter().enumerate() {
            match attempt(&**model).await {
                Ok(value) => return Ok(value),
                Err(error) => {
                    if !self.failed(index, error, &mut failures) {
                        break;
                    }
                }
            }
        }
        Err(fallback_error(failures))
    }

    /// Records model `index`'s failure `error` in `failures`: whether the next model tries.
    fn failed(&self, index: usize, error: ModelError, failures: &mut Vec<ModelFailure>) -> bool {
        let next = self.next_after(index, &error);
        if next {
            self.log_fallback(index, &error);
        }
        failures.push(self.failure(index, error));
        next
    }

    fn failure(&self, index: usize, error: ModelError) -> ModelFailure {
        let model = &self.models[index];
        ModelFailure {
            model: model.name().to_owned(),
            system: model.system().to_owned(),
            error,
        }
    }

    fn log_fallback(&self, index: usize, error: &ModelError) {
        tracing::warn!(
            failed = self.models[index].name(),
            next = self.models[index + 1].name(),
            class = ?FailureClass::of(error),
            status = error.status(),
            "model failed; trying the next"
        );
    }
}

/// `response`, naming `model` as the one that answered when its provider did not. The
/// request's `chat` span, opened with the first model's provider, is given the provider
/// that answered.
fn answered_by(mut response: ModelResponse, model: &dyn Model) -> ModelResponse {
    tracing::Span::current().record("gen_ai.provider.name", model.system());
    if response.model_name.is_none() {
        response.model_name = Some(model.name().to_owned());
    }
    response
}

pub(crate) fn fallback_error(failures: Vec<ModelFailure>) -> ModelError {
    ModelError::Fallback(Box::new(FallbackError { failures }))
}

impl Model for FallbackModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.in_turn(move |model| {
            model
                .request(messages, params)
                .map_ok(move |response| answered_by(response, model))
                .boxed()
        })
        .boxed()
    }

    /// Falls back only before the first event: a model whose stream ends in an error
    /// before any event is followed by the next (when the error's class says so); once an
    /// event has arrived, that model's stream is the answer.
    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let open = async move {
            let mut failures = Vec::new();
            for (index, model) in self.models.iter().enumerate() {
                let mut events = model.request_stream(messages, params);
                let error = match events.next().await {
                    Some(Ok(first)) => return Ok((index, first, events, failures)),
                    Some(Err(error)) => error,
                    None => ModelError::InvalidResponse {
                        provider: model.system().to_owned(),
                        message: "the stream ended before the response was complete".to_owned(),
                    },
                };
                if !self.failed(index, error, &mut failures) {
                    break;
                }
            }
            Err(fallback_error(failures))
        };
        stream::once(open)
            .flat_map(move |opened| match opened {
                Ok((index, first, rest, mut failures)) => {
                    let model = &*self.models[index];
                    stream::once(futures_util::future::ready(Ok(first)))
                        .chain(rest)
                        .map(move |item| match item {
                            Ok(StreamEvent::Done(response)) => {
                                Ok(StreamEvent::Done(answered_by(response, model)))
                            }
                            Ok(event) => Ok(event),
                            Err(error) => {
                                failures.push(self.failure(index, error));
                                Err(fallback_error(std::mem::take(&mut failures)))
                            }
                        })
                        .boxed()
                }
                Err(error) => stream::once(futures_util::future::ready(Err(error))).boxed(),
            })
            .boxed()
    }

    /// Whether any of its models streams.
    fn streams(&self) -> bool {
        self.models.iter().any(|model| model.streams())
    }

    /// Counted by the first model, or by the next on a failure it falls back on, as a
    /// request is: a count that fails for an outage does not end a run before its request
    /// has had the chance to fall back.
    fn count_tokens<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<Option<u64>, ModelError>> {
        self.in_turn(move |model| model.count_tokens(messages, params))
            .boxed()
    }

    /// `fallback:` and the models' names, in order.
    fn name(&self) -> &str {
        &self.name
    }

    /// The first model's provider. A request's `chat` span names the provider of the model
    /// that answered it.
    fn system(&self) -> &str {
        self.models[0].system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> ModelError {
        ModelError::Http {
            provider: "p".into(),
            status,
            message: message.into(),
            attempts: 1,
        }
    }

    fn stream(fault: StreamFault, message: &str) -> ModelError {
        ModelError::Stream {
            provider: "p".into(),
            fault,
            message: message.into(),
            source: None,
        }
    }

    /// A model that counts tokens (or fails to with `error`) and answers nothing.
    struct Counting {
        count: Result<u64, u16>,
    }

    impl Model for Counting {
        fn request<'a>(
            &'a self,
            _messages: &'a [Message],
            _params: &'a RequestParams,
        ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
            futures_util::future::ready(Err(ModelError::other("counts only"))).boxed()
        }

        fn count_tokens<'a>(
            &'a self,
            _messages: &'a [Message],
            _params: &'a RequestParams,
        ) -> BoxFuture<'a, Result<Option<u64>, ModelError>> {
            let count = self.count.map(Some).map_err(|status| http(status, "no"));
            futures_util::future::ready(count).boxed()
        }

        fn name(&self) -> &str {
            "counting"
        }

        fn system(&self) -> &str {
            "p"
        }
    }

    #[tokio::test]
    async fn tokens_are_counted_by_the_next_model_when_the_first_fails_as_it_falls_back_on() {
        let params = RequestParams::text(Vec::new());
        let model = FallbackModel::new(Counting { count: Err(503) }).or(Counting { count: Ok(42) });
        assert_eq!(model.count_tokens(&[], &params).await.unwrap(), Some(42));
        // A failure it does not fall back on ends there, with each failure.
        let model = FallbackModel::new(Counting { count: Err(400) }).or(Counting { count: Ok(42) });
        let error = model.count_tokens(&[], &params).await.unwrap_err();
        let ModelError::Fallback(failures) = &error else {
            panic!("{error:?}");
        };
        assert_eq!(failures.failures().len(), 1);
        assert_eq!(error.status(), Some(400));
    }

    #[test]
    fn it_streams_when_one_of_its_models_does() {
        use crate::model::function::FunctionModel;
        use crate::model::test::TestModel;

        let whole = || FunctionModel::new(|_, _| ModelResponse::text("whole"));
        let streaming = FunctionModel::new_stream(|_, _| {
            vec![StreamEvent::Done(ModelResponse::text("streamed"))]
        });
        assert!(!whole().streams());
        assert!(!TestModel::new().streams());
        assert!(streaming.streams());
        assert!(!FallbackModel::new(whole()).or(TestModel::new()).streams());
        assert!(FallbackModel::new(whole()).or(streaming).streams());
    }

    #[test]
    fn each_error_has_its_class() {
        let cases = [
            (http(429, "Rate limit reached"), FailureClass::RateLimit),
            (http(500, "oops"), FailureClass::ServerError),
            (
                http(503, "The engine is currently overloaded"),
                FailureClass::Overloaded,
            ),
            (http(529, "Overloaded"), FailureClass::Overloaded),
            (http(400, "bad field"), FailureClass::ClientError),
            // The word alone does not make a request the user must fix a provider's fault.
            (
                http(400, "Invalid schema for function 'get_overloaded_nodes'"),
                FailureClass::ClientError,
            ),
            (http(408, "Request Timeout"), FailureClass::Transport),
            (http(404, "no such model"), FailureClass::ClientError),
            (
                ModelError::Auth {
                    provider: "p".into(),
                    status: 401,
                    message: "bad key".into(),
                    env_var: "K".into(),
                },
                FailureClass::Auth,
            ),
            (
                ModelError::InvalidResponse {
                    provider: "p".into(),
                    message: "not JSON".into(),
                },
                FailureClass::InvalidResponse,
            ),
            (
                stream(StreamFault::Disconnected, "reset"),
                FailureClass::Transport,
            ),
            (stream(StreamFault::Idle, "silent"), FailureClass::Transport),
            (
                stream(StreamFault::TimedOut, "late"),
                FailureClass::Transport,
            ),
            (
                stream(StreamFault::Corrupt, "bad chunk"),
                FailureClass::InvalidResponse,
            ),
            (
                stream(StreamFault::EndedEarly, "short"),
                FailureClass::InvalidResponse,
            ),
            (
                stream(StreamFault::Provider, "overloaded_error: Overloaded"),
                FailureClass::Overloaded,
            ),
            // A stream's error is classed by its code, as its HTTP status would be.
            (
                stream(StreamFault::Provider, "api_error: boom"),
                FailureClass::ServerError,
            ),
            (
                stream(StreamFault::Provider, "rate_limit_error: slow down"),
                FailureClass::RateLimit,
            ),
            (
                stream(StreamFault::Provider, "RESOURCE_EXHAUSTED: quota"),
                FailureClass::RateLimit,
            ),
            (
                stream(
                    StreamFault::Provider,
                    "the response failed: server_error: The server had an error.",
                ),
                FailureClass::ServerError,
            ),
            (
                stream(StreamFault::Provider, "invalid_request_error: too long"),
                FailureClass::Provider,
            ),
            // The code decides: a request the user must fix is theirs, whatever its words.
            (
                stream(
                    StreamFault::Provider,
                    "invalid_request_error: Invalid schema for function 'get_overloaded_nodes'",
                ),
                FailureClass::Provider,
            ),
            (
                stream(StreamFault::Provider, "DEADLINE_EXCEEDED: too slow"),
                FailureClass::ServerError,
            ),
            (
                stream(StreamFault::Provider, "The model is overloaded."),
                FailureClass::Overloaded,
            ),
            // Not streamed, a failed response is classed alike.
            (
                ModelError::InvalidResponse {
                    provider: "openai".into(),
                    message: "the response failed: server_error: The server had an error.".into(),
                },
                FailureClass::ServerError,
            ),
            (
                ModelError::InvalidResponse {
                    provider: "openai".into(),
                    message: "expected value at line 1 column 1".into(),
                },
                FailureClass::InvalidResponse,
            ),
            (ModelError::Truncated, FailureClass::Other),
            (ModelError::other("closure failed"), FailureClass::Other),
            (
                fallback_error(vec![ModelFailure {
                    model: "m".into(),
                    system: "s".into(),
                    error: http(429, "slow down"),
                }]),
                FailureClass::RateLimit,
            ),
        ];
        for (error, class) in cases {
            assert_eq!(FailureClass::of(&error), class, "{error}");
        }
    }
}
