//! The model side: the [`Model`] trait, the conversation types, and [`ModelRetry`].
//!
//! golem talks to a model through [`Model::request`]: the history so far and the
//! [`RequestParams`] (tool definitions, output mode) in, one [`ModelResponse`] out.
//! [`function::FunctionModel`] lets a closure play the model; [`test::TestModel`] exercises
//! every tool with generated arguments.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;

use crate::error::BoxError;
use crate::output::OutputMode;
use crate::tool::ToolDefinition;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(all(test, feature = "openai", feature = "anthropic"))]
mod decoder_props;
pub mod fallback;
pub mod function;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "http")]
pub mod http;
mod infer;
#[cfg(any(feature = "openai", feature = "gemini", feature = "anthropic"))]
mod json_out;
pub mod media;
mod message;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "http")]
mod provider;
pub mod test;

pub(crate) mod retry;
mod settings;
mod stream;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod tool_forms;

pub use infer::{ProviderError, infer};
pub use retry::ModelRetry;
pub use settings::{ModelSettings, ToolChoice};
pub use stream::{ModelStream, ResponseDelta, StreamEvent, StreamFault};

pub use media::{BinaryContent, DocumentUrl, ImageUrl, MediaKind, ToolContent, UserContent};
pub use message::{
    FinishReason, Message, ModelRequest, ModelResponse, ProviderPart, RequestPart, ResponsePart,
    RetryPromptPart, SystemPromptPart, TextPart, ThinkingPart, ToolArgs, ToolCallPart,
    ToolReturnPart, UserPromptPart,
};

pub use crate::usage::{RequestUsage, Usage};

/// A language model golem can ask for the next turn.
///
/// Object-safe and `Send + Sync`: an agent holds it as `Arc<dyn Model>` and runs can share it
/// across tasks. Transport retries (HTTP 429/5xx, timeouts) belong inside `request`; they are
/// never charged to the self-correction budgets.
pub trait Model: Send + Sync + 'static {
    /// Sends the history and returns the model's next response.
    ///
    /// The response's [`usage`](ModelResponse::usage) holds this request's tokens, as the
    /// provider reported them; the run counts the request itself.
    ///
    /// # Errors
    /// A [`ModelError`] when no usable response could be had.
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;

    /// Sends the history and streams the model's next response: [`StreamEvent::Delta`]s as
    /// they arrive, then [`StreamEvent::Done`] with the whole response, which must equal what
    /// [`request`](Self::request) would return for the same content.
    ///
    /// The default streams nothing but the whole response, from `request`, so every model
    /// can be driven as a stream. A transport retry is only allowed before the first item
    /// reached the caller.
    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        Box::pin(futures_util::stream::once(async move {
            self.request(messages, params).await.map(StreamEvent::Done)
        }))
    }

    /// Whether [`request_stream`](Self::request_stream) sends anything before the whole
    /// response: `true` (the default) for a model that streams deltas, `false` for one that
    /// answers only whole.
    ///
    /// Return `false` only when `request_stream` yields nothing but a
    /// [`StreamEvent::Done`] equal to what `request` returns, as the default
    /// `request_stream` does: a run streamed as events then never calls `request_stream`,
    /// and asks with [`request`](Self::request) instead. Its events are the same; its
    /// `chat` span says `gen_ai.request.stream = false`, since nothing was streamed.
    fn streams(&self) -> bool {
        true
    }

    /// The input tokens the provider counts for a request of `messages` with `params`,
    /// without making it: `Some` from a provider with a counting endpoint (Anthropic's
    /// `/v1/messages/count_tokens`), `None` (the default) from one without, for the run to
    /// estimate instead. Used by
    /// [`UsageLimits::count_request_tokens`](crate::usage::UsageLimits::count_request_tokens).
    ///
    /// # Errors
    /// A [`ModelError`] when the provider could not count.
    fn count_tokens<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<Option<u64>, ModelError>> {
        let _ = (messages, params);
        Box::pin(futures_util::future::ready(Ok(None)))
    }

    /// The model's name, as the provider knows it (`gpt-4o-mini`).
    fn name(&self) -> &str;

    /// The provider (`openai`, `anthropic`, `function`, `test`).
    fn system(&self) -> &str;
}

/// What the model needs to know besides the history: the tools it may call, how its
/// output must look, and the settings of this agent (or run). Built once per agent.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestParams {
    /// The agent's function tools.
    pub function_tools: Vec<ToolDefinition>,
    /// How structured output reaches the model.
    pub output_mode: OutputMode,
    /// The output tool(s), in [`OutputMode::Tool`]; empty otherwise.
    pub output_tools: Vec<ToolDefinition>,
    /// The output's JSON schema, in [`OutputMode::Native`].
    pub output_schema: Option<OutputSchema>,
    /// Whether plain text is an acceptable final answer.
    pub allow_text_output: bool,
    /// Settings for this request, merged by the provider over its own: each field set here
    /// replaces the provider's, `extra_body` entries are added (replacing those of the same
    /// key). The agent's settings, with a run's merged over them, go here
    /// (model < agent < run).
    pub settings: ModelSettings,
    /// The agent's instructions for this request, sent before the history as its system
    /// message. They are not part of the history: every request carries the instructions
    /// of the agent that sends it (see
    /// [`AgentBuilder::instructions`](crate::AgentBuilder::instructions)).
    pub instructions: Option<String>,
    /// Which sealed tool list the tools are, for the models that keep each tool's wire
    /// form.
    pub(crate) tools_stamp: ToolsStamp,
}

impl fmt::Debug for RequestParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestParams")
            .field("function_tools", &self.function_tools)
            .field("output_mode", &self.output_mode)
            .field("output_tools", &self.output_tools)
            .field("output_schema", &self.output_schema)
            .field("allow_text_output", &self.allow_text_output)
            .field("settings", &self.settings)
            .field("instructions", &self.instructions)
            .finish_non_exhaustive()
    }
}

/// The mark of a tool list sealed inside golem (an agent's, a run's), which nothing changes
/// after: a number no other list has. A model that keeps each tool's wire form (see
/// `ToolForms`) then knows the list it saw last without comparing each definition again.
/// A copy of the parameters is unmarked, since its tools may change: cloning gives
/// [`ToolsStamp::NONE`].
pub(crate) struct ToolsStamp(u64);

impl ToolsStamp {
    /// No mark: the tools are compared one by one.
    pub(crate) const NONE: ToolsStamp = ToolsStamp(0);

    /// A mark no other list has.
    pub(crate) fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ToolsStamp(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The mark, if any.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic", feature = "gemini")),
        allow(dead_code)
    )]
    pub(crate) fn get(&self) -> Option<u64> {
        (self.0 != 0).then_some(self.0)
    }
}

impl Clone for ToolsStamp {
    fn clone(&self) -> Self {
        ToolsStamp::NONE
    }
}

/// Marks are not part of what parameters say.
impl PartialEq for ToolsStamp {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl RequestParams {
    /// Parameters for plain text output and the given function tools.
    pub fn text(function_tools: Vec<ToolDefinition>) -> Self {
        RequestParams {
            function_tools,
            output_mode: OutputMode::Tool,
            output_tools: Vec::new(),
            output_schema: None,
            allow_text_output: true,
            settings: ModelSettings::default(),
            instructions: None,
            tools_stamp: ToolsStamp::NONE,
        }
    }

    /// Function tools and output tools together, function tools first.
    pub fn all_tools(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.function_tools.iter().chain(&self.output_tools)
    }
}

/// A JSON schema for native structured output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    /// A name for the schema (`final_result`).
    pub name: String,
    /// What the output is.
    pub description: Option<String>,
    /// The schema; always an object schema.
    pub schema: serde_json::Value,
}

/// Why a model request produced no usable response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an HTTP error status (after the transport's retries, for
    /// 408, 429 and 5xx).
    #[error("{provider} answered HTTP {status} after {attempts} attempt(s): {message}")]
    Http {
        /// The provider.
        provider: String,
        /// The status code.
        status: u16,
        /// The provider's error message.
        message: String,
        /// How many times the request was sent.
        attempts: u32,
    },
    /// The provider refused the credentials (HTTP 401 or 403, or a 400 that says the key is
    /// invalid, as Google's APIs answer a wrong key).
    #[error("{provider} refused the credentials (HTTP {status}): {message}; check {env_var}")]
    Auth {
        /// The provider.
        provider: String,
        /// The status code.
        status: u16,
        /// The provider's error message, with the key redacted.
        message: String,
        /// The environment variable the key is read from.
        env_var: String,
    },
    /// The request did not get through (connection refused or reset, timeout), after the
    /// transport's retries.
    #[error("the request to {provider} failed after {attempts} attempt(s)")]
    Transport {
        /// The provider.
        provider: String,
        /// How many times the request was sent.
        attempts: u32,
        /// The transport error.
        #[source]
        source: BoxError,
    },
    /// The provider's response could not be understood.
    #[error("{provider} sent a response golem cannot read: {message}")]
    InvalidResponse {
        /// The provider.
        provider: String,
        /// What is wrong with it.
        message: String,
    },
    /// A response stream that had started failed before the response was complete: the
    /// connection broke, the stream ended early or stalled, a chunk was corrupt, the
    /// provider sent an error event, or the answer was no event stream at all. Never
    /// retried by the transport (see the "Streaming" section of `golem::model::http`); what had
    /// arrived reached the caller as deltas only, never as a response.
    #[error("the response stream from {provider} failed ({fault}): {message}")]
    Stream {
        /// The provider.
        provider: String,
        /// What went wrong.
        fault: StreamFault,
        /// The details, redacted.
        message: String,
        /// The transport error, for a broken connection or a timeout.
        #[source]
        source: Option<BoxError>,
    },
    /// The response hit the output token limit before it was complete (a structured answer
    /// cut off this way cannot be decoded). The response is the last message of the run's
    /// history. The message says what to raise:
    /// [`ModelSettings::max_tokens`], on the model, the agent or the run.
    #[error(
        "the response was cut off at the output token limit; raise `max_tokens` \
         (ModelSettings::max_tokens, on the model, the agent or the run) so the whole answer fits"
    )]
    Truncated,
    /// The provider's content filter withheld the response. The response is the last
    /// message of the run's history.
    #[error("the provider's content filter withheld the response")]
    ContentFilter,
    /// A request part holds content the provider does not take (an image kind, a size or
    /// a place it refuses, audio where it takes none). Checked before anything is sent.
    #[error("{provider} cannot take {content} in message {message}, part {part}: {reason}")]
    UnsupportedContent {
        /// The provider.
        provider: String,
        /// The index of the message in the history sent.
        message: usize,
        /// The index of the part in that message.
        part: usize,
        /// What the content is, without its bytes (`image/bmp bytes (1.2 KB)`).
        content: String,
        /// Why the provider refuses it, and what it takes instead.
        reason: String,
    },
    /// Any other failure, e.g. from a [`FunctionModel`](function::FunctionModel) closure.
    #[error(transparent)]
    Other(BoxError),
    /// A [`FallbackModel`](fallback::FallbackModel) has no response: each model it tried
    /// and how it failed, the last one being why it stopped.
    #[error(transparent)]
    Fallback(Box<fallback::FallbackError>),
}

impl ModelError {
    /// Wraps any error.
    pub fn other(error: impl Into<BoxError>) -> Self {
        ModelError::Other(error.into())
    }

    /// The fault, when a response stream failed.
    ///
    /// ```
    /// use golem::model::{ModelError, StreamFault};
    ///
    /// let error = ModelError::Stream {
    ///     provider: "openai".into(),
    ///     fault: StreamFault::EndedEarly,
    ///     message: "no [DONE]".into(),
    ///     source: None,
    /// };
    /// assert_eq!(error.stream_fault(), Some(StreamFault::EndedEarly));
    /// assert_eq!(
    ///     error.to_string(),
    ///     "the response stream from openai failed (ended early): no [DONE]"
    /// );
    /// ```
    pub fn stream_fault(&self) -> Option<StreamFault> {
        match self {
            ModelError::Stream { fault, .. } => Some(*fault),
            ModelError::Fallback(error) => error.last().stream_fault(),
            _ => None,
        }
    }

    /// The HTTP status the provider answered with, if any.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Http { status, .. } | ModelError::Auth { status, .. } => Some(*status),
            ModelError::Fallback(error) => error.last().status(),
            _ => None,
        }
    }

    /// Whether the request timed out, or its stream went idle for too long.
    pub fn is_timeout(&self) -> bool {
        match self {
            ModelError::Stream { fault, .. } => {
                matches!(fault, StreamFault::Idle | StreamFault::TimedOut)
            }
            #[cfg(feature = "http")]
            ModelError::Transport { source, .. } => {
                source
                    .downcast_ref::<reqwest::Error>()
                    .is_some_and(reqwest::Error::is_timeout)
                    || source.is::<http::TimedOut>()
            }
            ModelError::Fallback(error) => error.last().is_timeout(),
            _ => false,
        }
    }

    /// Whether the same request may succeed when sent again later: the transport failed or
    /// timed out, or the provider answered HTTP 408, 429 or 5xx (golem's transport retries
    /// these already, within its own policy; a durable engine retries the step after that).
    /// A refused request (another 4xx, the credentials), an unreadable or cut-off response,
    /// a content filter and any other error are not.
    ///
    /// ```
    /// use golem::model::ModelError;
    ///
    /// let overloaded = ModelError::Http {
    ///     provider: "openai".into(),
    ///     status: 529,
    ///     message: "overloaded".into(),
    ///     attempts: 3,
    /// };
    /// assert!(overloaded.is_transient());
    /// assert!(!ModelError::Truncated.is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        match self {
            ModelError::Transport { .. } => true,
            ModelError::Http { status, .. } => matches!(status, 408 | 429 | 500..=599),
            // A fallback model that ran out of models: as transient as its last failure.
            ModelError::Fallback(error) => error.last().is_transient(),
            _ => false,
        }
    }
}

/// Implements [`Model`] for a smart pointer to a model by forwarding every method, the
/// provided ones too, to the model it points to.
macro_rules! forward_model {
    ($(#[$attr:meta])* $pointer:ident) => {
        $(#[$attr])*
        impl<M: Model + ?Sized> Model for $pointer<M> {
            fn request<'a>(
                &'a self,
                messages: &'a [Message],
                params: &'a RequestParams,
            ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
                (**self).request(messages, params)
            }

            fn request_stream<'a>(
                &'a self,
                messages: &'a [Message],
                params: &'a RequestParams,
            ) -> ModelStream<'a> {
                (**self).request_stream(messages, params)
            }

            fn streams(&self) -> bool {
                (**self).streams()
            }

            fn count_tokens<'a>(
                &'a self,
                messages: &'a [Message],
                params: &'a RequestParams,
            ) -> BoxFuture<'a, Result<Option<u64>, ModelError>> {
                (**self).count_tokens(messages, params)
            }

            fn name(&self) -> &str {
                (**self).name()
            }

            fn system(&self) -> &str {
                (**self).system()
            }
        }
    };
}

forward_model! {
    /// A boxed model is a model: `Box<dyn Model>` chosen at run time (from the environment,
    /// say) goes wherever a model goes.
    Box
}

forward_model! {
    /// A shared model is a model: one client in several agents.
    Arc
}

#[cfg(test)]
mod tests {
    use futures_util::{FutureExt, StreamExt};

    use super::*;

    /// A model whose every method, the provided `request_stream` too, answers something no
    /// other method does, so a pointer that forgot to forward one answers differently.
    struct EveryMethod;

    impl Model for EveryMethod {
        fn request<'a>(
            &'a self,
            _messages: &'a [Message],
            _params: &'a RequestParams,
        ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
            futures_util::future::ready(Ok(ModelResponse::text("requested"))).boxed()
        }

        fn request_stream<'a>(
            &'a self,
            _messages: &'a [Message],
            _params: &'a RequestParams,
        ) -> ModelStream<'a> {
            let done = StreamEvent::Done(ModelResponse::text("streamed"));
            Box::pin(futures_util::stream::iter([Ok(done)]))
        }

        fn streams(&self) -> bool {
            false
        }

        fn name(&self) -> &str {
            "every-method"
        }

        fn system(&self) -> &str {
            "every-system"
        }
    }

    fn assert_forwards(model: &dyn Model) {
        let params = RequestParams::text(Vec::new());
        let response = model
            .request(&[], &params)
            .now_or_never()
            .expect("ready")
            .expect("answers");
        assert_eq!(response.text_content(), "requested");
        let events: Vec<_> = model
            .request_stream(&[], &params)
            .collect::<Vec<_>>()
            .now_or_never()
            .expect("ready");
        assert!(matches!(
            events.as_slice(),
            [Ok(StreamEvent::Done(response))] if response.text_content() == "streamed"
        ));
        assert!(!model.streams());
        assert_eq!(model.name(), "every-method");
        assert_eq!(model.system(), "every-system");
    }

    #[test]
    fn boxed_and_shared_models_forward_every_method() {
        assert_forwards(&Box::new(EveryMethod));
        assert_forwards(&Arc::new(EveryMethod));
        let boxed: Box<dyn Model> = Box::new(EveryMethod);
        assert_forwards(&boxed);
        let shared: Arc<dyn Model> = Arc::new(EveryMethod);
        assert_forwards(&shared);
        assert_forwards(&Box::new(Arc::clone(&shared)));
    }
}
