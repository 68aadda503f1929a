//! A durable run survives its worker: against a real Temporal server, the worker is killed
//! after the first tool's side effect and started again, and Temporal's replay finishes the
//! run without a repeated model request or side effect, with the usage and retry counters of
//! a run that never stopped.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{NAMES, WORKER, effects, target_dir};
use golem_restate_engine_tests::agent::{OUTPUT, PROMPT, Summary};
use golem_restate_engine_tests::model_server::{Log, ModelServer};
use golem_temporal_engine_tests::temporal::{Setup, outcome, step_names};
use golem_temporal_engine_tests::workflows::Durable;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_after_its_first_tool_finishes_without_repeating_a_step() {
    let (model, mut held) = ModelServer::start(Some(2)).await;
    let effects = effects("crash");
    let mut setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        "crash",
        &model.base_url(),
        &effects.path,
    )
    .await;
    let handle = setup
        .client
        .start_workflow(Durable::run, PROMPT.to_owned(), setup.options("crash-1"))
        .await
        .expect("the workflow starts");

    let turn = tokio::time::timeout(Duration::from_secs(60), held.recv())
        .await
        .expect("the run reaches turn 2 within 60 s");
    assert_eq!(turn, Some(2));
    assert_eq!(
        effects.lines(),
        ["call_1 hello"],
        "the tool ran before the crash"
    );
    setup.worker.restart();

    let summary = outcome(&handle, Duration::from_secs(90))
        .await
        .expect("the workflow succeeds");

    assert_eq!(summary.output, OUTPUT);
    assert_eq!(
        effects.lines(),
        ["call_1 hello"],
        "the side effect happened once"
    );
    assert_eq!(
        model.log(),
        Log {
            received: vec![1, 2, 2, 3, 4],
            answered: vec![1, 2, 3, 4],
        },
        "each journaled request reached the model once"
    );
    assert_eq!(
        summary,
        Summary::uninterrupted(&common::effects("uninterrupted")).await,
        "history, usage and counters as if nothing happened"
    );
    assert_eq!(step_names(&handle).await, NAMES);
}
