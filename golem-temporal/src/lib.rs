//! Durable golem runs on [Temporal](https://temporal.io): a run that survives its worker
//! without paying a model request twice or repeating a recorded tool call.
//!
//! The run's control flow is the workflow: drive it through a [`TemporalJournal`] on the
//! workflow's context. Each model request, tool call, toolset listing and output validation
//! becomes one local activity `golem.step` ([`GolemSteps`], registered with the worker),
//! whose activity id is the step's name as golem names it — `model:{turn}`,
//! `tool:{turn}:{call_id}`, `tools:{turn}`, `output:{turn}`, `summary:{turn}`,
//! `history:{turn}`, `count:{turn}`, a child agent's steps under its call's or its
//! hand-off's name (a compatibility promise, see [`golem::run::Journal`]). When the worker dies mid-run, Temporal gives the workflow task to
//! the next worker; the workflow replays, answering the recorded steps from its history, and
//! goes on from the first step it had not recorded, with the same history, usage and retry
//! counters as a run that never stopped.
//!
//! ```
//! use golem::Agent;
//! use golem::model::function::FunctionModel;
//! use golem::model::ModelResponse;
//! use golem_temporal::{GolemSteps, TemporalJournal, workflow_error};
//! use temporalio_macros::{workflow, workflow_methods};
//! use temporalio_sdk::{WorkerOptions, WorkflowContext, WorkflowResult};
//!
//! #[workflow]
//! struct Assistant {
//!     agent: Agent<(), String>,
//! }
//!
//! #[workflow_methods(factory_only)]
//! impl Assistant {
//!     #[run]
//!     async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<String> {
//!         let agent = ctx.state(|s| s.agent.clone());
//!         let result = agent
//!             .start(prompt, ())
//!             .finish_in(&TemporalJournal::new(ctx))
//!             .await
//!             .map_err(workflow_error)?;
//!         Ok(result.output)
//!     }
//! }
//!
//! # fn worker() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FunctionModel::new(|_, _| ModelResponse::text("Hello!"));
//! let agent = Agent::<(), String>::builder(model).build()?;
//! let options = WorkerOptions::new("assistant")
//!     .register_activities(GolemSteps)
//!     .register_workflow_with_factory::<Assistant, _>(move || Assistant { agent: agent.clone() })?
//!     .build();
//! // Worker::new(&runtime, client, options)?.run().await?;
//! # let _ = options;
//! # Ok(())
//! # }
//! # worker().unwrap();
//! ```
//!
//! # What Temporal does and does not retry
//!
//! A step that fails for a transient reason (the transport, HTTP 408, 429, 5xx, after
//! golem's own retries; a toolset that could not list its tools) fails the workflow task,
//! and Temporal runs the task again from the history. Everything else is recorded at once,
//! and [`workflow_error`] fails the workflow with a non-retryable failure. ADR 0040 gives the
//! reasons.
//!
//! # Tools
//!
//! A tool call is recorded when it ends: if the worker dies while a tool runs, the next
//! worker runs that call again. Give side effects that must not repeat an idempotency key,
//! such as [`RunContext::tool_call_id`](golem::RunContext::tool_call_id). The tool calls of
//! one response run one after another, in call order.
//!
//! # Approvals
//!
//! [`approval::finish`] waits inside the workflow for a decision on each call that needs
//! approval, sent as a workflow update; the decision is in the history, so the wait survives
//! a restart of the worker.
//!
//! # Versions
//!
//! golem-temporal is built on the Temporal Rust SDK 1.1 (`temporalio-sdk`,
//! `temporalio-client`, `temporalio-macros`; MSRV 1.92); the tests run against the Temporal
//! CLI's dev server 1.9.1 (Server 1.32.0).

#![deny(missing_docs)]

pub mod approval;
mod error;
mod journal;
mod steps;

pub use error::{RUN_FAILED, StepError, workflow_error};
pub use journal::{DEFAULT_MAX_RESULT_BYTES, DEFAULT_STEP_TIMEOUT, TemporalJournal};
pub use steps::{GolemSteps, StepInput};
pub use {temporalio_client, temporalio_sdk};
