//! Durable determinism for toolsets on a real `restate-server` (DESIGN §8): the run's tool
//! list is the step `tools:0`, so a replay after a crash uses the recorded list whatever the
//! toolset's server says now, and needs the server only for the one call that was not
//! recorded. The service is killed while a toolset tool's call is in flight, the toolset's
//! server goes down or changes its tools, and the service is restarted.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{SERVICE, effects, target_dir};
use golem_restate_engine_tests::agent::{Effects, Summary};
use golem_restate_engine_tests::model_server::{Log, ModelServer, Offered};
use golem_restate_engine_tests::remote::{REMOTE_OUTPUT, REMOTE_PROMPT, remote_agent};
use golem_restate_engine_tests::restate::{RestateServer, ServiceProcess, free_port};
use golem_restate_engine_tests::toolset_server::{Listing, ToolsetLog, ToolsetServer};

/// The steps of the remote toolset agent's run, as golem names them (a compatibility
/// promise): the deadline (the agent has a run timeout), the tool list, then the requests
/// and the call.
const REMOTE_NAMES: [&str; 5] = ["deadline", "tools:0", "model:1", "tool:1:call_1", "model:2"];

/// The side effect of the one call, `{call_id} {tool} {text}`.
const NOTE: &str = "call_1 remote_note hello";

/// The same run, in process, without a journal and without a crash.
async fn uninterrupted() -> Summary {
    let model = ModelServer::remote().await;
    let (toolset, _) = ToolsetServer::start(false).await;
    let effects = effects("toolset-uninterrupted");
    let result = remote_agent(&model.base_url(), &toolset.url())
        .run(REMOTE_PROMPT, effects.clone())
        .await
        .expect("the run succeeds");
    assert_eq!(effects.lines(), [NOTE]);
    Summary::of(result)
}

/// A run of `Toolsets/run` on a real server whose service was killed during the call of
/// `remote_note`, and restarted.
struct Killed {
    restate: RestateServer,
    model: ModelServer,
    toolset: ToolsetServer,
    effects: Effects,
    service: ServiceProcess,
    invocation: tokio::task::JoinHandle<(String, Summary)>,
}

/// Starts the run, waits until the call of `remote_note` is in flight (`tools:0` and
/// `model:1` are in Restate's journal, the call is not), makes the toolset's server answer
/// `listing` from then on, kills the service and starts it again.
async fn killed_during_the_call(name: &str, listing: Listing) -> Killed {
    let restate = RestateServer::start(&target_dir()).await;
    let model = ModelServer::remote().await;
    let (toolset, mut held) = ToolsetServer::start(true).await;
    let effects = effects(name);
    let port = free_port();
    let start = || {
        ServiceProcess::with_toolset(
            Path::new(SERVICE),
            port,
            &model.base_url(),
            &effects.path,
            &toolset.url(),
        )
    };
    let service = start();
    restate.register(&service.uri).await;

    let invocation = {
        let ingress = restate.ingress.clone();
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(format!("{ingress}/Toolsets/run"))
                .json(&REMOTE_PROMPT)
                .timeout(Duration::from_secs(120))
                .send()
                .await
                .expect("the ingress answers");
            let id = response
                .headers()
                .get("x-restate-id")
                .and_then(|id| id.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let status = response.status();
            let body = response.text().await.expect("a body");
            assert!(
                status.is_success(),
                "the invocation failed: {status}: {body}"
            );
            (id, serde_json::from_str(&body).expect("a summary"))
        })
    };

    let call = tokio::time::timeout(Duration::from_secs(60), held.recv())
        .await
        .expect("the run calls `remote_note` within 60 s");
    assert_eq!(call.as_deref(), Some("call_1"));
    assert!(effects.lines().is_empty(), "the call has not ended");
    assert_eq!(toolset.log().listings, [Listing::Up], "tools:0 listed once");
    toolset.set_listing(listing);
    service.kill();
    let service = start();
    Killed {
        restate,
        model,
        toolset,
        effects,
        service,
        invocation,
    }
}

impl Killed {
    /// Waits (at most `within`) for the invocation's result, and checks what every scenario
    /// promises: the output, one side effect, each model turn answered once, the tools
    /// offered at each request the recorded ones, Restate's step names, and the summary of
    /// a run that never stopped. Returns what the toolset's server saw.
    async fn finishes_as_if_uninterrupted(self, within: Duration) -> ToolsetLog {
        let Killed {
            restate,
            model,
            toolset,
            effects,
            service,
            invocation,
        } = self;
        let (id, summary) = tokio::time::timeout(within, invocation)
            .await
            .unwrap_or_else(|_| panic!("Restate finishes the run within {within:?}"))
            .expect("the invocation task");
        drop(service);

        assert_eq!(summary.output, REMOTE_OUTPUT);
        assert_eq!(effects.lines(), [NOTE], "the side effect happened once");
        assert_eq!(
            model.log(),
            Log {
                received: vec![1, 2],
                answered: vec![1, 2],
            },
            "each model turn was answered once"
        );
        let recorded = vec!["remote_note".to_owned(), "remote_archive".to_owned()];
        assert_eq!(
            model.offered(),
            [
                Offered {
                    turn: 1,
                    tools: recorded.clone(),
                },
                Offered {
                    turn: 2,
                    tools: recorded,
                },
            ],
            "every request offered the tools of tools:0"
        );
        assert_eq!(restate.step_names(&id).await, REMOTE_NAMES);
        let expected = uninterrupted().await;
        assert_eq!(summary, expected);
        assert_eq!(summary.usage.requests, 2);
        assert_eq!(summary.usage.input_tokens, 120 + 140);
        assert_eq!(summary.usage.output_tokens, 11 + 12);
        assert_eq!(summary.usage.tool_calls, 1);
        let log = toolset.log();
        assert_eq!(
            log.calls_received,
            ["call_1", "call_1"],
            "the call that died with the service was made again"
        );
        assert_eq!(log.calls_answered, ["call_1"]);
        log
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolset_down_during_the_replay_fails_only_the_unrecorded_call_and_restate_retries_it() {
    let killed = killed_during_the_call("toolset-down", Listing::Down).await;

    // The replay answers tools:0 and model:1 from the journal; only the call of
    // `remote_note` needs the toolset, and its listing gets 503. The step is retried (1 s
    // later, by the journal's policy); the server is back by then.
    let started = Instant::now();
    while !killed.toolset.log().listings.contains(&Listing::Down) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the replay did not list the toolset within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    killed.toolset.set_listing(Listing::Up);

    let log = killed
        .finishes_as_if_uninterrupted(Duration::from_secs(60))
        .await;
    assert_eq!(
        log.listings,
        [Listing::Up, Listing::Down, Listing::Up],
        "listed for tools:0, then only for the call: once down, once again on the retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_uses_the_recorded_tool_list_when_the_toolset_lists_another() {
    let killed = killed_during_the_call("toolset-changed", Listing::Changed).await;

    // `remote_archive` is gone and `remote_search` is new; the replay still offers the
    // recorded list, calls `remote_note` through the new listing, and Restate sees the same
    // journal (no mismatch, no endless retry: the wait is bounded).
    let log = killed
        .finishes_as_if_uninterrupted(Duration::from_secs(60))
        .await;
    assert_eq!(
        log.listings,
        [Listing::Up, Listing::Changed],
        "listed for tools:0, then once for the call"
    );
}
