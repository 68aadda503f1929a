//! Streamed responses in the run (DESIGN §7 "Streaming"): deltas as they arrive, then the same
//! step events and the same history as a run that does not stream.

use crate::common;

use std::error::Error as _;

use common::dice::{Game, roll_dice};
use common::*;
use futures_util::StreamExt;
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelError, ModelResponse, ResponseDelta, StreamEvent};
use golem::{Agent, RunEvent, Stage};

fn text(part: usize, text: &str) -> StreamEvent {
    StreamEvent::Delta(ResponseDelta::Text {
        part,
        text: text.to_owned(),
    })
}

/// The responses of the dice game: a call made in fragments, then a text answer.
fn responses(turn: usize) -> ModelResponse {
    match turn {
        1 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "c1").with_usage(10, 4),
        _ => ModelResponse::text("You rolled 6.").with_usage(20, 3),
    }
}

fn streaming_model() -> FunctionModel {
    FunctionModel::new_stream(|messages: &[Message], _| match messages.len() {
        1 => vec![
            StreamEvent::Delta(ResponseDelta::ToolCallStart {
                part: 0,
                tool_name: "roll_dice".into(),
                tool_call_id: "c1".into(),
            }),
            StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                part: 0,
                args: r#"{"n": "#.into(),
            }),
            StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                part: 0,
                args: "2}".into(),
            }),
            StreamEvent::Done(responses(1)),
        ],
        _ => vec![
            text(0, "You rolled"),
            text(0, " 6."),
            StreamEvent::Done(responses(2)),
        ],
    })
}

fn agent(model: FunctionModel) -> Agent<Game, String> {
    Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .build()
        .expect("a valid agent")
}

fn describe(event: &RunEvent<String>) -> String {
    match event {
        RunEvent::RequestSent { turn } => format!("request {turn}"),
        RunEvent::Delta { turn, delta } => format!("delta {turn}: {delta:?}"),
        RunEvent::ResponseReceived { turn, .. } => format!("response {turn}"),
        RunEvent::ToolCallStarted { call, .. } => format!("start {}", call.tool_call_id),
        RunEvent::ToolCallFinished { call, .. } => format!("finish {}", call.tool_call_id),
        RunEvent::OutputAccepted { turn } => format!("output {turn}"),
        RunEvent::Finished(result) => format!("finished: {}", result.output),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn a_streamed_run_yields_deltas_before_each_response_then_the_step_events() {
    let mut events = agent(streaming_model()).run_stream("Roll two", Game);
    let mut seen = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        seen.push(describe(&event));
        if let RunEvent::Finished(result) = event {
            finished = Some(result);
        }
    }

    assert_eq!(
        seen,
        [
            "request 1",
            r#"delta 1: ToolCallStart { part: 0, tool_name: "roll_dice", tool_call_id: "c1" }"#,
            r#"delta 1: ToolCallArgs { part: 0, args: "{\"n\": " }"#,
            r#"delta 1: ToolCallArgs { part: 0, args: "2}" }"#,
            "response 1",
            "start c1",
            "finish c1",
            "request 2",
            r#"delta 2: Text { part: 0, text: "You rolled" }"#,
            r#"delta 2: Text { part: 0, text: " 6." }"#,
            "response 2",
            "output 2",
            "finished: You rolled 6.",
        ]
    );

    // Streamed or not, a run has the same history and usage.
    let finished = finished.unwrap();
    let not_streamed = agent(streaming_model())
        .run("Roll two", Game)
        .await
        .unwrap();
    let whole = FunctionModel::new(|messages: &[Message], _| responses(messages.len() / 2 + 1));
    let plain = agent(whole).run("Roll two", Game).await.unwrap();
    assert_eq!(finished.messages, not_streamed.messages);
    assert_eq!(finished.messages, plain.messages);
    assert_eq!(finished.usage, not_streamed.usage);
    assert_eq!(finished.usage, plain.usage);
    assert_eq!(finished.usage.requests, 2);
}

#[tokio::test]
async fn a_stream_that_ends_before_the_response_is_complete_is_a_model_error() {
    let cut = FunctionModel::new_stream(|_: &[Message], _| vec![text(0, "You rol")]);
    let items: Vec<_> = agent(cut).run_stream("Roll", Game).collect().await;

    let error = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(error.stage(), Stage::Model);
    assert_eq!(
        error.source().unwrap().to_string(),
        "function sent a response golem cannot read: the stream ended before the response was complete"
    );
    assert_eq!(error.messages(), [request(vec![user("Roll")])]);
    assert_eq!(error.usage().requests, 0);
}

#[tokio::test]
async fn an_error_in_the_middle_of_a_stream_ends_the_run_with_it() {
    let failing = FunctionModel::new_stream(|_: &[Message], _| {
        vec![
            Ok(text(0, "You")),
            Err(ModelError::other("connection reset mid-stream")),
        ]
    });
    let items: Vec<_> = agent(failing).run_stream("Roll", Game).collect().await;

    assert!(matches!(items[1], Ok(RunEvent::Delta { .. })));
    let error = items.last().unwrap().as_ref().unwrap_err();
    assert!(error.is_model());
    assert_eq!(
        error.source().unwrap().to_string(),
        "connection reset mid-stream"
    );
}
