//! [`AgentRun`]: the run a caller drives, its configuration for itself, and its one loop
//! ([`AgentRun::step`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tracing::Span;

use super::event::EventSink;
use super::failure::Failure;
use super::journal::{self, Direct, Journal};
use super::scope::{Overrides, StepScope};
use super::state::{ApprovalError, Deadline, Retries, RunState};
use super::stop::StopSignals;
use super::telemetry::{in_span, int};
use super::transcript::Next;
use super::{CancellationToken, RunError, Step, handle, listing, request};
use crate::agent::{Agent, RunResult};
use crate::error::{BoxError, Stage};
use crate::model::{Message, Model};
use crate::output::Output;
use crate::toolbox::Toolbox;
use crate::toolset::Toolset;
use crate::usage::UsageLimits;

/// One step of `$run` (an `AgentRun`) through `$journal`, its events to `$events`: a
/// `Result<Step<O>, RunError>`. Written out where it is awaited, in `step_with` and in
/// `finish_in`'s loop, rather than awaited as a future of its own: each layer of futures is
/// one more copy of the step's state as it is built.
macro_rules! run_step {
    ($run:ident, $events:expr, $journal:expr) => {{
        let mut refused = None;
        if $journal.records() && !$run.deadline_journaled {
            // Boxed, as every rare branch of a step: the common step's future stays small.
            refused = Box::pin($run.journal_deadline($journal)).await.err();
        }
        // A journaled run reads the clock only in the steps that run now: a replay, which
        // runs none, decides as the first execution did.
        let journaled_stop;
        let stop = if $journal.records() {
            journaled_stop = $run.stop.for_journal();
            &journaled_stop
        } else {
            &$run.stop
        };
        let outcome = if let Some(refused) = refused {
            match super::stop::step_stop(&*refused) {
                // An agent run as a tool call, begun after its caller's deadline (which
                // guards its steps), or stopped by the engine.
                Some(stop) => Err(Failure::stopped(stop.stopped)),
                // A deadline the journal cannot keep: the run cannot be run under it.
                None => Err(Failure::new(Stage::Input, refused)),
            }
        } else if $run.ended {
            Err(Failure::new(Stage::Input, "the run has ended"))
        } else if let Err(stopped) = stop.check() {
            Err(Failure::stopped(stopped))
        } else {
            'advance: {
                let tools = match &$run.tools {
                    Some(tools) => Arc::clone(tools),
                    None => {
                        let listed = if $run.agent.inner.toolsets.is_empty()
                            && $run.overrides.toolsets.is_empty()
                        {
                            Ok(Arc::clone(&$run.agent.inner.toolbox))
                        } else {
                            // Boxed: once per run, and larger than the step it comes before.
                            let listing = Box::pin(listing::list(
                                &$run.agent.inner,
                                &$run.deps,
                                &$run.overrides,
                                &$run.state,
                                stop,
                                $journal,
                            ));
                            in_span!($run.span, listing)
                        };
                        match listed {
                            Ok(tools) => {
                                $run.tools = Some(Arc::clone(&tools));
                                tools
                            }
                            Err(failure) => break 'advance Err(failure),
                        }
                    }
                };
                let step = StepScope {
                    agent: &$run.agent.inner,
                    deps: &$run.deps,
                    overrides: &$run.overrides,
                    tools: &tools,
                    stop,
                    events: $events,
                    journal: $journal,
                };
                match $run.state.transcript.next() {
                    Next::Send => in_span!($run.span, request::request(&step, &mut $run.state)),
                    Next::Handle => {
                        let handled = in_span!($run.span, handle::handle(&step, &mut $run.state));
                        if matches!(handled, Ok(Step::Finished(_))) {
                            $run.ended = true;
                        }
                        handled
                    }
                    Next::Nothing => Err(Failure::new(
                        Stage::Input,
                        "the run has nothing to send: its history is empty",
                    )),
                }
            }
        };
        match outcome {
            Ok(step) => {
                if let Step::Finished(result) = &step {
                    $run.record_usage(&result.usage);
                }
                Ok(step)
            }
            Err(failure) => {
                $run.ended = true;
                $run.record_usage(&$run.state.usage);
                $run.span.record("otel.status_code", "error");
                $run.span.record("error.type", failure.stage.to_string());
                Err($run.error(failure))
            }
        }
    }};
}

/// A run of an [`Agent`], owned and driven by the caller.
///
/// Make one with [`Agent::start`], [`Agent::start_with_history`] or [`Agent::restore`].
/// Drive it with [`step`](Self::step) (one model request, or one response's tool calls and
/// output handling), [`events`](Self::events) (a stream of [`RunEvent`](super::RunEvent)s) or
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
    /// The tools of this run: the agent's, and its toolsets' once listed; `None` until
    /// they are listed, and again when the run is given another toolset.
    tools: Option<Arc<Toolbox<Deps>>>,
    /// What this run sets for itself over the agent's configuration.
    overrides: Overrides<Deps>,
    stop: StopSignals,
    /// Whether the deadline was taken from the journal (or recorded in it), in a journaled
    /// run.
    deadline_journaled: bool,
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
    /// A run of `agent` from `state`, with its deadline set from the state, or else from the
    /// agent's timeout.
    pub(super) fn new(agent: Agent<Deps, O>, mut state: RunState, deps: Deps, span: Span) -> Self {
        if state.deadline.is_none()
            && let Some(timeout) = agent.inner.run_timeout
        {
            state.deadline = Some(Deadline::from_now(timeout));
        }
        let mut stop = StopSignals::default();
        if let Some(deadline) = state.deadline {
            stop.set_deadline(deadline);
        }
        AgentRun {
            agent,
            deps: Arc::new(deps),
            state,
            tools: None,
            overrides: Overrides::default(),
            stop,
            deadline_journaled: false,
            span,
            ended: false,
        }
    }

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
    ///
    /// It takes effect from the run's next request, also when the run has already made
    /// some.
    #[must_use]
    pub fn with_model_settings(mut self, settings: crate::model::ModelSettings) -> Self {
        self.overrides.settings = Some(Box::new(settings));
        self
    }

    /// Instructions for this run in place of the agent's static
    /// [`instructions`](crate::AgentBuilder::instructions), sent from the run's next request
    /// on; those the agent makes with
    /// [`instructions_fn`](crate::AgentBuilder::instructions_fn) still follow them, and a
    /// prompted output's schema still ends them. Like the agent's, they are never stored in
    /// the history.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_, params| {
    ///     ModelResponse::text(params.instructions.clone().unwrap_or_default())
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .instructions("Answer in English.")
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let french = agent.start("Bonjour", ()).with_instructions("Answer in French.");
    /// assert_eq!(french.finish().await?.output, "Answer in French.");
    /// assert_eq!(agent.run("Hello", ()).await?.output, "Answer in English.");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.overrides.instructions = Some(instructions.into());
        self
    }

    /// Usage limits for this run in place of the agent's
    /// ([`AgentBuilder::usage_limits`](crate::AgentBuilder::usage_limits)), checked from the
    /// run's next request on against the run's whole usage so far.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::usage::UsageLimits;
    /// use golem::{Agent, Stage};
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("hi").with_usage(100, 10));
    /// let agent = Agent::<(), String>::builder(model).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let run = agent
    ///     .start("Hello", ())
    ///     .with_usage_limits(UsageLimits::new().input_tokens_limit(50));
    /// let error = run.finish().await.unwrap_err();
    /// assert_eq!(error.stage(), Stage::Limit);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_usage_limits(mut self, limits: UsageLimits) -> Self {
        self.overrides.usage_limits = Some(limits);
        self
    }

    /// The model this run asks from its next request on, in place of the agent's: e.g. a
    /// stronger model for one hard question, or another provider after an outage.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::Agent;
    ///
    /// let small = FunctionModel::new(|_, _| ModelResponse::text("small"));
    /// let large = FunctionModel::new(|_, _| ModelResponse::text("large"));
    /// let agent = Agent::<(), String>::builder(small).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.start("Think hard", ()).with_model(large).finish().await?;
    /// assert_eq!(result.output, "large");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_model(mut self, model: impl Model) -> Self {
        let model: Arc<dyn Model> = Arc::new(model);
        self.span.record("gen_ai.provider.name", model.system());
        self.span.record("gen_ai.request.model", model.name());
        self.overrides.model = Some(model);
        self
    }

    /// Names the conversation this run is part of: its spans carry it as
    /// `gen_ai.conversation.id`, so a trace viewer groups the runs of one conversation.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("hello"));
    /// let agent = Agent::<(), String>::builder(model).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent
    ///     .start("Hi", ())
    ///     .with_conversation_id("support-4711")
    ///     .finish()
    ///     .await?;
    /// assert_eq!(result.output, "hello");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> Self {
        let id: Arc<str> = Arc::from(id.into());
        self.span.record("gen_ai.conversation.id", &*id);
        self.overrides.conversation_id = Some(id);
        self
    }

    /// A toolset for this run besides the agent's: its tools are listed before the run's
    /// next request, with the agent's toolsets again, and a name that clashes fails the run
    /// at the [`Stage::Input`] stage as for the agent's own.
    #[must_use]
    pub fn with_toolset(mut self, toolset: impl Toolset<Deps>) -> Self {
        self.overrides.toolsets.push(Arc::new(toolset));
        self.tools = None;
        self
    }

    /// Stops the run gracefully `timeout` from now, replacing the agent's
    /// [`run_timeout`](crate::AgentBuilder::run_timeout) and any deadline of a restored
    /// state.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        let deadline = Deadline::from_now(timeout);
        self.state.deadline = Some(deadline);
        self.stop.set_deadline(deadline);
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
    // `finish_in`'s own future, not an async fn's around it, which would hold the run twice.
    pub fn finish(self) -> impl Future<Output = Result<RunResult<O>, RunError>> {
        self.finish_in(&Direct)
    }

    /// Drives the run to its end through `journal`, which records each model request and
    /// tool call (or returns what it recorded, on replay); see [`Journal`].
    ///
    /// # Errors
    /// As for [`finish`](Self::finish).
    pub async fn finish_in<J: Journal>(mut self, journal: &J) -> Result<RunResult<O>, RunError> {
        loop {
            match run_step!(self, None, journal)? {
                Step::Finished(result) => return Ok(result),
                Step::Paused => {
                    // Ended, as a failure is: its span says so, with what the run spent.
                    self.ended = true;
                    self.record_usage(&self.state.usage);
                    self.span.record("otel.status_code", "error");
                    self.span.record("error.type", Stage::Approval.to_string());
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
        run_step!(self, events, journal)
    }

    fn record_usage(&self, usage: &crate::Usage) {
        let span = &self.span;
        span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
        let rejected = usage.rejected.total;
        span.record("golem.usage.rejected.requests", int(rejected.requests));
        span.record(
            "golem.usage.rejected.input_tokens",
            int(rejected.input_tokens),
        );
        span.record(
            "golem.usage.rejected.output_tokens",
            int(rejected.output_tokens),
        );
    }

    /// The error for `failure`, with the run's state. Every failure but an exhausted budget
    /// puts the pending request in the history, so every call there is answered; an
    /// exhausted budget keeps it apart (it is the feedback a resume sends), and so does a
    /// failure before the request was sent, such as the prompt of a run that failed at its
    /// start.
    fn error(&mut self, failure: Failure) -> RunError {
        if failure.exhausted.is_none() {
            self.state.transcript.flush();
        }
        RunError::new(
            failure.stage,
            failure.tool_name,
            failure.exhausted,
            failure.source,
            self.state.clone(),
        )
        .with_interrupted(failure.interrupted)
    }

    /// Takes the run's deadline from the journal, or records it there: a replayed run keeps
    /// the deadline of its first execution.
    ///
    /// # Errors
    /// The journal's [refusal](Journal::deadline_refusal), from an engine that cannot keep
    /// a deadline, or its error recording it.
    async fn journal_deadline<J: Journal>(&mut self, journal: &J) -> Result<(), BoxError> {
        self.deadline_journaled = true;
        let Some(deadline) = self.state.deadline else {
            return Ok(());
        };
        if let Some(refusal) = journal.deadline_refusal() {
            return Err(refusal);
        }
        let recorded = journal
            .step(
                journal::DEADLINE_STEP.to_owned(),
                Box::pin(async move { Ok(serde_json::to_value(deadline)?) }),
            )
            .await?;
        let deadline: Deadline = serde_json::from_value(recorded)?;
        self.state.deadline = Some(deadline);
        self.stop.set_deadline(deadline);
        Ok(())
    }
}
