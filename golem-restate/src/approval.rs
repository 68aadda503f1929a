//! Approvals that wait inside Restate: a run paused for approval waits in a workflow for a
//! decision on each call, carried by a durable promise, across restarts of the service.

use golem::output::Output;
use golem::run::Step;
pub use golem::run::{AwaitingCall, Decision};
use golem::{AgentRun, RunResult};
use restate_sdk::context::{
    ContextPromises, ContextReadState, ContextWriteState, SharedWorkflowContext, WorkflowContext,
};
use restate_sdk::errors::{HandlerError, TerminalError};
use restate_sdk::serde::Json;

use crate::{RestateJournal, handler_error};

/// The workflow state that lists the calls waiting for a decision.
pub const AWAITING_STATE: &str = "golem-awaiting-approval";

/// The HTTP status of an answer to a call that does not wait for one.
const NOT_AWAITED: u16 = 409;

/// The durable promise that carries the decision on `tool_call_id`.
pub fn approval_promise(tool_call_id: &str) -> String {
    format!("golem-approval:{tool_call_id}")
}

/// Drives `run` to its end in a Restate workflow's run handler, its steps journaled as
/// [`RestateJournal`] journals them. When the run pauses for approval, the calls that wait
/// are listed in the workflow's state ([`AWAITING_STATE`], read by [`awaiting`]) and the run
/// waits, inside Restate, for a decision on each ([`decide`], from a shared handler); then it
/// goes on. The service may stop and start again while it waits: the retried invocation
/// replays the recorded steps, finds the decisions in their promises and goes on.
///
/// ```
/// use golem::Agent;
/// use golem_restate::approval::{self, AwaitingCall, Decision};
/// use restate_sdk::prelude::*;
///
/// struct Assistant {
///     agent: Agent<(), String>,
/// }
///
/// #[restate_sdk::workflow]
/// impl Assistant {
///     #[handler]
///     async fn run(&self, ctx: WorkflowContext<'_>, prompt: String) -> Result<String, HandlerError> {
///         let result = approval::finish(self.agent.start(prompt, ()), &ctx).await?;
///         Ok(result.output)
///     }
///
///     #[handler]
///     async fn decide(&self, ctx: SharedWorkflowContext<'_>, decision: Json<Decision>) -> Result<(), HandlerError> {
///         approval::decide(&ctx, decision.into_inner()).await
///     }
///
///     #[handler]
///     async fn awaiting(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Vec<AwaitingCall>>, HandlerError> {
///         Ok(Json(approval::awaiting(&ctx).await?))
///     }
/// }
/// ```
///
/// # Errors
/// The run's failure as [`handler_error`] maps it, or Restate's.
pub async fn finish<Deps, O>(
    mut run: AgentRun<Deps, O>,
    ctx: &WorkflowContext<'_>,
) -> Result<RunResult<O>, HandlerError>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    let journal = RestateJournal::new(ctx);
    loop {
        match run.step_in(&journal).await.map_err(handler_error)? {
            Step::Finished(result) => return Ok(result),
            Step::Paused => {
                let calls: Vec<AwaitingCall> = run
                    .awaiting_approval()
                    .iter()
                    .map(AwaitingCall::from)
                    .collect();
                ctx.set(AWAITING_STATE, Json(calls.clone()));
                for call in &calls {
                    let Json(decision) = ctx
                        .promise::<Json<Decision>>(&approval_promise(&call.tool_call_id))
                        .await?;
                    decision
                        .apply(&mut run)
                        .map_err(|error| TerminalError::new(error.to_string()))?;
                }
                ctx.clear(AWAITING_STATE);
            }
            _ => {}
        }
    }
}

/// Resolves the decision on a waiting call, from a shared handler of the workflow that
/// runs [`finish`].
///
/// # Errors
/// A terminal error with status 409 when no call with that id waits for a decision (an
/// answer must name a call the run awaits), or Restate's.
pub async fn decide(
    ctx: &SharedWorkflowContext<'_>,
    decision: Decision,
) -> Result<(), HandlerError> {
    let waiting = awaiting(ctx).await?;
    if !waiting
        .iter()
        .any(|call| call.tool_call_id == decision.tool_call_id)
    {
        return Err(TerminalError::new_with_code(
            NOT_AWAITED,
            format!("no call `{}` waits for approval", decision.tool_call_id),
        )
        .into());
    }
    ctx.resolve_promise(&approval_promise(&decision.tool_call_id), Json(decision));
    Ok(())
}

/// The calls the run waits for a decision on (none when it does not wait).
///
/// # Errors
/// Restate's, reading the workflow's state.
pub async fn awaiting(ctx: &SharedWorkflowContext<'_>) -> Result<Vec<AwaitingCall>, HandlerError> {
    let waiting: Option<Json<Vec<AwaitingCall>>> = ctx.get(AWAITING_STATE).await?;
    Ok(waiting.map(Json::into_inner).unwrap_or_default())
}
