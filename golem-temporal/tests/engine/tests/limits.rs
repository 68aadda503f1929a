//! The journal's limits against a real Temporal server: a step result longer than the
//! journal records fails the run with a typed message instead of a payload Temporal would
//! refuse, and a run timeout, which a workflow cannot keep, is refused at the first step.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{WORKER, effects, target_dir};
use golem_temporal::RUN_FAILED;
use golem_temporal_engine_tests::temporal::{TemporalServer, WorkerProcess, step_names};
use golem_temporal_engine_tests::workflows::{Limit, Limits};
use temporalio_client::errors::WorkflowGetResultError;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_and_a_run_timeout_fail_the_workflow_with_golems_message() {
    let server = TemporalServer::start(&target_dir()).await;
    let client = server.client().await;
    let effects = effects("limits");
    let queue = "limits";
    let _worker = WorkerProcess::start(
        Path::new(WORKER),
        &server,
        queue,
        "http://127.0.0.1:9/v1",
        &effects.path,
    );

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
        let options = WorkflowStartOptions::new(queue, format!("limits-{limit:?}"))
            .task_timeout(Duration::from_secs(2))
            .build();
        let handle = client
            .start_workflow(Limits::run, limit, options)
            .await
            .expect("the workflow starts");
        let error = tokio::time::timeout(
            Duration::from_secs(60),
            handle.get_result(WorkflowGetResultOptions::default()),
        )
        .await
        .expect("the workflow ends within 60 s")
        .expect_err("the workflow fails");
        let WorkflowGetResultError::Failed(failure) = &error else {
            panic!("{limit:?}: {error:?}");
        };
        let text = format!("{failure:?}");
        assert!(text.contains(message), "{limit:?}: {text}");
        assert!(text.contains(RUN_FAILED), "{limit:?}: {text}");
        assert_eq!(step_names(&handle).await, steps, "{limit:?}");
    }
}
