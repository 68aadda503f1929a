//! [`RestateJournal`]: golem's journal on Restate's `ctx.run`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use golem::BoxError;
use golem::run::{Journal, JournalStep};
use restate_sdk::context::{
    Context, ContextSideEffects, ObjectContext, RunFuture, RunRetryPolicy, SharedObjectContext,
    SharedWorkflowContext, WorkflowContext,
};
use restate_sdk::serde::Json;
use serde_json::Value;

use crate::error::{recorded_error, step_error};

/// A run's journal in a Restate handler: each model request and each tool call is one
/// `ctx.run` step, named as golem names it (`model:{turn}`, `tool:{turn}:{call_id}`, and
/// `tools:{turn}` and `deadline` for the tool list and the deadline), so a retried
/// invocation answers the steps Restate recorded instead of running them again.
///
/// Borrow the handler's context (a [`Context`](restate_sdk::context::Context), an object's or
/// a workflow's) and drive the run through it:
///
/// ```
/// use golem::Agent;
/// use golem_restate::{RestateJournal, handler_error};
/// use restate_sdk::prelude::*;
///
/// struct Assistant {
///     agent: Agent<(), String>,
/// }
///
/// #[restate_sdk::service]
/// impl Assistant {
///     #[handler]
///     async fn ask(&self, ctx: Context<'_>, prompt: String) -> Result<String, HandlerError> {
///         let journal = RestateJournal::new(&ctx);
///         let result = self
///             .agent
///             .start(prompt, ())
///             .finish_in(&journal)
///             .await
///             .map_err(handler_error)?;
///         Ok(result.output)
///     }
/// }
/// ```
///
/// Restate's rules for `ctx.run` hold by construction: a step is awaited as soon as it is
/// made, one at a time ([`concurrent`](Journal::concurrent) is `false`, so the tool calls
/// of one response run one after another, in call order), and a step never touches the
/// context (steps are golem's own model requests and tool calls, which own what they use).
///
/// A step that fails is classified by [`handler_error`](crate::handler_error)'s rules: a
/// transient model failure (the transport's, HTTP 408, 429 or 5xx, after golem's own
/// retries), and a toolset that could not list its tools, are retried by Restate under the
/// journal's [`RunRetryPolicy`] ([`DEFAULT_RETRY_ATTEMPTS`] attempts by default;
/// [`retry_policy`](Self::retry_policy) changes it), and then recorded as failed; any other
/// failure is recorded at once, as a [`TerminalError`](restate_sdk::errors::TerminalError).
/// A recorded failure ends the run at the step's stage (a step the run's deadline stopped
/// ends it at `Stage::Stopped`, now and on replay): with the step's own error, or
/// [`RetriesExhausted`](crate::RetriesExhausted) around it when Restate gave up retrying it;
/// on a retried invocation it comes back as a [`RecordedFailure`](golem::run::RecordedFailure) with the same message.
///
/// Restate counts a step's attempts since the last step it recorded, its retries of the
/// invocation included: a step that was in flight when the service died, and the attempts
/// to reach the service while it was down, use up the policy's attempts before a replay
/// runs the step again. Give a longer policy to steps that must ride out an outage across
/// a restart.
pub struct RestateJournal<'a, C> {
    ctx: &'a C,
    retry_policy: RunRetryPolicy,
}

/// How many times Restate runs a failing step by default, the first attempt included; each
/// attempt is a whole model request with golem's transport retries inside it.
pub const DEFAULT_RETRY_ATTEMPTS: u32 = 4;

impl<'a, C> RestateJournal<'a, C> {
    /// A journal on the handler's context `ctx`, whose failing steps Restate retries
    /// [`DEFAULT_RETRY_ATTEMPTS`] times in all, 1 s apart at first, doubling up to 30 s.
    pub fn new(ctx: &'a C) -> Self {
        RestateJournal {
            ctx,
            retry_policy: default_retry_policy(),
        }
    }

    /// Sets how Restate retries a step that failed with a transient error, e.g.
    /// `RunRetryPolicy::new().max_attempts(10)`. Without `max_attempts` or `max_duration`
    /// Restate retries forever.
    #[must_use]
    pub fn retry_policy(mut self, retry_policy: RunRetryPolicy) -> Self {
        self.retry_policy = retry_policy;
        self
    }
}

fn default_retry_policy() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_secs(1))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(30))
        .max_attempts(DEFAULT_RETRY_ATTEMPTS)
}

impl<C> fmt::Debug for RestateJournal<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestateJournal")
            .field("retry_policy", &self.retry_policy)
            .finish_non_exhaustive()
    }
}

// One impl per context type, not one generic over `ContextSideEffects`: only for a known
// context does the compiler see that `ctx.run`'s future is `Send`, as a handler's must be.
macro_rules! journal_on {
    ($($context:ident),+) => {$(
        impl<'ctx> Journal for RestateJournal<'_, $context<'ctx>> {
            fn concurrent(&self) -> bool {
                false
            }

            async fn step(&self, name: String, step: JournalStep) -> Result<Value, BoxError> {
                run_step!(self, name, step)
            }
        }
    )+};
}

// A step that fails now keeps its own error for this run (a `ModelError` the caller can ask
// questions of); Restate records its message.
macro_rules! run_step {
    ($journal:expr, $name:expr, $step:expr) => {{
        let journal = $journal;
        let step = $step;
        let live: Arc<Mutex<Option<BoxError>>> = Arc::default();
        let failed = Arc::clone(&live);
        let recorded = journal
            .ctx
            .run(move || async move {
                step.await.map(Json).map_err(|error| {
                    let (reported, error) = step_error(error);
                    *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                    reported
                })
            })
            .name($name)
            .retry_policy(journal.retry_policy.clone())
            .await;
        match recorded {
            Ok(Json(value)) => Ok(value),
            Err(terminal) => Err(recorded_error(
                live.lock().unwrap_or_else(PoisonError::into_inner).take(),
                terminal.message(),
            )),
        }
    }};
}

journal_on!(
    Context,
    ObjectContext,
    SharedObjectContext,
    WorkflowContext,
    SharedWorkflowContext
);
