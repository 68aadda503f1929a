//! The paths between steps (DESIGN §8 "The transcript"): a resumed run after a stop
//! mid-stream asks again, a dropped step keeps the calls that finished, any failed run's
//! history can be continued, output validation honours stops and panics, per-run overrides
//! take effect from the next request, every request sent is counted, the deadline survives
//! a save, and a state of version 1 is read.

use crate::common;

use std::error::Error as _;
use std::future::pending;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use golem::model::function::FunctionModel;
use golem::model::{
    FinishReason, Message, Model, ModelError, ModelRequest, ModelResponse, ModelSettings,
    ModelStream, RequestParams, RequestPart, ResponseDelta, ResponsePart, StreamEvent,
};
use golem::run::{CancellationToken, Stopped};
use golem::tool::FunctionTool;
use golem::usage::{LimitExceeded, UsageLimits};
use golem::{Agent, ModelRetry, OutputPanicked, RunContext, RunEvent, RunState, Stage, Step};
use serde_json::json;

const INTERRUPTED: &str =
    "The previous response was interrupted before it was complete; it was not used. Respond again.";
const NOT_RUN: &str = "Not run: the run stopped before this call.";

/// A model that streams the start of its answer and stalls on its first request, and
/// answers in full on every later one; it counts its requests.
#[derive(Debug)]
struct StallsOnce {
    start: Vec<ResponseDelta>,
    answer: &'static str,
    requests: AtomicUsize,
    /// What each later request sent.
    seen: std::sync::Mutex<Vec<Vec<Message>>>,
}

impl StallsOnce {
    fn new(start: &'static str, answer: &'static str) -> Self {
        StallsOnce::streaming(
            vec![ResponseDelta::Text {
                part: 0,
                text: start.into(),
            }],
            answer,
        )
    }

    fn streaming(start: Vec<ResponseDelta>, answer: &'static str) -> Self {
        StallsOnce {
            start,
            answer,
            requests: AtomicUsize::new(0),
            seen: std::sync::Mutex::default(),
        }
    }
}

impl Model for StallsOnce {
    fn name(&self) -> &str {
        "stalls-once"
    }

    fn system(&self) -> &str {
        "test"
    }

    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.seen
            .lock()
            .expect("not poisoned")
            .push(messages.to_vec());
        let answer = self.answer;
        Box::pin(async move { Ok(ModelResponse::text(answer).with_usage(7, 5)) })
    }

    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        if self.requests.load(Ordering::SeqCst) > 0 {
            return Box::pin(futures_util::stream::once(async move {
                self.request(messages, params).await.map(StreamEvent::Done)
            }));
        }
        self.requests.fetch_add(1, Ordering::SeqCst);
        let deltas = self.start.iter().cloned().map(StreamEvent::Delta).map(Ok);
        let stream: BoxStream<'a, _> = Box::pin(
            futures_util::stream::iter(deltas.collect::<Vec<_>>())
                .chain(futures_util::stream::pending()),
        );
        stream
    }
}

/// Streams `run` until its first delta, then cancels `token` and returns the error the
/// stream ends with.
async fn cancel_after_first_delta(
    run: &mut golem::AgentRun<(), String>,
    token: &CancellationToken,
) -> golem::RunError {
    let mut events = run.events();
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::Delta { .. }) => token.cancel(),
            Ok(_) => {}
            Err(error) => return error,
        }
    }
    panic!("the stream ended without the error of the stop");
}

#[tokio::test]
async fn a_run_resumed_after_a_stop_mid_stream_asks_the_model_again() {
    let model = Arc::new(StallsOnce::new("The ans", "The answer is 42."));
    let agent = Agent::<(), String>::builder(Arc::clone(&model))
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let mut run = agent.start("Hi", ()).with_cancellation(token.clone());

    let error = cancel_after_first_delta(&mut run, &token).await;
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    let mut incomplete = ModelResponse::text("The ans");
    incomplete.finish_reason = Some(FinishReason::Incomplete);
    let note = request(vec![retry(INTERRUPTED)]);
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Hi")]),
            Message::from(incomplete.clone()),
            note.clone(),
        ]
    );

    let result = agent.resume(error.into_state(), ()).await.unwrap();

    assert_eq!(result.output, "The answer is 42.");
    assert_eq!(model.requests.load(Ordering::SeqCst), 2);
    assert_eq!(
        result.messages,
        [
            request(vec![user("Hi")]),
            Message::from(incomplete),
            note,
            response(vec![text("The answer is 42.")], 7, 5),
        ]
    );
    assert_eq!(result.usage.requests, 2);
    assert_eq!(result.usage.input_tokens, 7);
}

#[tokio::test]
async fn a_cut_off_call_stays_in_the_history_but_is_not_sent_again() {
    let model = Arc::new(StallsOnce::streaming(
        vec![
            ResponseDelta::Text {
                part: 0,
                text: "Let me look.".into(),
            },
            ResponseDelta::ToolCallStart {
                part: 1,
                tool_name: "search".into(),
                tool_call_id: "c1".into(),
            },
            ResponseDelta::ToolCallArgs {
                part: 1,
                args: r#"{"q": "mo"#.into(),
            },
        ],
        "Found it.",
    ));
    let agent = Agent::<(), String>::builder(Arc::clone(&model))
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let mut run = agent
        .start("Find the moon", ())
        .with_cancellation(token.clone());
    let error = cancel_after_first_delta(&mut run, &token).await;
    let history = error.messages().to_vec();
    assert_eq!(history.len(), 3);
    assert_eq!(
        history[2],
        request(vec![
            tool_return("search", "c1", json!(NOT_RUN)),
            retry(INTERRUPTED),
        ])
    );

    let result = agent.resume(error.into_state(), ()).await.unwrap();

    assert_eq!(result.output, "Found it.");
    assert_eq!(result.messages[..3], history[..]);
    // Sent again: the text of the cut-off response, without its call or the call's answer.
    let mut text_only = ModelResponse::text("Let me look.");
    text_only.finish_reason = Some(FinishReason::Incomplete);
    assert_eq!(
        model.seen.lock().unwrap()[0],
        [
            request(vec![user("Find the moon")]),
            Message::from(text_only),
            request(vec![retry(INTERRUPTED)]),
        ]
    );
}

#[tokio::test]
async fn a_native_answer_cut_off_by_a_stop_is_asked_for_again_and_costs_no_output_retry() {
    #[golem::output]
    #[derive(Debug, PartialEq)]
    struct Answer {
        value: u32,
    }

    let model = Arc::new(StallsOnce::new(r#"{"val"#, r#"{"value": 42}"#));
    let agent = Agent::<(), Answer>::builder(Arc::clone(&model))
        .output_mode(golem::output::OutputMode::Native)
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let mut run = agent.start("Answer", ()).with_cancellation(token.clone());
    let mut events = run.events();
    let mut error = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::Delta { .. }) => token.cancel(),
            Ok(_) => {}
            Err(stopped) => error = Some(stopped),
        }
    }
    drop(events);
    let error = error.expect("the run stopped");
    assert_eq!(error.stage(), Stage::Stopped);

    let result = agent.resume(error.into_state(), ()).await.unwrap();

    assert_eq!(result.output, Answer { value: 42 });
    assert_eq!(model.requests.load(Ordering::SeqCst), 2);
    assert_eq!(result.messages[2], request(vec![retry(INTERRUPTED)]));
    assert!(result.usage.rejected.output.is_zero());
}

/// A tool that counts its calls and answers at once, and one that takes a minute.
fn quick_and_slow(quick_calls: &Arc<AtomicUsize>) -> Vec<Box<dyn golem::tool::Tool<()>>> {
    let quick_calls = Arc::clone(quick_calls);
    let quick = FunctionTool::new("quick", move |_ctx: RunContext<()>, (): ()| {
        let quick_calls = Arc::clone(&quick_calls);
        async move {
            quick_calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ModelRetry>("sent")
        }
    });
    let slow = FunctionTool::new("slow", |_ctx: RunContext<()>, (): ()| async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok::<_, ModelRetry>("slow done")
    });
    vec![Box::new(quick), Box::new(slow)]
}

/// An agent whose model calls `quick` and `slow` in one response, then answers.
fn send_and_wait_agent(quick_calls: &Arc<AtomicUsize>) -> Agent<(), String> {
    let script = script(vec![
        reply(
            vec![call("quick", "{}", "c1"), call("slow", "{}", "c2")],
            10,
            2,
        ),
        reply(vec![text("Both done.")], 20, 3),
    ]);
    Agent::<(), String>::builder(script.model)
        .tools(quick_and_slow(quick_calls))
        .build()
        .expect("a valid agent")
}

#[tokio::test(start_paused = true)]
async fn a_step_dropped_while_its_tools_run_keeps_the_calls_that_finished() {
    let quick_calls = Arc::new(AtomicUsize::new(0));
    let agent = send_and_wait_agent(&quick_calls);
    let mut run = agent.start("Send and wait", ());
    assert!(matches!(run.step().await.unwrap(), Step::Responded));

    // The caller gives the tools a second, then drops the step.
    let dropped = tokio::time::timeout(Duration::from_secs(1), run.step()).await;
    assert!(dropped.is_err());
    assert_eq!(quick_calls.load(Ordering::SeqCst), 1);

    let result = run.finish().await.unwrap();

    assert_eq!(quick_calls.load(Ordering::SeqCst), 1, "quick ran twice");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return("quick", "c1", json!("sent")),
            tool_return("slow", "c2", json!("slow done")),
        ])
    );
    assert_eq!(result.usage.tool_calls, 2);
    assert_eq!(result.usage.requests, 2);
}

#[tokio::test]
async fn dropping_the_event_stream_mid_tool_keeps_the_calls_that_finished() {
    let quick_calls = Arc::new(AtomicUsize::new(0));
    let agent = send_and_wait_agent(&quick_calls);
    let mut run = agent.start("Send and wait", ());
    {
        let mut events = run.events();
        while let Some(event) = events.next().await {
            if let RunEvent::ToolCallFinished { .. } = event.unwrap() {
                break; // the quick call finished; the slow one is still running
            }
        }
    }
    assert_eq!(quick_calls.load(Ordering::SeqCst), 1);

    tokio::time::pause();
    let result = run.finish().await.unwrap();

    assert_eq!(quick_calls.load(Ordering::SeqCst), 1, "quick ran twice");
    assert_eq!(result.output, "Both done.");
}

#[tokio::test]
async fn the_history_of_a_run_whose_budget_ran_out_can_be_continued() {
    let script = script(vec![
        reply(vec![call("lookup", r#"{"id": 7}"#, "c1")], 10, 2),
        reply(vec![text("I could not find order 7.")], 20, 3),
    ]);
    let lookup = FunctionTool::new(
        "lookup",
        |_ctx: RunContext<()>, _args: serde_json::Value| async move {
            Err::<String, _>(ModelRetry::new("no such order"))
        },
    );
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(lookup)
        .build()
        .unwrap();
    let error = agent.run("Where is order 7?", ()).await.unwrap_err();
    assert!(error.is_retries_exhausted());
    assert!(matches!(
        error.messages().last(),
        Some(Message::Response(_))
    ));

    let result = agent
        .run_with_history(error.into_messages(), "Never mind, thanks.", ())
        .await
        .unwrap();

    // The call the failed run left unanswered is answered before the new prompt.
    let sent = script.seen.lock().unwrap()[1][2].clone();
    assert_eq!(
        sent,
        request(vec![
            tool_return("lookup", "c1", json!(NOT_RUN)),
            user("Never mind, thanks."),
        ])
    );
    assert_eq!(result.new_messages().len(), 2);
    assert_eq!(result.new_messages()[0], sent);
}

#[tokio::test(start_paused = true)]
async fn a_slow_output_validator_is_stopped_by_the_run_timeout() {
    let model = FunctionModel::new(|_, _| ModelResponse::text("fine").with_usage(3, 1));
    let agent = Agent::<(), String>::builder(model)
        .output_validator(|_ctx, answer: String| async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok::<_, ModelRetry>(answer)
        })
        .run_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: Duration::from_millis(100)
        })
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Hi")]),
            response(vec![text("fine")], 3, 1)
        ]
    );
    assert_eq!(error.usage().requests, 1);
}

#[tokio::test]
async fn a_cancelled_token_stops_an_output_validator_and_a_panicking_one_fails_the_run() {
    let model = FunctionModel::new(|_, _| ModelResponse::text("fine"));
    let waiting = Agent::<(), String>::builder(model.clone())
        .output_validator(|_ctx, answer: String| async move {
            pending::<()>().await;
            Ok::<_, ModelRetry>(answer)
        })
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let run = waiting.start("Hi", ()).with_cancellation(token.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let error = run.finish().await.unwrap_err();
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));

    let panicking = Agent::<(), String>::builder(model)
        .output_validator(|_ctx, answer: String| async move {
            if answer == "fine" {
                panic!("the validator broke");
            }
            Ok::<_, ModelRetry>(answer)
        })
        .output_retries(3)
        .build()
        .unwrap();
    let error = panicking.run("Hi", ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Decode);
    assert!(!error.is_retries_exhausted());
    assert_eq!(
        error.cause().downcast_ref::<OutputPanicked>(),
        Some(&OutputPanicked {
            message: "the validator broke".to_owned()
        })
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        "the output's decoder, function or validator panicked: the validator broke"
    );
    assert_eq!(error.messages().len(), 2);
}

#[tokio::test]
async fn model_settings_given_to_a_run_after_its_first_step_apply_to_its_next_request() {
    let model =
        FunctionModel::new(
            |messages: &[Message], params: &RequestParams| match messages.len() {
                1 => ModelResponse::tool_call("ping", "{}", "c1"),
                _ => ModelResponse::text(format!("{:?}", params.settings.max_tokens)),
            },
        );
    let ping = FunctionTool::new("ping", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("pong")
    });
    let agent = Agent::<(), String>::builder(model)
        .tool(ping)
        .model_settings(ModelSettings::default().max_tokens(100))
        .build()
        .unwrap();
    let mut run = agent.start("Ping", ());
    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert!(matches!(run.step().await.unwrap(), Step::Handled));

    let run = run.with_model_settings(ModelSettings::default().max_tokens(7));
    let result = run.finish().await.unwrap();

    assert_eq!(result.output, "Some(7)");
}

#[tokio::test]
async fn instructions_given_to_a_run_after_its_first_step_replace_the_agents_from_its_next_request()
{
    let model = FunctionModel::new(|messages: &[Message], params: &RequestParams| {
        let instructions = params.instructions.clone().unwrap_or_default();
        match messages.len() {
            1 => ModelResponse::tool_call("ping", format!("{{\"seen\":{instructions:?}}}"), "c1"),
            _ => ModelResponse::text(instructions),
        }
    });
    let ping = FunctionTool::new(
        "ping",
        |_ctx: RunContext<()>, _: serde_json::Value| async move { Ok::<_, ModelRetry>("pong") },
    );
    let agent = Agent::<(), String>::builder(model)
        .tool(ping)
        .instructions("Be brief.")
        .instructions_fn(|_: &RunContext<()>| "The user is Ada.")
        .build()
        .unwrap();
    let mut run = agent.start("Ping", ());
    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert!(matches!(run.step().await.unwrap(), Step::Handled));

    let result = run
        .with_instructions("Be thorough.")
        .finish()
        .await
        .unwrap();

    assert_eq!(result.output, "Be thorough.\n\nThe user is Ada.");
    let ResponsePart::ToolCall(first) = &result.messages[1].as_response().unwrap().parts[0] else {
        panic!("a call first");
    };
    assert_eq!(first.args, r#"{"seen":"Be brief.\n\nThe user is Ada."}"#);
    let requests = result.messages.iter().filter_map(Message::as_request);
    assert!(
        requests
            .flat_map(|request| &request.parts)
            .all(|part| !matches!(part, RequestPart::SystemPrompt(_))),
        "instructions are never stored"
    );
}

#[tokio::test]
async fn a_run_gets_its_own_usage_limits_model_and_toolset_from_its_next_request() {
    let first = script(vec![reply(vec![call("ping", "{}", "c1")], 10, 2)]);
    let second = script(vec![reply(vec![text("pong seen")], 30, 4)]);
    let agent = Agent::<(), String>::builder(first.model.clone())
        .build()
        .unwrap();
    let ping = FunctionTool::new("ping", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("pong")
    });
    let toolset: Vec<Arc<dyn golem::tool::Tool<()>>> = vec![Arc::new(ping)];
    let mut run = agent.start("Ping", ()).with_toolset(toolset);
    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert!(matches!(run.step().await.unwrap(), Step::Handled));

    let over = run
        .with_model(second.model.clone())
        .with_usage_limits(UsageLimits::new().input_tokens_limit(35));
    let error = over.finish().await.unwrap_err();

    assert_eq!(second.requests(), 1);
    assert_eq!(first.requests(), 1);
    assert_eq!(
        error.limit(),
        Some(&LimitExceeded::Tokens {
            kind: golem::usage::TokenKind::Input,
            limit: 35,
            used: 40
        })
    );
    assert_eq!(
        second.seen.lock().unwrap()[0][2],
        request(vec![tool_return("ping", "c1", json!("pong"))])
    );
}

#[tokio::test]
async fn every_request_sent_counts_against_the_request_limit_across_stops() {
    let agent =
        Agent::<(), String>::builder(FunctionModel::new_async(|_: Vec<Message>, _| async {
            pending::<()>().await;
            Ok(ModelResponse::text("never"))
        }))
        .usage_limits(UsageLimits::new().request_limit(2))
        .build()
        .unwrap();

    let mut state = RunState::from_history(vec![request(vec![user("Hi")])]);
    for sent in 1..=2 {
        let error = agent
            .restore(state, ())
            .with_timeout(Duration::from_millis(10))
            .finish()
            .await
            .unwrap_err();
        assert_eq!(error.stage(), Stage::Stopped);
        assert_eq!(error.usage().requests, sent);
        state = error.into_state();
    }
    // The deadline is saved with the state; the run goes on without one.
    state.clear_deadline();
    let error = agent.resume(state, ()).await.unwrap_err();
    assert_eq!(error.limit(), Some(&LimitExceeded::Requests { limit: 2 }));
}

#[tokio::test]
async fn repeated_call_ids_in_one_response_are_made_unique_and_each_call_answered() {
    let script = script(vec![
        reply(
            vec![call("ping", "{}", "same"), call("ping", "{}", "same")],
            10,
            2,
        ),
        reply(vec![text("done")], 20, 3),
    ]);
    let ping = FunctionTool::new("ping", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("pong")
    });
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(ping)
        .build()
        .unwrap();

    let result = agent.run("Ping twice", ()).await.unwrap();

    assert_eq!(
        result.messages[1..3],
        [
            response(
                vec![call("ping", "{}", "same"), call("ping", "{}", "same_1")],
                10,
                2
            ),
            request(vec![
                tool_return("ping", "same", json!("pong")),
                tool_return("ping", "same_1", json!("pong")),
            ]),
        ]
    );
    assert_eq!(result.usage.tool_calls, 2);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_saved_with_the_state_and_a_restore_does_not_restart_it() {
    let model = FunctionModel::new_async(|_: Vec<Message>, _| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ModelResponse::text("late"))
    });
    let agent = Agent::<(), String>::builder(model)
        .run_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let run = agent.start("Hi", ());
    let deadline = run.state().deadline().expect("the run has a deadline");
    let saved = serde_json::to_string(run.state()).unwrap();
    drop(run);

    // The state is restored after the deadline has passed (in real time): it stops at once.
    let mut state: RunState = serde_json::from_str(&saved).unwrap();
    assert_eq!(state.deadline(), Some(deadline));
    let mut past = state.clone();
    past.clear_deadline();
    let error = agent
        .restore(state.clone(), ())
        .with_timeout(Duration::ZERO)
        .finish()
        .await
        .unwrap_err();
    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: Duration::ZERO
        })
    );
    assert_eq!(error.usage().requests, 0);

    // Restored with its saved deadline, the run keeps it: 30 s from the start, not from now.
    state = serde_json::from_str(&saved).unwrap();
    let error = agent.restore(state, ()).finish().await.unwrap_err();
    assert_eq!(
        error.stopped(),
        Some(&Stopped::TimedOut {
            timeout: Duration::from_secs(30)
        })
    );
    assert_eq!(error.state().deadline(), Some(deadline));
    assert!(past.deadline().is_none());
}

#[tokio::test]
async fn a_state_of_version_1_stopped_mid_stream_is_read_and_resumed_with_a_new_request() {
    let saved = include_str!("../fixtures/run-state-v1-stopped-mid-stream.json");
    let state: RunState = serde_json::from_str(saved).unwrap();
    assert_eq!(state.usage().requests, 1);
    assert_eq!(state.turns(), 1);
    assert_eq!(
        state.pending(),
        Some(&ModelRequest::new(vec![RequestPart::retry_prompt(
            INTERRUPTED
        )]))
    );
    let resaved = serde_json::to_value(&state).unwrap();
    assert_eq!(resaved["version"], json!(2));

    let script = script(vec![reply(vec![text("The answer is 42.")], 7, 5)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .build()
        .unwrap();
    let result = agent.resume(state, ()).await.unwrap();

    assert_eq!(result.output, "The answer is 42.");
    assert_eq!(script.requests(), 1);
    assert_eq!(result.usage.requests, 2);
    let Message::Response(cut) = &result.messages[1] else {
        panic!("the cut-off response stays in the history");
    };
    assert_eq!(cut.parts, [ResponsePart::text("The ans")]);
    assert_eq!(result.messages[2], request(vec![retry(INTERRUPTED)]));
    assert!(result.messages.len() == 4 && error_free(&result.messages));
}

/// Whether every call in `messages` is answered in the request after it.
fn error_free(messages: &[Message]) -> bool {
    messages.windows(2).all(|pair| match pair {
        [Message::Response(response), Message::Request(next)] => {
            response.tool_calls().all(|call| {
                next.parts.iter().any(|part| match part {
                    RequestPart::ToolReturn(part) => part.tool_call_id == call.tool_call_id,
                    RequestPart::RetryPrompt(part) => {
                        part.tool_call_id.as_deref() == Some(call.tool_call_id.as_str())
                    }
                    _ => false,
                })
            })
        }
        _ => true,
    })
}
