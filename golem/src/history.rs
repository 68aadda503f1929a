//! History processors: what a request sends of a long conversation.
//!
//! A [`HistoryProcessor`] rewrites the messages the next request would send into the ones it
//! does send: the last turns only, old tool outputs cut, whatever fits a token budget. The
//! run keeps the whole history (in [`RunResult::messages`](crate::RunResult::messages), the
//! saved [`RunState`](crate::RunState) and every error); processing changes only what is
//! sent, again before each request, from the whole history. What a processor returns is
//! checked before it is sent: a history that starts with anything but a request, ends in
//! anything but one, or separates a tool call from its answer fails the run at the
//! [`Stage::Input`](crate::Stage::Input) stage with a [`HistoryError`] naming the processor,
//! so no processor can send a history a provider refuses.
//!
//! ```
//! use golem::history::{self, KeepLastTurns};
//! use golem::model::function::FunctionModel;
//! use golem::model::{Message, ModelResponse};
//! use golem::Agent;
//!
//! // A model that says how many messages it was sent.
//! let model = FunctionModel::new(|messages: &[Message], _| {
//!     ModelResponse::text(messages.len().to_string())
//! });
//! let agent = Agent::<(), String>::builder(model)
//!     .history_processor(KeepLastTurns::new(1))
//!     .build()?;
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let first = agent.run("Hi", ()).await?;
//! let second = agent.run_with_history(first.messages, "And now?", ()).await?;
//! assert_eq!(second.output, "1"); // only the last turn was sent
//! assert_eq!(second.messages.len(), 4); // and the whole conversation kept
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::future::Future;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::Message;

mod builtin;
mod check;
mod estimate;
mod summary;

pub use builtin::{FitTokens, KeepLastTurns, TrimToolOutputs};
pub(crate) use check::check;
pub use estimate::{MEDIA_PART_TOKENS, estimate_request_tokens, estimate_tokens};
pub use summary::Summarize;
pub(crate) use summary::{Plan, Summary};

/// Rewrites the messages a request would send into the ones it sends.
///
/// Implement it for a processor with state or settings of its own; [`from_fn`] and
/// [`from_async_fn`] make one of a closure. A processor gets the whole history each time
/// (ending in the request about to be sent), borrowed, and returns what to send: the same
/// messages, borrowed, when it changes nothing (most requests of a conversation within its
/// budget cost no copy), or messages of its own. It should give the same answer for the
/// same history and context, so a resumed run sends the same. A durable run does not rely
/// on it: unless every processor of the agent says it is
/// [deterministic](Self::deterministic), what they send is a journal step of its own, and a
/// replay takes it from the journal instead of running them again.
///
/// ```
/// use std::borrow::Cow;
///
/// use golem::history::HistoryProcessor;
/// use golem::model::Message;
/// use golem::{BoxError, BoxFuture, RunContext};
///
/// /// Sends the last `max` messages (a cut that separates a call from its answer fails the
/// /// run, typed, before anything is sent).
/// struct AtMost {
///     max: usize,
/// }
///
/// impl<Deps: Send + Sync + 'static> HistoryProcessor<Deps> for AtMost {
///     fn name(&self) -> &str {
///         "at_most"
///     }
///
///     fn process<'a>(
///         &'a self,
///         _ctx: &'a RunContext<Deps>,
///         messages: Cow<'a, [Message]>,
///     ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>> {
///         Box::pin(async move {
///             if messages.len() <= self.max {
///                 return Ok(messages); // unchanged, and not copied
///             }
///             Ok(Cow::Owned(messages[messages.len() - self.max..].to_vec()))
///         })
///     }
/// }
/// ```
pub trait HistoryProcessor<Deps>: Send + Sync + 'static {
    /// The name errors give for this processor.
    fn name(&self) -> &str;

    /// Whether what this processor returns depends on nothing but the messages and the run
    /// context it is given: no clock, no I/O, no state of its own that changes between
    /// requests. `false` unless the processor says otherwise.
    ///
    /// In a durable run ([`AgentRun::finish_in`](crate::AgentRun::finish_in)), what the
    /// processors send is the journal step `history:{turn}` unless every processor of the
    /// agent is deterministic: a replay then takes the messages, or the failure, from the
    /// journal, so it decides what the first execution decided (the request's token limit,
    /// a processor's error) whatever a processor would answer now. The built-in processors
    /// are deterministic; those made by [`from_fn`] and [`from_async_fn`] are not presumed
    /// to be.
    fn deterministic(&self) -> bool {
        false
    }

    /// What to send of `messages`.
    ///
    /// # Errors
    /// Any error fails the run at the [`Stage::Input`](crate::Stage::Input) stage, as a
    /// [`HistoryError::Failed`] naming this processor.
    fn process<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        messages: Cow<'a, [Message]>,
    ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>>;
}

/// Why a history processor failed a run: the cause of a [`RunError`](crate::RunError) at
/// the [`Stage::Input`](crate::Stage::Input) stage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The processor returned a history no provider accepts.
    #[error("history processor `{processor}` returned a history that cannot be sent: {problem}")]
    Invalid {
        /// The processor's name.
        processor: String,
        /// What is wrong with the history.
        problem: String,
    },
    /// The processor itself failed.
    #[error("history processor `{processor}` failed")]
    Failed {
        /// The processor's name.
        processor: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
}

/// A processor named `name` that runs `process` on each request's messages (an owned copy
/// of them: for processors that change what they are given; implement
/// [`HistoryProcessor`] to pass unchanged messages through without a copy).
///
/// ```
/// use golem::history;
/// use golem::model::{Message, RequestPart};
/// use golem::RunContext;
///
/// // Drops the system prompts a history from another agent opens with.
/// let processor = history::from_fn("no_system_prompt", |_ctx: &RunContext<()>, mut messages: Vec<Message>| {
///     if let Some(Message::Request(first)) = messages.first_mut() {
///         first.parts.retain(|part| !matches!(part, RequestPart::SystemPrompt(_)));
///     }
///     messages
/// });
/// # let _ = processor;
/// ```
pub fn from_fn<Deps, F>(name: impl Into<String>, process: F) -> impl HistoryProcessor<Deps>
where
    Deps: Send + Sync + 'static,
    F: Fn(&RunContext<Deps>, Vec<Message>) -> Vec<Message> + Send + Sync + 'static,
{
    FnProcessor {
        name: name.into(),
        process: move |ctx: &RunContext<Deps>, messages| {
            futures_util::future::ready(Ok(process(ctx, messages))).boxed()
        },
    }
}

/// A processor named `name` that runs the async `process` on each request's messages (a
/// lookup, a model call); its error fails the run.
pub fn from_async_fn<Deps, F, Fut, E>(
    name: impl Into<String>,
    process: F,
) -> impl HistoryProcessor<Deps>
where
    Deps: Send + Sync + 'static,
    F: Fn(RunContext<Deps>, Vec<Message>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Message>, E>> + Send + 'static,
    E: Into<BoxError>,
{
    FnProcessor {
        name: name.into(),
        process: move |ctx: &RunContext<Deps>, messages| {
            let future = process(ctx.clone(), messages);
            async move { future.await.map_err(Into::into) }.boxed()
        },
    }
}

/// A processor made of a closure.
struct FnProcessor<F> {
    name: String,
    process: F,
}

impl<Deps, F> HistoryProcessor<Deps> for FnProcessor<F>
where
    Deps: Send + Sync + 'static,
    F: for<'a> Fn(
            &'a RunContext<Deps>,
            Vec<Message>,
        ) -> BoxFuture<'static, Result<Vec<Message>, BoxError>>
        + Send
        + Sync
        + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn process<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        messages: Cow<'a, [Message]>,
    ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>> {
        let future = (self.process)(ctx, messages.into_owned());
        async move { future.await.map(Cow::Owned) }.boxed()
    }
}

/// Runs `processors` in order on `messages`, checking what each returns (unless it returned
/// its input unchanged).
pub(crate) async fn process<'a, Deps: 'static>(
    processors: &'a [std::sync::Arc<dyn HistoryProcessor<Deps>>],
    ctx: &'a RunContext<Deps>,
    mut messages: Cow<'a, [Message]>,
) -> Result<Cow<'a, [Message]>, HistoryError> {
    for processor in processors {
        let input = (messages.as_ptr().addr(), messages.len());
        let borrowed = matches!(messages, Cow::Borrowed(_));
        messages =
            processor
                .process(ctx, messages)
                .await
                .map_err(|source| HistoryError::Failed {
                    processor: processor.name().to_owned(),
                    source,
                })?;
        let unchanged = borrowed
            && matches!(messages, Cow::Borrowed(_))
            && (messages.as_ptr().addr(), messages.len()) == input;
        if !unchanged {
            check(&messages).map_err(|problem| HistoryError::Invalid {
                processor: processor.name().to_owned(),
                problem,
            })?;
        }
    }
    Ok(messages)
}
