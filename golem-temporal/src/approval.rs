//! Approvals that wait inside Temporal: a run paused for approval waits in its workflow for a
//! decision on each call, sent as a workflow update, across restarts of the worker.

use golem::output::Output;
use golem::run::Step;
pub use golem::run::{AwaitingCall, Decision};
use golem::{AgentRun, RunResult};
use temporalio_sdk::{ApplicationFailure, WorkflowContext, WorkflowResult};

use crate::{TemporalJournal, workflow_error};

/// What a workflow that waits for approvals keeps in its state: the calls that wait, and the
/// decisions that have arrived.
#[derive(Debug, Clone, Default)]
pub struct Approvals {
    awaiting: Vec<AwaitingCall>,
    decided: Vec<Decision>,
}

/// A decision on a call the run does not wait for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no call `{tool_call_id}` waits for approval")]
pub struct NotAwaited {
    /// The id the decision named.
    pub tool_call_id: String,
}

impl Approvals {
    /// The calls the run waits for a decision on (none when it does not wait): what a query
    /// returns.
    pub fn awaiting(&self) -> &[AwaitingCall] {
        &self.awaiting
    }

    /// Whether `decision` names a call that waits for one, and has none yet: what an update
    /// validator checks, so a decision on any other call is refused before it enters the
    /// history.
    ///
    /// # Errors
    /// [`NotAwaited`] otherwise.
    pub fn check(&self, decision: &Decision) -> Result<(), NotAwaited> {
        let id = &decision.tool_call_id;
        let waits = self.awaiting.iter().any(|call| &call.tool_call_id == id);
        let decided = self.decided.iter().any(|other| &other.tool_call_id == id);
        if waits && !decided {
            Ok(())
        } else {
            Err(NotAwaited {
                tool_call_id: id.clone(),
            })
        }
    }

    /// Records `decision`, from the update's handler.
    ///
    /// # Errors
    /// [`NotAwaited`] when [`check`](Self::check) refuses it.
    pub fn decide(&mut self, decision: Decision) -> Result<(), NotAwaited> {
        self.check(&decision)?;
        self.decided.push(decision);
        Ok(())
    }

    fn all_decided(&self) -> bool {
        self.decided.len() == self.awaiting.len()
    }
}

/// A workflow whose state holds its [`Approvals`].
pub trait WithApprovals {
    /// The approvals in the workflow's state.
    fn approvals(&self) -> &Approvals;

    /// The approvals, to change.
    fn approvals_mut(&mut self) -> &mut Approvals;
}

/// Drives `run` to its end in a workflow's run method, its steps journaled by `journal`.
/// When the run pauses for approval, the calls that wait are listed in the workflow's
/// [`Approvals`] and the workflow waits until each has a decision, sent by an update whose
/// handler calls [`Approvals::decide`]; then the run goes on. The worker may stop and start
/// again while it waits: the replay finds the decisions in the history and goes on.
///
/// ```
/// use golem::Agent;
/// use golem_temporal::TemporalJournal;
/// use golem_temporal::approval::{self, Approvals, AwaitingCall, Decision, WithApprovals};
/// use temporalio_macros::{workflow, workflow_methods};
/// use temporalio_sdk::{SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult};
///
/// #[workflow]
/// struct Assistant {
///     agent: Agent<(), String>,
///     approvals: Approvals,
/// }
///
/// impl WithApprovals for Assistant {
///     fn approvals(&self) -> &Approvals {
///         &self.approvals
///     }
///     fn approvals_mut(&mut self) -> &mut Approvals {
///         &mut self.approvals
///     }
/// }
///
/// #[workflow_methods(factory_only)]
/// impl Assistant {
///     #[run]
///     async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<String> {
///         let agent = ctx.state(|s| s.agent.clone());
///         let journal = TemporalJournal::new(ctx);
///         let result = approval::finish(agent.start(prompt, ()), ctx, &journal).await?;
///         Ok(result.output)
///     }
///
///     #[update_validator(decide)]
///     fn check(
///         &self,
///         _ctx: &WorkflowContextView,
///         decision: &Decision,
///     ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
///         Ok(self.approvals.check(decision)?)
///     }
///
///     #[update]
///     fn decide(&mut self, _ctx: &mut SyncWorkflowContext<Self>, decision: Decision) {
///         // The validator has accepted it.
///         let _ = self.approvals.decide(decision);
///     }
///
///     #[query]
///     fn awaiting(&self, _ctx: &WorkflowContextView) -> Vec<AwaitingCall> {
///         self.approvals.awaiting().to_vec()
///     }
/// }
/// ```
///
/// # Errors
/// The run's failure as [`workflow_error`] maps it; the workflow's cancellation.
pub async fn finish<W, Deps, O>(
    mut run: AgentRun<Deps, O>,
    ctx: &WorkflowContext<W>,
    journal: &TemporalJournal<W>,
) -> WorkflowResult<RunResult<O>>
where
    W: WithApprovals + 'static,
    Deps: Send + Sync + 'static,
    O: Output,
{
    loop {
        match run.step_in(journal).await.map_err(workflow_error)? {
            Step::Finished(result) => return Ok(result),
            Step::Paused => {
                let calls: Vec<AwaitingCall> = run
                    .awaiting_approval()
                    .iter()
                    .map(AwaitingCall::from)
                    .collect();
                ctx.state_mut(|workflow| {
                    *workflow.approvals_mut() = Approvals {
                        awaiting: calls,
                        decided: Vec::new(),
                    };
                });
                ctx.wait_condition(|workflow| workflow.approvals().all_decided())
                    .await?;
                let decided =
                    ctx.state_mut(|workflow| std::mem::take(workflow.approvals_mut()).decided);
                for decision in &decided {
                    decision
                        .apply(&mut run)
                        .map_err(ApplicationFailure::non_retryable)?;
                }
            }
            _ => {}
        }
    }
}
