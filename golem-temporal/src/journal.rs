//! [`TemporalJournal`]: golem's journal on Temporal local activities.

use std::collections::HashMap;
use std::fmt;
use std::future::{Future, pending};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use golem::BoxError;
use golem::run::{
    Journal, JournalStep, RecordedFailure, StepStopped, Stopped, is_transient_failure,
};
use send_wrapper::SendWrapper;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_common::RetryPolicy;
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, LocalActivityOptions, WorkflowContext,
};

use crate::error::StepError;
use crate::steps::{GolemSteps, StepInput};

/// A run's journal in a Temporal workflow: each model request, tool call, toolset listing
/// and output validation is one local activity `golem.step`, whose id is the step's name as
/// golem names it (`model:{turn}`, `tool:{turn}:{call_id}`, …), so a replayed workflow
/// answers the steps its history recorded instead of running them again.
///
/// The worker registers [`GolemSteps`] beside the workflow; the workflow drives the run
/// through a journal on its context:
///
/// ```
/// use golem::Agent;
/// use golem_temporal::{GolemSteps, TemporalJournal, workflow_error};
/// use temporalio_macros::{workflow, workflow_methods};
/// use temporalio_sdk::{WorkerOptions, WorkflowContext, WorkflowResult};
///
/// #[workflow]
/// struct Assistant {
///     agent: Agent<(), String>,
/// }
///
/// #[workflow_methods(factory_only)]
/// impl Assistant {
///     #[run]
///     async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<String> {
///         let agent = ctx.state(|s| s.agent.clone());
///         let journal = TemporalJournal::new(ctx);
///         let result = agent
///             .start(prompt, ())
///             .finish_in(&journal)
///             .await
///             .map_err(workflow_error)?;
///         Ok(result.output)
///     }
/// }
///
/// # fn options(agent: Agent<(), String>) -> Result<(), Box<dyn std::error::Error>> {
/// let options = WorkerOptions::new("assistant")
///     .register_activities(GolemSteps)
///     .register_workflow_with_factory::<Assistant, _>(move || Assistant { agent: agent.clone() })?
///     .build();
/// # let _ = options;
/// # Ok(())
/// # }
/// ```
///
/// # How a step is journaled
///
/// The step's future waits, in this process, in a table the activity takes it from: local
/// activities run in the worker that runs the workflow task, so the history keeps only the
/// step's name and its result (a marker), never its input, and every kind of step maps the
/// same way. After each step the workflow awaits a regular activity that does nothing
/// (`golem.recorded`), so the workflow task completes and the marker is written at once: a
/// worker that dies during the next step does not run this one again.
///
/// Steps run one at a time ([`concurrent`](Journal::concurrent) is `false`): the tool calls
/// of one response run in call order, as on Restate.
///
/// # Failures
///
/// A step that fails for a transient reason ([`is_transient_failure`]: the transport, HTTP
/// 408, 429 or 5xx after golem's own retries; a toolset that could not list its tools) fails
/// the workflow task, so Temporal runs it again, replaying the recorded steps (its task retry
/// has no end; the workflow's execution timeout bounds it). Any other failure is recorded at
/// once and ends the run at the step's stage; a replay gets it back as a [`RecordedFailure`]
/// with the same message.
///
/// # Cancellation
///
/// A cancelled workflow stops its run as the run's own cancellation token would: the step in
/// flight is cancelled (its local activity, and the step's future in it, are dropped), no
/// other step runs, and the run ends at [`Stage::Stopped`](golem::Stage::Stopped) with
/// [`Stopped::Cancelled`], its messages and usage kept; [`workflow_error`](crate::workflow_error)
/// makes that the workflow's cancellation.
///
/// # Limits
///
/// A step's result travels in the history: one whose JSON is longer than the journal's limit
/// ([`DEFAULT_MAX_RESULT_BYTES`]; [`max_result_bytes`](Self::max_result_bytes) changes it)
/// is recorded as a [`StepError::TooLarge`] failure instead, because Temporal refuses a
/// payload over 2 MB by default and a refused marker would fail every retry of the task.
///
/// A run timeout ([`AgentBuilder::run_timeout`](golem::AgentBuilder::run_timeout)) and cancellation
/// tokens race the run against tokio timers, which a workflow may not use: a run with a
/// timeout fails at its first step with [`StepError::RunTimeout`]. Give the workflow an
/// execution timeout, and cancel it through Temporal.
pub struct TemporalJournal<W: 'static> {
    ctx: SendWrapper<WorkflowContext<W>>,
    max_result_bytes: usize,
    step_timeout: Duration,
}

/// The longest step result a journal records by default: 1 MiB of JSON, half of Temporal's
/// default payload limit.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;

/// How long one step may run by default: a model request with golem's own retries, or a
/// tool call.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(600);

impl<W: 'static> TemporalJournal<W> {
    /// A journal on the workflow's context `ctx`.
    pub fn new(ctx: &WorkflowContext<W>) -> Self {
        TemporalJournal {
            ctx: SendWrapper::new(ctx.clone()),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            step_timeout: DEFAULT_STEP_TIMEOUT,
        }
    }

    /// Sets the longest step result, in bytes of JSON, the journal records.
    #[must_use]
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Sets how long one step may run ([`DEFAULT_STEP_TIMEOUT`] by default); a step that
    /// runs longer is recorded as failed.
    #[must_use]
    pub fn step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = timeout;
        self
    }
}

impl<W> fmt::Debug for TemporalJournal<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemporalJournal")
            .field("max_result_bytes", &self.max_result_bytes)
            .field("step_timeout", &self.step_timeout)
            .finish_non_exhaustive()
    }
}

impl<W: 'static> Journal for TemporalJournal<W> {
    fn concurrent(&self) -> bool {
        false
    }

    /// A run timeout needs tokio timers, which a workflow may not use.
    fn deadline_refusal(&self) -> Option<BoxError> {
        Some(Box::new(StepError::RunTimeout))
    }

    fn step(
        &self,
        name: String,
        step: JournalStep,
    ) -> impl Future<Output = Result<Value, BoxError>> + Send {
        let ctx = (*self.ctx).clone();
        let max_result_bytes = self.max_result_bytes;
        let timeout = self.step_timeout;
        // The workflow polls and drops its futures on its own thread, so the context never
        // leaves it; the step itself is `Send` and runs in the activity.
        SendWrapper::new(async move {
            // A cancelled workflow runs no more steps: the run stops as its own cancellation
            // token would stop it (a replay sees the cancellation at the same point).
            if ctx.cancellation_token().is_cancelled() {
                return Err(Box::new(StepStopped::new(Stopped::Cancelled, false)) as BoxError);
            }
            let key = StepKey {
                run_id: ctx.run_id().to_owned(),
                step: name.clone(),
                nonce: NONCE.fetch_add(1, Ordering::Relaxed),
            };
            let entry = Entry::insert(key.clone(), step);
            let options = LocalActivityOptions::builder()
                .activity_id(name.clone())
                .start_to_close_timeout(timeout)
                .retry_policy(RetryPolicy::builder().maximum_attempts(1).build())
                .summary(name.clone())
                .build();
            let input = StepInput {
                key,
                max_result_bytes,
            };
            let recorded = ctx
                .execute_local_activity(GolemSteps::step, input, options)
                .await;
            let live = entry.finish();
            // The workflow was cancelled while the step ran: the activity was cancelled with
            // it (Temporal cancels a workflow's activities), and so is the step.
            if let Err(ActivityExecutionError::Cancelled(_)) = &recorded {
                return Err(Box::new(StepStopped::new(Stopped::Cancelled, true)) as BoxError);
            }
            if let Some(error) = &live
                && is_transient_failure(&**error)
            {
                ctx.force_task_fail(RecordedFailure::of(&**error).message);
                return pending().await;
            }
            // Completes the workflow task, so the step's marker is written now (a timer would
            // do too, but the server fires timers a second late at best). A cancellation
            // that comes meanwhile cancels it; the step's result stands, and the next step
            // stops the run.
            match ctx
                .execute_activity(GolemSteps::recorded, (), recorded_options())
                .await
            {
                Ok(()) | Err(ActivityExecutionError::Cancelled(_)) => {}
                Err(error) => return Err(Box::new(recorded_failure(&error))),
            }
            match recorded {
                Ok(json) => Ok(serde_json::from_str(json.get())?),
                Err(error) => {
                    Err(live.unwrap_or_else(|| Box::new(recorded_failure(&error)) as BoxError))
                }
            }
        })
    }
}

/// The options of the activity that closes a step: any worker of the queue runs it, most
/// often this one, eagerly; it cannot fail, so Temporal's default retries stand.
fn recorded_options() -> ActivityOptions {
    ActivityOptions::start_to_close_timeout(Duration::from_secs(60))
}

/// A failure the history recorded, as a replay reports it.
fn recorded_failure(error: &ActivityExecutionError) -> RecordedFailure {
    RecordedFailure {
        message: error
            .failure()
            .map_or_else(|| error.to_string(), |failure| failure.message.clone()),
    }
}

/// Which step of which workflow run, made unique in this process by a nonce: two golem runs
/// in one workflow (two agents at once, each through its own journal) name their steps
/// alike, and each must find its own step in the table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct StepKey {
    pub(crate) run_id: String,
    pub(crate) step: String,
    pub(crate) nonce: u64,
}

/// The next step's [`StepKey::nonce`]. It travels only in the local activity's input, which
/// the history does not keep, so a replay may draw another.
static NONCE: AtomicU64 = AtomicU64::new(0);

/// Where the activity leaves a step's failure for the live run: the step's own error (a
/// `ModelError` a caller can ask questions of), not only its recorded message.
pub(crate) type Failed = Arc<Mutex<Option<BoxError>>>;

/// A step waiting for its activity, and where the activity leaves its failure.
pub(crate) struct Pending {
    pub(crate) step: JournalStep,
    pub(crate) failed: Failed,
}

/// The steps this process's workflows wait on, for the activities that run them.
static STEPS: LazyLock<Mutex<HashMap<StepKey, Pending>>> = LazyLock::new(Mutex::default);

/// Takes the step `key` out of the table, for its activity.
pub(crate) fn take(key: &StepKey) -> Option<Pending> {
    STEPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(key)
}

/// A step in the table, removed when the workflow no longer waits for it (a replay answers
/// it from the history, or the workflow is dropped).
struct Entry {
    key: StepKey,
    failed: Failed,
}

impl Entry {
    fn insert(key: StepKey, step: JournalStep) -> Self {
        let failed = Arc::default();
        let pending = Pending {
            step,
            failed: Arc::clone(&failed),
        };
        STEPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), pending);
        Entry { key, failed }
    }

    /// How the step failed, when its activity ran here and it failed.
    fn finish(self) -> Option<BoxError> {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        take(&self.key);
    }
}
