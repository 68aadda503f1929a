//! [`RunEvents`]: a run driven as a `futures::Stream` of its events.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use futures_util::stream::Stream;

use super::error::RunError;
use super::event::{BATCH, EventSink, RunEvent};
use super::{AgentRun, Direct, Step};
use crate::output::Output;

/// The run a stream drives: its own, or one it borrows.
enum Slot<'r, Deps, O> {
    Owned(Box<AgentRun<Deps, O>>),
    Borrowed(&'r mut AgentRun<Deps, O>),
}

impl<Deps, O> Deref for Slot<'_, Deps, O> {
    type Target = AgentRun<Deps, O>;

    fn deref(&self) -> &Self::Target {
        match self {
            Slot::Owned(run) => run,
            Slot::Borrowed(run) => run,
        }
    }
}

impl<Deps, O> DerefMut for Slot<'_, Deps, O> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Slot::Owned(run) => run,
            Slot::Borrowed(run) => run,
        }
    }
}

/// The future that drives a stream's run step after step, until it finishes, fails or
/// pauses: one for the stream, not one per step.
type Driving<'r, Deps, O> = BoxFuture<'r, (Slot<'r, Deps, O>, Result<Step<O>, RunError>)>;

/// Where the driving future waits after a step until the stream has yielded the step's
/// events: pending once, without a wake-up, since the stream polls it again itself.
struct Between(bool);

impl Future for Between {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

/// A run's [`RunEvent`]s as a [`Stream`], yielded as they happen while the stream drives the
/// run step by step.
///
/// It ends after [`RunEvent::Finished`], after an error (the last item, carrying the run's
/// state), or after [`RunEvent::ApprovalRequired`]: decide on the calls
/// ([`AgentRun::approve`], [`AgentRun::deny`]) and stream again. Dropping it cancels the
/// step in flight.
///
/// ```
/// use futures_util::StreamExt;
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::{Agent, RunEvent};
///
/// let model = FunctionModel::new(|_, _| ModelResponse::text("Hello!"));
/// let agent = Agent::<(), String>::builder(model).build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let mut events = agent.run_stream("Hi", ());
/// let mut seen = Vec::new();
/// while let Some(event) = events.next().await {
///     match event? {
///         RunEvent::RequestSent { turn } => seen.push(format!("request {turn}")),
///         RunEvent::Finished(result) => seen.push(format!("finished: {}", result.output)),
///         _ => {}
///     }
/// }
/// assert_eq!(seen, ["request 1", "finished: Hello!"]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct RunEvents<'r, Deps, O: Output> {
    run: Option<Slot<'r, Deps, O>>,
    driving: Option<Driving<'r, Deps, O>>,
    sink: EventSink<O>,
    /// Events taken from the sink and not yet yielded, oldest first.
    taken: VecDeque<RunEvent<O>>,
    error: Option<RunError>,
    done: bool,
}

impl<Deps, O: Output> fmt::Debug for RunEvents<'_, Deps, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunEvents")
            .field("driving", &self.driving.is_some())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

// The stream never pins its fields: the future that drives the run is boxed.
impl<Deps, O: Output> Unpin for RunEvents<'_, Deps, O> {}

impl<Deps, O> AgentRun<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Drives the run, yielding its events as a stream that borrows the run; see
    /// [`RunEvents`]. Between streams the run can be inspected, decided on and saved.
    pub fn events(&mut self) -> RunEvents<'_, Deps, O> {
        RunEvents::new(Slot::Borrowed(self))
    }

    /// Drives the run, yielding its events as a stream that owns the run; see
    /// [`RunEvents`] and [`RunEvents::into_run`].
    pub fn into_events(self) -> RunEvents<'static, Deps, O> {
        RunEvents::new(Slot::Owned(Box::new(self)))
    }
}

impl<'r, Deps, O> RunEvents<'r, Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    fn new(run: Slot<'r, Deps, O>) -> Self {
        RunEvents {
            run: Some(run),
            driving: None,
            sink: EventSink::new(),
            taken: VecDeque::with_capacity(BATCH),
            error: None,
            done: false,
        }
    }

    /// The run, before the stream drives it and after the stream ended (`None` while it
    /// drives the run).
    pub fn run(&mut self) -> Option<&mut AgentRun<Deps, O>> {
        self.run.as_deref_mut()
    }

    /// The run this stream owns, e.g. to approve calls after
    /// [`RunEvent::ApprovalRequired`]; `None` if the stream was still driving the run (its
    /// step in flight is cancelled) or borrows its run.
    pub fn into_run(self) -> Option<AgentRun<Deps, O>> {
        match self.run {
            Some(Slot::Owned(run)) => Some(*run),
            _ => None,
        }
    }
}

impl<Deps, O: Output> RunEvents<'_, Deps, O> {
    /// The oldest event not yet yielded: taken from the sink a batch at a time.
    fn next_event(&mut self) -> Option<RunEvent<O>> {
        if self.taken.is_empty() {
            self.sink.take_all(&mut self.taken);
        }
        self.taken.pop_front()
    }
}

impl<Deps, O> Stream for RunEvents<'_, Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    type Item = Result<RunEvent<O>, RunError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.next_event() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.error.take() {
                return Poll::Ready(Some(Err(error)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let Some(driving) = this.driving.as_mut() else {
                let Some(mut run) = this.run.take() else {
                    return Poll::Ready(None);
                };
                let sink = this.sink.handle();
                this.driving = Some(Box::pin(async move {
                    loop {
                        // Matched in place: a step's result kept past the match would take
                        // room of its own beside the step's future.
                        match run.step_with(Some(&sink), &Direct).await {
                            Ok(Step::Responded | Step::Handled) => {}
                            result => return (run, result),
                        }
                        // The next step starts once the stream has yielded this one's events.
                        sink.mark_between();
                        Between(false).await;
                    }
                }));
                continue;
            };
            let Poll::Ready((run, result)) = driving.as_mut().poll(cx) else {
                if this.sink.take_between() {
                    continue;
                }
                return match this.next_event() {
                    Some(event) => Poll::Ready(Some(Ok(event))),
                    None => Poll::Pending,
                };
            };
            this.driving = None;
            this.run = Some(run);
            match result {
                Ok(Step::Finished(result)) => {
                    // After the step's last events, straight to what the stream yields
                    // next: the run is over, so nothing pushes after it.
                    this.sink.take_all(&mut this.taken);
                    this.taken.push_back(RunEvent::Finished(Box::new(result)));
                    this.done = true;
                }
                Ok(Step::Paused) => this.done = true,
                Ok(Step::Responded | Step::Handled) => {}
                Err(error) => {
                    this.error = Some(error);
                    this.done = true;
                }
            }
        }
    }
}
