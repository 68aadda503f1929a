//! How golem's failures end a Temporal workflow, and the journal's own errors.

use golem::RunError;
use golem::run::{RecordedFailure, Stopped};
use temporalio_sdk::{ApplicationFailure, WorkflowTermination};

/// The failure type name of a workflow that ends because its run failed.
pub const RUN_FAILED: &str = "golem.RunError";

/// The termination a workflow returns for a failed run: it fails the workflow execution with
/// a non-retryable application failure of type [`RUN_FAILED`], the run's error and its causes
/// as the message (`the model request failed: openai answered HTTP 400 after 1 attempt(s):
/// …`). A run stopped as cancelled ([`Stopped::Cancelled`]: the workflow's cancellation,
/// see [`TemporalJournal`](crate::TemporalJournal)) ends it as cancelled instead.
///
/// Under a [`TemporalJournal`](crate::TemporalJournal) a transient failure never gets here (it
/// fails the workflow task, which Temporal retries); everything that does would fail the same
/// way again.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::{Agent, ModelRetry};
/// use golem_temporal::workflow_error;
/// use temporalio_sdk::WorkflowTermination;
///
/// let model = FunctionModel::new(|_, _| ModelResponse::text("maybe"));
/// let agent = Agent::<(), String>::builder(model)
///     .output_validator(|_ctx, _text: String| async move {
///         Err::<String, _>(ModelRetry::new("answer yes or no"))
///     })
///     .build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let error = agent.run("Is it raining?", ()).await.unwrap_err();
/// let termination = workflow_error(error);
/// assert!(matches!(termination, WorkflowTermination::Failed(_)));
/// assert_eq!(
///     termination.to_string(),
///     "Workflow failed: the output was rejected and output retries are off: answer yes or no"
/// );
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub fn workflow_error(error: RunError) -> WorkflowTermination {
    if error.stopped() == Some(&Stopped::Cancelled) {
        return WorkflowTermination::cancelled();
    }
    ApplicationFailure::builder(RecordedFailure::of(&error).message)
        .type_name(RUN_FAILED.to_owned())
        .non_retryable(true)
        .build()
        .into()
}

/// What the journal itself refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// A step's result is longer than the journal records.
    #[error(
        "the result of step `{step}` is {bytes} bytes of JSON, over the journal's limit of {limit} bytes (Temporal refuses payloads over 2 MB by default)"
    )]
    TooLarge {
        /// The step's name.
        step: String,
        /// The length of its JSON.
        bytes: usize,
        /// The journal's limit.
        limit: usize,
    },
    /// The run has a timeout, which a workflow cannot race against.
    #[error(
        "a run timeout cannot be kept in a Temporal workflow (it needs tokio timers); give the workflow an execution timeout instead"
    )]
    RunTimeout,
    /// The activity found no step to run: it ran in a worker other than the workflow's.
    #[error(
        "step `{step}` is not waiting in this worker; golem.step runs as a local activity of the workflow that journals it"
    )]
    Lost {
        /// The step's name.
        step: String,
    },
}
