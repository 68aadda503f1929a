//! [`AgentRun`]: the run a caller drives, its one loop ([`AgentRun::step`]), and the
//! handling of a response.

use std::fmt;
use std::mem;
use std::sync::Arc;
use std::time::Duration;

use tracing::{Instrument, Span};

use super::event::{EventSink, RunEvent, emit};
use super::failure::Failure;
use super::journal::{Direct, Journal};
use super::state::{ApprovalError, Retries, RunState};
use super::stop::StopSignals;
use super::tools;
use super::{CancellationToken, RunError, Step};
use crate::agent::{Agent, RunResult};
use crate::context::RunContext;
use crate::error::Stage;
use crate::model::{Message, ModelRequest};
use crate::output::Output;
use crate::toolbox::{AGENT_SOURCE, Toolbox};
use crate::toolset::{Toolset, ToolsetError, list_all};

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
    pub(super) agent: Agent<Deps, O>,
    pub(super) deps: Arc<Deps>,
    pub(super) state: RunState,
    /// The tools of this run: the agent's, and its toolsets' once listed.
    pub(super) tools: Option<Arc<Toolbox<Deps>>>,
    /// Model settings for this run only, over the agent's.
    pub(super) settings: Option<crate::model::ModelSettings>,
    pub(super) stop: StopSignals,
    pub(super) span: Span,
    pub(super) ended: bool,
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
                self.record_usage(&self.state.usage);
                Err(self.error(failure))
            }
        }
    }

    fn record_usage(&self, usage: &crate::Usage) {
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

        let awaiting = tools.awaiting_approval(response, |call| {
            state.approvals.contains_key(&call.tool_call_id)
        });
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
