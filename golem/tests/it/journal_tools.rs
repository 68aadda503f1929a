//! Durable determinism for toolsets (DESIGN §8 "Determinism for engines"): in a journaled run
//! the tool list is the step `tools:{turn}`, a replay uses the recorded list, and lists the
//! toolsets again only when a call that was not recorded must run; the deadline is the step
//! `deadline`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse, RequestParams};
use golem::run::{CancellationToken, MemoryJournal};
use golem::tool::FunctionTool;
use golem::toolset::{ToolList, Toolset, ToolsetError};
use golem::{Agent, BoxError, ModelRetry, RunContext, Stage};
use serde_json::json;

/// A toolset like a remote server's: it counts its listings, can be down, and lists `send`
/// (which counts its calls) and, until it is changed, `archive`.
#[derive(Clone, Default)]
struct Remote {
    listings: Arc<AtomicUsize>,
    sent: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
    changed: Arc<AtomicBool>,
    /// A call of `send` waits until this is cancelled, when it is set.
    hold: Arc<Mutex<Option<CancellationToken>>>,
}

impl Toolset<()> for Remote {
    fn name(&self) -> &str {
        "remote"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
    ) -> BoxFuture<'a, Result<ToolList<()>, BoxError>> {
        async move {
            self.listings.fetch_add(1, Ordering::SeqCst);
            if self.down.load(Ordering::SeqCst) {
                return Err("connection refused".into());
            }
            let (sent, hold) = (Arc::clone(&self.sent), Arc::clone(&self.hold));
            let send = FunctionTool::new("send", move |_ctx: RunContext<()>, (): ()| {
                let (sent, hold) = (
                    Arc::clone(&sent),
                    hold.lock().expect("not poisoned").clone(),
                );
                async move {
                    if let Some(hold) = hold {
                        hold.cancelled().await;
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ModelRetry>("sent")
                }
            })
            .description("Send the message.");
            let mut tools: ToolList<()> = vec![Arc::new(send)];
            if !self.changed.load(Ordering::SeqCst) {
                let archive = FunctionTool::new("archive", |_ctx: RunContext<()>, (): ()| async {
                    Ok::<_, ModelRetry>("archived")
                });
                tools.push(Arc::new(archive));
            }
            Ok(tools)
        }
        .boxed()
    }
}

/// A model that calls `send` and then answers with the tool names it was offered.
fn model(requests: &Arc<AtomicUsize>) -> FunctionModel {
    let requests = Arc::clone(requests);
    FunctionModel::new(move |messages: &[Message], params: &RequestParams| {
        requests.fetch_add(1, Ordering::SeqCst);
        match messages.len() {
            1 => ModelResponse::tool_call("send", "{}", "c1").with_usage(10, 2),
            _ => {
                let names: Vec<&str> = params
                    .function_tools
                    .iter()
                    .map(|tool| tool.name.as_str())
                    .collect();
                ModelResponse::text(names.join(",")).with_usage(20, 3)
            }
        }
    })
}

fn agent(requests: &Arc<AtomicUsize>, remote: &Remote) -> Agent<(), String> {
    Agent::<(), String>::builder(model(requests))
        .toolset(remote.clone())
        .build()
        .expect("a valid agent")
}

#[tokio::test]
async fn the_tool_list_is_a_step_and_a_full_replay_lists_nothing() {
    let (requests, remote) = (Arc::new(AtomicUsize::new(0)), Remote::default());
    let journal = MemoryJournal::new();

    let first = agent(&requests, &remote)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(
        journal.names(),
        ["tools:0", "model:1", "tool:1:c1", "model:2"]
    );
    assert_eq!(first.output, "send,archive");
    assert_eq!(
        journal.result("tools:0"),
        Some(json!([
            {"source": "remote", "tool_type": "function", "definition":
                {"name": "send", "description": "Send the message.",
                 "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
            {"source": "remote", "tool_type": "function", "definition":
                {"name": "archive",
                 "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
        ]))
    );

    // The server is down during the replay: nothing needs it.
    remote.down.store(true, Ordering::SeqCst);
    let replayed = agent(&requests, &remote)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(replayed.output, first.output);
    assert_eq!(replayed.messages, first.messages);
    assert_eq!(replayed.usage, first.usage);
    assert_eq!(remote.listings.load(Ordering::SeqCst), 1);
    assert_eq!(remote.sent.load(Ordering::SeqCst), 1);
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

/// Runs until the call of `send` is in flight, then stops the run: the journal then holds
/// `tools:0` and `model:1`, as after a crash during the call.
async fn crash_during_the_call(remote: &Remote, journal: &MemoryJournal) {
    let requests = Arc::new(AtomicUsize::new(0));
    crash_during_the_call_of(agent(&requests, remote), remote, journal).await;
}

/// [`crash_during_the_call`] with `agent`, whose toolsets include `remote`.
async fn crash_during_the_call_of(
    agent: Agent<(), String>,
    remote: &Remote,
    journal: &MemoryJournal,
) {
    let held = CancellationToken::new();
    *remote.hold.lock().expect("not poisoned") = Some(held.clone());
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let error = agent
        .start("Send it", ())
        .with_cancellation(stop)
        .finish_in(journal)
        .await
        .expect_err("the run was stopped");
    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(journal.names(), ["tools:0", "model:1"]);
    *remote.hold.lock().expect("not poisoned") = None;
    held.cancel();
}

#[tokio::test]
async fn a_replay_keeps_the_recorded_tool_list_when_the_toolset_lists_another() {
    let remote = Remote::default();
    let journal = MemoryJournal::new();
    crash_during_the_call(&remote, &journal).await;

    remote.changed.store(true, Ordering::SeqCst);
    let requests = Arc::new(AtomicUsize::new(0));
    let result = agent(&requests, &remote)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap();

    // The live request after the replay offers the recorded tools, `archive` included.
    assert_eq!(result.output, "send,archive");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert_eq!(remote.sent.load(Ordering::SeqCst), 1);
    assert_eq!(
        journal.names(),
        ["tools:0", "model:1", "tool:1:c1", "model:2"]
    );
    // Listed once by the first execution, once again to make the call the replay needed.
    assert_eq!(remote.listings.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_toolset_down_when_a_replayed_call_must_run_fails_that_step_for_the_engine_to_retry() {
    let remote = Remote::default();
    let journal = MemoryJournal::new();
    crash_during_the_call(&remote, &journal).await;

    remote.down.store(true, Ordering::SeqCst);
    let requests = Arc::new(AtomicUsize::new(0));
    let error = agent(&requests, &remote)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert!(matches!(
        error.cause().downcast_ref::<ToolsetError>(),
        Some(ToolsetError::List { toolset, .. }) if toolset == "remote"
    ));
    // Nothing was recorded for the call: a retry of the step runs it when the server is back.
    assert_eq!(journal.names(), ["tools:0", "model:1"]);
    remote.down.store(false, Ordering::SeqCst);
    let result = agent(&requests, &remote)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap();
    assert_eq!(result.output, "send,archive");
    assert_eq!(remote.sent.load(Ordering::SeqCst), 1);
}

/// A second toolset, `other`, which can be down and counts its listings.
#[derive(Clone, Default)]
struct Other {
    listings: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

impl Toolset<()> for Other {
    fn name(&self) -> &str {
        "other"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
    ) -> BoxFuture<'a, Result<ToolList<()>, BoxError>> {
        async move {
            self.listings.fetch_add(1, Ordering::SeqCst);
            if self.down.load(Ordering::SeqCst) {
                return Err("connection refused".into());
            }
            let lookup = FunctionTool::new("lookup", |_ctx: RunContext<()>, (): ()| async {
                Ok::<_, ModelRetry>("found")
            });
            Ok(vec![Arc::new(lookup) as Arc<dyn golem::tool::Tool<()>>])
        }
        .boxed()
    }
}

#[tokio::test]
async fn a_replayed_call_lists_again_only_its_own_toolset() {
    let (remote, other) = (Remote::default(), Other::default());
    let two = |requests: &Arc<AtomicUsize>| {
        Agent::<(), String>::builder(model(requests))
            .toolset(remote.clone())
            .toolset(other.clone())
            .build()
            .unwrap()
    };
    let journal = MemoryJournal::new();
    crash_during_the_call_of(two(&Arc::new(AtomicUsize::new(0))), &remote, &journal).await;
    assert_eq!(other.listings.load(Ordering::SeqCst), 1);

    // The call of `send` must run again; `other`'s server is down, and the call needs only
    // `remote`.
    other.down.store(true, Ordering::SeqCst);
    let requests = Arc::new(AtomicUsize::new(0));
    let result = two(&requests)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(result.output, "send,archive,lookup");
    assert_eq!(remote.sent.load(Ordering::SeqCst), 1);
    assert_eq!(remote.listings.load(Ordering::SeqCst), 2);
    assert_eq!(other.listings.load(Ordering::SeqCst), 1, "not listed again");
    assert_eq!(
        journal.names(),
        ["tools:0", "model:1", "tool:1:c1", "model:2"]
    );
}

#[tokio::test]
async fn a_replayed_call_whose_tool_is_not_listed_any_more_fails_its_step_naming_the_toolset() {
    let remote = Remote::default();
    let journal = MemoryJournal::new();
    crash_during_the_call(&remote, &journal).await;

    // The server lists no `send` now: the recorded call cannot run, and is not recorded.
    let gone = |requests: &Arc<AtomicUsize>| {
        let empty: Vec<Arc<dyn golem::tool::Tool<()>>> = Vec::new();
        let remote = golem::toolset::ToolsetExt::named(empty, "remote");
        Agent::<(), String>::builder(model(requests))
            .toolset(remote)
            .build()
            .unwrap()
    };
    let requests = Arc::new(AtomicUsize::new(0));
    let error = gone(&requests)
        .start("Send it", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(
        error.cause().to_string(),
        "toolset `remote` could not list its tools"
    );
    assert!(matches!(
        error.cause().downcast_ref::<ToolsetError>(),
        Some(ToolsetError::List { toolset, source })
            if toolset == "remote"
                && source.to_string()
                    == "tool `send` was listed when the run began and is not listed any more"
    ));
    assert_eq!(journal.names(), ["tools:0", "model:1"]);
    assert_eq!(requests.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_deadline_of_a_journaled_run_is_recorded_and_kept_by_a_replay() {
    let (requests, remote) = (Arc::new(AtomicUsize::new(0)), Remote::default());
    let journal = MemoryJournal::new();
    let timed = |requests: &Arc<AtomicUsize>| {
        Agent::<(), String>::builder(model(requests))
            .toolset(remote.clone())
            .run_timeout(Duration::from_secs(3600))
            .build()
            .unwrap()
    };

    let run = timed(&requests).start("Send it", ());
    let first_deadline = run.state().deadline().unwrap();
    run.finish_in(&journal).await.unwrap();
    assert_eq!(journal.names()[0], "deadline");

    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut replay = timed(&requests).start("Send it", ());
    assert_ne!(replay.state().deadline(), Some(first_deadline));
    replay.step_in(&journal).await.unwrap();
    assert_eq!(replay.state().deadline(), Some(first_deadline));
}
