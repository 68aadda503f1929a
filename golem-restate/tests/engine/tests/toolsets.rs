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
    invocation: tokio::task::JoinHandle<Ended>,
}

/// How the invocation ended: its id, the HTTP status and the body of the ingress's answer.
struct Ended {
    id: String,
    status: u16,
    body: String,
}

/// Starts the run, waits until the call of `remote_note` is in flight (`tools:0` and
/// `model:1` are in Restate's journal, the call is not), makes the toolset's server answer
/// `listing` from then on, kills the service and starts it again `down_for` later.
async fn killed_during_the_call(name: &str, listing: Listing, down_for: Duration) -> Killed {
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
            let status = response.status().as_u16();
            let body = response.text().await.expect("a body");
            Ended { id, status, body }
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
    tokio::time::sleep(down_for).await;
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
        let Ended { id, status, body } = tokio::time::timeout(within, invocation)
            .await
            .unwrap_or_else(|_| panic!("Restate finishes the run within {within:?}"))
            .expect("the invocation task");
        drop(service);
        assert_eq!(status, 200, "the invocation failed: {body}");
        let summary: Summary = serde_json::from_str(&body).expect("a summary");

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

    /// Waits for the invocation to end (at most 60 s) with the toolset's listing error as a
    /// terminal failure, and checks no side effect happened and no second model request was
    /// sent. Returns what the toolset's server saw and Restate's step names.
    async fn ends_with_the_listing_error(self) -> (ToolsetLog, Vec<String>) {
        let Killed {
            restate,
            model,
            toolset,
            effects,
            service,
            invocation,
        } = self;
        let Ended { id, status, body } = tokio::time::timeout(Duration::from_secs(60), invocation)
            .await
            .expect("Restate ends the invocation within 60 s")
            .expect("the invocation task");
        drop(service);
        assert_eq!(status, 500, "{body}");
        let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
        let expected = format!(
            "tool `remote_note` failed: toolset `remote` could not list its tools: HTTP status \
             server error (503 Service Unavailable) for url ({}/tools)",
            toolset.url()
        );
        assert_eq!(body["message"], expected.as_str());
        assert!(effects.lines().is_empty(), "the call never ran");
        assert_eq!(model.log().answered, [1]);
        let log = toolset.log();
        assert_eq!(log.listings[0], Listing::Up);
        assert!(
            log.listings[1..]
                .iter()
                .all(|listing| *listing == Listing::Down),
            "{:?}",
            log.listings
        );
        assert_eq!(log.calls_received, ["call_1"]);
        (log, restate.step_names(&id).await)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolset_down_during_the_replay_fails_only_the_unrecorded_call_and_restate_retries_it() {
    let killed = killed_during_the_call("toolset-down", Listing::Down, Duration::ZERO).await;

    // The replay answers tools:0 and model:1 from the journal; only the call of
    // `remote_note` needs the toolset, and its listing gets 503: the step fails, retryable.
    // Restate retries it by the journal's policy (1 s or more later); the server is back by
    // then.
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
    let retried_after = log.listed_at[2] - log.listed_at[1];
    assert!(
        retried_after >= Duration::from_millis(900),
        "the step was retried by the journal's policy, not at once: {retried_after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_uses_the_recorded_tool_list_when_the_toolset_lists_another() {
    let killed = killed_during_the_call("toolset-changed", Listing::Changed, Duration::ZERO).await;

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

/// Restate counts a step's attempts since the last recorded step: the attempt that died with
/// the service is the first of the call's 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolset_down_for_all_of_the_steps_attempts_fails_the_call_and_ends_the_invocation() {
    let killed = killed_during_the_call("toolset-gone", Listing::Down, Duration::ZERO).await;
    let (log, names) = killed.ends_with_the_listing_error().await;
    // One attempt died with the service; the replays got 503 up to 3 times (fewer when a
    // retry of the invocation found the service not restarted yet: that counts too), or all
    // 4 when Restate had not counted the attempt that died before the kill (seen on a loaded
    // machine). Never more: the step's policy ends it.
    let failed = log.listings.len() - 1;
    assert!(
        (1..=4).contains(&failed),
        "listings after the crash: {:?}",
        log.listings
    );
    assert_eq!(names, REMOTE_NAMES[..4], "tool:1:call_1 recorded as failed");
}

/// The attempts Restate counts include the invocation's own while the service cannot be
/// reached: after the service was down longer than a few of Restate's invocation retries
/// (100 ms to 500 ms apart here), the replayed call's first failure is its last. This pins
/// what Restate's counting does to the journal's policy, so that a change to either is seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_long_outage_of_the_service_the_replayed_call_has_no_retry_left() {
    let killed =
        killed_during_the_call("toolset-outage", Listing::Down, Duration::from_secs(2)).await;
    let (log, names) = killed.ends_with_the_listing_error().await;
    assert_eq!(log.listings, [Listing::Up, Listing::Down]);
    assert_eq!(names, REMOTE_NAMES[..4], "tool:1:call_1 recorded as failed");
}
