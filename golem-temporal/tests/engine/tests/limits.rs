//! The journal's limits against a real Temporal server: a step result longer than the
//! journal records fails the run with a typed message instead of a payload Temporal would
//! refuse, and a run timeout, which a workflow cannot keep, is refused at the first step;
//! two runs at once in one workflow, whose steps have the same names; and a cancelled
//! workflow, which cancels its run's step in flight.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{WORKER, effects, target_dir};
use golem_restate_engine_tests::agent::Effects;
use golem_temporal::RUN_FAILED;
use golem_temporal_engine_tests::temporal::{Setup, failure_text, outcome, step_names};
use golem_temporal_engine_tests::workflows::{Limit, Limits, Pair, Stalled};
use temporalio_client::WorkflowCancelOptions;
use temporalio_client::errors::WorkflowGetResultError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_and_a_run_timeout_fail_the_workflow_with_golems_message() {
    let (_effects, setup) = in_process("limits").await;

    for (limit, message, steps) in [
        (
            Limit::Oversized,
            "tool `dump` failed: the result of step `tool:1:c1` is 100015 bytes of JSON, over the journal's limit of 65536 bytes (Temporal refuses payloads over 2 MB by default)",
            vec!["model:1", "tool:1:c1"],
        ),
        (
            Limit::Timeout,
            "a run timeout cannot be kept in a Temporal workflow (it needs tokio timers); give the workflow an execution timeout instead",
            vec![],
        ),
    ] {
        let handle = setup
            .client
            .start_workflow(
                Limits::run,
                limit,
                setup.options(&format!("limits-{limit:?}")),
            )
            .await
            .expect("the workflow starts");
        let error = outcome(&handle, Duration::from_secs(60))
            .await
            .expect_err("the workflow fails");
        let text = failure_text(&error);
        assert!(text.contains(message), "{limit:?}: {text}");
        assert!(text.contains(RUN_FAILED), "{limit:?}: {text}");
        assert_eq!(step_names(&handle).await, steps, "{limit:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_at_once_in_one_workflow_each_get_their_own_steps() {
    let (_effects, setup) = in_process("pair").await;
    let handle = setup
        .client
        .start_workflow(
            Pair::run,
            ("Ann".to_owned(), "Bob".to_owned()),
            setup.options("pair"),
        )
        .await
        .expect("the workflow starts");
    let answers = outcome(&handle, Duration::from_secs(60))
        .await
        .expect("the workflow completes");
    assert_eq!(answers, ("Ann".to_owned(), "Bob".to_owned()));
    assert_eq!(step_names(&handle).await, ["model:1", "model:1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_workflow_cancels_its_runs_step_and_ends_cancelled() {
    let (effects, setup) = in_process("cancel").await;
    let handle = setup
        .client
        .start_workflow(
            Stalled::run,
            effects.path.display().to_string(),
            setup.options("cancel"),
        )
        .await
        .expect("the workflow starts");
    lines_become(&effects, &["started"]).await;

    handle
        .cancel(WorkflowCancelOptions::default())
        .await
        .expect("the cancellation is requested");
    let error = outcome(&handle, Duration::from_secs(60))
        .await
        .expect_err("the workflow is cancelled");
    assert!(
        matches!(error, WorkflowGetResultError::Cancelled { .. }),
        "{error:?}"
    );
    // The tool's future was dropped, not left waiting its two minutes.
    lines_become(&effects, &["started", "dropped"]).await;
    // The cancelled call's marker records its cancellation.
    assert_eq!(step_names(&handle).await, ["model:1", "tool:1:c1"]);
}

/// Waits up to 30 s for the effects file to read `lines`.
async fn lines_become(effects: &Effects, lines: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while effects.lines() != lines {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the effects are {:?}, not {lines:?}",
            effects.lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A side-effect file and a setup on the task queue `name`, for workflows whose agents play
/// their model in process: no model server.
async fn in_process(name: &str) -> (Effects, Setup) {
    let effects = effects(name);
    let setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        name,
        "http://127.0.0.1:9/v1",
        &effects.path,
    )
    .await;
    (effects, setup)
}
