//! [`GolemSteps`]: the local activity that runs golem's steps.

// The activity macro generates items of its own, undocumented.
#![allow(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::sync::PoisonError;

use golem::run::RecordedFailure;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use crate::error::StepError;
use crate::journal::{Failed, StepKey, take};

/// The activities golem's journal runs its steps in: register them with every worker that
/// runs a workflow with a [`TemporalJournal`](crate::TemporalJournal).
///
/// ```
/// use golem_temporal::GolemSteps;
/// use temporalio_sdk::WorkerOptions;
///
/// let options = WorkerOptions::new("assistant").register_activities(GolemSteps).build();
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GolemSteps;

/// What the workflow sends the activity: which step to take from the table, and the
/// journal's limit on its result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepInput {
    pub(crate) run_id: String,
    pub(crate) step: String,
    pub(crate) max_result_bytes: usize,
}

#[activities]
impl GolemSteps {
    /// Runs the step the workflow left in the table and returns its result.
    #[activity(name = "golem.step")]
    pub async fn step(_ctx: ActivityContext, input: StepInput) -> Result<Value, ActivityError> {
        let key = StepKey {
            run_id: input.run_id,
            step: input.step,
        };
        let Some(pending) = take(&key) else {
            return Err(terminal(&StepError::Lost { step: key.step }));
        };
        let error = match pending.step.await {
            Ok(value) => {
                let bytes = serde_json::to_vec(&value).map_or(0, |json| json.len());
                if bytes <= input.max_result_bytes {
                    return Ok(value);
                }
                Box::new(StepError::TooLarge {
                    step: key.step,
                    bytes,
                    limit: input.max_result_bytes,
                }) as golem::BoxError
            }
            Err(error) => error,
        };
        let reported = terminal(&*error);
        *pending
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Failed::new(error));
        Err(reported)
    }

    /// Does nothing. The journal awaits it after each step: a workflow waiting on a regular
    /// activity completes its workflow task, which writes the step's result to the history
    /// at once (a local activity's result waits for the task to complete).
    #[activity(name = "golem.recorded")]
    pub async fn recorded(_ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }
}

/// A failure Temporal does not retry: the workflow decides (a transient one fails the
/// workflow task instead).
fn terminal(error: &(dyn std::error::Error + 'static)) -> ActivityError {
    ActivityError::Application(Box::new(ApplicationFailure::non_retryable(
        RecordedFailure::of(error).message,
    )))
}
