//! Agents that compose: an agent called as a tool, its usage rolled up into the caller's,
//! bounded by the caller's limits, its failure a rejection or a terminal failure by choice
//! (ADR 0026); cancelling the parent stops the child gracefully, its state in the parent's
//! error (ADR 0034).

use crate::common;

use std::error::Error as _;
use std::sync::Arc;

use common::*;
use futures_util::StreamExt;
use golem::model::ResponsePart;
use golem::run::{CancellationToken, Journal, MemoryJournal, NestedEvent, Stopped};
use golem::tool::{FunctionTool, OnAgentError, Tool};
use golem::usage::{LimitExceeded, UsageLimits};
use golem::{Agent, ModelRetry, RunContext, RunError, RunEvent, Stage};
use serde_json::json;

#[golem::args]
struct Dice {
    n: i64,
}

#[golem::args]
struct Task {
    /// What to ask the dice agent.
    task: String,
}

fn roll_dice() -> impl Tool<()> {
    FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| async move {
        if dice.n <= 0 {
            return Err(ModelRetry::new(format!(
                "n must be positive, got {}",
                dice.n
            )));
        }
        Ok(dice.n * 3)
    })
}

fn dice_call(n: i64, id: &str) -> ResponsePart {
    call("roll_dice", &json!({ "n": n }).to_string(), id)
}

/// The dice agent: corrects one bad roll, then answers.
fn dice_agent(model: &Script) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .expect("a valid agent")
}

/// A router with the dice agent as its `dice` tool.
fn router(model: &Script, dice: &Agent<(), String>, on_error: OnAgentError) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .tool(
            dice.as_tool(
                "dice",
                "Plays a dice game.",
                |_ctx: &RunContext<()>, task: Task| (task.task, ()),
            )
            .on_error(on_error),
        )
        .tool_retries(1)
        .build()
        .expect("a valid agent")
}

/// The dice agent on `model`'s script, with a run timeout of its own (60 s).
fn timed_dice_agent(model: &Script) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .tool(roll_dice())
        .run_timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("a valid agent")
}

fn task_call(id: &str) -> ResponsePart {
    call("dice", r#"{"task": "Roll two dice"}"#, id)
}

fn correcting_child() -> Script {
    script(vec![
        reply(vec![dice_call(-1, "d1")], 100, 10),
        reply(vec![dice_call(2, "d2")], 200, 10),
        reply(vec![text("You rolled 6.")], 300, 5),
    ])
}

#[tokio::test]
async fn the_childs_usage_rejections_included_rolls_up_into_the_parents_and_apart() {
    let child = correcting_child();
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("Ann rolled 6.")], 20, 3),
    ]);
    let router = router(&parent, &dice_agent(&child), OnAgentError::Fail);

    let result = router.run("Play for Ann", ()).await.unwrap();

    assert_eq!(result.output, "Ann rolled 6.");
    assert_eq!(
        result.messages[2],
        request(vec![tool_return("dice", "c1", json!("You rolled 6."))])
    );
    let usage = &result.usage;
    assert_eq!(
        (
            usage.requests,
            usage.input_tokens,
            usage.output_tokens,
            usage.tool_calls
        ),
        (5, 630, 30, 3)
    );
    // What the child's mistake cost shows in the parent's rejected rounds, by tool.
    assert_eq!(usage.rejected.total, cost(1, 100, 10));
    assert_eq!(usage.rejected.tools["roll_dice"], cost(1, 100, 10));
    let dice = &usage.agents["dice"];
    assert_eq!(
        (
            dice.requests,
            dice.input_tokens,
            dice.output_tokens,
            dice.tool_calls
        ),
        (3, 600, 25, 2)
    );
    assert_eq!(dice.rejected.tools["roll_dice"], cost(1, 100, 10));
    assert_eq!(usage.agents.len(), 1);
}

#[tokio::test]
async fn the_parents_limits_bound_the_child_and_a_failing_child_fails_the_parent() {
    let child = correcting_child();
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = Agent::<(), String>::builder(parent.model.clone())
        .tool(dice_agent(&child).as_tool(
            "dice",
            "Plays a dice game.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
        .usage_limits(UsageLimits::new().request_limit(3))
        .build()
        .unwrap();

    let error = router.run("Play for Ann", ()).await.unwrap_err();

    // The parent made one request; the child had the two left, and needed a third.
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("dice"));
    let cause = error
        .source()
        .and_then(|cause| cause.downcast_ref::<RunError>())
        .expect("the child's error");
    assert_eq!(cause.limit(), Some(&LimitExceeded::Requests { limit: 2 }));
    assert_eq!(cause.messages().len(), 5);
    assert_eq!(child.requests(), 2);
    assert_eq!(error.usage().requests, 3);
    assert_eq!(error.usage().agents["dice"].requests, 2);
    // The call is answered in the history, as any failed call.
    assert_eq!(
        error.messages().last(),
        Some(&request(vec![tool_return(
            "dice",
            "c1",
            json!("The tool failed; the run stopped.")
        )]))
    );
}

#[tokio::test]
async fn a_failing_child_can_be_a_rejection_the_parent_model_corrects() {
    // A child with no budget fails on its first bad roll.
    let child = script(vec![reply(vec![dice_call(-1, "d1")], 100, 10)]);
    let strict = Agent::<(), String>::builder(child.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("The dice agent could not play.")], 20, 3),
    ]);
    let router = router(&parent, &strict, OnAgentError::Retry);

    let result = router.run("Play for Ann", ()).await.unwrap();

    let feedback = "The `dice` agent failed: tool `roll_dice` was rejected and its retries are \
                    off. Change the request, or do without it.";
    assert_eq!(
        result.messages[2],
        request(vec![tool_retry("dice", "c1", feedback)])
    );
    // Charged to the parent's budget for the tool, with the child's spending in it.
    assert_eq!(result.usage.rejected.tools["dice"], cost(1, 10, 2));
    assert_eq!(result.usage.agents["dice"].requests, 1);
    assert_eq!(result.usage.requests, 3);
}

/// A child with a run timeout, called from a run under a journal that keeps no deadline:
/// the child asks its caller's journal, and fails before any step of its own.
#[tokio::test]
async fn a_child_with_a_timeout_is_refused_by_its_callers_journal() {
    let child = correcting_child();
    let timed = timed_dice_agent(&child);
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("Ann rolled 6.")], 20, 3),
    ]);
    let router = router(&parent, &timed, OnAgentError::Fail);
    let journal = crate::journal::NoDeadlines {
        steps: std::sync::Mutex::default(),
    };

    let error = router
        .start("Play for Ann", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("dice"));
    let child_error = error
        .source()
        .unwrap()
        .downcast_ref::<RunError>()
        .expect("the child's error");
    assert_eq!(child_error.stage(), Stage::Input);
    assert_eq!(
        child_error.source().unwrap().to_string(),
        "this engine keeps no deadline"
    );
    assert_eq!(child.requests(), 0, "the child asked nothing");
    assert_eq!(
        *journal.steps.lock().expect("not poisoned"),
        ["model:1", "tool:1:c1"]
    );
}

#[tokio::test]
async fn a_journaled_parent_records_the_childs_usage_and_replays_it_without_asking() {
    let child = correcting_child();
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("Ann rolled 6.")], 20, 3),
    ]);
    let router = router(&parent, &dice_agent(&child), OnAgentError::Fail);
    let journal = MemoryJournal::new();

    let first = router
        .start("Play for Ann", ())
        .finish_in(&journal)
        .await
        .unwrap();
    assert_eq!(
        journal.names(),
        [
            "model:1",
            "tool:1:c1/model:1",
            "tool:1:c1/tool:1:d1",
            "tool:1:c1/model:2",
            "tool:1:c1/tool:2:d2",
            "tool:1:c1/model:3",
            "tool:1:c1",
            "model:2"
        ]
    );
    let recorded = journal.result("tool:1:c1").unwrap();
    assert_eq!(recorded["returned"], json!("You rolled 6."));
    assert_eq!(
        recorded["delegated"]["agents"]["dice"]["requests"],
        json!(3)
    );

    let replayed = router
        .start("Play for Ann", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!((child.requests(), parent.requests()), (3, 2));
    assert_eq!(replayed.usage, first.usage);
    assert_eq!(replayed.messages, first.messages);
}

#[tokio::test]
async fn a_journaled_childs_steps_are_recorded_under_the_call_and_a_resumed_run_repeats_none() {
    // The child's model is down at its third request: the durable run stops there, the
    // child's first two requests and its two calls recorded under the parent's call.
    let answers = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from([
        Ok(reply(vec![dice_call(-1, "d1")], 100, 10)),
        Ok(reply(vec![dice_call(2, "d2")], 200, 10)),
        Err("down"),
        Ok(reply(vec![text("You rolled 6.")], 300, 5)),
    ])));
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let child_model = {
        let (answers, asked) = (Arc::clone(&answers), Arc::clone(&asked));
        golem::model::function::FunctionModel::new(move |_, _| {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap()
                .map_err(|message| golem::model::ModelError::Other(message.into()))
        })
    };
    let rolls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let dice = {
        let rolls = Arc::clone(&rolls);
        Agent::<(), String>::builder(child_model)
            .tool(FunctionTool::new(
                "roll_dice",
                move |_ctx: RunContext<()>, dice: Dice| {
                    let rolls = Arc::clone(&rolls);
                    async move {
                        if dice.n <= 0 {
                            return Err(ModelRetry::new(format!(
                                "n must be positive, got {}",
                                dice.n
                            )));
                        }
                        rolls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        Ok(dice.n * 3)
                    }
                },
            ))
            .tool_retries(1)
            .build()
            .unwrap()
    };
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("Ann rolled 6.")], 20, 3),
    ]);
    let router = router(&parent, &dice, OnAgentError::Fail);
    let journal = MemoryJournal::new();

    let error = router
        .start("Play for Ann", ())
        .finish_in(&journal)
        .await
        .unwrap_err();
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(
        journal.names(),
        [
            "model:1",
            "tool:1:c1/model:1",
            "tool:1:c1/tool:1:d1",
            "tool:1:c1/model:2",
            "tool:1:c1/tool:2:d2",
            "tool:1:c1/model:3",
            "tool:1:c1"
        ],
        "the child's steps under the call, its failed one, and how the call ended"
    );
    assert_eq!(
        journal.failure("tool:1:c1/model:3").as_deref(),
        Some("down")
    );
    let ended = journal.result("tool:1:c1").unwrap();
    assert_eq!(ended["failed"], "the model request failed");
    assert_eq!(ended["delegated"]["agents"]["dice"]["requests"], 2);
    assert_eq!(rolls.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A journal that did not record the failed request and call goes on from the child's
    // last step.
    let resumed = MemoryJournal::new();
    for name in journal.names() {
        let Some(value) = journal.result(&name).filter(|_| name != "tool:1:c1") else {
            continue;
        };
        resumed
            .step(name, Box::pin(async move { Ok(value) }))
            .await
            .unwrap();
    }
    let result = router
        .start("Play for Ann", ())
        .finish_in(&resumed)
        .await
        .unwrap();

    assert_eq!(result.output, "Ann rolled 6.");
    assert_eq!(
        rolls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no roll twice"
    );
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "each child request once, the failed one again"
    );
    assert_eq!(
        parent.requests(),
        2,
        "the parent's first request replayed from the journal"
    );
    assert_eq!(
        resumed.names()[5..],
        ["tool:1:c1/model:3", "tool:1:c1", "model:2"]
    );
    assert_eq!(result.usage.agents["dice"].requests, 3);
    assert_eq!(result.usage.requests, 5);
}

/// One line per event, nested ones with their path.
fn line(event: &RunEvent<String>) -> Option<String> {
    Some(match event {
        RunEvent::RequestSent { turn } => format!("request {turn}"),
        RunEvent::ToolCallStarted { call, .. } => format!("start {}", call.tool_call_id),
        RunEvent::ToolCallFinished { call, .. } => format!("finish {}", call.tool_call_id),
        RunEvent::Finished(result) => format!("finished: {}", result.output),
        RunEvent::Agent(nested) => {
            let path: Vec<String> = nested
                .path
                .iter()
                .map(|step| format!("{}@{}", step.agent, step.tool_call_id))
                .collect();
            let what = match &nested.event {
                NestedEvent::RequestSent { turn } => format!("request {turn}"),
                NestedEvent::ToolCallStarted { call, .. } => format!("start {}", call.tool_call_id),
                NestedEvent::ToolCallFinished { call, .. } => {
                    format!("finish {}", call.tool_call_id)
                }
                NestedEvent::Rejected(rejection) => {
                    format!(
                        "rejected {:?} retry {}",
                        rejection.tool_name(),
                        rejection.retry
                    )
                }
                NestedEvent::Finished { output } => format!("finished: {output}"),
                _ => return None,
            };
            format!("{} │ {what}", path.join("/"))
        }
        _ => return None,
    })
}

#[tokio::test]
async fn the_childs_events_reach_the_parents_stream_with_their_path() {
    let child = correcting_child();
    let parent = script(vec![
        reply(vec![task_call("c1")], 10, 2),
        reply(vec![text("Ann rolled 6.")], 20, 3),
    ]);
    let router = router(&parent, &dice_agent(&child), OnAgentError::Fail);

    let mut events = router.run_stream("Play for Ann", ());
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.extend(line(&event.unwrap()));
    }

    assert_eq!(
        seen,
        [
            "request 1",
            "start c1",
            "dice@c1 │ request 1",
            "dice@c1 │ start d1",
            "dice@c1 │ finish d1",
            "dice@c1 │ rejected Some(\"roll_dice\") retry 1",
            "dice@c1 │ request 2",
            "dice@c1 │ start d2",
            "dice@c1 │ finish d2",
            "dice@c1 │ request 3",
            "dice@c1 │ finished: \"You rolled 6.\"",
            "finish c1",
            "request 2",
            "finished: Ann rolled 6.",
        ]
    );
}

#[tokio::test]
async fn a_grandchilds_events_carry_the_whole_path() {
    let grandchild = script(vec![reply(vec![text("6")], 1, 1)]);
    let child = script(vec![
        reply(vec![call("roll", r#"{"task": "roll"}"#, "g1")], 1, 1),
        reply(vec![text("It is 6.")], 1, 1),
    ]);
    let parent = script(vec![
        reply(vec![task_call("c1")], 1, 1),
        reply(vec![text("6 it is.")], 1, 1),
    ]);
    let roller = Agent::<(), String>::builder(grandchild.model.clone())
        .build()
        .unwrap();
    let middle = Agent::<(), String>::builder(child.model.clone())
        .tool(
            roller.as_tool("roll", "Rolls.", |_ctx: &RunContext<()>, task: Task| {
                (task.task, ())
            }),
        )
        .build()
        .unwrap();
    let top = router(&parent, &middle, OnAgentError::Fail);

    let mut events = top.run_stream("Play", ());
    let mut seen = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        seen.extend(line(&event));
        if let RunEvent::Finished(result) = event {
            finished = Some(result);
        }
    }

    assert!(seen.contains(&"dice@c1/roll@g1 │ finished: \"6\"".to_owned()));
    let usage = finished.unwrap().usage;
    assert_eq!(usage.requests, 5);
    assert_eq!(usage.agents["dice"].requests, 3);
    assert_eq!(usage.agents["dice"].agents["roll"].requests, 1);
    assert!(!usage.agents.contains_key("roll"));
}

/// A model that answers from `first`, then never answers again, telling `asked` each time it
/// is asked.
struct ThenStalls {
    first: std::sync::Mutex<Option<golem::model::ModelResponse>>,
    asked: Arc<tokio::sync::Notify>,
}

impl golem::model::Model for ThenStalls {
    fn name(&self) -> &str {
        "then-stalls"
    }

    fn system(&self) -> &str {
        "test"
    }

    fn request<'a>(
        &'a self,
        _messages: &'a [golem::model::Message],
        _params: &'a golem::model::RequestParams,
    ) -> golem::BoxFuture<'a, Result<golem::model::ModelResponse, golem::model::ModelError>> {
        let first = self.first.lock().expect("not poisoned").take();
        self.asked.notify_one();
        Box::pin(async move {
            match first {
                Some(response) => Ok(response),
                None => std::future::pending().await,
            }
        })
    }
}

/// A dice agent that rolls once, then waits for its model forever.
fn stalling_child(asked: &Arc<tokio::sync::Notify>) -> Agent<(), String> {
    Agent::<(), String>::builder(ThenStalls {
        first: std::sync::Mutex::new(Some(reply(vec![dice_call(2, "d1")], 100, 10))),
        asked: Arc::clone(asked),
    })
    .tool(roll_dice())
    .build()
    .expect("a valid agent")
}

const STOPPED_DURING_CALL: &str = "Not finished: the run was stopped during this call.";

#[tokio::test]
async fn cancelling_the_parent_stops_the_child_gracefully_with_its_state_in_the_error() {
    let asked = Arc::new(tokio::sync::Notify::new());
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = router(&parent, &stalling_child(&asked), OnAgentError::Fail);
    let token = CancellationToken::new();
    let run = router
        .start("Play for Ann", ())
        .with_cancellation(token.clone());
    let running = tokio::spawn(run.finish());
    // The child's first request, then its second, which never answers.
    asked.notified().await;
    asked.notified().await;
    token.cancel();

    let error = running.await.unwrap().unwrap_err();

    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Play for Ann")]),
            response(vec![task_call("c1")], 10, 2),
            request(vec![tool_return("dice", "c1", json!(STOPPED_DURING_CALL))]),
        ]
    );
    // The child stopped too, and its run is part of the parent's error.
    let [interrupted] = error.interrupted() else {
        panic!("one interrupted call, got {:?}", error.interrupted());
    };
    assert_eq!(
        (
            interrupted.tool_name.as_str(),
            interrupted.tool_call_id.as_str()
        ),
        ("dice", "c1")
    );
    let child = interrupted.agent_error().expect("the child's error");
    assert_eq!(child.stage(), Stage::Stopped);
    assert_eq!(child.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(
        child.messages(),
        [
            request(vec![user("Roll two dice")]),
            response(vec![dice_call(2, "d1")], 100, 10),
            request(vec![tool_return("roll_dice", "d1", json!(6))]),
        ]
    );
    // Its second request was made, though never answered.
    assert_eq!(child.usage().requests, 2);
    assert_eq!(child.usage().tool_calls, 1);
    // What the child spent is the parent's too.
    assert_eq!(error.usage().requests, 3);
    assert_eq!(error.usage().input_tokens, 110);
    assert_eq!(error.usage().tool_calls, 2);
    assert_eq!(error.usage().agents["dice"].requests, 2);
}

#[tokio::test]
async fn a_parent_past_its_deadline_stops_the_child_with_it() {
    let asked = Arc::new(tokio::sync::Notify::new());
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = router(&parent, &stalling_child(&asked), OnAgentError::Retry);

    let error = router
        .start("Play for Ann", ())
        .with_timeout(std::time::Duration::from_millis(50))
        .finish()
        .await
        .unwrap_err();

    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: std::time::Duration::from_millis(50)
        })
    );
    // Under `Retry`, the child's error is the source of the rejection it would have been.
    let [interrupted] = error.interrupted() else {
        panic!("one interrupted call, got {:?}", error.interrupted());
    };
    let child = interrupted.agent_error().expect("the child's error");
    assert_eq!(child.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(child.messages().len(), 3);
    assert_eq!(error.usage().agents["dice"].requests, 2);
    // Nothing was charged to the parent's budgets for the stopped call.
    assert!(error.usage().rejected.tools.is_empty());
}

/// Runs `router` through `journal` with a timeout of 50 ms, and checks that the run and the
/// agent of its one call both stopped with it, the call charged no rejection: the run's error
/// and its stop.
async fn timed_out_with_its_child<J: Journal>(
    router: &Agent<(), String>,
    journal: &J,
) -> (RunError, Stopped) {
    let error = router
        .start("Play for Ann", ())
        .with_timeout(std::time::Duration::from_millis(50))
        .finish_in(journal)
        .await
        .expect_err("the run stops");
    let timed_out = Stopped::TimedOut {
        timeout: std::time::Duration::from_millis(50),
    };
    assert_eq!(error.stopped(), Some(&timed_out));
    assert_eq!(child_error(&error).stopped(), Some(&timed_out));
    assert!(error.usage().rejected.tools.is_empty());
    (error, timed_out)
}

/// The error of the agent that the one interrupted call of `error` ran.
fn child_error(error: &RunError) -> &RunError {
    let [interrupted] = error.interrupted() else {
        panic!("one interrupted call, got {:?}", error.interrupted());
    };
    interrupted.agent_error().expect("the child's error")
}

#[tokio::test]
async fn under_a_journal_a_parent_past_its_deadline_stops_the_child_at_its_step() {
    let asked = Arc::new(tokio::sync::Notify::new());
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = router(&parent, &stalling_child(&asked), OnAgentError::Retry);
    let journal = MemoryJournal::new();

    let (error, timed_out) = timed_out_with_its_child(&router, &journal).await;
    // The child's second request was stopped in its step by the parent's deadline: the
    // child ended with it, its state in the parent's error.
    assert_eq!(child_error(&error).messages().len(), 3);
    assert_eq!(error.usage().agents["dice"].requests, 2);
    // The child's steps, the one the deadline stopped among them, then how the call ended.
    assert_eq!(
        journal.names(),
        [
            "deadline",
            "model:1",
            "tool:1:c1/model:1",
            "tool:1:c1/tool:1:d1",
            "tool:1:c1/model:2",
            "tool:1:c1"
        ]
    );
    assert_eq!(
        journal.failure("tool:1:c1/model:2").as_deref(),
        Some("the run did not finish within its timeout of 50 ms: stopped during this step")
    );

    // A replay, whenever it comes, stops where the run stopped: nothing is asked again.
    let replayed = router
        .start("Play for Ann", ())
        .with_timeout(std::time::Duration::from_millis(50))
        .finish_in(&journal)
        .await
        .unwrap_err();
    assert_eq!(replayed.stopped(), Some(&timed_out));
    assert_eq!(replayed.messages(), error.messages());
    assert_eq!(replayed.usage(), error.usage());
    assert_eq!(journal.replayed(), 6);
    assert_eq!(parent.requests(), 1);
}

/// A journal in memory whose step `slow` waits `by` before it runs (as an engine may, between
/// a step's scheduling and its start).
struct Delaying {
    journal: MemoryJournal,
    slow: &'static str,
    by: std::time::Duration,
}

impl Journal for Delaying {
    async fn step(
        &self,
        name: String,
        step: golem::run::JournalStep,
    ) -> Result<serde_json::Value, golem::BoxError> {
        if name == self.slow {
            tokio::time::sleep(self.by).await;
        }
        self.journal.step(name, step).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_child_with_a_timeout_begun_after_its_callers_deadline_stops_with_it() {
    let child = correcting_child();
    let timed = timed_dice_agent(&child);
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = router(&parent, &timed, OnAgentError::Retry);
    // The child's first step, which records its deadline, begins after the parent's.
    let journal = Delaying {
        journal: MemoryJournal::new(),
        slow: "tool:1:c1/deadline",
        by: std::time::Duration::from_millis(100),
    };

    timed_out_with_its_child(&router, &journal).await;
    assert_eq!(child.requests(), 0, "the child asked nothing");
    assert_eq!(
        journal.journal.failure("tool:1:c1/deadline").as_deref(),
        Some("the run's timeout of 50 ms had passed when this step was to begin")
    );
}

#[tokio::test]
async fn a_child_whose_budget_ran_out_fails_the_parent_rather_than_being_its_rejection() {
    // The child's own rejection is in its error's chain; under `Fail` it is not the parent's.
    let child = script(vec![reply(vec![dice_call(-1, "d1")], 100, 10)]);
    let strict = Agent::<(), String>::builder(child.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();
    let parent = script(vec![reply(vec![task_call("c1")], 10, 2)]);
    let router = router(&parent, &strict, OnAgentError::Fail);

    let error = router.run("Play for Ann", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("dice"));
    assert_eq!(error.exhausted(), None);
    assert_eq!(error.to_string(), "tool `dice` failed");
    assert!(error.model_retry().is_none());
    let cause = error
        .source()
        .and_then(|cause| cause.downcast_ref::<RunError>())
        .expect("the child's error");
    assert_eq!(
        cause.model_retry().map(ModelRetry::message),
        Some("n must be positive, got -1")
    );
    // The child's rejected round is rolled up as the child's, not charged to `dice`.
    assert_eq!(error.usage().rejected.tools["roll_dice"], cost(1, 100, 10));
    assert!(!error.usage().rejected.tools.contains_key("dice"));
}
