//! Failed steps on a real Temporal server, decided as on Restate: a refused model request
//! fails the workflow at once, without a retry; a model outage that outlasts golem's own
//! retries fails the workflow task, and Temporal's retry of the task finishes the run with
//! the failed attempts left out of the usage and the step recorded once.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{NAMES, WORKER, effects, target_dir};
use golem_restate_engine_tests::agent::{OUTPUT, PROMPT};
use golem_restate_engine_tests::model_server::{Log, ModelServer};
use golem_temporal::RUN_FAILED;
use golem_temporal_engine_tests::temporal::{Setup, failure_text, outcome, step_names};
use golem_temporal_engine_tests::workflows::Durable;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_model_request_fails_the_workflow_without_a_retry() {
    let model = ModelServer::refusing(400).await;
    let effects = effects("refused");
    let setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        "refused",
        &model.base_url(),
        &effects.path,
    )
    .await;
    let handle = setup
        .client
        .start_workflow(Durable::run, PROMPT.to_owned(), setup.options("refused-1"))
        .await
        .expect("the workflow starts");
    let error = outcome(&handle, Duration::from_secs(60))
        .await
        .expect_err("the workflow fails");

    let text = failure_text(&error);
    assert!(
        text.contains(
            "the model request failed: openai answered HTTP 400 after 1 attempt(s): scripted refusal"
        ),
        "{text}"
    );
    assert!(text.contains(RUN_FAILED), "{text}");
    // A terminal failure: neither Temporal nor golem's transport sent the request again.
    assert_eq!(
        model.log(),
        Log {
            received: vec![1],
            answered: vec![1],
        }
    );
    assert!(effects.lines().is_empty());
    assert_eq!(step_names(&handle).await, ["model:1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_outage_past_golems_retries_is_retried_by_temporal_then_recorded_once() {
    // golem's transport sends each attempt of the step 4 times (3 retries): the first
    // workflow task fails with HTTP 503 after 4 requests, Temporal's retry of it succeeds.
    let model = ModelServer::failing_first(4, 503).await;
    let effects = effects("outage");
    let setup = Setup::start(
        &target_dir(),
        Path::new(WORKER),
        "outage",
        &model.base_url(),
        &effects.path,
    )
    .await;
    let handle = setup
        .client
        .start_workflow(Durable::run, PROMPT.to_owned(), setup.options("outage-1"))
        .await
        .expect("the workflow starts");
    let summary = outcome(&handle, Duration::from_secs(90))
        .await
        .expect("the workflow succeeds");

    assert_eq!(summary.output, OUTPUT);
    assert_eq!(summary.usage.requests, 4, "failed attempts are not usage");
    assert_eq!(
        model.log(),
        Log {
            received: vec![1, 1, 1, 1, 1, 2, 3, 4],
            answered: vec![1, 1, 1, 1, 1, 2, 3, 4],
        }
    );
    assert_eq!(effects.lines(), ["call_1 hello"]);
    assert_eq!(step_names(&handle).await, NAMES, "model:1 is recorded once");
}
