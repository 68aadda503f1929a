//! The run as a value the caller owns: [`AgentRun`], driven one [`Step`] at a time,
//! watched through [`RunEvent`]s, saved as a [`RunState`] and stopped by drop, token or
//! deadline.
//!
//! There is one loop: [`AgentRun::step`]. [`Agent::run`] calls it until the run ends,
//! [`AgentRun::events`] calls it while yielding the events each step produces, and a caller
//! can call it by hand.

use tracing::field;

use crate::agent::{Agent, RunResult};
use crate::model::{Message, Model, RequestPart, UserPromptPart};
use crate::output::Output;

mod agent_run;
mod budget;
mod decision;
mod error;
pub(crate) mod event;
mod failure;
mod handle;
mod journal;
mod listing;
mod output;
mod received;
mod request;
mod scope;
mod shape;
mod shared_call;
mod state;
mod stop;
mod stream;
mod telemetry;
mod tools;
mod transcript;

pub use agent_run::AgentRun;
pub use decision::{AwaitingCall, Decision};
pub use error::{InterruptedCall, RunError};
pub use event::{AgentCall, AgentEvent, NestedEvent, Rejection, RunEvent, ToolOutcome};
pub use journal::{
    Direct, Journal, JournalStep, MemoryJournal, NestedJournal, RecordedFailure, ReplayDiverged,
    is_transient_failure,
};
pub use shared_call::SharedCall;
pub use state::{Approval, ApprovalError, Retries, RewindError, RunState};
pub use stop::{StepStopped, Stopped};
pub use stream::RunEvents;
/// The token that stops a run gracefully ([`AgentRun::with_cancellation`]), re-exported
/// from `tokio-util`.
pub use tokio_util::sync::CancellationToken;

use transcript::Transcript;

impl<Deps, O> Agent<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Starts a run on `prompt` with `deps`, to be driven by the caller: nothing happens
    /// until [`step`](AgentRun::step), [`events`](AgentRun::events) or
    /// [`finish`](AgentRun::finish).
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::{Agent, Step};
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("Hello!").with_usage(5, 2));
    /// let agent = Agent::<(), String>::builder(model).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let mut run = agent.start("Hi", ());
    /// assert!(matches!(run.step().await?, Step::Responded)); // one model request
    /// assert_eq!(run.usage().input_tokens, 5);
    /// let Step::Finished(result) = run.step().await? else { unreachable!() };
    /// assert_eq!(result.output, "Hello!");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self, prompt: impl Into<UserPromptPart>, deps: Deps) -> AgentRun<Deps, O> {
        self.start_with_history(Vec::new(), prompt, deps)
    }

    /// Starts a run that continues the conversation in `history` (e.g. a previous run's
    /// [`messages`](RunResult::messages), or a failed run's
    /// [`into_messages`](RunError::into_messages)) with a new `prompt`. The run's usage and
    /// retry counters start from zero.
    ///
    /// The [system prompt](crate::AgentBuilder::system_prompt) opens a conversation only
    /// when `history` is empty: a saved history keeps its own. The
    /// [instructions](crate::AgentBuilder::instructions) are not in any history; every
    /// request carries this agent's. A history that ends in a response whose calls were not
    /// answered (that of a run whose budget ran out, or that stopped before handling its
    /// last response) gets them answered as not run before the prompt, as providers require
    /// every call to be answered.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse, RequestPart};
    /// use golem::{Agent, ModelRetry};
    ///
    /// let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
    ///     1 => ModelResponse::tool_call("lookup", r#"{"id": 7}"#, "c1"),
    ///     _ => ModelResponse::text("Sorry, I could not find it."),
    /// });
    /// /// Look an order up.
    /// #[golem::tool]
    /// async fn lookup(id: u32) -> Result<String, ModelRetry> {
    ///     Err(ModelRetry::new(format!("no order {id}")))
    /// }
    ///
    /// let agent = Agent::<(), String>::builder(model).tool(Lookup).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let error = agent.run("Where is order 7?", ()).await.unwrap_err(); // retries are off
    /// let history = error.into_messages(); // ends with the call to `lookup`
    /// let result = agent.run_with_history(history, "Never mind.", ()).await?;
    /// let Message::Request(request) = &result.messages[2] else { unreachable!() };
    /// assert_eq!(
    ///     request.parts,
    ///     [
    ///         RequestPart::tool_return("lookup", "c1", "Not run: the run stopped before this call."),
    ///         RequestPart::user_prompt("Never mind."),
    ///     ]
    /// );
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_with_history(
        &self,
        history: Vec<Message>,
        prompt: impl Into<UserPromptPart>,
        deps: Deps,
    ) -> AgentRun<Deps, O> {
        let mut parts = Vec::with_capacity(2);
        if history.is_empty()
            && let Some(system_prompt) = &self.inner.system_prompt
        {
            parts.push(RequestPart::system_prompt(system_prompt.clone()));
        }
        parts.push(RequestPart::user_prompt(prompt));
        self.continue_with(history, parts, deps)
    }

    /// Starts a run that continues `history` with a request of `parts` (after the answers
    /// to the calls of a last response, if `history` ends in one, or added to its last
    /// request).
    pub(crate) fn continue_with(
        &self,
        history: Vec<Message>,
        parts: Vec<RequestPart>,
        deps: Deps,
    ) -> AgentRun<Deps, O> {
        let transcript = Transcript::continued(history, parts);
        self.restore(RunState::with_transcript(transcript), deps)
    }

    /// Rebuilds a run from a saved [`RunState`]: it goes on where the state left off, with
    /// the same usage, turn count, retry counters and deadline.
    pub fn restore(&self, state: RunState, deps: Deps) -> AgentRun<Deps, O> {
        let inner = &*self.inner;
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = field::Empty,
            otel.kind = "internal",
            otel.status_code = field::Empty,
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = field::Empty,
            "gen_ai.provider.name" = inner.model.system(),
            "gen_ai.request.model" = inner.model.name(),
            "gen_ai.conversation.id" = field::Empty,
            "error.type" = field::Empty,
            "gen_ai.usage.input_tokens" = field::Empty,
            "gen_ai.usage.output_tokens" = field::Empty,
            "golem.usage.rejected.requests" = field::Empty,
            "golem.usage.rejected.input_tokens" = field::Empty,
            "golem.usage.rejected.output_tokens" = field::Empty,
        );
        if let Some(name) = &inner.name {
            span.record("gen_ai.agent.name", name.as_str());
            span.record("otel.name", format!("invoke_agent {name}"));
        }
        AgentRun::new(self.clone(), state, deps, span)
    }

    /// Runs the agent on `prompt` with `deps` until it produces an output.
    ///
    /// # Errors
    /// A [`RunError`] naming the stage that failed, with the cause and every message and
    /// the usage up to the failure.
    pub async fn run(
        &self,
        prompt: impl Into<UserPromptPart>,
        deps: Deps,
    ) -> Result<RunResult<O>, RunError> {
        self.start(prompt, deps).finish().await
    }

    /// Continues the conversation in `history` with a new `prompt`, until the run produces
    /// an output; see [`start_with_history`](Self::start_with_history).
    ///
    /// # Errors
    /// As for [`run`](Self::run).
    pub async fn run_with_history(
        &self,
        history: Vec<Message>,
        prompt: impl Into<UserPromptPart>,
        deps: Deps,
    ) -> Result<RunResult<O>, RunError> {
        self.start_with_history(history, prompt, deps)
            .finish()
            .await
    }

    /// Goes on with a saved run until it produces an output: a failed run's
    /// [`state`](RunError::into_state) sends the feedback it did not get to send, with the
    /// same counters (call [`RunState::reset_retries`] for fresh budgets).
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, ModelRetry};
    ///
    /// let model = FunctionModel::new(|messages: &[Message], _| {
    ///     ModelResponse::text(if messages.len() < 3 { "maybe" } else { "yes" })
    /// });
    /// let validator = |_ctx, answer: String| async move {
    ///     if answer == "maybe" { Err(ModelRetry::new("answer yes or no")) } else { Ok(answer) }
    /// };
    /// let strict = Agent::<(), String>::builder(model.clone())
    ///     .output_validator(validator)
    ///     .build()?;
    /// let lenient = Agent::<(), String>::builder(model)
    ///     .output_retries(1)
    ///     .output_validator(validator)
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let error = strict.run("Is water wet?", ()).await.unwrap_err();
    /// assert_eq!(error.messages().len(), 2); // the prompt and the rejected answer
    /// let mut state = error.into_state(); // the feedback waits in `state.pending()`
    /// state.reset_retries();
    /// let result = lenient.resume(state, ()).await?;
    /// assert_eq!(result.output, "yes");
    /// assert_eq!(result.usage.requests, 2); // the resumed run's usage goes on
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`RunError`] at the [`Stage::Input`](crate::Stage::Input) stage when the state has nothing to send or
    /// handle; otherwise as for [`run`](Self::run).
    pub async fn resume(&self, state: RunState, deps: Deps) -> Result<RunResult<O>, RunError> {
        self.restore(state, deps).finish().await
    }

    /// Starts a run on `prompt` and returns its [events](RunEvent) as a stream; see
    /// [`AgentRun::into_events`].
    pub fn run_stream(
        &self,
        prompt: impl Into<UserPromptPart>,
        deps: Deps,
    ) -> RunEvents<'static, Deps, O> {
        self.start(prompt, deps).into_events()
    }
}

/// What one [`step`](AgentRun::step) did.
#[derive(Debug)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a run finishes once; boxing its result would change the public type for no gain"
)]
pub enum Step<O> {
    /// A model request was made; its response is the last message.
    Responded,
    /// The last response's tool calls and output were handled; the answers wait in
    /// [`RunState::pending`] for the next request.
    Handled,
    /// The last response has calls that wait for approval
    /// ([`RunState::awaiting_approval`]); approve or deny each, then step again.
    Paused,
    /// The run ended with its output. The run's messages and usage moved into the result.
    Finished(RunResult<O>),
}
