//! [`Trace`]: what evaluators can read of a run besides its output.

use std::sync::Arc;

use golem::model::{Message, ModelResponse, ToolCallPart};
use golem::output::Output;
use golem::run::{Rejection, SharedCall, ToolOutcome};
use golem::usage::RoundCost;
use golem::{RunEvent, Usage};

/// Everything a task's run left behind: its history, its usage (with the share of
/// rejected rounds in [`Usage::rejected`]) and its events. An agent's run fills all three;
/// a plain async task leaves what it knows.
///
/// ```
/// use golem_evals::Trace;
///
/// let trace = Trace::default();
/// assert!(trace.usage.rejected.is_empty());
/// assert_eq!(trace.rejections().count(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Trace {
    /// Every request and response of the run, rejected ones too.
    pub messages: Vec<Message>,
    /// Requests, tokens and tool calls, and what the rejected rounds cost.
    pub usage: Usage,
    /// What happened, in order (deltas and partial outputs left out).
    pub events: Vec<TraceEvent>,
}

impl Trace {
    /// A trace of just a usage, for tasks that know no more.
    pub fn of_usage(usage: Usage) -> Self {
        Trace {
            usage,
            ..Trace::default()
        }
    }

    /// Every rejection, of tool calls and of the output, in order.
    pub fn rejections(&self) -> impl Iterator<Item = &Rejection> {
        self.events.iter().filter_map(|event| match event {
            TraceEvent::Rejected(rejection) => Some(rejection),
            _ => None,
        })
    }

    /// The rejections of calls of the tool named `tool`.
    pub fn rejections_of<'t>(&'t self, tool: &'t str) -> impl Iterator<Item = &'t Rejection> {
        self.rejections()
            .filter(move |rejection| rejection.tool_name() == Some(tool))
    }

    /// Every tool call that ran, with how it ended, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&ToolCallPart, &ToolOutcome)> {
        self.events.iter().filter_map(|event| match event {
            TraceEvent::ToolCallFinished { call, outcome, .. } => Some((&**call, outcome)),
            _ => None,
        })
    }

    /// What the rounds that ended in a rejection cost: requests and tokens.
    pub fn rejected_cost(&self) -> RoundCost {
        self.usage.rejected.total
    }

    /// Records `event` of an agent's run; the final [`RunEvent::Finished`] is not an
    /// event of the trace (its result is the task's output).
    pub fn record<O: Output>(&mut self, event: RunEvent<O>) {
        let event = match event {
            RunEvent::RequestSent { turn } => TraceEvent::RequestSent { turn },
            RunEvent::ResponseReceived { turn, response } => {
                TraceEvent::ResponseReceived { turn, response }
            }
            RunEvent::ToolCallStarted { turn, call } => TraceEvent::ToolCallStarted { turn, call },
            RunEvent::ToolCallFinished {
                turn,
                call,
                outcome,
            } => TraceEvent::ToolCallFinished {
                turn,
                call,
                outcome,
            },
            RunEvent::Rejected(rejection) => TraceEvent::Rejected(rejection),
            RunEvent::OutputAccepted { turn } => TraceEvent::OutputAccepted { turn },
            _ => return,
        };
        self.events.push(event);
    }
}

/// One thing that happened in a task's run: the [`RunEvent`]s of an agent an evaluator
/// can use, without the output's type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TraceEvent {
    /// See [`RunEvent::RequestSent`].
    RequestSent {
        /// The model turn, from 1.
        turn: u32,
    },
    /// See [`RunEvent::ResponseReceived`].
    ResponseReceived {
        /// The model turn.
        turn: u32,
        /// The response, with its usage: the one the run's history holds, shared.
        response: Arc<ModelResponse>,
    },
    /// See [`RunEvent::ToolCallStarted`].
    ToolCallStarted {
        /// The model turn.
        turn: u32,
        /// The call, shared with its response.
        call: SharedCall,
    },
    /// See [`RunEvent::ToolCallFinished`].
    ToolCallFinished {
        /// The model turn.
        turn: u32,
        /// The call, shared with its response.
        call: SharedCall,
        /// How it ended.
        outcome: ToolOutcome,
    },
    /// See [`RunEvent::Rejected`]: a rejected tool call or output, with what its round cost.
    Rejected(Rejection),
    /// See [`RunEvent::OutputAccepted`].
    OutputAccepted {
        /// The model turn.
        turn: u32,
    },
}
