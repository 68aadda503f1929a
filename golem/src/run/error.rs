//! [`RunError`]: why a run failed, where, and everything it had produced until then.

use std::error::Error as StdError;
use std::fmt;

use super::state::RunState;
use super::stop::Stopped;
use crate::error::{BoxError, Exhausted, Stage};
use crate::model::{Message, ModelError, ModelRequest, ModelRetry};
use crate::usage::{LimitExceeded, Usage};

/// A failed run.
///
/// It names the [`Stage`] and, at the tool stage, the tool; [`source`](StdError::source)
/// is the cause, intact (the [`ModelRetry`] whose budget ran out, the tool's own error, the
/// [`ModelError`], the [`LimitExceeded`], the [`Stopped`]). It carries the run's whole
/// [`state`](Self::state), so nothing the run produced is lost: the messages and the usage up
/// to the failure, and the retry counters. The history is what was exchanged: after an
/// exhausted budget it ends with the model's last response, and the feedback the run would
/// have sent next waits in [`pending`](Self::pending), which
/// [`Agent::resume`](crate::Agent::resume) sends. After any other failure every call in the
/// history is answered.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::{Agent, ModelRetry, RunError};
/// use std::error::Error;
///
/// // A model that never gets the output right, and an agent with output retries off.
/// let model = FunctionModel::new(|_, _| ModelResponse::text("maybe").with_usage(10, 1));
/// let agent = Agent::<(), String>::builder(model)
///     .output_validator(|_ctx, text: String| async move {
///         if text == "maybe" {
///             return Err(ModelRetry::new("answer yes or no"));
///         }
///         Ok(text)
///     })
///     .build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let error: RunError = agent.run("Is it raining?", ()).await.unwrap_err();
/// assert!(error.is_decode());
/// assert_eq!(error.to_string(), "the output was rejected and output retries are off");
/// assert_eq!(error.source().unwrap().to_string(), "answer yes or no");
/// assert_eq!(error.usage().requests, 1);
/// assert_eq!(error.messages().len(), 2); // the prompt and the rejected answer
/// assert!(error.pending().is_some()); // the feedback it would have sent
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct RunError(Box<Inner>);

struct Inner {
    stage: Stage,
    tool_name: Option<String>,
    exhausted: Option<Exhausted>,
    source: BoxError,
    state: RunState,
    interrupted: Vec<InterruptedCall>,
}

/// A call that was running when its run was stopped, and ended with the stop, in an error:
/// an agent called as a tool or handed the conversation stops gracefully with its caller,
/// and its [`RunError`], with its whole state, is the error (or in its chain, for
/// [`OnAgentError::Retry`](crate::tool::OnAgentError::Retry)).
///
/// In the stopped run's history the call is answered as not finished; what the agent spent
/// is in the run's usage.
#[derive(Debug)]
#[non_exhaustive]
pub struct InterruptedCall {
    /// The tool (or output function) called.
    pub tool_name: String,
    /// The call's id.
    pub tool_call_id: String,
    /// How the call ended.
    pub error: BoxError,
}

impl InterruptedCall {
    /// The stopped run of the agent the call ran, found in the error's chain.
    pub fn agent_error(&self) -> Option<&RunError> {
        agent_error_in(&*self.error)
    }
}

/// The stopped run of an agent, found in `error`'s chain: the error a call that ran an agent
/// ended with.
pub(crate) fn agent_error_in<'e>(error: &'e (dyn StdError + 'static)) -> Option<&'e RunError> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(run_error) = error.downcast_ref::<RunError>() {
            return Some(run_error);
        }
        current = error.source();
    }
    None
}

impl RunError {
    pub(crate) fn new(
        stage: Stage,
        tool_name: Option<String>,
        exhausted: Option<Exhausted>,
        source: BoxError,
        state: RunState,
    ) -> Self {
        RunError(Box::new(Inner {
            stage,
            tool_name,
            exhausted,
            source,
            state,
            interrupted: Vec::new(),
        }))
    }

    /// The same error, with the calls that ended with the stop.
    pub(crate) fn with_interrupted(mut self, interrupted: Vec<InterruptedCall>) -> Self {
        self.0.interrupted = interrupted;
        self
    }

    /// At the [`Stage::Stopped`] stage, the calls that were running and ended with the stop
    /// in an error, in the order they ended: an agent the run called stops gracefully with
    /// it, and its own [`RunError`] (its messages, usage and state) is here
    /// ([`InterruptedCall::agent_error`]). Empty for other failures, and for calls that were
    /// dropped unfinished.
    pub fn interrupted(&self) -> &[InterruptedCall] {
        &self.0.interrupted
    }

    /// Where the run failed.
    pub fn stage(&self) -> Stage {
        self.0.stage
    }

    /// The tool that failed or was rejected past its budget (the name the model used, for
    /// unknown tools).
    pub fn tool_name(&self) -> Option<&str> {
        self.0.tool_name.as_deref()
    }

    /// The retry budget that ran out, if that is why the run failed.
    pub fn exhausted(&self) -> Option<Exhausted> {
        self.0.exhausted
    }

    /// Every message exchanged up to the failure.
    pub fn messages(&self) -> &[Message] {
        self.0.state.messages()
    }

    /// Takes the messages, e.g. to continue the conversation with a new prompt.
    pub fn into_messages(self) -> Vec<Message> {
        self.0.state.transcript.into_parts().0
    }

    /// The request the run would have sent next and did not: the feedback of a rejection
    /// whose budget ran out.
    pub fn pending(&self) -> Option<&ModelRequest> {
        self.0.state.pending()
    }

    /// The usage up to the failure.
    pub fn usage(&self) -> &Usage {
        self.0.state.usage()
    }

    /// The run's whole state at the failure: messages, pending feedback, usage, retry
    /// counters, calls awaiting approval.
    pub fn state(&self) -> &RunState {
        &self.0.state
    }

    /// Takes the run's state, to [`resume`](crate::Agent::resume) it (e.g. with a bigger
    /// budget, or after deciding on calls awaiting approval).
    pub fn into_state(self) -> RunState {
        self.0.state
    }

    /// Why the run was stopped, at the [`Stage::Stopped`] stage.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.0.source.downcast_ref()
    }

    /// The cause.
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.0.source
    }

    /// The [`ModelRetry`] in the cause's chain: the rejection whose budget ran out.
    pub fn model_retry(&self) -> Option<&ModelRetry> {
        ModelRetry::find(&*self.0.source)
    }

    /// The model error, at the model stage.
    pub fn model_error(&self) -> Option<&ModelError> {
        self.0.source.downcast_ref()
    }

    /// The limit that was reached, at the limit stage.
    pub fn limit(&self) -> Option<&LimitExceeded> {
        self.0.source.downcast_ref()
    }

    /// Whether the model request failed.
    pub fn is_model(&self) -> bool {
        self.0.stage == Stage::Model
    }

    /// Whether the output failed to decode or validate.
    pub fn is_decode(&self) -> bool {
        self.0.stage == Stage::Decode
    }

    /// Whether a tool failed.
    pub fn is_tool(&self) -> bool {
        self.0.stage == Stage::Tool
    }

    /// Whether a limit was reached.
    pub fn is_limit(&self) -> bool {
        self.0.stage == Stage::Limit
    }

    /// Whether the run was stopped by its cancellation token or its deadline.
    pub fn is_stopped(&self) -> bool {
        self.0.stage == Stage::Stopped
    }

    /// Whether a retry budget ran out (as opposed to a terminal error).
    pub fn is_retries_exhausted(&self) -> bool {
        self.0.exhausted.is_some()
    }
}

impl fmt::Debug for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunError")
            .field("stage", &self.0.stage)
            .field("tool_name", &self.0.tool_name)
            .field("exhausted", &self.0.exhausted)
            .field("source", &self.0.source)
            .field("messages", &self.0.state.messages().len())
            .field("usage", self.0.state.usage())
            .field("interrupted", &self.0.interrupted)
            .finish()
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.0;
        let tool = inner.tool_name.as_deref().unwrap_or("?");
        match (inner.stage, inner.exhausted) {
            (Stage::Decode, Some(Exhausted { limit: 0, .. })) => {
                f.write_str("the output was rejected and output retries are off")
            }
            (Stage::Decode, Some(Exhausted { rejections, limit })) => write!(
                f,
                "the output was rejected {rejections} times, over its retry budget of {limit}"
            ),
            (Stage::Decode, None) => f.write_str("the output could not be decoded"),
            (Stage::Tool, Some(Exhausted { limit: 0, .. })) => {
                write!(f, "tool `{tool}` was rejected and its retries are off")
            }
            (Stage::Tool, Some(Exhausted { rejections, limit })) => write!(
                f,
                "tool `{tool}` was rejected {rejections} times, over its retry budget of {limit}"
            ),
            (Stage::Tool, None) => write!(f, "tool `{tool}` failed"),
            (Stage::Model, _) => f.write_str("the model request failed"),
            (Stage::Limit, _) => f.write_str("the run reached a limit"),
            (Stage::Input, _) => f.write_str("the run's input is invalid"),
            (Stage::Stopped, _) => f.write_str("the run was stopped"),
            (Stage::Approval, _) => f.write_str("the run paused for approval"),
        }
    }
}

impl StdError for RunError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0.source)
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<RunError>();
};
