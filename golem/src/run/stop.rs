//! Graceful stops: a cancellation token and a deadline, raced against each step's I/O.

use std::future::{Future, pending};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Either, select};
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
///
/// A run journaled by an engine reads the clock only inside a step that runs now
/// ([`for_journal`](Self::for_journal), [`guard`](Self::guard)): a replay runs none, and so
/// decides as the first execution did, whenever it happens (DESIGN §8: deadlines come from
/// the journal on replay).
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignals {
    token: Option<CancellationToken>,
    /// The deadline the run's checks and races watch.
    deadline: Option<(Instant, Duration)>,
    /// The deadline only journal steps watch, as they run: see [`guard`](Self::guard).
    guarded: Option<(Instant, Duration)>,
}

/// A journal step stopped by the run's deadline (or, for a step of an agent's run that is a
/// tool call, its caller's), which a journal records as the step's failure: before the step
/// began, or while it ran. Its message, recorded, is how a replay knows the stop (see
/// [`step_stop`]): the timeout is written in milliseconds, exactly (`1500 ms`, `0.25 ms`), a
/// form that stays the same across versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DeadlineStop {
    #[error("{}{} ms{}", BEFORE.0, Millis(*.0), BEFORE.1)]
    Before(Duration),
    #[error("{}{} ms{}", DURING.0, Millis(*.0), DURING.1)]
    During(Duration),
}

/// A duration in milliseconds, exactly: the whole ones, then the fraction's digits, if any.
struct Millis(Duration);

impl std::fmt::Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nanos = self.0.as_nanos();
        let (whole, fraction) = (nanos / 1_000_000, nanos % 1_000_000);
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{fraction:06}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Millis {
    /// The duration `text` (as [`Millis`] writes it) stands for.
    fn parse(text: &str) -> Option<Duration> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if fraction.len() > 6 || !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let nanos: u64 = if fraction.is_empty() {
            0
        } else {
            format!("{fraction:0<6}").parse().ok()?
        };
        Some(Duration::from_millis(whole) + Duration::from_nanos(nanos))
    }
}

/// The text around the timeout in a [`DeadlineStop::Before`]'s message.
const BEFORE: (&str, &str) = (
    "the run's timeout of ",
    " had passed when this step was to begin",
);

/// The text around the timeout in a [`DeadlineStop::During`]'s message.
const DURING: (&str, &str) = (
    "the run did not finish within its timeout of ",
    ": stopped during this step",
);

impl DeadlineStop {
    /// The stop a recorded `message` says, if it is a deadline's.
    fn parse(message: &str) -> Option<Self> {
        let millis = |(before, after): (&str, &str)| {
            let millis = message.strip_prefix(before)?.strip_suffix(after)?;
            Millis::parse(millis.strip_suffix(" ms")?)
        };
        millis(BEFORE)
            .map(DeadlineStop::Before)
            .or_else(|| millis(DURING).map(DeadlineStop::During))
    }

    /// The stop, and whether the step had begun.
    fn step_stopped(&self) -> StepStopped {
        let (DeadlineStop::Before(timeout) | DeadlineStop::During(timeout)) = self;
        StepStopped::new(
            Stopped::TimedOut { timeout: *timeout },
            matches!(self, DeadlineStop::During(_)),
        )
    }
}

/// The stop a journal step failed with, if it did: the engine's ([`StepStopped`]), or a
/// deadline's, now (a [`DeadlineStop`]) or on replay (its recorded message).
pub(crate) fn step_stop(error: &(dyn std::error::Error + 'static)) -> Option<StepStopped> {
    if let Some(stop) = error.downcast_ref::<StepStopped>() {
        return Some(stop.clone());
    }
    if let Some(stop) = error.downcast_ref::<DeadlineStop>() {
        return Some(stop.step_stopped());
    }
    let recorded = error.downcast_ref::<super::journal::RecordedFailure>()?;
    DeadlineStop::parse(&recorded.message).map(|stop| stop.step_stopped())
}

/// A journal step that the engine stopped, as a [`Journal`](super::Journal) reports it: the
/// engine's own cancellation of the run (a cancelled Temporal workflow), before the step
/// began or while it ran.
///
/// A step that fails with it stops the run at [`Stage::Stopped`](crate::Stage::Stopped)
/// with [`stopped`](Self::stopped) as the cause, as the run's own cancellation token would:
/// the messages and usage so far are kept, and a model request that had `began` is counted.
///
/// ```
/// use golem::run::{StepStopped, Stopped};
///
/// let stop = StepStopped::new(Stopped::Cancelled, true);
/// assert_eq!(stop.to_string(), "the run was cancelled");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{stopped}")]
#[non_exhaustive]
pub struct StepStopped {
    /// Why the run stopped.
    pub stopped: Stopped,
    /// Whether the step had begun (a request sent, a call made).
    pub began: bool,
}

impl StepStopped {
    /// A step stopped for `stopped`, after it `began` or before.
    pub fn new(stopped: Stopped, began: bool) -> Self {
        StepStopped { stopped, began }
    }
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

    /// These signals for a step of a run an engine journals: its checks and races watch
    /// the token only, and the deadline stops the journal steps that run now, from inside
    /// them ([`guard`](Self::guard)).
    pub(crate) fn for_journal(&self) -> Self {
        StopSignals {
            token: self.token.clone(),
            deadline: None,
            guarded: self.deadline.or(self.guarded),
        }
    }

    /// `step`, stopped by the deadline when it passes before the step begins or while it
    /// runs: the step then fails with a [`DeadlineStop`], which the journal records like
    /// any failure, so a replay, which runs no step, finds the stop where the first
    /// execution met it. Only for signals [`for_journal`](Self::for_journal).
    pub(crate) fn guard(&self, step: super::journal::JournalStep) -> super::journal::JournalStep {
        let Some((at, timeout)) = self.guarded else {
            return step;
        };
        Box::pin(async move {
            if Instant::now() >= at {
                return Err(DeadlineStop::Before(timeout).into());
            }
            match select(step, pin!(sleep_until(at))).await {
                Either::Left((done, _)) => done,
                Either::Right(((), _)) => Err(DeadlineStop::During(timeout).into()),
            }
        })
    }

    /// The stop of an agent's run that a tool call ran, found in the call's error, when it is
    /// this run's too: the engine's cancellation, or this run's deadline, which the agent's
    /// steps are guarded by ([`NestedJournal`](super::NestedJournal)). An agent stopped by a
    /// timeout of its own that is not this run's is the call's failure.
    pub(crate) fn agent_stop(&self, error: &(dyn std::error::Error + 'static)) -> Option<Stopped> {
        match super::error::agent_error_in(error)?.stopped()? {
            Stopped::Cancelled => Some(Stopped::Cancelled),
            Stopped::TimedOut { timeout } => self
                .guarded
                .filter(|(_, ours)| ours == timeout)
                .map(|_| Stopped::TimedOut { timeout: *timeout }),
        }
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
    pub(crate) fn race<F: Future + Unpin>(&self, work: F) -> Race<'_, F> {
        Race {
            work,
            signals: self
                .can_stop()
                .then(|| -> BoxFuture<'_, Stopped> { Box::pin(self.signalled()) }),
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
    pub(crate) fn race_graceful<'a, F: Future + Unpin>(
        &'a self,
        work: &'a mut F,
        calls: Option<&'a CancellationToken>,
    ) -> Graceful<'a, F> {
        Graceful {
            race: self.race(work),
            calls,
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

/// Work raced against the run's stop signals: see [`StopSignals::race`]. A future of its
/// own rather than an `async fn`'s, so the futures that await it hold two pointers and the
/// work, not a layer of state around them.
pub(crate) struct Race<'s, F> {
    work: F,
    /// The stop signals' future: `None` when nothing can stop the run. Boxed, so only a run
    /// that can stop pays for it.
    signals: Option<BoxFuture<'s, Stopped>>,
}

impl<F: Future + Unpin> Future for Race<'_, F> {
    type Output = Result<F::Output, Stopped>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Poll::Ready(output) = Pin::new(&mut this.work).poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match &mut this.signals {
            Some(signals) => signals.as_mut().poll(cx).map(Err),
            None => Poll::Pending,
        }
    }
}

/// Work raced against the run's stop signals, ending gracefully on a stop: see
/// [`StopSignals::race_graceful`].
pub(crate) struct Graceful<'a, F> {
    race: Race<'a, &'a mut F>,
    calls: Option<&'a CancellationToken>,
}

impl<F: Future + Unpin> Future for Graceful<'_, F> {
    type Output = Result<F::Output, (Stopped, Option<F::Output>)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        Pin::new(&mut this.race).poll(cx).map(|raced| {
            raced.map_err(|stopped| {
                if let Some(calls) = this.calls {
                    calls.cancel();
                }
                (stopped, (&mut *this.race.work).now_or_never())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{DeadlineStop, Stopped, step_stop};
    use crate::run::RecordedFailure;

    #[test]
    fn a_recorded_deadline_stop_reads_back_as_the_same_stop() {
        for timeout in [
            Duration::from_secs(30),
            Duration::from_millis(1500),
            Duration::from_micros(250),
            Duration::from_nanos(1_000_001),
            Duration::ZERO,
        ] {
            for (stop, began) in [
                (DeadlineStop::Before(timeout), false),
                (DeadlineStop::During(timeout), true),
            ] {
                let recorded = RecordedFailure::of(&stop);
                let read = step_stop(&recorded).expect("a deadline's stop");
                assert_eq!(read.stopped, Stopped::TimedOut { timeout }, "{recorded:?}");
                assert_eq!(read.began, began);
            }
        }
        assert_eq!(
            DeadlineStop::During(Duration::from_micros(1500)).to_string(),
            "the run did not finish within its timeout of 1.5 ms: stopped during this step"
        );
        let other = RecordedFailure {
            message: "the run's timeout of 1.2.3 ms had passed when this step was to begin".into(),
        };
        assert_eq!(step_stop(&other), None);
    }
}
