//! The workflows the worker runs: the notes agent's run (`Durable`), the approval agent's
//! (`Approvals`), the journal's limits (`Limits`), two runs at once (`Pair`), a run the test
//! cancels (`Stalled`), and the bench's pair (`Journaled`, `Bare`).

// The workflow macros generate items of their own, undocumented.
#![allow(missing_docs, unreachable_pub, missing_debug_implementations)]

use golem::model::ModelResponse;
use golem::model::function::FunctionModel;
use golem::tool::FunctionTool;
use golem::{Agent, RunContext};
use golem_restate_engine_tests::agent::{Effects, Summary};
use golem_temporal::approval::{self, Approvals, AwaitingCall, Decision, WithApprovals};
use golem_temporal::{GolemSteps, TemporalJournal, workflow_error};
use serde::{Deserialize, Serialize};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityOptions, LocalActivityOptions, SyncWorkflowContext, WorkflowContext,
    WorkflowContextView, WorkflowResult,
};

/// The notes agent's run, journaled; its summary is the workflow's result.
#[workflow]
pub struct Durable {
    pub agent: Agent<Effects, String>,
    pub effects: Effects,
}

#[workflow_methods(factory_only)]
impl Durable {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<Summary> {
        let (agent, effects) = ctx.state(|s| (s.agent.clone(), s.effects.clone()));
        let journal = TemporalJournal::new(ctx);
        let result = agent
            .start(prompt, effects)
            .finish_in(&journal)
            .await
            .map_err(workflow_error)?;
        Ok(Summary::of(result))
    }
}

/// The approval agent's run: it waits in the workflow for a decision on each call.
#[workflow]
pub struct Approve {
    pub agent: Agent<Effects, String>,
    pub effects: Effects,
    pub approvals: Approvals,
}

impl WithApprovals for Approve {
    fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    fn approvals_mut(&mut self) -> &mut Approvals {
        &mut self.approvals
    }
}

#[workflow_methods(factory_only)]
impl Approve {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<Summary> {
        let (agent, effects) = ctx.state(|s| (s.agent.clone(), s.effects.clone()));
        let journal = TemporalJournal::new(ctx);
        let result = approval::finish(agent.start(prompt, effects), ctx, &journal).await?;
        Ok(Summary::of(result))
    }

    #[update_validator(decide)]
    pub fn check(
        &self,
        _ctx: &WorkflowContextView,
        decision: &Decision,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.approvals.check(decision)?)
    }

    #[update]
    pub fn decide(&mut self, _ctx: &mut SyncWorkflowContext<Self>, decision: Decision) {
        // The validator accepted it.
        let _ = self.approvals.decide(decision);
    }

    #[query]
    pub fn awaiting(&self, _ctx: &WorkflowContextView) -> Vec<AwaitingCall> {
        self.approvals.awaiting().to_vec()
    }
}

/// What a [`Limits`] run tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Limit {
    /// A tool returns 100,000 bytes under a journal that records at most 65,536.
    Oversized,
    /// The agent has a run timeout.
    Timeout,
}

/// The longest step result the `Oversized` journal records.
pub const OVERSIZED_LIMIT: usize = 65_536;

/// The journal's limits: a run that goes past one fails the workflow.
#[workflow]
#[derive(Default)]
pub struct Limits;

#[workflow_methods]
impl Limits {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, limit: Limit) -> WorkflowResult<String> {
        let journal = TemporalJournal::new(ctx);
        let result = match limit {
            Limit::Oversized => {
                let journal = journal.max_result_bytes(OVERSIZED_LIMIT);
                dumping_agent().start("Dump.", ()).finish_in(&journal).await
            }
            Limit::Timeout => {
                let agent = Agent::<(), String>::builder(FunctionModel::new(|_, _| {
                    ModelResponse::text("Done.")
                }))
                .run_timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("a valid agent");
                agent.start("Hello.", ()).finish_in(&journal).await
            }
        };
        Ok(result.map_err(workflow_error)?.output)
    }
}

/// Two agents' runs at once in one workflow, each through a journal of its own: their steps
/// have the same names, and each run gets its own results.
#[workflow]
#[derive(Default)]
pub struct Pair;

#[workflow_methods]
impl Pair {
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        names: (String, String),
    ) -> WorkflowResult<(String, String)> {
        let answering = |name: String| {
            Agent::<(), String>::builder(FunctionModel::new(move |_, _| {
                ModelResponse::text(name.clone())
            }))
            .build()
            .expect("a valid agent")
        };
        let (first, second) = (answering(names.0), answering(names.1));
        let (one, other) = (TemporalJournal::new(ctx), TemporalJournal::new(ctx));
        let (first, second) = futures::future::join(
            first.start("Who?", ()).finish_in(&one),
            second.start("Who?", ()).finish_in(&other),
        )
        .await;
        Ok((
            first.map_err(workflow_error)?.output,
            second.map_err(workflow_error)?.output,
        ))
    }
}

/// A run whose model calls `wait`, a tool that writes `started` to the file at the input's
/// path and then waits two minutes, writing `dropped` if its future is dropped first; the
/// test cancels the workflow while it waits.
#[workflow]
#[derive(Default)]
pub struct Stalled;

#[workflow_methods]
impl Stalled {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, effects: String) -> WorkflowResult<String> {
        let model = FunctionModel::new(|messages, _| {
            if messages.len() == 1 {
                ModelResponse::tool_call("wait", "{}", "c1")
            } else {
                ModelResponse::text("Waited.")
            }
        });
        let wait = FunctionTool::new("wait", move |_ctx: RunContext<()>, _: serde_json::Value| {
            let path = std::path::PathBuf::from(&effects);
            async move {
                write_line(&path, "started");
                let _dropped = OnDrop(path);
                tokio::time::sleep(std::time::Duration::from_secs(120)).await;
                Ok::<_, std::io::Error>("waited")
            }
        });
        let agent = Agent::<(), String>::builder(model)
            .tool(wait)
            .build()
            .expect("a valid agent");
        let journal = TemporalJournal::new(ctx);
        let result = agent
            .start("Wait.", ())
            .finish_in(&journal)
            .await
            .map_err(workflow_error)?;
        Ok(result.output)
    }
}

/// Writes `dropped` to the file at its path when dropped.
struct OnDrop(std::path::PathBuf);

impl Drop for OnDrop {
    fn drop(&mut self) {
        write_line(&self.0, "dropped");
    }
}

/// Appends `line` to the file at `path`.
fn write_line(path: &std::path::Path, line: &str) {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the effects file opens");
    writeln!(file, "{line}").expect("the effects file is written");
}

/// An agent whose model calls `dump` once, which returns 100,000 bytes.
fn dumping_agent() -> Agent<(), String> {
    let model = FunctionModel::new(|messages, _| {
        if messages.len() == 1 {
            ModelResponse::tool_call("dump", "{}", "c1")
        } else {
            ModelResponse::text("Dumped.")
        }
    });
    let dump = FunctionTool::new("dump", |_ctx: RunContext<()>, _: serde_json::Value| async {
        Ok::<_, std::io::Error>("x".repeat(100_000))
    });
    Agent::builder(model)
        .tool(dump)
        .build()
        .expect("a valid agent")
}

/// `steps` journaled steps: a run whose model calls a tool that does nothing,
/// `(steps - 1) / 2` times, then answers (each turn a model step and a tool step).
#[workflow]
#[derive(Default)]
pub struct Journaled;

#[workflow_methods]
impl Journaled {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, steps: u32) -> WorkflowResult<u32> {
        let calls = steps.saturating_sub(1) / 2;
        let model = FunctionModel::new(move |messages, _| {
            let turn = u32::try_from(messages.len().div_ceil(2)).unwrap_or(u32::MAX);
            if turn <= calls {
                ModelResponse::tool_call("noop", "{}", format!("c{turn}"))
            } else {
                ModelResponse::text("Done.")
            }
        });
        let noop = FunctionTool::new("noop", |_ctx: RunContext<()>, _: serde_json::Value| async {
            Ok::<_, std::io::Error>("ok")
        });
        let agent = Agent::<(), String>::builder(model)
            .tool(noop)
            .build()
            .expect("a valid agent");
        let journal = TemporalJournal::new(ctx);
        let result = agent
            .start("Go.", ())
            .finish_in(&journal)
            .await
            .map_err(workflow_error)?;
        Ok(u32::try_from(result.messages.len()).unwrap_or(u32::MAX))
    }
}

/// How a [`Bare`] run runs each of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BareKind {
    /// A local activity.
    Local,
    /// A local activity, then golem's no-op regular activity (as the journal closes a step).
    Closed,
    /// A regular activity.
    Regular,
}

/// What a [`Bare`] run does: `steps` steps of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BareSteps {
    pub steps: u32,
    pub kind: BareKind,
}

/// Bare activities, one after another: the floors the journal is measured against.
#[workflow]
#[derive(Default)]
pub struct Bare;

#[workflow_methods]
impl Bare {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: BareSteps) -> WorkflowResult<u32> {
        let timeout = std::time::Duration::from_secs(60);
        for step in 0..input.steps {
            if input.kind == BareKind::Regular {
                ctx.execute_activity(
                    Echo::echo,
                    step,
                    ActivityOptions::start_to_close_timeout(timeout),
                )
                .await?;
                continue;
            }
            let options = LocalActivityOptions::builder()
                .start_to_close_timeout(timeout)
                .build();
            ctx.execute_local_activity(Echo::echo, step, options)
                .await?;
            if input.kind == BareKind::Closed {
                ctx.execute_activity(
                    GolemSteps::recorded,
                    (),
                    ActivityOptions::start_to_close_timeout(timeout),
                )
                .await?;
            }
        }
        Ok(input.steps)
    }
}

/// The bare activity: returns its input.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

#[activities]
impl Echo {
    #[activity]
    pub async fn echo(_ctx: ActivityContext, value: u32) -> Result<u32, ActivityError> {
        Ok(value)
    }
}
