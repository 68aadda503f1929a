//! A failure inside a step, before the run's state is attached to make it a
//! [`RunError`](super::RunError).

use super::error::InterruptedCall;
use super::stop::Stopped;
use crate::error::{BoxError, Exhausted, Stage};
use crate::usage::LimitExceeded;

/// A failure before the run's state is attached.
pub(crate) struct Failure {
    pub(crate) stage: Stage,
    pub(crate) tool_name: Option<String>,
    pub(crate) exhausted: Option<Exhausted>,
    pub(crate) source: BoxError,
    /// The calls that ended with an error on a stop, the stopped agents' among them.
    pub(crate) interrupted: Vec<InterruptedCall>,
}

impl Failure {
    pub(crate) fn new(stage: Stage, source: impl Into<BoxError>) -> Self {
        Failure {
            stage,
            tool_name: None,
            exhausted: None,
            source: source.into(),
            interrupted: Vec::new(),
        }
    }

    pub(crate) fn limit(limit: LimitExceeded) -> Self {
        Failure::new(Stage::Limit, limit)
    }

    pub(crate) fn stopped(stopped: Stopped) -> Self {
        Failure::new(Stage::Stopped, stopped)
    }

    /// A stop, during which `interrupted` ended with an error.
    pub(crate) fn interrupted(stopped: Stopped, interrupted: Vec<InterruptedCall>) -> Self {
        Failure {
            interrupted,
            ..Failure::stopped(stopped)
        }
    }
}
