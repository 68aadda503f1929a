//! The run as a value the caller owns: [`AgentRun`], driven one [`Step`] at a time,
//! watched through [`RunEvent`]s, saved as a [`RunState`] and stopped by drop, token or
//! deadline.
//!
//! There is one loop: [`AgentRun::step`]. [`Agent::run`] calls it until the run ends,
//! [`AgentRun::events`] calls it while yielding the events each step produces, and a caller
//! can call it by hand.

use std::fmt;
use std::mem;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tracing::{Instrument, Span, field};

use crate::agent::{Agent, AgentInner, RunResult};
use crate::context::RunContext;
use crate::error::Stage;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelRequest, ModelResponse, RequestParams,
    RequestPart, ResponsePart, StreamEvent,
};
use crate::output::Output;
use crate::usage::LimitExceeded;

mod budget;
mod error;
mod event;
mod failure;
mod journal;
mod output;
mod state;
mod stop;
mod stream;
mod tools;

pub use error::RunError;
pub use event::{Rejection, RunEvent, ToolOutcome};
pub use journal::{Direct, Journal, JournalStep, MemoryJournal, RecordedFailure};
pub use state::{Approval, ApprovalError, Retries, RunState};
pub use stop::Stopped;
pub use stream::RunEvents;
/// The token that stops a run gracefully ([`AgentRun::with_cancellation`]), re-exported
/// from `tokio-util`.
pub use tokio_util::sync::CancellationToken;

use crate::toolbox::{AGENT_SOURCE, Toolbox};
use crate::toolset::{Toolset, ToolsetError, list_all};
use event::{EventSink, emit};
use failure::{Failure, NOT_RUN};
use stop::StopSignals;

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
    pub fn start(&self, prompt: impl Into<String>, deps: Deps) -> AgentRun<Deps, O> {
        self.start_with_history(Vec::new(), prompt, deps)
    }

    /// Starts a run that continues the conversation in `history` (e.g. a previous run's
    /// [`messages`](RunResult::messages)) with a new `prompt`. The run's usage and retry
    /// counters start from zero.
    ///
    /// The instructions open a conversation only when `history` is empty: a saved history
    /// keeps its own.
    pub fn start_with_history(
        &self,
        mut history: Vec<Message>,
        prompt: impl Into<String>,
        deps: Deps,
    ) -> AgentRun<Deps, O> {
        let prompt = RequestPart::user_prompt(prompt);
        let request = match history.pop() {
            // A history that ends in a request (e.g. answers the run did not get to send)
            // gets the prompt in that same request.
            Some(Message::Request(mut request)) => {
                request.parts.push(prompt);
                request
            }
            Some(response @ Message::Response(_)) => {
                history.push(response);
                ModelRequest::new(vec![prompt])
            }
            None => {
                let mut parts = Vec::with_capacity(2);
                if let Some(instructions) = &self.inner.instructions {
                    parts.push(RequestPart::system_prompt(instructions.clone()));
                }
                parts.push(prompt);
                ModelRequest::new(parts)
            }
        };
        self.restore(RunState::new(history, Some(request)), deps)
    }

    /// Rebuilds a run from a saved [`RunState`]: it goes on where the state left off, with
    /// the same usage, turn count and retry counters.
    pub fn restore(&self, state: RunState, deps: Deps) -> AgentRun<Deps, O> {
        let inner = &*self.inner;
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = field::Empty,
            otel.kind = "internal",
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = field::Empty,
            "gen_ai.provider.name" = inner.model.system(),
            "gen_ai.request.model" = inner.model.name(),
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
        let mut stop = StopSignals::default();
        if let Some(timeout) = inner.run_timeout {
            stop.set_timeout(timeout);
        }
        AgentRun {
            agent: self.clone(),
            deps: Arc::new(deps),
            state,
            tools: None,
            settings: None,
            stop,
            span,
            ended: false,
        }
    }

    /// Runs the agent on `prompt` with `deps` until it produces an output.
    ///
    /// # Errors
    /// A [`RunError`] naming the stage that failed, with the cause and every message and
    /// the usage up to the failure.
    pub async fn run(
        &self,
        prompt: impl Into<String>,
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
        prompt: impl Into<String>,
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
    /// A [`RunError`] at the [`Stage::Input`] stage when the state has nothing to send or
    /// handle; otherwise as for [`run`](Self::run).
    pub async fn resume(&self, state: RunState, deps: Deps) -> Result<RunResult<O>, RunError> {
        self.restore(state, deps).finish().await
    }

    /// Starts a run on `prompt` and returns its [events](RunEvent) as a stream; see
    /// [`AgentRun::into_events`].
    pub fn run_stream(&self, prompt: impl Into<String>, deps: Deps) -> RunEvents<'static, Deps, O> {
        self.start(prompt, deps).into_events()
    }
}

/// What one [`step`](AgentRun::step) did.
#[derive(Debug)]
#[non_exhaustive]
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

/// A run of an [`Agent`], owned and driven by the caller.
///
/// Make one with [`Agent::start`], [`Agent::start_with_history`] or [`Agent::restore`].
/// Drive it with [`step`](Self::step) (one model request, or one response's tool calls and
/// output handling), [`events`](Self::events) (a stream of [`RunEvent`]s) or
/// [`finish`](Self::finish). Between steps, [`state`](Self::state) shows the messages, the
/// usage and the retry counters, and can be saved.
///
/// Stopping: dropping the run (or the future of a step) cancels the request or tool calls in
/// flight. A [`CancellationToken`](Self::with_cancellation) or a
/// [timeout](Self::with_timeout) stops it gracefully: the step ends in a [`RunError`] at the
/// [`Stage::Stopped`] stage that keeps the messages, the usage and the results of the tool
/// calls that finished, with every call in the history answered.
///
/// ```
/// use std::time::Duration;
/// use golem::model::function::FunctionModel;
/// use golem::model::{Message, ModelResponse};
/// use golem::{Agent, Stage};
///
/// // A model that takes a minute to answer.
/// let model = FunctionModel::new_async(|_: Vec<Message>, _| async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok(ModelResponse::text("late"))
/// });
/// let agent = Agent::<(), String>::builder(model).build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let token = golem::run::CancellationToken::new();
/// let run = agent.start("Hi", ()).with_cancellation(token.clone());
/// tokio::spawn(async move {
///     tokio::time::sleep(Duration::from_millis(10)).await;
///     token.cancel(); // e.g. when the user presses Stop
/// });
/// let error = run.finish().await.unwrap_err();
/// assert_eq!(error.stage(), Stage::Stopped);
/// assert_eq!(error.messages().len(), 1); // the request that was on its way
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct AgentRun<Deps, O> {
    agent: Agent<Deps, O>,
    deps: Arc<Deps>,
    state: RunState,
    /// The tools of this run: the agent's, and its toolsets' once listed.
    tools: Option<Arc<Toolbox<Deps>>>,
    /// Model settings for this run only, over the agent's.
    settings: Option<crate::model::ModelSettings>,
    stop: StopSignals,
    span: Span,
    ended: bool,
}

impl<Deps, O> fmt::Debug for AgentRun<Deps, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRun")
            .field("agent", &self.agent)
            .field("state", &self.state)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<Deps, O> AgentRun<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Stops the run gracefully when `token` is cancelled.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.stop.set_token(token);
        self
    }

    /// Model settings for this run's requests, merged over the agent's
    /// ([`AgentBuilder::model_settings`](crate::AgentBuilder::model_settings)), which are
    /// merged over the model's: model < agent < run.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse, ModelSettings, RequestParams};
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_: &[Message], params: &RequestParams| {
    ///     ModelResponse::text(format!("{:?}", params.settings.max_tokens))
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .model_settings(ModelSettings::default().max_tokens(100))
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let long = agent.start("Write a poem", ()).with_model_settings(ModelSettings::default().max_tokens(2000));
    /// assert_eq!(long.finish().await?.output, "Some(2000)");
    /// assert_eq!(agent.run("Hi", ()).await?.output, "Some(100)");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_model_settings(mut self, settings: crate::model::ModelSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Stops the run gracefully `timeout` from now, replacing the agent's
    /// [`run_timeout`](crate::AgentBuilder::run_timeout).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.stop.set_timeout(timeout);
        self
    }

    /// The run's whole state: save it to go on later with [`Agent::restore`].
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Takes the run's state, ending the run.
    pub fn into_state(self) -> RunState {
        self.state
    }

    /// The messages exchanged so far.
    pub fn messages(&self) -> &[Message] {
        self.state.messages()
    }

    /// The usage so far.
    pub fn usage(&self) -> &crate::Usage {
        self.state.usage()
    }

    /// Rejections so far, per tool and of the output.
    pub fn retries(&self) -> &Retries {
        self.state.retries()
    }

    /// The calls that wait for approval, after a [`Step::Paused`].
    pub fn awaiting_approval(&self) -> &[crate::model::ToolCallPart] {
        self.state.awaiting_approval()
    }

    /// Approves the waiting call `tool_call_id`; see [`RunState::approve`].
    ///
    /// # Errors
    /// [`ApprovalError`] when no call with that id waits for approval.
    pub fn approve(&mut self, tool_call_id: &str) -> Result<(), ApprovalError> {
        self.state.approve(tool_call_id)
    }

    /// Denies the waiting call `tool_call_id`; see [`RunState::deny`].
    ///
    /// # Errors
    /// [`ApprovalError`] when no call with that id waits for approval.
    pub fn deny(
        &mut self,
        tool_call_id: &str,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        self.state.deny(tool_call_id, reason)
    }

    /// Drives the run to its end.
    ///
    /// # Errors
    /// As for [`Agent::run`]; a run that pauses for approval fails at the
    /// [`Stage::Approval`] stage, with a state to decide on and [`resume`](Agent::resume).
    pub async fn finish(self) -> Result<RunResult<O>, RunError> {
        self.finish_in(&Direct).await
    }

    /// Drives the run to its end through `journal`, which records each model request and
    /// tool call (or returns what it recorded, on replay); see [`Journal`].
    ///
    /// # Errors
    /// As for [`finish`](Self::finish).
    pub async fn finish_in<J: Journal>(mut self, journal: &J) -> Result<RunResult<O>, RunError> {
        loop {
            match self.step_with(None, journal).await? {
                Step::Finished(result) => return Ok(result),
                Step::Paused => {
                    self.ended = true;
                    return Err(self.error(Failure::new(
                        Stage::Approval,
                        "the run paused for approval; decide on the calls in the state and resume it",
                    )));
                }
                Step::Responded | Step::Handled => {}
            }
        }
    }

    /// Runs one step: a model request when a request is due, or else the handling of the
    /// last response (its tool calls, then its output).
    ///
    /// # Errors
    /// A [`RunError`] when the step fails; the run has then ended, and the error carries its
    /// state. Stepping a run that has ended fails at the [`Stage::Input`] stage.
    pub async fn step(&mut self) -> Result<Step<O>, RunError> {
        self.step_with(None, &Direct).await
    }

    /// Runs one step through `journal`; see [`step`](Self::step) and [`Journal`].
    ///
    /// # Errors
    /// As for [`step`](Self::step).
    pub async fn step_in<J: Journal>(&mut self, journal: &J) -> Result<Step<O>, RunError> {
        self.step_with(None, journal).await
    }

    pub(crate) async fn step_with<J: Journal>(
        &mut self,
        events: Option<&EventSink<O>>,
        journal: &J,
    ) -> Result<Step<O>, RunError> {
        let outcome = if self.ended {
            Err(Failure::new(Stage::Input, "the run has ended"))
        } else if let Err(stopped) = self.stop.check() {
            Err(Failure::stopped(stopped))
        } else {
            let span = self.span.clone();
            self.advance(events, journal).instrument(span).await
        };
        match outcome {
            Ok(step) => {
                if let Step::Finished(result) = &step {
                    self.record_usage(&result.usage);
                }
                Ok(step)
            }
            Err(failure) => {
                self.ended = true;
                self.record_usage(&self.state.usage.clone());
                Err(self.error(failure))
            }
        }
    }

    fn record_usage(&mut self, usage: &crate::Usage) {
        let span = &self.span;
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
        let rejected = usage.rejected.total;
        span.record("golem.usage.rejected.requests", rejected.requests);
        span.record("golem.usage.rejected.input_tokens", rejected.input_tokens);
        span.record("golem.usage.rejected.output_tokens", rejected.output_tokens);
    }

    /// The error for `failure`, with the run's state. When the pending request answers the
    /// last response, every failure but an exhausted budget puts it in the history, so every
    /// call there is answered; an exhausted budget keeps it apart (it is the feedback a
    /// resume sends), and so does a failure before the request was sent, such as the
    /// prompt of a run that failed at its start.
    fn error(&mut self, failure: Failure) -> RunError {
        let answers_calls = matches!(self.state.messages.last(), Some(Message::Response(_)));
        if failure.exhausted.is_none() && answers_calls {
            self.state.flush_pending();
        }
        RunError::new(
            failure.stage,
            failure.tool_name,
            failure.exhausted,
            failure.source,
            self.state.clone(),
        )
    }

    async fn advance<J: Journal>(
        &mut self,
        events: Option<&EventSink<O>>,
        journal: &J,
    ) -> Result<Step<O>, Failure> {
        if self.tools.is_none() {
            self.tools = Some(self.list_tools().await?);
        }
        let state = &self.state;
        let request_due =
            state.pending.is_some() || matches!(state.messages.last(), Some(Message::Request(_)));
        if request_due {
            self.request(events, journal).await
        } else if matches!(state.messages.last(), Some(Message::Response(_))) {
            self.handle(events, journal).await
        } else {
            Err(Failure::new(
                Stage::Input,
                "the run has nothing to send: its history is empty",
            ))
        }
    }

    /// The agent's tools, and what its toolsets list for this run.
    async fn list_tools(&self) -> Result<Arc<Toolbox<Deps>>, Failure> {
        let inner = &*self.agent.inner;
        if inner.toolsets.is_empty() && self.settings.is_none() {
            return Ok(Arc::clone(&inner.toolbox));
        }
        let ctx = RunContext::from_parts(
            Arc::clone(&self.deps),
            Arc::new(self.state.usage.clone()),
            self.state.turns,
        );
        let mut tools = inner.toolbox.extended();
        if !inner.toolsets.is_empty() {
            let taken = tools
                .entries
                .iter()
                .map(|entry| (entry.name.to_string(), AGENT_SOURCE.to_owned()))
                .chain(
                    tools
                        .output_tool
                        .iter()
                        .map(|name| (name.to_string(), "the output tool".to_owned())),
                )
                .collect::<Vec<_>>();
            let toolsets: Vec<&dyn Toolset<Deps>> =
                inner.toolsets.iter().map(|toolset| &**toolset).collect();
            let listed = self
                .stop
                .race(list_all(&toolsets, taken, &ctx))
                .await
                .map_err(Failure::stopped)?
                .map_err(|error| {
                    let stage = match error {
                        ToolsetError::List { .. } => Stage::Tool,
                        _ => Stage::Input,
                    };
                    Failure::new(stage, error)
                })?;
            for listed in listed {
                tools
                    .add_defined(listed.tool, listed.definition)
                    .expect("list_all checked the names");
            }
        }
        if let Some(settings) = &self.settings {
            tools.params.settings = tools.params.settings.merged(settings);
        }
        tools.seal();
        Ok(Arc::new(tools))
    }

    /// One model request.
    async fn request<J: Journal>(
        &mut self,
        events: Option<&EventSink<O>>,
        journal: &J,
    ) -> Result<Step<O>, Failure> {
        let inner = &*self.agent.inner;
        let state = &mut self.state;
        if state.turns >= inner.max_turns {
            return Err(Failure::limit(LimitExceeded::Turns {
                limit: inner.max_turns,
            }));
        }
        inner
            .usage_limits
            .check_before_request(&state.usage)
            .map_err(Failure::limit)?;
        state.flush_pending();
        state.turns += 1;
        let turn = state.turns;
        emit(events, || RunEvent::RequestSent { turn });

        let tools = self.tools.as_deref().expect("listed before the first step");
        let mut response = if journal.records() {
            // An owned step, so the journal's engine can run it wherever it runs steps.
            let model = Arc::clone(&inner.model);
            let messages = state.messages.clone();
            let params = tools.params.clone();
            let step = async move {
                let response = request_model::<O>(&*model, &messages, &params, None).await?;
                Ok(serde_json::to_value(response)?)
            };
            let recorded = self
                .stop
                .race(journal.step(journal::model_step(turn), Box::pin(step)))
                .await
                .map_err(Failure::stopped)?
                .map_err(|error| Failure::new(Stage::Model, error))?;
            serde_json::from_value(recorded)
                .map_err(|error| Failure::new(Stage::Model, ModelError::other(error)))?
        } else {
            let deltas = events.map(|events| (events, turn));
            self.stop
                .race(request_model(
                    &*inner.model,
                    &state.messages,
                    &tools.params,
                    deltas,
                ))
                .await
                .map_err(Failure::stopped)?
                .map_err(|error| Failure::new(Stage::Model, error))?
        };
        name_unnamed_calls(&mut response, state.messages.len());
        state.usage += &response.usage;
        let limit = inner.usage_limits.check_tokens(&state.usage);
        // A response the run will not act on is kept, its calls answered as not run.
        let unusable = match (limit, response.finish_reason) {
            (Err(limit), _) => Some(Failure::limit(limit)),
            (Ok(()), Some(FinishReason::Length)) => {
                Some(Failure::new(Stage::Model, ModelError::Truncated))
            }
            (Ok(()), Some(FinishReason::ContentFilter)) => {
                Some(Failure::new(Stage::Model, ModelError::ContentFilter))
            }
            _ => None,
        };
        if let Some(events) = events {
            events.push(RunEvent::ResponseReceived {
                turn,
                response: response.clone(),
            });
        }
        if let Some(failure) = unusable {
            let answers: Vec<RequestPart> = response
                .tool_calls()
                .map(|call| call.answer(NOT_RUN))
                .collect();
            state.messages.push(Message::Response(response));
            if !answers.is_empty() {
                state.pending = Some(ModelRequest::new(answers));
            }
            return Err(failure);
        }
        state.messages.push(Message::Response(response));
        Ok(Step::Responded)
    }

    /// The tool calls and output of the last response.
    async fn handle<J: Journal>(
        &mut self,
        events: Option<&EventSink<O>>,
        journal: &J,
    ) -> Result<Step<O>, Failure> {
        let inner = &*self.agent.inner;
        let state = &mut self.state;
        let Some(Message::Response(response)) = state.messages.last() else {
            unreachable!("handle runs only when the history ends in a response");
        };
        let turn = state.turns;
        let tools = self.tools.as_deref().expect("listed before the first step");

        let awaiting = AgentInner::<Deps, O>::awaiting_approval(tools, response, &state.approvals);
        if !awaiting.is_empty() {
            emit(events, || RunEvent::ApprovalRequired {
                turn,
                calls: awaiting.clone(),
            });
            state.awaiting_approval = awaiting;
            return Ok(Step::Paused);
        }

        let ctx =
            RunContext::from_parts(Arc::clone(&self.deps), Arc::new(state.usage.clone()), turn);
        let cost = response.usage.cost();
        let handled = inner
            .handle_response(
                response,
                tools::TurnScope {
                    ctx: &ctx,
                    tools,
                    journal,
                    approvals: &state.approvals,
                    events,
                    stop: &self.stop,
                    turn,
                    cost,
                },
                &mut state.retries,
                &mut state.usage,
            )
            .await;
        handled.culprits.book(cost, &mut state.usage);
        state.approvals.clear();
        if !handled.parts.is_empty() {
            state.pending = Some(ModelRequest::new(handled.parts));
        }
        match handled.result {
            Ok(Some(output)) => {
                emit(events, || RunEvent::OutputAccepted { turn });
                state.flush_pending();
                self.ended = true;
                Ok(Step::Finished(RunResult {
                    output,
                    messages: mem::take(&mut state.messages),
                    usage: mem::take(&mut state.usage),
                }))
            }
            Ok(None) => Ok(Step::Handled),
            Err(failure) => Err(failure),
        }
    }
}

/// One model request, in its `chat` span (transport retries included). With `deltas`, the
/// response is streamed and each delta pushed as a [`RunEvent::Delta`] of that turn.
async fn request_model<O>(
    model: &dyn Model,
    messages: &[Message],
    params: &RequestParams,
    deltas: Option<(&EventSink<O>, u32)>,
) -> Result<ModelResponse, ModelError> {
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {}", model.name()),
        otel.kind = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = model.system(),
        "gen_ai.request.model" = model.name(),
        "gen_ai.request.stream" = deltas.is_some(),
        "gen_ai.response.model" = field::Empty,
        "gen_ai.response.id" = field::Empty,
        "gen_ai.usage.input_tokens" = field::Empty,
        "gen_ai.usage.output_tokens" = field::Empty,
        "error.type" = field::Empty,
    );
    let result = match deltas {
        None => {
            model
                .request(messages, params)
                .instrument(span.clone())
                .await
        }
        Some((events, turn)) => {
            stream_response(model, messages, params, events, turn)
                .instrument(span.clone())
                .await
        }
    };
    match &result {
        Ok(response) => {
            if let Some(model) = &response.model_name {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(id) = &response.provider_response_id {
                span.record("gen_ai.response.id", id.as_str());
            }
            span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
        }
        Err(error) => {
            match error.status() {
                Some(status) => span.record("error.type", status),
                None => span.record("error.type", error_type(error)),
            };
            span.in_scope(|| tracing::warn!(error = %error, "model request failed"));
        }
    }
    result
}

/// Streams a response, passing its deltas on, until the whole response arrives.
async fn stream_response<O>(
    model: &dyn Model,
    messages: &[Message],
    params: &RequestParams,
    events: &EventSink<O>,
    turn: u32,
) -> Result<ModelResponse, ModelError> {
    let mut stream = model.request_stream(messages, params);
    while let Some(item) = stream.next().await {
        match item? {
            StreamEvent::Done(response) => return Ok(response),
            StreamEvent::Delta(delta) => events.push(RunEvent::Delta { turn, delta }),
        }
    }
    Err(ModelError::InvalidResponse {
        provider: model.system().to_owned(),
        message: "the stream ended before the response was complete".to_owned(),
    })
}

/// The `error.type` of a failed request without an HTTP status: low-cardinality names.
fn error_type(error: &ModelError) -> &'static str {
    match error {
        ModelError::Transport { .. } if error.is_timeout() => "timeout",
        ModelError::Transport { .. } => "transport",
        ModelError::InvalidResponse { .. } => "invalid_response",
        ModelError::Truncated => "truncated",
        ModelError::ContentFilter => "content_filter",
        _ => "_OTHER",
    }
}

/// Gives every call without an id one that is unique in the history.
fn name_unnamed_calls(response: &mut ModelResponse, history_len: usize) {
    for (index, part) in response.parts.iter_mut().enumerate() {
        if let ResponsePart::ToolCall(call) = part
            && call.tool_call_id.is_empty()
        {
            call.tool_call_id = format!("call_{history_len}_{index}");
        }
    }
}
