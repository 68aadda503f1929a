//! [`GolemSteps`]: the local activity that runs golem's steps.

// The activity macro generates items of its own, undocumented.
#![allow(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::pin::pin;
use std::sync::PoisonError;

use futures::future::{Either, select};

use golem::run::RecordedFailure;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use crate::error::StepError;
use crate::journal::{StepKey, take};

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
    #[serde(flatten)]
    pub(crate) key: StepKey,
    pub(crate) max_result_bytes: usize,
}

#[activities]
impl GolemSteps {
    /// Runs the step the workflow left in the table and returns its result, as JSON text:
    /// serialized once, measured against the limit, and sent as it is.
    #[activity(name = "golem.step")]
    pub async fn step(
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<Box<RawValue>, ActivityError> {
        let StepInput {
            key,
            max_result_bytes,
        } = input;
        let Some(pending) = take(&key) else {
            return Err(terminal(&StepError::Lost { step: key.step }));
        };
        // A cancelled workflow cancels the step: its future is dropped.
        let finished = match select(pending.step, pin!(ctx.cancelled())).await {
            Either::Left((finished, _)) => finished,
            Either::Right(((), _)) => return Err(ActivityError::cancelled()),
        };
        let json = finished.and_then(|value| Ok(serde_json::value::to_raw_value(&value)?));
        let error = match json {
            Ok(json) if json.get().len() <= max_result_bytes => return Ok(json),
            Ok(json) => Box::new(StepError::TooLarge {
                step: key.step,
                bytes: json.get().len(),
                limit: max_result_bytes,
            }) as golem::BoxError,
            Err(error) => error,
        };
        let reported = terminal(&*error);
        *pending
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(error);
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
