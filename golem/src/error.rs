//! The vocabulary of failures: [`BoxError`], the [`Stage`] a run failed at, an
//! [`Exhausted`] budget, a [`ToolPanicked`] or [`OutputPanicked`]. The run's error, [`RunError`](crate::RunError),
//! is built from them in `run/error.rs`.

use std::error::Error as StdError;
use std::fmt;

/// A boxed error that can cross threads; what tools, decoders and validators return.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Where in the run a [`RunError`](crate::RunError) happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// The model request failed (transport, HTTP status, unreadable response).
    Model,
    /// The output was rejected past its budget, or its decoder or a validator failed.
    Decode,
    /// A tool was rejected past its budget, or failed.
    Tool,
    /// A limit was reached: model turns, requests, tokens or tool calls.
    Limit,
    /// What the run was given cannot be run (e.g. stepping a run that has ended).
    Input,
    /// The run was stopped from outside: its cancellation token or its deadline
    /// ([`Stopped`](crate::run::Stopped)).
    Stopped,
    /// The run paused for approval where it could not wait: in
    /// [`Agent::run`](crate::Agent::run) or [`AgentRun::finish`](crate::AgentRun::finish).
    /// Decide on the calls in the error's [`state`](crate::RunError::state) and resume it.
    Approval,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Model => "model",
            Stage::Decode => "decode",
            Stage::Tool => "tool",
            Stage::Limit => "limit",
            Stage::Input => "input",
            Stage::Stopped => "stopped",
            Stage::Approval => "approval",
        })
    }
}

/// A retry budget that ran out: `rejections` went over `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// Rejections counted in the run, the last one included.
    pub rejections: u32,
    /// The budget.
    pub limit: u32,
}

/// A tool panicked: the cause of a [`RunError`](crate::RunError) at the [`Stage::Tool`] stage. The panic is
/// caught where the tool runs; the run fails, the process goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the tool panicked: {message}")]
pub struct ToolPanicked {
    /// The panic's message.
    pub message: String,
}

/// The output's decoder, its output function or one of its validators panicked: the cause of a
/// [`RunError`](crate::RunError) at the [`Stage::Decode`] stage. The panic is caught where
/// the output is decoded; the run fails, the process goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the output's decoder, function or validator panicked: {message}")]
pub struct OutputPanicked {
    /// The panic's message.
    pub message: String,
}
