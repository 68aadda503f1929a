//! Evals for golem agents: whether a change to a prompt, a tool, a model or a retry budget
//! made an agent better, and what its self-correction cost.
//!
//! A [`Dataset`] of [`Case`]s (loaded from YAML or JSON) is run by an [`Experiment`]: a
//! [`Task`] (an agent, [`AgentTask`], or any async function, [`task_fn`]) and
//! [evaluators](evaluator) that read each run's output and its whole [`Trace`] — history,
//! usage with its rejected share, events. The [`Report`] prints as a terminal table, saves
//! as JSON for CI, renders as a self-contained HTML page, and two reports make a
//! [`Comparison`] with a regression exit status.
//!
//! ```
//! use golem::model::function::FunctionModel;
//! use golem::model::ModelResponse;
//! use golem::Agent;
//! use golem_evals::evaluator::{check, Contains};
//! use golem_evals::{AgentTask, Case, Comparison, Dataset, Experiment};
//!
//! let dataset: Dataset<String, String> = Dataset::from_yaml("
//! cases:
//!   - name: greeting
//!     input: Say hello
//! ")?;
//! let agent = |reply: &'static str| {
//!     Agent::<(), String>::builder(FunctionModel::new(move |_, _| ModelResponse::text(reply)))
//!         .build()
//! };
//! let experiment = |name, reply| {
//!     Ok::<_, golem::BuildError>(
//!         Experiment::new(name, AgentTask::new(agent(reply)?, |input: &String| (input.clone(), ())))
//!             .evaluator(Contains::new("Hello"))
//!             .evaluator(check("no rejected round", |ctx| ctx.trace.usage.rejected.is_empty())),
//!     )
//! };
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let baseline = experiment("before", "Hello!")?.run(&dataset).await;
//! let candidate = experiment("after", "Hi!")?.run(&dataset).await;
//! let comparison = Comparison::new(&baseline, &candidate);
//! assert!(comparison.is_regression());
//! assert_eq!(comparison.exit_status(), 1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! The guide is [`guide`]; the feature `prices` adds money to reports
//! (`Experiment::prices`).
#![deny(missing_docs)]

pub mod cassette;
mod dataset;
pub mod evaluator;
mod report;
mod runner;
mod task;
mod trace;

pub use dataset::{Case, Dataset, DatasetError};
pub use evaluator::{EvalContext, Evaluation, Evaluator, Outcome, OutcomeValue};
pub use report::{
    CaseDiff, CaseReport, CaseResult, CaseSummary, Change, Comparison, Money, Report, Totals,
};
pub use runner::{Experiment, Progress};
pub use task::{AgentTask, FnTask, Task, TaskFailure, TaskRun, task_fn};
pub use trace::{Trace, TraceEvent};

/// The evals guide: datasets, evaluators, the runner, reports and comparisons, and a
/// dataset run against a local llama.cpp server.
#[doc = include_str!("../../docs/evals.md")]
pub mod guide {}
