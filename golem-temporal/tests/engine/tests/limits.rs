//! The journal's limits against a real Temporal server: a step result longer than the
//! journal records fails the run with a typed message instead of a payload Temporal would
//! refuse, and a run timeout, which a workflow cannot keep, is refused at the first step.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{WORKER, effects, target_dir};
use golem_temporal::RUN_FAILED;
use golem_temporal_engine_tests::temporal::{Setup, failure_text, outcome, step_names};
use golem_temporal_engine_tests::workflows::{Limit, Limits};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_and_a_run_timeout_fail_the_workflow_with_golems_message() {
    let effects = effects("limits");
    // These agents play their model in process: no model server.
    let setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        "limits",
        "http://127.0.0.1:9/v1",
        &effects.path,
    )
    .await;

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
