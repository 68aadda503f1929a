//! A durable run survives its process: against a real `restate-server`, the service is
//! killed after the first tool's side effect and restarted, and Restate's retry finishes
//! the run without a repeated model request or side effect, with the usage and retry
//! counters of a run that never stopped.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{SERVICE, effects, target_dir};
use golem_restate_engine_tests::agent::{
    DELEGATED_OUTPUT, Effects, OUTPUT, PROMPT, Summary, delegating_agent,
};
use golem_restate_engine_tests::model_server::{Log, ModelServer};
use golem_restate_engine_tests::restate::{RestateServer, ServiceProcess, free_port};
use serde_json::json;

/// The steps of the scripted run, as golem names them (a compatibility promise).
const NAMES: [&str; 7] = [
    "model:1",
    "tool:1:call_1",
    "model:2",
    "tool:2:call_2",
    "model:3",
    "tool:3:call_3",
    "model:4",
];

/// A run of `Durable/{handler}` on a real server, its service killed while the model server
/// holds turn 2's first request (by then turn 1's tool call is in Restate's journal) and
/// started again; Restate's retry finishes it.
struct Crashed {
    restate: RestateServer,
    id: String,
    summary: Summary,
    model: ModelServer,
    effects: Effects,
}

async fn crashed(handler: &str, name: &str) -> Crashed {
    let restate = RestateServer::start(&target_dir()).await;
    let (model, mut held) = ModelServer::start(Some(2)).await;
    let effects = effects(name);
    let port = free_port();
    let service = ServiceProcess::start(Path::new(SERVICE), port, &model.base_url(), &effects.path);
    restate.register(&service.uri).await;

    let invocation = {
        let ingress = restate.ingress.clone();
        let url = format!("{ingress}/Durable/{handler}");
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(url)
                .json(&PROMPT)
                .timeout(Duration::from_secs(120))
                .send()
                .await
                .expect("the ingress answers");
            let id = response
                .headers()
                .get("x-restate-id")
                .and_then(|id| id.to_str().ok())
                .map(str::to_owned)
                .expect("an invocation id");
            let status = response.status();
            let body = response.text().await.expect("a body");
            assert!(
                status.is_success(),
                "the invocation failed: {status}: {body}"
            );
            (
                id,
                serde_json::from_str::<Summary>(&body).expect("a summary"),
            )
        })
    };

    let turn = tokio::time::timeout(Duration::from_secs(60), held.recv())
        .await
        .expect("the run reaches turn 2 within 60 s");
    assert_eq!(turn, Some(2));
    assert_eq!(
        effects.lines(),
        ["call_1 hello"],
        "the tool ran before the crash"
    );
    service.kill();
    let service = ServiceProcess::start(Path::new(SERVICE), port, &model.base_url(), &effects.path);

    let (id, summary) = tokio::time::timeout(Duration::from_secs(90), invocation)
        .await
        .expect("Restate's retry finishes the run within 90 s")
        .expect("the invocation task");
    drop(service);
    Crashed {
        restate,
        id,
        summary,
        model,
        effects,
    }
}

impl Crashed {
    /// Asserts that nothing repeated: the side effect happened once, and each journaled
    /// request reached the model once (turn 2's first request died with the process).
    fn assert_nothing_repeated(&self) {
        assert_eq!(
            self.effects.lines(),
            ["call_1 hello"],
            "the side effect happened once"
        );
        assert_eq!(
            self.model.log(),
            Log {
                received: vec![1, 2, 2, 3, 4],
                answered: vec![1, 2, 3, 4],
            },
            "each journaled request reached the model once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_after_its_first_tool_finishes_without_repeating_a_step() {
    let crashed = crashed("run", "crash").await;
    crashed.assert_nothing_repeated();
    let summary = crashed.summary;
    assert_eq!(summary.output, OUTPUT);
    let expected = Summary::uninterrupted(&effects("uninterrupted")).await;
    assert_eq!(summary, expected);
    assert_eq!(summary.usage.requests, 4);
    assert_eq!(summary.usage.input_tokens, 120 + 140 + 160 + 180);
    assert_eq!(summary.usage.output_tokens, 11 + 12 + 13 + 14);
    assert_eq!(summary.usage.tool_calls, 3);
    assert_eq!(summary.rejections, 1);
    assert_eq!(summary.usage.rejected.tools["lookup"].requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_during_a_childs_run_finishes_without_repeating_a_step() {
    let crashed = crashed("delegate", "child-crash").await;
    crashed.assert_nothing_repeated();
    let summary = &crashed.summary;
    assert_eq!(summary.output, DELEGATED_OUTPUT);

    // The same run in process, uninterrupted.
    let (model, _) = ModelServer::start(None).await;
    let effects = effects("child-uninterrupted");
    let result = delegating_agent(&model.base_url())
        .run(PROMPT, effects.clone())
        .await
        .expect("the run succeeds");
    assert_eq!(*summary, Summary::of(result));
    assert_eq!(summary.usage.agents["notes"].requests, 4);
    assert_eq!(summary.usage.requests, 2 + 4);
    assert_eq!(summary.usage.rejected.tools["lookup"].requests, 1);

    let mut names: Vec<String> = vec!["model:1".into()];
    names.extend(NAMES.iter().map(|name| format!("tool:1:d1/{name}")));
    names.extend(["tool:1:d1".into(), "model:2".into()]);
    assert_eq!(crashed.restate.step_names(&crashed.id).await, names);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restate_records_the_steps_under_golems_names() {
    let restate = RestateServer::start(&target_dir()).await;
    let (model, _) = ModelServer::start(None).await;
    let effects = effects("names");
    let service = ServiceProcess::start(
        Path::new(SERVICE),
        free_port(),
        &model.base_url(),
        &effects.path,
    );
    restate.register(&service.uri).await;

    let (id, output) = restate.invoke("Durable", "run", &json!(PROMPT)).await;
    assert_eq!(output["output"], OUTPUT);
    let names = restate.step_names(&id).await;
    assert_eq!(names, NAMES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_model_request_ends_the_invocation_without_a_retry() {
    let (model, effects, _restate, _service) = refused_run(400, "refused").await;
    // A terminal failure: neither Restate nor golem's transport sent the request again.
    assert_eq!(
        model.log(),
        Log {
            received: vec![1],
            answered: vec![1],
        }
    );
    assert!(effects.lines().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_outage_past_golems_retries_is_retried_by_restate_then_recorded_once() {
    let restate = RestateServer::start(&target_dir()).await;
    // golem's transport sends each attempt of the step 4 times (3 retries): the first step
    // attempt fails with HTTP 503 after 4 requests, Restate's retry of the step succeeds.
    let model = ModelServer::failing_first(4, 503).await;
    let effects = effects("outage");
    let service = ServiceProcess::start(
        Path::new(SERVICE),
        free_port(),
        &model.base_url(),
        &effects.path,
    );
    restate.register(&service.uri).await;

    let (id, output) = restate.invoke("Durable", "run", &json!(PROMPT)).await;
    assert_eq!(output["output"], OUTPUT);
    assert_eq!(
        output["usage"]["requests"], 4,
        "failed attempts are not usage"
    );
    assert_eq!(
        model.log(),
        Log {
            received: vec![1, 1, 1, 1, 1, 2, 3, 4],
            answered: vec![1, 1, 1, 1, 1, 2, 3, 4],
        }
    );
    assert_eq!(effects.lines(), ["call_1 hello"]);
    assert_eq!(
        restate.step_names(&id).await,
        NAMES,
        "model:1 is recorded once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_outage_that_outlasts_restates_retries_ends_the_invocation() {
    let (model, _effects, _restate, _service) = refused_run(503, "long-outage").await;
    // DEFAULT_RETRY_ATTEMPTS step attempts, each golem's 4 transport attempts.
    let received = model.log().received;
    assert_eq!(received.len(), 4 * 4, "{received:?}");
    assert!(received.iter().all(|turn| *turn == 1));
}

/// Runs the agent against a model server that answers every request with `status`, and
/// checks the invocation ends with HTTP 500 and the model's error as its message; the
/// model server (for its log), the side effects, and what must live as long as they do.
async fn refused_run(
    status: u16,
    name: &str,
) -> (ModelServer, Effects, RestateServer, ServiceProcess) {
    let restate = RestateServer::start(&target_dir()).await;
    let model = ModelServer::refusing(status).await;
    let effects = effects(name);
    let service = ServiceProcess::start(
        Path::new(SERVICE),
        free_port(),
        &model.base_url(),
        &effects.path,
    );
    restate.register(&service.uri).await;

    let response = reqwest::Client::new()
        .post(format!("{}/Durable/run", restate.ingress))
        .json(&PROMPT)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the invocation ends within 60 s");
    assert_eq!(response.status(), 500);
    let body: serde_json::Value = response.json().await.expect("a JSON error");
    let attempts = if status == 400 { 1 } else { 4 };
    assert_eq!(
        body["message"],
        format!(
            "the model request failed: openai answered HTTP {status} after {attempts} attempt(s): scripted refusal"
        )
    );
    (model, effects, restate, service)
}
