//! [`Task`]: what an experiment runs on each case — an agent ([`AgentTask`]) or any async
//! function ([`task_fn`]).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use golem::output::Output;
use golem::run::Stopped;
use golem::{Agent, AgentRun, BoxError, RunError, RunEvent};

use crate::trace::Trace;

/// What a task produced on one case: its output and the trace of its run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskRun<O> {
    /// The output, for the evaluators.
    pub output: O,
    /// The history, usage and events of the run.
    pub trace: Trace,
}

impl<O> TaskRun<O> {
    /// A run that produced `output` and left `trace`.
    pub fn new(output: O, trace: Trace) -> Self {
        TaskRun { output, trace }
    }
}

/// Why a task failed on a case, with what its run left: a failed case is a result of the
/// experiment, not the end of it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskFailure {
    /// The error's message, followed by its causes (`error: cause: cause`).
    pub message: String,
    /// The history, usage and events of the run up to the failure.
    pub trace: Trace,
    /// Whether the task ran out of its time ([`Task::run_within`]).
    pub timed_out: bool,
}

impl TaskFailure {
    /// A failure with `error`'s message and causes, and `trace`.
    pub fn new(error: &(dyn StdError + 'static), trace: Trace) -> Self {
        TaskFailure {
            message: chain(error),
            trace,
            timed_out: false,
        }
    }

    /// A task that ran out of `timeout`, having left `trace`.
    pub fn timed_out(timeout: Duration, trace: Trace) -> Self {
        TaskFailure {
            message: format!("timed out after {timeout:?}"),
            trace,
            timed_out: true,
        }
    }
}

impl fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TaskFailure {}

/// `error: cause: cause`, each message once (some errors repeat their cause's).
pub(crate) fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// What an [`Experiment`](crate::Experiment) runs on each case's input.
///
/// Implemented by [`AgentTask`] and by the closures [`task_fn`] wraps; implement it for
/// anything else that runs on an input.
pub trait Task<I>: Send + Sync {
    /// What the task produces.
    type Output;

    /// Runs the task on `input`.
    fn run<'a>(&'a self, input: &'a I)
    -> BoxFuture<'a, Result<TaskRun<Self::Output>, TaskFailure>>;

    /// Runs the task on `input` for at most `timeout`; a task that runs out fails with
    /// [`TaskFailure::timed_out`]. By default the run is dropped at the timeout, and what
    /// it did is lost with it; an [`AgentTask`] stops its agent's run instead, so the
    /// history and the usage so far are in the failure's trace.
    fn run_within<'a>(
        &'a self,
        input: &'a I,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<TaskRun<Self::Output>, TaskFailure>>
    where
        Self::Output: 'a,
    {
        let run = self.run(input);
        async move {
            match tokio::time::timeout(timeout, run).await {
                Ok(result) => result,
                Err(_elapsed) => Err(TaskFailure::timed_out(timeout, Trace::default())),
            }
        }
        .boxed()
    }
}

/// An agent as a task: each case's input becomes a prompt and the agent's dependencies,
/// and the run is streamed so that its events land in the [`Trace`].
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::Agent;
/// use golem_evals::{AgentTask, Task};
///
/// let model = FunctionModel::new(|_, _| ModelResponse::text("4").with_usage(10, 1));
/// let agent = Agent::<(), String>::builder(model).build()?;
/// let task = AgentTask::new(agent, |question: &String| (question.clone(), ()));
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let run = task.run(&"What is 2 + 2?".to_owned()).await?;
/// assert_eq!(run.output, "4");
/// assert_eq!(run.trace.usage.input_tokens, 10);
/// assert_eq!(run.trace.messages.len(), 2);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct AgentTask<Deps, O, F> {
    agent: Agent<Deps, O>,
    prepare: F,
}

impl<Deps, O, F> fmt::Debug for AgentTask<Deps, O, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTask")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<Deps, O, F> AgentTask<Deps, O, F> {
    /// A task that runs `agent` on the prompt and dependencies `prepare` makes of each
    /// case's input.
    pub fn new<I>(agent: Agent<Deps, O>, prepare: F) -> Self
    where
        F: Fn(&I) -> (String, Deps),
    {
        AgentTask { agent, prepare }
    }
}

impl<I, Deps, O, F> Task<I> for AgentTask<Deps, O, F>
where
    I: Sync,
    Deps: Send + Sync + 'static,
    O: Output,
    F: Fn(&I) -> (String, Deps) + Send + Sync,
{
    type Output = O;

    fn run<'a>(&'a self, input: &'a I) -> BoxFuture<'a, Result<TaskRun<O>, TaskFailure>> {
        let (prompt, deps) = (self.prepare)(input);
        drive(self.agent.start(prompt, deps)).boxed()
    }

    /// Stops the agent's run at the timeout, as its own timeout does: the failure's trace
    /// has the history and usage of the run up to the stop.
    fn run_within<'a>(
        &'a self,
        input: &'a I,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<TaskRun<O>, TaskFailure>>
    where
        O: 'a,
    {
        let (prompt, deps) = (self.prepare)(input);
        drive(self.agent.start(prompt, deps).with_timeout(timeout)).boxed()
    }
}

/// Streams `run` to its end, recording its events in the trace.
async fn drive<Deps: Send + Sync + 'static, O: Output>(
    run: AgentRun<Deps, O>,
) -> Result<TaskRun<O>, TaskFailure> {
    let mut events = run.into_events();
    let mut trace = Trace::default();
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::Finished(result)) => {
                let result = *result;
                trace.messages = result.messages;
                trace.usage = result.usage;
                return Ok(TaskRun::new(result.output, trace));
            }
            Ok(event) => trace.record(event),
            Err(error) => return Err(failure(error, trace)),
        }
    }
    // The stream ends without a result when the run paused for approval: an evaluation has
    // no one to answer, so the case fails, with what the run did.
    let mut message = "the run paused for approval".to_owned();
    if let Some(run) = events.into_run() {
        let calls: Vec<&str> = run
            .awaiting_approval()
            .iter()
            .map(|call| call.tool_name.as_str())
            .collect();
        message = format!("{message} of {}", calls.join(", "));
        let state = run.into_state();
        trace.messages = state.messages().to_vec();
        trace.usage = state.usage().clone();
    }
    Err(TaskFailure {
        message,
        trace,
        timed_out: false,
    })
}

/// The failure of an agent's run: its message and causes, its history and usage; a run
/// stopped by its timeout is timed out.
fn failure(error: RunError, mut trace: Trace) -> TaskFailure {
    trace.messages = error.messages().to_vec();
    trace.usage = error.usage().clone();
    let mut failure = TaskFailure::new(&error, trace);
    failure.timed_out = matches!(error.stopped(), Some(Stopped::TimedOut { .. }));
    failure
}

/// An async function as a task: `run(input)` returns the output, or an error that fails
/// the case. Its trace is empty; return a [`TaskRun`] from a [`Task`] of your own to fill
/// one.
///
/// ```
/// use golem_evals::{task_fn, Task};
///
/// let double = task_fn(|n: u32| async move { Ok::<_, std::io::Error>(n * 2) });
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// assert_eq!(double.run(&21).await?.output, 42);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub fn task_fn<I, F, Fut, O, E>(run: F) -> FnTask<F>
where
    I: Clone,
    F: Fn(I) -> Fut,
    Fut: Future<Output = Result<O, E>>,
    E: Into<BoxError>,
{
    FnTask { run }
}

/// A [`Task`] made of an async function; see [`task_fn`].
#[derive(Clone)]
pub struct FnTask<F> {
    run: F,
}

impl<F> fmt::Debug for FnTask<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTask").finish_non_exhaustive()
    }
}

impl<I, F, Fut, O, E> Task<I> for FnTask<F>
where
    I: Clone + Sync,
    F: Fn(I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
    E: Into<BoxError>,
{
    type Output = O;

    fn run<'a>(&'a self, input: &'a I) -> BoxFuture<'a, Result<TaskRun<O>, TaskFailure>> {
        let future = (self.run)(input.clone());
        async move {
            match future.await {
                Ok(output) => Ok(TaskRun::new(output, Trace::default())),
                Err(error) => {
                    let error: BoxError = error.into();
                    Err(TaskFailure::new(&*error, Trace::default()))
                }
            }
        }
        .boxed()
    }
}
