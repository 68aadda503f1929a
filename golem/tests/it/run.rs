//! The run as a value (DESIGN §7): steps, events, saved state, stops, panics, approvals.

use crate::common;

use std::error::Error as _;
use std::future::pending;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::dice::{Game, roll_dice};
use common::*;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::run::{CancellationToken, Stopped, ToolOutcome};
use golem::tool::{FunctionTool, Tool, ToolDefinition};
use golem::usage::RoundCost;
use golem::{
    Agent, AgentRun, BoxError, ModelRetry, RunContext, RunEvent, RunState, Stage, Step,
    ToolPanicked,
};
use serde_json::json;

fn dice_call(n: i64, id: &str) -> golem::model::ResponsePart {
    call("roll_dice", &json!({ "n": n }).to_string(), id)
}

fn cost(requests: u64, input_tokens: u64, output_tokens: u64) -> RoundCost {
    RoundCost {
        requests,
        input_tokens,
        output_tokens,
    }
}

fn yes_or_no(
    _ctx: RunContext<Game>,
    answer: String,
) -> futures_util::future::Ready<Result<String, ModelRetry>> {
    futures_util::future::ready(match answer.as_str() {
        "yes" | "no" => Ok(answer),
        _ => Err(ModelRetry::new(format!("answer yes or no, not `{answer}`"))),
    })
}

/// A tool rejection, a good call, an output rejection, a good answer.
fn correcting_script() -> Script {
    script(vec![
        reply(vec![dice_call(-1, "c1")], 10, 5),
        reply(vec![dice_call(2, "c2")], 20, 5),
        reply(vec![text("maybe")], 30, 1),
        reply(vec![text("yes")], 40, 1),
    ])
}

fn correcting_agent(model: FunctionModel) -> Agent<Game, String> {
    Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .tool_retries(1)
        .output_retries(1)
        .output_validator(yes_or_no)
        .build()
        .expect("a valid agent")
}

/// One line per event, with everything a UI would show.
fn describe(event: &RunEvent<String>) -> String {
    match event {
        RunEvent::RequestSent { turn } => format!("request {turn}"),
        RunEvent::ResponseReceived { turn, response } => format!(
            "response {turn}: {} in, {} out",
            response.usage.input_tokens, response.usage.output_tokens
        ),
        RunEvent::ToolCallStarted { turn, call } => format!(
            "start {turn}: {} {} {}",
            call.tool_name, call.tool_call_id, call.args
        ),
        RunEvent::ToolCallFinished {
            turn,
            call,
            outcome,
        } => format!("finish {turn}: {} {outcome:?}", call.tool_call_id),
        RunEvent::Rejected(rejection) => format!(
            "rejected {}: {} {:?} {:?} retry {} of {}: {} (cost {:?})",
            rejection.turn,
            rejection.stage,
            rejection.tool_name(),
            rejection.tool_call_id(),
            rejection.retry,
            rejection.max_retries,
            rejection.feedback,
            rejection.cost,
        ),
        RunEvent::ApprovalRequired { turn, calls } => format!(
            "approval {turn}: {:?}",
            calls.iter().map(|c| &c.tool_call_id).collect::<Vec<_>>()
        ),
        RunEvent::OutputAccepted { turn } => format!("output {turn}"),
        RunEvent::Finished(result) => format!("finished: {}", result.output),
        _ => "unknown event".to_owned(),
    }
}

#[tokio::test]
async fn the_event_stream_reports_every_step_and_rejection_in_order() {
    let streamed = correcting_script();
    let agent = correcting_agent(streamed.model.clone());

    let mut events = agent.run_stream("Roll two dice", Game);
    let mut seen = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        seen.push(describe(&event));
        if let RunEvent::Finished(result) = event {
            finished = Some(result);
        }
    }

    let c = |r, i, o| cost(r, i, o);
    assert_eq!(
        seen,
        [
            "request 1".to_owned(),
            "response 1: 10 in, 5 out".to_owned(),
            r#"start 1: roll_dice c1 {"n":-1}"#.to_owned(),
            r#"finish 1: c1 Rejected { feedback: "n must be positive, got -1" }"#.to_owned(),
            format!(
                r#"rejected 1: tool Some("roll_dice") Some("c1") retry 1 of 1: n must be positive, got -1 (cost {:?})"#,
                c(1, 10, 5)
            ),
            "request 2".to_owned(),
            "response 2: 20 in, 5 out".to_owned(),
            r#"start 2: roll_dice c2 {"n":2}"#.to_owned(),
            "finish 2: c2 Returned(Number(6))".to_owned(),
            "request 3".to_owned(),
            "response 3: 30 in, 1 out".to_owned(),
            format!(
                "rejected 3: decode None None retry 1 of 1: answer yes or no, not `maybe` (cost {:?})",
                c(1, 30, 1)
            ),
            "request 4".to_owned(),
            "response 4: 40 in, 1 out".to_owned(),
            "output 4".to_owned(),
            "finished: yes".to_owned(),
        ]
    );

    // The stream's result is exactly what `run` gives for the same model.
    let drained = correcting_script();
    let expected = correcting_agent(drained.model.clone())
        .run("Roll two dice", Game)
        .await
        .unwrap();
    let finished = finished.unwrap();
    assert_eq!(finished.messages, expected.messages);
    assert_eq!(finished.usage, expected.usage);
    assert_eq!(finished.usage.requests, 4);
    assert_eq!(finished.usage.rejected.tools["roll_dice"], cost(1, 10, 5));
    assert_eq!(finished.usage.rejected.output, cost(1, 30, 1));
    assert_eq!(
        *streamed.seen.lock().unwrap(),
        *drained.seen.lock().unwrap()
    );
}

/// A model that answers only whole (no stream function) still has its request announced
/// while it works, not only once it answered.
#[tokio::test]
async fn the_event_stream_yields_the_request_while_a_model_that_answers_whole_works() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(Some(released)));
    let model = FunctionModel::new_async(move |_: Vec<Message>, _| {
        let released = released.lock().unwrap().take();
        async move {
            if let Some(released) = released {
                released.await.unwrap();
            }
            Ok(ModelResponse::text("done"))
        }
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();
    let mut events = agent.run_stream("Hi", ());

    let first = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the request is announced before the model answers")
        .unwrap()
        .unwrap();
    assert!(matches!(first, RunEvent::RequestSent { turn: 1 }));
    release.send(()).unwrap();
    let rest: Vec<_> = events
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    assert_eq!(
        rest,
        ["response 1: 0 in, 0 out", "output 1", "finished: done"]
    );
}

/// A request that fails at once is announced before its error.
#[tokio::test]
async fn the_event_stream_announces_a_request_that_fails_at_once() {
    let model = FunctionModel::new(|_, _| -> Result<ModelResponse, golem::model::ModelError> {
        Err(golem::model::ModelError::other("refused"))
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let items: Vec<_> = agent.run_stream("Hi", ()).collect().await;

    assert_eq!(items.len(), 2);
    assert!(matches!(
        items[0].as_ref().unwrap(),
        RunEvent::RequestSent { turn: 1 }
    ));
    let error = items[1].as_ref().unwrap_err();
    assert_eq!(error.stage(), Stage::Model);
    assert_eq!(error.source().unwrap().to_string(), "refused");
}

/// A stop while a model that answers whole works: its request was announced as it started
/// waiting, and counts.
#[tokio::test]
async fn a_stop_while_a_model_that_answers_whole_works_follows_its_announced_request() {
    let model = FunctionModel::new_async(|_: Vec<Message>, _| async {
        pending::<()>().await;
        Ok(ModelResponse::text("never"))
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();
    let token = CancellationToken::new();
    let mut events = agent
        .start("Hi", ())
        .with_cancellation(token.clone())
        .into_events();

    let first = events.next().await.unwrap().unwrap();
    assert!(matches!(first, RunEvent::RequestSent { turn: 1 }));
    token.cancel();
    let error = events.next().await.unwrap().unwrap_err();
    assert!(events.next().await.is_none());

    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.messages(), [request(vec![user("Hi")])]);
}

/// A whole response the run will not act on (cut off at the token limit) is announced,
/// received, then the error.
#[tokio::test]
async fn a_truncated_whole_response_is_announced_and_received_before_the_error() {
    let model = FunctionModel::new(|_, _| {
        let mut response = ModelResponse::text("Once upon a").with_usage(5, 3);
        response.finish_reason = Some(golem::model::FinishReason::Length);
        response
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let items: Vec<_> = agent.run_stream("Tell a story", ()).collect().await;

    assert_eq!(items.len(), 3);
    assert_eq!(describe(items[0].as_ref().unwrap()), "request 1");
    assert_eq!(
        describe(items[1].as_ref().unwrap()),
        "response 1: 5 in, 3 out"
    );
    let error = items[2].as_ref().unwrap_err();
    assert_eq!(error.stage(), Stage::Model);
    assert_eq!(error.usage().requests, 1);
}

/// A model that says it answers only whole is never asked for a stream.
struct WholeOnly;

impl golem::model::Model for WholeOnly {
    fn request<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a golem::model::RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, golem::model::ModelError>> {
        Box::pin(async { Ok(ModelResponse::text("whole")) })
    }

    fn request_stream<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a golem::model::RequestParams,
    ) -> golem::model::ModelStream<'a> {
        unreachable!("a model that answers only whole is asked with `request`")
    }

    fn streams(&self) -> bool {
        false
    }

    fn name(&self) -> &str {
        "whole-only"
    }

    fn system(&self) -> &str {
        "test"
    }
}

#[tokio::test]
async fn a_model_that_answers_only_whole_is_asked_with_request_in_a_streamed_run() {
    let agent = Agent::<(), String>::builder(WholeOnly).build().unwrap();

    let seen: Vec<_> = agent
        .run_stream("Hi", ())
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;

    assert_eq!(
        seen,
        [
            "request 1",
            "response 1: 0 in, 0 out",
            "output 1",
            "finished: whole"
        ]
    );
}

#[tokio::test]
async fn a_failed_run_ends_its_stream_with_the_error() {
    let script = script(vec![reply(vec![dice_call(-1, "c1")], 10, 5)]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();

    let items: Vec<_> = agent.run_stream("Roll", Game).collect().await;

    assert_eq!(items.len(), 6);
    let describe_ok =
        |item: &Result<RunEvent<String>, golem::RunError>| describe(item.as_ref().unwrap());
    assert_eq!(describe_ok(&items[0]), "request 1");
    assert!(describe_ok(&items[4]).starts_with("rejected 1: tool"));
    let error = items[5].as_ref().unwrap_err();
    assert!(error.is_retries_exhausted());
    assert_eq!(error.messages().len(), 2);
}

#[tokio::test]
async fn a_run_driven_step_by_step_shows_its_state_between_steps() {
    let script = correcting_script();
    let agent = correcting_agent(script.model.clone());
    let mut run = agent.start("Roll two dice", Game);

    assert!(run.messages().is_empty());
    assert_eq!(
        run.state().pending().unwrap().parts,
        vec![user("Roll two dice")]
    );

    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert_eq!(run.messages().len(), 2);
    assert_eq!(run.usage().requests, 1);
    assert_eq!(run.state().turns(), 1);
    assert_eq!(run.retries().tool("roll_dice"), 0);

    assert!(matches!(run.step().await.unwrap(), Step::Handled));
    assert_eq!(run.messages().len(), 2, "the feedback is not sent yet");
    assert_eq!(
        run.state().pending().unwrap().parts,
        vec![tool_retry("roll_dice", "c1", "n must be positive, got -1")]
    );
    assert_eq!(run.retries().tool("roll_dice"), 1);
    assert_eq!(run.usage().rejected.tools["roll_dice"], cost(1, 10, 5));

    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert_eq!(run.messages().len(), 4);
    assert!(run.state().pending().is_none());

    let mut steps = 3;
    let result = loop {
        steps += 1;
        if let Step::Finished(result) = run.step().await.unwrap() {
            break result;
        }
    };
    assert_eq!(steps, 8, "four requests, four handlings");
    assert_eq!(result.output, "yes");
    assert_eq!(result.messages.len(), 8);

    let error = run.step().await.unwrap_err();
    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(error.source().unwrap().to_string(), "the run has ended");
}

#[tokio::test]
async fn a_state_saved_mid_run_continues_in_a_fresh_agent_as_if_never_interrupted() {
    let uninterrupted = correcting_script();
    let expected = correcting_agent(uninterrupted.model.clone())
        .run("Roll two dice", Game)
        .await
        .unwrap();

    let script = correcting_script();
    let mut run = correcting_agent(script.model.clone()).start("Roll two dice", Game);
    for _ in 0..2 {
        run.step().await.unwrap();
    }
    let saved = serde_json::to_string(run.state()).unwrap();
    drop(run);

    let state: RunState = serde_json::from_str(&saved).unwrap();
    assert_eq!(state.retries().tool("roll_dice"), 1);
    let result = correcting_agent(script.model.clone())
        .resume(state, Game)
        .await
        .unwrap();

    assert_eq!(result.output, expected.output);
    assert_eq!(result.messages, expected.messages);
    assert_eq!(result.usage, expected.usage);
    assert_eq!(script.requests(), 4);
}

#[tokio::test]
async fn a_restored_run_keeps_its_counters_and_does_not_get_fresh_budgets() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 1, 1),
        reply(vec![dice_call(-2, "c2")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .unwrap();
    let mut run = agent.start("Roll", Game);
    run.step().await.unwrap();
    run.step().await.unwrap();
    let state: RunState =
        serde_json::from_str(&serde_json::to_string(run.state()).unwrap()).unwrap();

    let error = agent.resume(state, Game).await.unwrap_err();

    // The second rejection is the second of the run: over the budget of 1.
    assert_eq!(
        error.exhausted(),
        Some(golem::Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(error.state().retries().tool("roll_dice"), 2);
    assert_eq!(error.usage().requests, 2);
}

#[test]
fn the_saved_state_is_versioned() {
    let state = RunState::from_history(vec![request(vec![user("Hi")])]);
    let value = serde_json::to_value(&state).unwrap();
    assert_eq!(
        value,
        json!({
            "version": 2,
            "messages": [{"kind": "request", "parts": [{"part_kind": "user_prompt", "content": "Hi"}]}],
            "run_start": 1,
            "usage": {"requests": 0, "input_tokens": 0, "output_tokens": 0,
                      "cache_read_tokens": 0, "cache_write_tokens": 0, "tool_calls": 0},
            "turns": 0,
            "retries": {}
        })
    );

    let mut future = value.clone();
    future["version"] = json!(3);
    let error = serde_json::from_value::<RunState>(future).unwrap_err();
    assert_eq!(
        error.to_string(),
        "run state version 3 is not supported; this golem reads versions 1 to 2"
    );
}

/// A tool that answers at once, and one that never does.
fn fast_and_slow() -> (impl Tool<()>, impl Tool<()>) {
    let fast = FunctionTool::new("fast", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("done")
    });
    let slow = FunctionTool::new("slow", |_ctx: RunContext<()>, (): ()| async move {
        pending::<()>().await;
        Ok::<_, ModelRetry>("never")
    });
    (fast, slow)
}

fn two_calls() -> ModelResponse {
    reply(
        vec![call("fast", "{}", "c1"), call("slow", "{}", "c2")],
        10,
        2,
    )
}

fn stopped_history() -> Vec<Message> {
    vec![
        request(vec![user("Go")]),
        response(
            vec![call("fast", "{}", "c1"), call("slow", "{}", "c2")],
            10,
            2,
        ),
        request(vec![
            tool_return("fast", "c1", json!("done")),
            tool_return(
                "slow",
                "c2",
                json!("Not finished: the run was stopped during this call."),
            ),
        ]),
    ]
}

/// An agent of `model` with the two `tools`, a run timeout of 5 s, and `tool_retries` when
/// given.
fn timed_with(
    model: &Script,
    (first, second): (impl Tool<()>, impl Tool<()>),
    tool_retries: Option<u32>,
) -> Agent<(), String> {
    let mut builder = Agent::<(), String>::builder(model.model.clone())
        .tool(first)
        .tool(second)
        .run_timeout(Duration::from_secs(5));
    if let Some(retries) = tool_retries {
        builder = builder.tool_retries(retries);
    }
    builder.build().expect("a valid agent")
}

#[tokio::test(start_paused = true)]
async fn a_deadline_stops_the_run_during_its_tools_and_keeps_what_finished() {
    let script = script(vec![two_calls()]);
    let agent = timed_with(&script, fast_and_slow(), None);

    let error = agent.run("Go", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Stopped);
    assert!(error.is_stopped());
    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: Duration::from_secs(5)
        })
    );
    assert_eq!(error.to_string(), "the run was stopped");
    assert_eq!(
        error.source().unwrap().to_string(),
        "the run did not finish within its timeout of 5s"
    );
    assert_eq!(error.messages(), stopped_history());
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.usage().tool_calls, 2);
    assert!(error.pending().is_none());
}

/// A rejection that came in before a stop is booked as it would have been without it: the
/// tool's retry is spent (a stop and a resume buy no free one), its round is counted as
/// rejected, and a rejection beyond the budget fails the run at the tool stage, with the
/// feedback kept apart for a resume.
#[tokio::test(start_paused = true)]
async fn a_rejection_before_a_stop_costs_its_retry_and_one_beyond_the_budget_fails_the_run() {
    let picky_and_slow = || {
        let picky = FunctionTool::new("picky", |_ctx: RunContext<()>, (): ()| async move {
            Err::<&str, _>(ModelRetry::new("try again"))
        });
        let (_, slow) = fast_and_slow();
        (picky, slow)
    };
    let calls = || {
        reply(
            vec![call("picky", "{}", "c1"), call("slow", "{}", "c2")],
            10,
            2,
        )
    };

    // With a budget of one: stopped, the retry spent.
    let budgeted = script(vec![calls(), calls()]);
    let agent = timed_with(&budgeted, picky_and_slow(), Some(1));
    let error = agent.run("Go", ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(error.state().retries().tool("picky"), 1);
    assert_eq!(error.usage().rejected.total.requests, 1);
    assert_eq!(
        error.messages()[2],
        request(vec![
            tool_retry("picky", "c1", "try again"),
            tool_return(
                "slow",
                "c2",
                json!("Not finished: the run was stopped during this call."),
            ),
        ])
    );
    // Resumed, the second rejection is beyond the budget.
    let mut state = error.into_state();
    state.clear_deadline();
    let error = agent.resume(state, ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Tool);
    assert!(error.is_retries_exhausted());
    assert_eq!(error.tool_name(), Some("picky"));

    // Without a budget: the rejection fails the run at the tool stage, not the stop; the
    // history ends with the response, the feedback kept apart.
    let unbudgeted = script(vec![calls()]);
    let agent = timed_with(&unbudgeted, picky_and_slow(), None);
    let error = agent.run("Go", ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Tool);
    assert!(error.is_retries_exhausted());
    assert_eq!(
        error.model_retry().map(ModelRetry::message),
        Some("try again")
    );
    assert_eq!(error.messages().len(), 2);
    assert_eq!(error.pending().map(|request| request.parts.len()), Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_per_run_stops_a_model_request_that_never_answers() {
    let model = FunctionModel::new_async(|_: Vec<Message>, _| async {
        pending::<()>().await;
        Ok(ModelResponse::text("never"))
    });
    let agent = Agent::<(), String>::builder(model)
        .run_timeout(Duration::from_secs(600))
        .build()
        .unwrap();

    let error = agent
        .start("Hi", ())
        .with_timeout(Duration::from_millis(50))
        .finish()
        .await
        .unwrap_err();

    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: Duration::from_millis(50)
        })
    );
    assert_eq!(error.messages(), [request(vec![user("Hi")])]);
    assert_eq!(error.state().turns(), 1);
    // The request was sent, though no answer came: it counts against `request_limit`.
    assert_eq!(error.usage().requests, 1);
}

#[tokio::test]
async fn a_cancelled_token_stops_the_run_during_its_tools_and_answers_every_call() {
    let script = script(vec![two_calls()]);
    let token = CancellationToken::new();
    let fast = FunctionTool::new(
        "fast",
        |_ctx: RunContext<CancellationToken>, (): ()| async move { Ok::<_, ModelRetry>("done") },
    );
    // The user presses Stop while the slow tool runs.
    let slow = FunctionTool::new(
        "slow",
        |ctx: RunContext<CancellationToken>, (): ()| async move {
            ctx.deps().cancel();
            pending::<()>().await;
            Ok::<_, ModelRetry>("never")
        },
    );
    let agent = Agent::<CancellationToken, String>::builder(script.model.clone())
        .tool(fast)
        .tool(slow)
        .build()
        .unwrap();

    let error = agent
        .start("Go", token.clone())
        .with_cancellation(token)
        .finish()
        .await
        .unwrap_err();

    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(error.source().unwrap().to_string(), "the run was cancelled");
    assert_eq!(error.messages(), stopped_history());
    assert_eq!(error.usage().requests, 1);
}

#[tokio::test]
async fn a_token_cancelled_between_steps_stops_the_next_one() {
    let script = script(vec![reply(vec![dice_call(1, "c1")], 1, 1)]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let mut run = agent.start("Roll", Game).with_cancellation(token.clone());
    run.step().await.unwrap();

    token.cancel();
    let error = run.step().await.unwrap_err();

    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(error.messages().len(), 2);
    assert_eq!(script.requests(), 1);
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn dropping_a_step_cancels_the_request_in_flight_and_leaves_the_run_to_inspect() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let model = FunctionModel::new_async(move |_: Vec<Message>, _| {
        let guard = DropFlag(Arc::clone(&flag));
        async move {
            let _guard = guard;
            pending::<()>().await;
            Ok(ModelResponse::text("never"))
        }
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();
    let mut run = agent.start("Hi", ());

    let timed_out = tokio::time::timeout(Duration::from_millis(20), run.step()).await;

    assert!(timed_out.is_err());
    assert!(
        dropped.load(Ordering::SeqCst),
        "the request future was dropped"
    );
    assert_eq!(run.messages(), [request(vec![user("Hi")])]);
}

#[tokio::test]
async fn dropping_the_run_cancels_its_tools() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let stuck = FunctionTool::new("stuck", move |_ctx: RunContext<()>, (): ()| {
        let guard = DropFlag(Arc::clone(&flag));
        async move {
            let _guard = guard;
            pending::<()>().await;
            Ok::<_, ModelRetry>("never")
        }
    });
    let script = script(vec![reply(vec![call("stuck", "{}", "c1")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(stuck)
        .build()
        .unwrap();
    let mut events = agent.run_stream("Go", ());

    // Wait until the tool started, then drop the stream and the run it owns.
    while let Some(event) = events.next().await {
        if matches!(event.unwrap(), RunEvent::ToolCallStarted { .. }) {
            break;
        }
    }
    let polled = tokio::time::timeout(Duration::from_millis(20), events.next()).await;
    assert!(polled.is_err(), "the tool never answers");
    assert!(!dropped.load(Ordering::SeqCst));
    drop(events);

    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool future was dropped"
    );
}

#[tokio::test]
async fn a_panicking_tool_fails_the_run_at_the_tool_stage_with_the_panic_as_cause() {
    let boom = FunctionTool::new("boom", |_ctx: RunContext<()>, (): ()| async move {
        if true {
            panic!("the tool fell over");
        }
        Ok::<_, ModelRetry>("unreachable")
    });
    let script = script(vec![reply(vec![call("boom", "{}", "c1")], 3, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(boom)
        .tool_retries(5)
        .build()
        .unwrap();

    let error = agent.run("Go", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("boom"));
    assert!(!error.is_retries_exhausted());
    assert_eq!(error.to_string(), "tool `boom` failed");
    let cause = error
        .source()
        .unwrap()
        .downcast_ref::<ToolPanicked>()
        .unwrap();
    assert_eq!(cause.message, "the tool fell over");
    assert_eq!(
        error.source().unwrap().to_string(),
        "the tool panicked: the tool fell over"
    );
    assert_eq!(
        error.messages()[2],
        request(vec![tool_return(
            "boom",
            "c1",
            json!("The tool failed; the run stopped.")
        )])
    );
    assert_eq!(error.usage().requests, 1);
}

/// A hand-written tool whose `call` panics before it returns a future.
struct PanicsEarly;

impl Tool<()> for PanicsEarly {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::for_args::<()>("early", "Panics when called.")
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
        _args: &'a str,
    ) -> BoxFuture<'a, Result<serde_json::Value, BoxError>> {
        panic!("no future for you")
    }
}

#[tokio::test]
async fn a_tool_that_panics_while_making_its_future_is_caught_too() {
    let script = script(vec![reply(vec![call("early", "{}", "c1")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(PanicsEarly)
        .build()
        .unwrap();

    let error = agent.run("Go", ()).await.unwrap_err();

    assert_eq!(
        error.source().unwrap().to_string(),
        "the tool panicked: no future for you"
    );
}

/// A file deleter that needs approval, and counts what it deleted.
fn deleter(deleted: Arc<AtomicUsize>) -> impl Tool<()> {
    #[golem::args]
    struct File {
        path: String,
    }
    FunctionTool::new("delete_file", move |_ctx: RunContext<()>, file: File| {
        let deleted = Arc::clone(&deleted);
        async move {
            deleted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ModelRetry>(format!("deleted {}", file.path))
        }
    })
    .requires_approval(true)
}

fn approval_script() -> Script {
    script(vec![
        reply(
            vec![call("delete_file", r#"{"path": "a.txt"}"#, "c1")],
            10,
            2,
        ),
        reply(
            vec![call("delete_file", r#"{"path": "b.txt"}"#, "c2")],
            20,
            2,
        ),
        reply(vec![text("Deleted b.txt, kept a.txt.")], 30, 2),
    ])
}

fn approval_agent(model: FunctionModel, deleted: &Arc<AtomicUsize>) -> Agent<(), String> {
    Agent::<(), String>::builder(model)
        .tool(deleter(Arc::clone(deleted)))
        .build()
        .expect("a valid agent")
}

/// Saves the run's state and rebuilds it in a fresh agent, as another process would.
fn save_and_restore(
    run: AgentRun<(), String>,
    model: FunctionModel,
    deleted: &Arc<AtomicUsize>,
) -> AgentRun<(), String> {
    let saved = serde_json::to_string(run.state()).expect("serializes");
    drop(run);
    let state: RunState = serde_json::from_str(&saved).expect("deserializes");
    approval_agent(model, deleted).restore(state, ())
}

#[tokio::test]
async fn a_run_pauses_for_approval_and_goes_on_after_deny_and_approve_across_saves() {
    let script = approval_script();
    let deleted = Arc::new(AtomicUsize::new(0));
    let mut run = approval_agent(script.model.clone(), &deleted).start("Clean up", ());

    let mut events: Vec<String> = Vec::new();
    let mut stream = run.events();
    while let Some(event) = stream.next().await {
        events.push(describe(&event.unwrap()));
    }
    drop(stream);
    assert_eq!(
        events,
        [
            "request 1",
            "response 1: 10 in, 2 out",
            r#"approval 1: ["c1"]"#
        ]
    );
    assert_eq!(run.awaiting_approval()[0].tool_call_id, "c1");
    assert!(
        matches!(run.step().await.unwrap(), Step::Paused),
        "still waiting"
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 0);

    let mut run = save_and_restore(run, script.model.clone(), &deleted);
    assert_eq!(
        run.approve("c9").unwrap_err().to_string(),
        "no call with id `c9` waits for approval"
    );
    run.deny("c1", "a.txt is still needed").unwrap();
    assert!(matches!(run.step().await.unwrap(), Step::Handled));
    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert!(matches!(run.step().await.unwrap(), Step::Paused));
    assert_eq!(run.awaiting_approval()[0].tool_call_id, "c2");

    let mut run = save_and_restore(run, script.model.clone(), &deleted);
    run.approve("c2").unwrap();
    let result = run.finish().await.unwrap();

    assert_eq!(result.output, "Deleted b.txt, kept a.txt.");
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(
        result.messages,
        [
            request(vec![user("Clean up")]),
            response(
                vec![call("delete_file", r#"{"path": "a.txt"}"#, "c1")],
                10,
                2
            ),
            request(vec![tool_return(
                "delete_file",
                "c1",
                json!("This call was denied and did not run: a.txt is still needed")
            )]),
            response(
                vec![call("delete_file", r#"{"path": "b.txt"}"#, "c2")],
                20,
                2
            ),
            request(vec![tool_return(
                "delete_file",
                "c2",
                json!("deleted b.txt")
            )]),
            response(vec![text("Deleted b.txt, kept a.txt.")], 30, 2),
        ]
    );
    // A denial costs no retry budget and is no tool call.
    assert_eq!(result.usage.requests, 3);
    assert_eq!(result.usage.tool_calls, 1);
    assert!(result.usage.rejected.is_empty());
}

/// A chat's "regenerate" and the edit of an earlier message: the state goes back to the
/// start of a turn and asks it again, as it was or with a new prompt. The turn's request
/// keeps its answers to the calls before it (here a call that waited for approval when the
/// user wrote instead); the calls that wait in a later turn go with it; usage stays.
#[tokio::test]
async fn a_turn_rewound_is_asked_again_as_it_was_or_with_its_prompt_replaced() {
    let script = script(vec![
        reply(
            vec![call("delete_file", r#"{"path": "a.txt"}"#, "c1")],
            10,
            2,
        ),
        reply(
            vec![call("delete_file", r#"{"path": "b.txt"}"#, "c2")],
            20,
            2,
        ),
        reply(vec![text("a.txt and b.txt.")], 20, 3),
        reply(vec![text("Two.")], 20, 1),
    ]);
    let deleted = Arc::new(AtomicUsize::new(0));
    let agent = approval_agent(script.model.clone(), &deleted);
    // The user writes instead of answering the call that waits; the next turn's call waits.
    let mut state = agent.run("Clean up", ()).await.unwrap_err().into_state();
    state.push_prompt("Only list them.");
    let mut state = agent.resume(state, ()).await.unwrap_err().into_state();
    assert_eq!(state.messages().len(), 4);
    assert_eq!(state.awaiting_approval()[0].tool_call_id, "c2");
    let turn = request(vec![
        tool_return(
            "delete_file",
            "c1",
            json!("Not run: the run stopped before this call."),
        ),
        user("Only list them."),
    ]);
    assert_eq!(state.messages()[2], turn);

    for index in [1, 3, 4, 9] {
        assert_eq!(
            state.rewind(index).unwrap_err().to_string(),
            format!(
                "message {index} of the history is not the start of a turn (a request with a user prompt)"
            )
        );
    }
    assert_eq!(state.messages().len(), 4);
    state.rewind(2).unwrap();
    assert_eq!(state.messages().len(), 2);
    assert_eq!(
        state.pending().cloned().map(Message::Request),
        Some(turn.clone())
    );
    assert!(state.awaiting_approval().is_empty());
    assert_eq!(state.usage().requests, 2);

    // Asked again, as it was: the model gets the same request.
    let result = agent.resume(state, ()).await.unwrap();
    assert_eq!(result.output, "a.txt and b.txt.");
    assert_eq!(result.messages.len(), 4);
    assert_eq!(result.messages[2], turn);
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen[2], seen[1]);
    assert_eq!(result.usage.requests, 3);

    // Edited: the turn's answers stay, its prompt is the new one.
    let mut state = RunState::from_history(result.messages);
    state.rewind(2).unwrap();
    state.replace_prompt("Count them.").unwrap();
    let result = agent.resume(state, ()).await.unwrap();
    assert_eq!(result.output, "Two.");
    let edited = request(vec![
        tool_return(
            "delete_file",
            "c1",
            json!("Not run: the run stopped before this call."),
        ),
        user("Count them."),
    ]);
    assert_eq!(result.messages[2], edited);
    assert_eq!(script.seen.lock().unwrap()[3].last(), Some(&edited));
    assert_eq!(deleted.load(Ordering::SeqCst), 0);

    // Nothing to edit when no prompt is sent next.
    let mut state = RunState::from_history(result.messages);
    assert_eq!(
        state.replace_prompt("Again.").unwrap_err(),
        golem::run::RewindError::NoPrompt
    );
}

#[tokio::test]
async fn run_fails_at_the_approval_stage_with_a_state_to_decide_on_and_resume() {
    let script = approval_script();
    let deleted = Arc::new(AtomicUsize::new(0));
    let agent = approval_agent(script.model.clone(), &deleted);

    let error = agent.run("Clean up", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Approval);
    assert_eq!(error.to_string(), "the run paused for approval");
    assert_eq!(error.messages().len(), 2);
    let mut state = error.into_state();
    assert_eq!(state.awaiting_approval()[0].tool_call_id, "c1");
    state.approve("c1").unwrap();

    let error = agent.resume(state, ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Approval);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(error.state().awaiting_approval()[0].tool_call_id, "c2");
}

#[tokio::test]
async fn a_denied_call_declines_the_output_of_the_same_response() {
    #[golem::args]
    #[derive(Debug)]
    struct Report {
        done: bool,
    }
    let deleted = Arc::new(AtomicUsize::new(0));
    let script = script(vec![
        reply(
            vec![
                call("delete_file", r#"{"path": "a.txt"}"#, "c1"),
                call("final_result", r#"{"done": true}"#, "c2"),
            ],
            1,
            1,
        ),
        reply(vec![call("final_result", r#"{"done": false}"#, "c3")], 1, 1),
    ]);
    let agent = Agent::<(), golem::output::Json<Report>>::builder(script.model.clone())
        .tool(deleter(Arc::clone(&deleted)))
        .build()
        .unwrap();
    let mut run = agent.start("Clean up", ());
    run.step().await.unwrap();
    assert!(matches!(run.step().await.unwrap(), Step::Paused));
    run.deny("c1", "no").unwrap();

    let result = run.finish().await.unwrap();

    assert!(!result.output.done);
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return(
                "delete_file",
                "c1",
                json!("This call was denied and did not run: no")
            ),
            tool_return(
                "final_result",
                "c2",
                json!(
                    "Output not accepted: a tool call in this response was denied. \
                     Take the denial into account, then call `final_result` again."
                )
            ),
        ])
    );
    assert!(result.usage.rejected.is_empty());
}

#[tokio::test]
async fn denied_calls_are_reported_as_finished_without_starting() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let script = approval_script();
    let mut run = approval_agent(script.model.clone(), &deleted).start("Clean up", ());
    run.events().for_each(|_| async {}).await;
    run.deny("c1", "no").unwrap();

    let mut outcomes = Vec::new();
    let mut stream = run.events();
    while let Some(event) = stream.next().await {
        if let RunEvent::ToolCallFinished { outcome, .. } = event.unwrap() {
            outcomes.push(outcome);
        }
    }

    assert_eq!(
        outcomes,
        [ToolOutcome::Denied {
            reason: "no".to_owned()
        }]
    );
}

#[test]
fn the_futures_of_a_run_can_move_between_threads() {
    fn assert_send<T: Send>(_: &T) {}
    let agent = correcting_agent(correcting_script().model);
    assert_send(&agent.run("Roll", Game));
    assert_send(&agent.run_stream("Roll", Game));
    let mut run = agent.start("Roll", Game);
    assert_send(&run.step());
    let journal = golem::run::MemoryJournal::new();
    assert_send(&run.step_in(&journal));
    assert_send(&agent.start("Roll", Game).finish());
}
