//! Approvals that wait inside Restate: a workflow's run pauses for two calls, the service is
//! killed and started again while it waits, then one call is approved and the other denied;
//! the run goes on from its journal, the approved call runs once, the denied one never, and
//! an answer to a call that does not wait is refused.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{SERVICE, effects, target_dir};
use golem_restate::approval::{AwaitingCall, Decision};
use golem_restate_engine_tests::agent::{PROMPT, Summary, awaiting_calls};
use golem_restate_engine_tests::model_server::{Log, ModelServer};
use golem_restate_engine_tests::restate::{RestateServer, ServiceProcess, free_port};
use serde_json::{Value, json};

/// POSTs `body` (none for `null`) to the ingress path `path`: the status and the body.
async fn post(restate: &RestateServer, path: &str, body: &Value) -> (u16, String) {
    let mut request = reqwest::Client::new().post(format!("{}/{path}", restate.ingress));
    if !body.is_null() {
        request = request.json(body);
    }
    let response = request
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the ingress answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// The calls the workflow `key` waits for, once it waits for `count` of them.
async fn awaiting(restate: &RestateServer, key: &str, count: usize) -> Vec<AwaitingCall> {
    for _ in 0..240 {
        let (status, body) =
            post(restate, &format!("Approvals/{key}/awaiting"), &json!(null)).await;
        if status == 200 {
            let calls: Vec<AwaitingCall> = serde_json::from_str(&body).expect("a list of calls");
            if calls.len() == count {
                return calls;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (status, body) = post(restate, &format!("Approvals/{key}/awaiting"), &json!(null)).await;
    panic!("the workflow {key} never waited for {count} calls: {status} {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_waits_in_restate_across_a_restart_and_goes_on_with_the_decisions() {
    let restate = RestateServer::start(&target_dir()).await;
    let model = ModelServer::approvals().await;
    let effects = effects("approvals");
    let port = free_port();
    let service = ServiceProcess::start(Path::new(SERVICE), port, &model.base_url(), &effects.path);
    restate.register(&service.uri).await;

    let key = format!("approval-{}", std::process::id());
    let (status, body) = post(
        &restate,
        &format!("Approvals/{key}/run/send"),
        &json!(PROMPT),
    )
    .await;
    assert!((200..300).contains(&status), "{status}: {body}");

    let waiting = awaiting(&restate, &key, 2).await;
    assert_eq!(waiting, awaiting_calls());
    assert!(effects.lines().is_empty(), "nothing ran before a decision");

    service.kill();
    let service = ServiceProcess::start(Path::new(SERVICE), port, &model.base_url(), &effects.path);

    // An answer must name a call the run waits for.
    let (status, body) = post(
        &restate,
        &format!("Approvals/{key}/decide"),
        &serde_json::to_value(Decision::approve("call_x")).expect("json"),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("no call `call_x` waits for approval"),
        "{body}"
    );

    for decision in [
        Decision::approve("call_a"),
        Decision::deny("call_b", "Not that one."),
    ] {
        let decision = serde_json::to_value(decision).expect("json");
        let (status, body) = post(&restate, &format!("Approvals/{key}/decide"), &decision).await;
        assert_eq!(status, 200, "{body}");
    }

    let output = reqwest::Client::new()
        .get(format!(
            "{}/restate/workflow/Approvals/{key}/attach",
            restate.ingress
        ))
        .timeout(Duration::from_secs(90))
        .send()
        .await
        .expect("the ingress answers");
    assert!(output.status().is_success(), "{}", output.status());
    let summary: Summary = output.json().await.expect("a summary");
    drop(service);

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
        "the first request was answered from the journal after the restart"
    );
    assert_eq!(
        restate
            .step_names(&invocation_of(&restate, &key).await)
            .await,
        ["model:1", "tool:1:call_a", "model:2"]
    );
}

/// The invocation id of the workflow `key`'s run.
async fn invocation_of(restate: &RestateServer, key: &str) -> String {
    let rows = restate
        .query(&format!(
            "SELECT id FROM sys_invocation WHERE target_service_name = 'Approvals' \
             AND target_service_key = '{key}' AND target_handler_name = 'run'"
        ))
        .await;
    rows[0]["id"].as_str().expect("an invocation id").to_owned()
}
