//! [`RunEvent`]: what a run reports as it goes, for a UI or a log.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use super::SharedCall;
use crate::RunResult;
use crate::error::Stage;
use crate::model::{ModelResponse, ResponseDelta, ToolCallPart, media};
use crate::output::Output;
use crate::usage::RoundCost;

/// Something that happened in a run, in the order it happened.
///
/// A run with a rejected tool call and a rejected output reports, turn by turn:
/// `RequestSent`, `ResponseReceived`, `ToolCallStarted`, `ToolCallFinished`, `Rejected` (one
/// per rejected tool), then for the output `Rejected` or `OutputAccepted`, and last
/// `Finished`. While a response streams, [`Delta`](Self::Delta)s come before its
/// `ResponseReceived`. More kinds of event will be added: match with a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunEvent<O: Output> {
    /// A model request is on its way.
    RequestSent {
        /// The model turn, from 1.
        turn: u32,
    },
    /// A piece of the response as it streams, before [`ResponseReceived`](Self::ResponseReceived).
    /// Deltas of a response that self-correction then rejects are followed by a
    /// [`Rejected`](Self::Rejected) event of the same turn: a UI can strike them through.
    Delta {
        /// The model turn.
        turn: u32,
        /// What arrived.
        delta: ResponseDelta,
    },
    /// What of a structured answer has arrived while it streams: the output's typed
    /// [`Partial`](Output::Partial) form, read again after each delta of the output call's
    /// arguments (or of the native JSON text). Nothing here is validated: the answer is
    /// decoded and validated once it is complete, and may still be rejected (a
    /// [`Rejected`](Self::Rejected) event of the same turn follows then).
    PartialOutput {
        /// The model turn.
        turn: u32,
        /// The answer so far.
        partial: O::Partial,
    },
    /// The model answered; the response is now the last message.
    ResponseReceived {
        /// The model turn.
        turn: u32,
        /// The response, its usage (this request's) included: the one the history holds,
        /// shared.
        response: Arc<ModelResponse>,
    },
    /// The model's response has calls that wait for the caller's approval; the run pauses
    /// before running any of them.
    ApprovalRequired {
        /// The model turn.
        turn: u32,
        /// The calls that wait.
        calls: Vec<ToolCallPart>,
    },
    /// A function tool call starts.
    ToolCallStarted {
        /// The model turn.
        turn: u32,
        /// The call: tool name, call id, arguments as the model wrote them; shared with
        /// the response that made it.
        call: SharedCall,
    },
    /// A function tool call ended.
    ToolCallFinished {
        /// The model turn.
        turn: u32,
        /// The call, shared with the response that made it.
        call: SharedCall,
        /// How it ended.
        outcome: ToolOutcome,
    },
    /// Self-correction rejected a tool call or the output; the feedback goes back to the
    /// model, or the run fails when the budget is spent.
    Rejected(Rejection),
    /// The output was decoded and validated; the run ends with it.
    OutputAccepted {
        /// The model turn.
        turn: u32,
    },
    /// The run ended with its output: the same [`RunResult`] that
    /// [`Agent::run`](crate::Agent::run) returns.
    Finished(Box<RunResult<O>>),
    /// Something happened in an agent this run delegated to (an agent called as a tool,
    /// [`Agent::as_tool`](crate::Agent::as_tool)), while its call runs: between the call's
    /// [`ToolCallStarted`](Self::ToolCallStarted) and
    /// [`ToolCallFinished`](Self::ToolCallFinished), with the path to it. Boxed: it is
    /// rare, and larger than the other events, each of which is as large as the largest.
    Agent(Box<AgentEvent>),
}

/// An event of an agent a run delegated to, and where that agent runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct AgentEvent {
    /// The calls from this run down to the agent the event comes from, outermost first:
    /// one for a child, two for a child's child.
    pub path: Vec<AgentCall>,
    /// What happened there.
    pub event: NestedEvent,
}

impl AgentEvent {
    /// `event`, of the agent at the end of `path`. golem makes these as a delegated agent
    /// runs; a test of code that shows them (a UI mapping, a log) makes its own:
    ///
    /// ```
    /// use golem::RunEvent;
    /// use golem::run::{AgentCall, AgentEvent, NestedEvent};
    ///
    /// let event: RunEvent<String> = RunEvent::Agent(Box::new(AgentEvent::new(
    ///     vec![AgentCall::new("research", "call_1")],
    ///     NestedEvent::RequestSent { turn: 1 },
    /// )));
    /// let RunEvent::Agent(nested) = &event else { unreachable!() };
    /// assert_eq!(nested.path[0].agent, "research");
    /// ```
    pub fn new(path: Vec<AgentCall>, event: NestedEvent) -> Self {
        AgentEvent { path, event }
    }
}

/// One step down a path of delegations: the tool call that runs an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentCall {
    /// The name the agent was called under (the tool's name).
    pub agent: String,
    /// The call, in the run one level up.
    pub tool_call_id: String,
}

impl AgentCall {
    /// The call `tool_call_id` that runs the agent called as the tool `agent`.
    pub fn new(agent: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        AgentCall {
            agent: agent.into(),
            tool_call_id: tool_call_id.into(),
        }
    }
}

/// What happened in a delegated agent's run: its [`RunEvent`]s, with its output as JSON.
#[derive(Debug)]
#[non_exhaustive]
pub enum NestedEvent {
    /// See [`RunEvent::RequestSent`].
    RequestSent {
        /// The child's model turn.
        turn: u32,
    },
    /// See [`RunEvent::Delta`].
    Delta {
        /// The child's model turn.
        turn: u32,
        /// What arrived.
        delta: ResponseDelta,
    },
    /// See [`RunEvent::ResponseReceived`].
    ResponseReceived {
        /// The child's model turn.
        turn: u32,
        /// The response.
        response: Arc<ModelResponse>,
    },
    /// See [`RunEvent::ToolCallStarted`].
    ToolCallStarted {
        /// The child's model turn.
        turn: u32,
        /// The call.
        call: SharedCall,
    },
    /// See [`RunEvent::ToolCallFinished`].
    ToolCallFinished {
        /// The child's model turn.
        turn: u32,
        /// The call.
        call: SharedCall,
        /// How it ended.
        outcome: ToolOutcome,
    },
    /// See [`RunEvent::Rejected`]: a rejection in the child, under the child's budgets.
    Rejected(Rejection),
    /// See [`RunEvent::OutputAccepted`].
    OutputAccepted {
        /// The child's model turn.
        turn: u32,
    },
    /// The child finished with this output, as the tool returns it.
    Finished {
        /// The output, as JSON.
        output: Value,
    },
}

impl NestedEvent {
    /// The nested form of a child's `event`; `None` for what a parent's stream does not
    /// carry (partial output, approval requests, which the child's own caller handles).
    pub(crate) fn of<O: Output>(event: RunEvent<O>) -> Option<Self> {
        Some(match event {
            RunEvent::RequestSent { turn } => NestedEvent::RequestSent { turn },
            RunEvent::Delta { turn, delta } => NestedEvent::Delta { turn, delta },
            RunEvent::ResponseReceived { turn, response } => {
                NestedEvent::ResponseReceived { turn, response }
            }
            RunEvent::ToolCallStarted { turn, call } => NestedEvent::ToolCallStarted { turn, call },
            RunEvent::ToolCallFinished {
                turn,
                call,
                outcome,
            } => NestedEvent::ToolCallFinished {
                turn,
                call,
                outcome,
            },
            RunEvent::Rejected(rejection) => NestedEvent::Rejected(rejection),
            RunEvent::OutputAccepted { turn } => NestedEvent::OutputAccepted { turn },
            RunEvent::PartialOutput { .. }
            | RunEvent::ApprovalRequired { .. }
            | RunEvent::Finished(_)
            | RunEvent::Agent(_) => return None,
        })
    }
}

/// Where a delegated agent's events go: into the stream of the run that delegated, whose
/// event queue it shares.
pub(crate) type Forward = Arc<dyn Forwards>;

/// A queue that takes a delegated agent's events.
pub(crate) trait Forwards: Send + Sync {
    /// Puts `event` in the queue.
    fn forward(&self, event: Box<AgentEvent>);
}

/// How one tool call ended.
///
/// Its `Debug` shows a returned [`ToolContent`](crate::model::ToolContent)'s media as their
/// descriptions, never their bytes.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// It returned this value, which is the call's result.
    Returned(Value),
    /// It rejected its arguments with this feedback (see [`RunEvent::Rejected`]).
    Rejected {
        /// The feedback sent as the call's result.
        feedback: String,
    },
    /// It failed with an error that is not a rejection; the run fails at the tool stage.
    Failed {
        /// The error's message, for the caller; never shown to the model.
        error: String,
    },
    /// The caller denied it; it did not run.
    Denied {
        /// The reason, sent as the call's result.
        reason: String,
    },
}

impl fmt::Debug for ToolOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOutcome::Returned(value) => f
                .debug_tuple("Returned")
                .field(&media::DebugValue(value))
                .finish(),
            ToolOutcome::Rejected { feedback } => f
                .debug_struct("Rejected")
                .field("feedback", feedback)
                .finish(),
            ToolOutcome::Failed { error } => {
                f.debug_struct("Failed").field("error", error).finish()
            }
            ToolOutcome::Denied { reason } => {
                f.debug_struct("Denied").field("reason", reason).finish()
            }
        }
    }
}

/// One rejection, and where it leaves the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejection {
    /// The model turn.
    pub turn: u32,
    /// [`Stage::Tool`] for a tool call, [`Stage::Decode`] for the output.
    pub stage: Stage,
    /// The rejected call, shared with the response that made it: a tool's, or the output
    /// tool's; `None` for an output in text or native mode, which answers no call. Its
    /// name and id are [`tool_name`](Self::tool_name) and
    /// [`tool_call_id`](Self::tool_call_id).
    pub call: Option<SharedCall>,
    /// Rejections of this tool (or of the output) in the run, this one included.
    pub retry: u32,
    /// The budget: the run fails when `retry` goes over it.
    pub max_retries: u32,
    /// What the model is told.
    pub feedback: String,
    /// What the rejected round cost: its request and tokens.
    pub cost: RoundCost,
}

impl Rejection {
    /// The rejected tool (the name the model used), or the output tool; `None` when the
    /// rejection answers no call.
    pub fn tool_name(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.tool_name.as_str())
    }

    /// The id of the rejected call, if the rejection answers one.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.tool_call_id.as_str())
    }

    /// Whether this rejection spent the budget, so the run fails instead of sending the
    /// feedback.
    pub fn is_exhausted(&self) -> bool {
        self.retry > self.max_retries
    }
}

/// Room for the events of one step, as a stream takes them: the queues start with it, so
/// the common step never grows them.
pub(crate) const BATCH: usize = 8;

/// Where a run being streamed puts its events; absent when nobody listens. The stream
/// takes them from here a batch at a time, oldest first.
pub(crate) struct EventSink<O: Output>(Arc<Queue<O>>);

struct Queue<O: Output> {
    events: Mutex<VecDeque<RunEvent<O>>>,
    /// Whether `events` may hold an event: set after each push, cleared as the stream
    /// takes them, so the stream does not lock an empty queue.
    pending: AtomicBool,
    /// Set by the stream's future when a step ended and the next waits for the stream.
    /// Apart from the lock: the stream and its future poll on one thread, so a plain load
    /// and store keep it, where the lock would cost two atomic operations each time.
    between: AtomicBool,
}

impl<O: Output> EventSink<O> {
    pub(crate) fn new() -> Self {
        EventSink(Arc::new(Queue {
            events: Mutex::new(VecDeque::with_capacity(BATCH)),
            pending: AtomicBool::new(false),
            between: AtomicBool::new(false),
        }))
    }

    pub(crate) fn handle(&self) -> Self {
        EventSink(Arc::clone(&self.0))
    }

    pub(crate) fn push(&self, event: RunEvent<O>) {
        self.0.push(event);
    }

    /// Pushes `first`, then `second`, under one lock.
    pub(crate) fn push_two(&self, first: RunEvent<O>, second: RunEvent<O>) {
        let mut events = self.0.events();
        events.push_back(first);
        events.push_back(second);
        self.0.pending.store(true, Ordering::Release);
    }

    /// Takes every event pushed and not yet taken, oldest first, into `taken`, which is
    /// empty: one lock for all of them, none when there are none, and the two queues'
    /// buffers trade places, so neither allocates again.
    pub(crate) fn take_all(&self, taken: &mut VecDeque<RunEvent<O>>) {
        debug_assert!(taken.is_empty());
        if !self.0.pending.load(Ordering::Acquire) {
            return;
        }
        let mut events = self.0.events();
        self.0.pending.store(false, Ordering::Relaxed);
        std::mem::swap(&mut *events, taken);
    }

    /// Marks the end of a step, for [`take_between`](Self::take_between).
    pub(crate) fn mark_between(&self) {
        self.0.between.store(true, Ordering::Relaxed);
    }

    /// Whether a step ended since the last call.
    pub(crate) fn take_between(&self) -> bool {
        let between = self.0.between.load(Ordering::Relaxed);
        if between {
            self.0.between.store(false, Ordering::Relaxed);
        }
        between
    }
}

impl<O: Output> Queue<O> {
    fn events(&self) -> MutexGuard<'_, VecDeque<RunEvent<O>>> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, event: RunEvent<O>) {
        self.events().push_back(event);
        self.pending.store(true, Ordering::Release);
    }
}

impl<O: Output> EventSink<O> {
    /// Where delegated agents' events go: this sink, as [`RunEvent::Agent`]s. The queue
    /// itself, shared: nothing is allocated.
    pub(crate) fn forward(&self) -> Forward
    where
        O: 'static,
    {
        Arc::clone(&self.0) as Forward
    }
}

impl<O: Output> Forwards for Queue<O> {
    fn forward(&self, event: Box<AgentEvent>) {
        self.push(RunEvent::Agent(event));
    }
}

/// Pushes the event `make` builds, when someone listens.
pub(crate) fn emit<O: Output>(events: Option<&EventSink<O>>, make: impl FnOnce() -> RunEvent<O>) {
    if let Some(events) = events {
        events.push(make());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BinaryContent, ToolContent};

    #[test]
    fn a_returned_tool_s_media_show_in_debug_without_their_bytes() {
        let chart = ToolContent::new("March").with(BinaryContent::new(vec![7u8; 64], "image/png"));
        let outcome = ToolOutcome::Returned(chart.into());
        assert_eq!(
            format!("{outcome:?}"),
            r#"Returned({"value":"March","media":["image/png bytes (64 bytes)"]})"#
        );
        assert_eq!(
            format!("{:?}", ToolOutcome::Returned(Value::from(3))),
            "Returned(Number(3))"
        );
    }
}
