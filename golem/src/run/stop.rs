//! Graceful stops: a cancellation token and a deadline, raced against each step's I/O.

use std::future::{Future, pending};
use std::pin::pin;
use std::time::{Duration, SystemTime};

use futures_util::FutureExt;
use futures_util::future::{Either, select};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::state::Deadline;

/// Why a run was stopped from outside: the cause of a [`RunError`](crate::RunError) at the
/// [`Stage::Stopped`](crate::Stage::Stopped) stage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Stopped {
    /// The run's cancellation token was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The run's deadline passed.
    #[error("the run did not finish within its timeout of {timeout:?}")]
    TimedOut {
        /// The timeout the run was given.
        timeout: Duration,
    },
}

/// What can stop a run between or during its steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignals {
    token: Option<CancellationToken>,
    deadline: Option<(Instant, Duration)>,
}

impl StopSignals {
    pub(crate) fn set_token(&mut self, token: CancellationToken) {
        self.token = Some(token);
    }

    /// Sets the deadline: the run stops when `deadline` passes, however long is left of it.
    pub(crate) fn set_deadline(&mut self, deadline: Deadline) {
        let left = deadline
            .at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        self.deadline = Some((Instant::now() + left, deadline.timeout));
    }

    /// Whether the run has been stopped already.
    pub(crate) fn check(&self) -> Result<(), Stopped> {
        if self
            .token
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Err(Stopped::Cancelled);
        }
        match self.deadline {
            Some((at, timeout)) if Instant::now() >= at => Err(Stopped::TimedOut { timeout }),
            _ => Ok(()),
        }
    }

    /// Whether anything can stop the run gracefully: a token or a deadline.
    pub(crate) fn can_stop(&self) -> bool {
        self.token.is_some() || self.deadline.is_some()
    }

    /// Runs `work` unless the run is stopped first; on a stop, `work` is dropped.
    pub(crate) async fn race<F: Future>(&self, work: F) -> Result<F::Output, Stopped> {
        if !self.can_stop() {
            return Ok(work.await);
        }
        match select(pin!(work), pin!(self.signalled())).await {
            Either::Left((output, _)) => Ok(output),
            Either::Right((stopped, _)) => Err(stopped),
        }
    }

    /// A token for the calls of one step, which they pass on to the agents they run:
    /// cancelled with the run's token, and by [`race_graceful`](Self::race_graceful) on any
    /// stop. `None` when nothing can stop the run.
    pub(crate) fn calls_token(&self) -> Option<CancellationToken> {
        if !self.can_stop() {
            return None;
        }
        Some(
            self.token
                .as_ref()
                .map_or_else(CancellationToken::new, CancellationToken::child_token),
        )
    }

    /// Runs `work` unless the run is stopped first; on a stop, cancels `calls` and polls
    /// `work` once more, so that an agent it runs under `calls` ends gracefully, with its
    /// state: what `work` ended with, if it did, comes with the stop.
    pub(crate) async fn race_graceful<F: Future + Unpin>(
        &self,
        work: &mut F,
        calls: Option<&CancellationToken>,
    ) -> Result<F::Output, (Stopped, Option<F::Output>)> {
        match self.race(&mut *work).await {
            Ok(output) => Ok(output),
            Err(stopped) => {
                if let Some(calls) = calls {
                    calls.cancel();
                }
                Err((stopped, work.now_or_never()))
            }
        }
    }

    async fn signalled(&self) -> Stopped {
        let cancelled = async {
            match &self.token {
                Some(token) => token.cancelled().await,
                None => pending().await,
            }
        };
        let timed_out = async {
            match self.deadline {
                Some((at, timeout)) => {
                    sleep_until(at).await;
                    timeout
                }
                None => pending().await,
            }
        };
        match select(pin!(cancelled), pin!(timed_out)).await {
            Either::Left(((), _)) => Stopped::Cancelled,
            Either::Right((timeout, _)) => Stopped::TimedOut { timeout },
        }
    }
}
