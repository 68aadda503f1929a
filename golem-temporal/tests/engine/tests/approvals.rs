//! Approvals that wait inside Temporal: a workflow's run pauses for two calls, the worker is
//! killed and started again while it waits, then one call is approved and the other denied
//! by workflow updates; the run goes on from its history, the approved call runs once, the
//! denied one never, and a decision on a call that does not wait is refused by the update's
//! validator.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{WORKER, effects, target_dir};
use golem_restate_engine_tests::agent::{PROMPT, awaiting_calls};
use golem_restate_engine_tests::model_server::{Log, ModelServer};
use golem_temporal::approval::Decision;
use golem_temporal_engine_tests::temporal::{Setup, outcome, step_names};
use golem_temporal_engine_tests::workflows::Approve;
use temporalio_client::{WorkflowExecuteUpdateOptions, WorkflowQueryOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_waits_in_temporal_across_a_restart_and_goes_on_with_the_decisions() {
    let model = ModelServer::approvals().await;
    let effects = effects("approvals");
    let mut setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        "approvals",
        &model.base_url(),
        &effects.path,
    )
    .await;
    let handle = setup
        .client
        .start_workflow(
            Approve::run,
            PROMPT.to_owned(),
            setup.options("approvals-1"),
        )
        .await
        .expect("the workflow starts");

    // The calls the workflow waits for, once it waits for both.
    let mut waiting = Vec::new();
    for _ in 0..240 {
        waiting = handle
            .query(Approve::awaiting, (), WorkflowQueryOptions::default())
            .await
            .unwrap_or_default();
        if waiting.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(waiting, awaiting_calls());
    assert!(effects.lines().is_empty(), "nothing ran before a decision");

    setup.worker.restart();

    // A decision must name a call the run waits for.
    let refused = handle
        .execute_update(
            Approve::decide,
            Decision::approve("call_x"),
            WorkflowExecuteUpdateOptions::default(),
        )
        .await
        .expect_err("the validator refuses it");
    assert!(
        refused
            .to_string()
            .contains("no call `call_x` waits for approval"),
        "{refused}"
    );

    for decision in [
        Decision::approve("call_a"),
        Decision::deny("call_b", "Not that one."),
    ] {
        handle
            .execute_update(
                Approve::decide,
                decision,
                WorkflowExecuteUpdateOptions::default(),
            )
            .await
            .expect("the decision is accepted");
    }

    let summary = outcome(&handle, Duration::from_secs(90))
        .await
        .expect("the workflow succeeds");

    summary.assert_approved();
    assert_eq!(
        effects.lines(),
        ["call_a keep"],
        "the approved call ran once, the denied one never"
    );
    assert_eq!(
        model.log(),
        Log {
            received: vec![1, 2],
            answered: vec![1, 2],
        },
        "the first request was answered from the history after the restart"
    );
    assert_eq!(
        step_names(&handle).await,
        ["model:1", "tool:1:call_a", "model:2"]
    );
}
