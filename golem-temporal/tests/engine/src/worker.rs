//! The worker the tests kill and restart: every workflow of [`crate::workflows`] and golem's
//! steps, on one task queue.

use std::error::Error;
use std::str::FromStr;

use golem_restate_engine_tests::agent::{Effects, agent, approval_agent};
use golem_temporal::GolemSteps;
use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::workflows::{Approve, Bare, Durable, Echo, Journaled, Limits, Pair, Stalled};

/// A client of the server at `address` (`127.0.0.1:PORT`), in the `default` namespace.
///
/// # Errors
/// When the server cannot be reached.
pub async fn client(address: &str) -> Result<Client, Box<dyn Error>> {
    let url = Url::from_str(&format!("http://{address}"))?;
    let connection = Connection::connect(ConnectionOptions::new(url).build()).await?;
    Ok(Client::new(
        connection,
        ClientOptions::new("default").build(),
    )?)
}

/// Runs a worker for `queue` on the server at `address` until the process ends: the agents
/// on the model server at `model_url`, their side effects in `effects`.
///
/// # Errors
/// When the worker cannot start, or stops with an error.
pub async fn run(
    address: &str,
    queue: &str,
    model_url: &str,
    effects: Effects,
) -> Result<(), Box<dyn Error>> {
    let runtime = Runtime::from_current_tokio(RuntimeOptions::default())?;
    let client = client(address).await?;
    let notes = agent(model_url);
    let approving = approval_agent(model_url);
    let durable_effects = effects.clone();
    let options = WorkerOptions::new(queue)
        .register_activities(GolemSteps)
        .register_activities(Echo)
        .register_workflow_with_factory::<Durable, _>(move || Durable {
            agent: notes.clone(),
            effects: durable_effects.clone(),
        })?
        .register_workflow_with_factory::<Approve, _>(move || Approve {
            agent: approving.clone(),
            effects: effects.clone(),
            approvals: Default::default(),
        })?
        .register_workflow::<Limits>()?
        .register_workflow::<Pair>()?
        .register_workflow::<Stalled>()?
        .register_workflow::<Journaled>()?
        .register_workflow::<Bare>()?
        .build();
    Worker::new(&runtime, client, options)?.run().await?;
    Ok(())
}
