//! [`FunctionModel`]: a closure plays the model.
//!
//! For scripted tests and offline examples: the closure sees the history and the
//! [`RequestParams`] (tool definitions, output mode) and returns the next response.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::{Message, Model, ModelError, ModelResponse, ModelStream, RequestParams, StreamEvent};

type Respond = dyn Fn(&[Message], &RequestParams) -> Answer + Send + Sync;

/// What a [`FunctionModel`]'s closure gives: the response at once, or a future of it.
#[allow(
    clippy::large_enum_variant,
    reason = "returned and matched at once, never stored: boxing the response would cost the allocation this saves"
)]
enum Answer {
    Ready(Result<ModelResponse, ModelError>),
    Later(BoxFuture<'static, Result<ModelResponse, ModelError>>),
}

/// A model whose answers come from a closure.
///
/// The closure returns a [`ModelResponse`] or a `Result<ModelResponse, ModelError>`. Each
/// response counts as one request; its tokens are what the closure set with
/// [`ModelResponse::with_usage`]. Cheap to clone.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::{Message, ModelResponse};
/// use golem::Agent;
///
/// let model = FunctionModel::new(|messages: &[Message], params| {
///     assert!(params.function_tools.is_empty());
///     ModelResponse::text(format!("{} message(s) so far", messages.len())).with_usage(12, 4)
/// });
/// let agent = Agent::<(), String>::builder(model).build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.run("Hello", ()).await?;
/// assert_eq!(result.output, "1 message(s) so far");
/// assert_eq!(result.usage.input_tokens, 12);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FunctionModel {
    respond: Arc<Respond>,
    /// For a model made with [`new_stream`](FunctionModel::new_stream): the scripted items.
    stream: Option<Arc<RespondStream>>,
    name: String,
}

type RespondStream =
    dyn Fn(&[Message], &RequestParams) -> Vec<Result<StreamEvent, ModelError>> + Send + Sync;

impl FunctionModel {
    /// A model that answers with `respond(messages, params)`.
    pub fn new<F, R>(respond: F) -> Self
    where
        F: Fn(&[Message], &RequestParams) -> R + Send + Sync + 'static,
        R: IntoModelResult,
    {
        FunctionModel {
            respond: Arc::new(move |messages, params| {
                Answer::Ready(respond(messages, params).into_model_result())
            }),
            stream: None,
            name: "function".to_owned(),
        }
    }

    /// A model that answers with `respond(messages, params).await`; the closure gets its
    /// own copies, so the future can outlive the call.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    ///
    /// let model = FunctionModel::new_async(|messages, _params| async move {
    ///     tokio::task::yield_now().await;
    ///     ModelResponse::text(format!("{} message(s)", messages.len()))
    /// });
    /// # let _ = model;
    /// ```
    pub fn new_async<F, Fut, R>(respond: F) -> Self
    where
        F: Fn(Vec<Message>, RequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoModelResult,
    {
        FunctionModel {
            respond: Arc::new(move |messages, params| {
                let future = respond(messages.to_vec(), params.clone());
                Answer::Later(async move { future.await.into_model_result() }.boxed())
            }),
            stream: None,
            name: "function".to_owned(),
        }
    }

    /// A model that streams the items `respond(messages, params)` scripts: deltas, then
    /// [`StreamEvent::Done`] with the whole response (an `Err` item fails the stream there).
    /// Its [`request`](Model::request) returns the `Done` response, as a provider's would.
    ///
    /// ```
    /// use futures_util::StreamExt;
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{ModelResponse, ResponseDelta, StreamEvent};
    /// use golem::{Agent, RunEvent};
    ///
    /// let model = FunctionModel::new_stream(|_, _| {
    ///     let text = |text: &str| StreamEvent::Delta(ResponseDelta::Text { part: 0, text: text.into() });
    ///     vec![text("Hel"), text("lo!"), StreamEvent::Done(ModelResponse::text("Hello!"))]
    /// });
    /// let agent = Agent::<(), String>::builder(model).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let mut events = agent.run_stream("Hi", ());
    /// let mut text = String::new();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::Delta { delta: ResponseDelta::Text { text: more, .. }, .. } = event? {
    ///         text.push_str(&more);
    ///     }
    /// }
    /// assert_eq!(text, "Hello!");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_stream<F, I>(respond: F) -> Self
    where
        F: Fn(&[Message], &RequestParams) -> Vec<I> + Send + Sync + 'static,
        I: IntoStreamItem,
    {
        let respond = Arc::new(move |messages: &[Message], params: &RequestParams| {
            respond(messages, params)
                .into_iter()
                .map(IntoStreamItem::into_stream_item)
                .collect::<Vec<_>>()
        });
        let whole = Arc::clone(&respond);
        FunctionModel {
            respond: Arc::new(move |messages, params| {
                let done = whole(messages, params)
                    .into_iter()
                    .find_map(|item| match item {
                        Ok(StreamEvent::Done(response)) => Some(Ok(response)),
                        Err(error) => Some(Err(error)),
                        Ok(_) => None,
                    })
                    .unwrap_or_else(|| Err(ModelError::other(INCOMPLETE)));
                Answer::Ready(done)
            }),
            stream: Some(respond),
            name: "function".to_owned(),
        }
    }

    /// Sets the model name reported in traces and results.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionModel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Model for FunctionModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        match (self.respond)(messages, params) {
            Answer::Ready(result) => futures_util::future::ready(result).boxed(),
            Answer::Later(future) => future,
        }
    }

    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let Some(stream) = &self.stream else {
            // The whole response as the one item, boxed once.
            return match (self.respond)(messages, params) {
                Answer::Ready(result) => Box::pin(futures_util::stream::iter(Some(
                    result.map(StreamEvent::Done),
                ))),
                Answer::Later(future) => Box::pin(futures_util::stream::once(async move {
                    future.await.map(StreamEvent::Done)
                })),
            };
        };
        Box::pin(futures_util::stream::iter(stream(messages, params)))
    }

    /// Whether it was built with a stream function ([`FunctionModel::new_stream`]).
    fn streams(&self) -> bool {
        self.stream.is_some()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn system(&self) -> &str {
        "function"
    }
}

const INCOMPLETE: &str = "the scripted stream has no `StreamEvent::Done`";

/// What a streaming [`FunctionModel`] closure may script: an event, or an error that fails
/// the stream.
pub trait IntoStreamItem: Send + 'static {
    /// The item.
    fn into_stream_item(self) -> Result<StreamEvent, ModelError>;
}

impl IntoStreamItem for StreamEvent {
    fn into_stream_item(self) -> Result<StreamEvent, ModelError> {
        Ok(self)
    }
}

impl IntoStreamItem for Result<StreamEvent, ModelError> {
    fn into_stream_item(self) -> Result<StreamEvent, ModelError> {
        self
    }
}

/// What a [`FunctionModel`] closure may return.
pub trait IntoModelResult: Send + 'static {
    /// The response, or why there is none.
    ///
    /// # Errors
    /// The closure's [`ModelError`].
    fn into_model_result(self) -> Result<ModelResponse, ModelError>;
}

impl IntoModelResult for ModelResponse {
    fn into_model_result(self) -> Result<ModelResponse, ModelError> {
        Ok(self)
    }
}

impl IntoModelResult for Result<ModelResponse, ModelError> {
    fn into_model_result(self) -> Result<ModelResponse, ModelError> {
        self
    }
}
