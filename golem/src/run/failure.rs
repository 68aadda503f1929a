//! A failure inside a step, before the run's state is attached to make it a
//! [`RunError`](super::RunError).

use super::stop::Stopped;
use crate::error::{BoxError, Exhausted, Stage};
use crate::usage::LimitExceeded;

// What a call gets when the run stops before it can be answered. Every call in a history is
// answered, so the history stays valid for providers if it is resumed; the text never
// includes an error's own message.
pub(crate) const NOT_RUN: &str = "Not run: the run stopped before this call.";

/// A failure before the run's state is attached.
pub(crate) struct Failure {
    pub(crate) stage: Stage,
    pub(crate) tool_name: Option<String>,
    pub(crate) exhausted: Option<Exhausted>,
    pub(crate) source: BoxError,
}

impl Failure {
    pub(crate) fn new(stage: Stage, source: impl Into<BoxError>) -> Self {
        Failure {
            stage,
            tool_name: None,
            exhausted: None,
            source: source.into(),
        }
    }

    pub(crate) fn limit(limit: LimitExceeded) -> Self {
        Failure::new(Stage::Limit, limit)
    }

    pub(crate) fn stopped(stopped: Stopped) -> Self {
        Failure::new(Stage::Stopped, stopped)
    }
}
