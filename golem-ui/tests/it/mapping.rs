//! The mappings of whole scripted runs, asserted event by event as the JSON the clients read.

use crate::common;

use futures_util::StreamExt;
use golem::model::{ModelResponse, ResponsePart, ThinkingPart};
use golem::output::Output;
use golem::{AgentRun, RunEvent};
use golem_ui::{Rejections, ag_ui, ai_sdk};

/// The run's events until its stream ends, and its error if it failed.
async fn drive<O: Output>(run: &mut AgentRun<(), O>) -> (Vec<RunEvent<O>>, Option<String>) {
    let mut events = Vec::new();
    let mut stream = run.events();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error.to_string())),
        }
    }
    (events, None)
}

/// The events of a run that asks `model`, with the `add` tool, "2 + 3?", and ends well.
async fn adding(model: golem::model::function::FunctionModel) -> Vec<RunEvent<String>> {
    let agent: golem::Agent<(), String> = golem::Agent::builder(model)
        .tool(common::add())
        .build()
        .expect("the agent builds");
    let mut run = agent.start("2 + 3?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    events
}

fn json<T: serde::Serialize>(items: &[T]) -> Vec<String> {
    items
        .iter()
        .map(|item| serde_json::to_string(item).expect("serializes"))
        .collect()
}

fn ai_sdk_lines<O: Output>(encoder: ai_sdk::Encoder<O>, events: &[RunEvent<O>]) -> Vec<String> {
    ai_sdk_lines_ending(encoder, events, None)
}

fn ag_ui_lines<O: Output>(encoder: ag_ui::Encoder<O>, events: &[RunEvent<O>]) -> Vec<String> {
    ag_ui_lines_ending(encoder, events, None)
}

/// The chunks of `events`, the run finishing, or failing with `error`.
fn ai_sdk_lines_ending<O: Output>(
    mut encoder: ai_sdk::Encoder<O>,
    events: &[RunEvent<O>],
    error: Option<&str>,
) -> Vec<String> {
    let mut chunks = Vec::new();
    encoder.start(&mut chunks);
    for event in events {
        encoder.event(event, &mut chunks);
    }
    match error {
        Some(error) => encoder.error(error, &mut chunks),
        None => encoder.finish(&mut chunks),
    }
    json(&chunks)
}

/// The events AG-UI gets of `events`, the run finishing, or failing with `error`.
fn ag_ui_lines_ending<O: Output>(
    mut encoder: ag_ui::Encoder<O>,
    events: &[RunEvent<O>],
    error: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    encoder.start(&mut out);
    for event in events {
        encoder.event(event, &mut out);
    }
    match error {
        Some(error) => encoder.error(error, &mut out),
        None => encoder.finish(&mut out),
    }
    json(&out)
}

#[tokio::test]
async fn streamed_text_in_both_protocols() {
    let mut run = common::hello().start("Hi", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"1-0"}"#,
            r#"{"type":"text-delta","id":"1-0","delta":"Hel"}"#,
            r#"{"type":"text-delta","id":"1-0","delta":"lo!"}"#,
            r#"{"type":"text-end","id":"1-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-1-0","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-1-0","delta":"Hel"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-1-0","delta":"lo!"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-1-0"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"}}"#,
        ]
    );
}

#[tokio::test]
async fn a_rejected_call_is_an_errored_tool_output_with_its_feedback() {
    let mut run = common::adder().start("2 + 3?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    let rejection = r#"{"turn":1,"stage":"tool","toolName":"add","toolCallId":"c1","retry":1,"maxRetries":1,"feedback":"a must not be negative"}"#;
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-available","toolCallId":"c1","toolName":"add","input":{"a":-1,"b":3}}"#,
            r#"{"type":"tool-output-error","toolCallId":"c1","errorText":"a must not be negative"}"#,
            &format!(r#"{{"type":"data-rejection","data":{rejection}}}"#),
            r#"{"type":"finish-step"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-available","toolCallId":"c2","toolName":"add","input":{"a":2,"b":3}}"#,
            r#"{"type":"tool-output-available","toolCallId":"c2","output":5}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"3-0"}"#,
            r#"{"type":"text-delta","id":"3-0","delta":"5"}"#,
            r#"{"type":"text-end","id":"3-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"add","parentMessageId":"r1-1"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"a\":-1,\"b\":3}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
            r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-result-c1","toolCallId":"c1","content":"a must not be negative"}"#,
            &format!(r#"{{"type":"CUSTOM","name":"golem.rejection","value":{rejection}}}"#),
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-2"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"add","parentMessageId":"r1-2"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c2","delta":"{\"a\":2,\"b\":3}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"c2"}"#,
            r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-result-c2","toolCallId":"c2","content":"5"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-2"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-3"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-3-0","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-3-0","delta":"5"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-3-0"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-3"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"}}"#,
        ]
    );
}

#[tokio::test]
async fn hidden_rejections_leave_out_the_rejected_call() {
    let mut run = common::adder().start("2 + 3?", ());
    let (events, _) = drive(&mut run).await;
    let hidden = ai_sdk::Encoder::new("m1").rejections(Rejections::Hidden);
    assert_eq!(
        ai_sdk_lines(hidden, &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-available","toolCallId":"c2","toolName":"add","input":{"a":2,"b":3}}"#,
            r#"{"type":"tool-output-available","toolCallId":"c2","output":5}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"3-0"}"#,
            r#"{"type":"text-delta","id":"3-0","delta":"5"}"#,
            r#"{"type":"text-end","id":"3-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    let hidden = ag_ui::Encoder::new("t1", "r1").rejections(Rejections::Hidden);
    let lines = ag_ui_lines(hidden, &events);
    assert!(!lines.iter().any(|line| line.contains("c1")), "{lines:#?}");
    assert!(
        !lines.iter().any(|line| line.contains("CUSTOM")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn an_approval_pauses_then_the_approved_call_runs() {
    let mut run = common::deleter().start("Delete a.txt", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"d1","toolName":"delete"}"#,
            r#"{"type":"tool-input-delta","toolCallId":"d1","inputTextDelta":"{\"path\":"}"#,
            r#"{"type":"tool-input-delta","toolCallId":"d1","inputTextDelta":"\"a.txt\"}"}"#,
            r#"{"type":"tool-input-available","toolCallId":"d1","toolName":"delete","input":{"path":"a.txt"}}"#,
            r#"{"type":"tool-approval-request","approvalId":"d1","toolCallId":"d1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"d1","toolCallName":"delete","parentMessageId":"r1-1"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"d1","delta":"{\"path\":"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"d1","delta":"\"a.txt\"}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"d1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"interrupt","interrupts":[{"id":"d1","reason":"tool_call","toolCallId":"d1","metadata":{"toolName":"delete","input":{"path":"a.txt"}}}]}}"#,
        ]
    );

    run.approve("d1").expect("d1 waits");
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m2"), &events),
        [
            r#"{"type":"start","messageId":"m2"}"#,
            r#"{"type":"tool-output-available","toolCallId":"d1","output":"deleted a.txt"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"2-0"}"#,
            r#"{"type":"text-delta","id":"2-0","delta":"Deleted."}"#,
            r#"{"type":"text-end","id":"2-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r2"), &events)[1],
        r#"{"type":"TOOL_CALL_RESULT","messageId":"r2-result-d1","toolCallId":"d1","content":"deleted a.txt"}"#
    );
}

#[tokio::test]
async fn a_denied_call_is_a_denied_tool_output() {
    let mut run = common::deleter().start("Delete a.txt", ());
    drive(&mut run).await;
    run.deny("d1", "not today").expect("d1 waits");
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    let lines = ai_sdk_lines(ai_sdk::Encoder::new("m2"), &events);
    assert_eq!(
        lines[1..5],
        [
            r#"{"type":"tool-output-denied","toolCallId":"d1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"2-0"}"#,
            r#"{"type":"text-delta","id":"2-0","delta":"Kept."}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r2"), &events)[1],
        r#"{"type":"TOOL_CALL_RESULT","messageId":"r2-result-d1","toolCallId":"d1","content":"not today"}"#
    );
}

#[tokio::test]
async fn partial_output_fills_in_as_data_parts_and_state_patches() {
    let mut run = common::forecaster().start("Weather in Paris?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1").with_partial_output(), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"data-partial-output","id":"output-1","data":{"city":"Par"}}"#,
            r#"{"type":"data-partial-output","id":"output-1","data":{"city":"Paris"}}"#,
            r#"{"type":"data-partial-output","id":"output-1","data":{"city":"Paris","temp":21}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(
            ag_ui::Encoder::new("t1", "r1").with_partial_output(),
            &events
        ),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"STATE_SNAPSHOT","snapshot":{"output":{"city":"Par"}}}"#,
            r#"{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/output/city","value":"Paris"}]}"#,
            r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/output/temp","value":21}]}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"}}"#,
        ]
    );
}

#[tokio::test]
async fn the_output_ends_the_message_when_asked() {
    let mut run = common::hello().start("Hi", ());
    let (events, _) = drive(&mut run).await;
    let lines = ai_sdk_lines(ai_sdk::Encoder::new("m1").with_output(), &events);
    assert_eq!(
        lines[6..],
        [
            r#"{"type":"finish-step"}"#,
            r#"{"type":"data-output","id":"output","data":"Hello!"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    let lines = ag_ui_lines(ag_ui::Encoder::new("t1", "r1").with_output(), &events);
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"},"result":"Hello!"}"#
        )
    );
}

#[test]
fn a_failure_closes_the_step_and_reports_the_error() {
    let events = [RunEvent::RequestSent { turn: 1 }];
    let failed = Some("the model is unavailable");
    assert_eq!(
        ai_sdk_lines_ending(ai_sdk::Encoder::<String>::new("m1"), &events, failed),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"error","errorText":"the model is unavailable"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines_ending(ag_ui::Encoder::<String>::new("t1", "r1"), &events, failed),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_ERROR","message":"the model is unavailable"}"#,
        ]
    );
}

#[test]
fn a_call_still_streaming_when_the_run_fails_is_closed() {
    use golem::model::ResponseDelta;

    let events = [
        RunEvent::RequestSent { turn: 1 },
        RunEvent::Delta {
            turn: 1,
            delta: ResponseDelta::ToolCallStart {
                part: 0,
                tool_name: "add".into(),
                tool_call_id: "c1".into(),
            },
        },
        RunEvent::Delta {
            turn: 1,
            delta: ResponseDelta::ToolCallArgs {
                part: 0,
                args: r#"{"a":"#.into(),
            },
        },
    ];
    let failed = Some("the model's stream broke");
    assert_eq!(
        ai_sdk_lines_ending(ai_sdk::Encoder::<String>::new("m1"), &events, failed)[4..],
        [
            r#"{"type":"tool-output-error","toolCallId":"c1","errorText":"the call was not complete"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"error","errorText":"the model's stream broke"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines_ending(ag_ui::Encoder::<String>::new("t1", "r1"), &events, failed)[4..],
        [
            r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_ERROR","message":"the model's stream broke"}"#,
        ]
    );
}

#[tokio::test]
async fn a_call_that_streams_without_an_id_is_shown_whole_under_the_runs() {
    use golem::model::function::FunctionModel;
    use golem::model::{Message, ResponseDelta, StreamEvent};

    // As Gemini streams a call: whole, and without an id.
    let model = FunctionModel::new_stream(|messages: &[Message], _| match messages.len() {
        1 => vec![
            StreamEvent::Delta(ResponseDelta::ToolCallStart {
                part: 0,
                tool_name: "add".into(),
                tool_call_id: String::new(),
            }),
            StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                part: 0,
                args: r#"{"a":2,"b":3}"#.into(),
            }),
            StreamEvent::Done(ModelResponse::new(vec![ResponsePart::tool_call(
                "add",
                r#"{"a":2,"b":3}"#,
                "",
            )])),
        ],
        _ => vec![StreamEvent::Done(ModelResponse::text("5"))],
    });
    let events = adding(model).await;

    let lines = ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events);
    assert!(
        !lines.iter().any(|line| line.contains(r#""toolCallId":"""#)),
        "{lines:#?}"
    );
    let input = lines
        .iter()
        .find(|line| line.contains("tool-input-available"))
        .expect("the call is shown");
    let output = lines
        .iter()
        .find(|line| line.contains("tool-output-available"))
        .expect("its output is shown");
    let id = |line: &str| {
        line.split(r#""toolCallId":""#)
            .nth(1)
            .map(|rest| rest.split('"').next().map(str::to_owned))
    };
    assert_eq!(id(input), id(output));
}

/// A refusal's words come apart from the text deltas (Chat Completions' `refusal`, the
/// Responses API's refusal content): after reasoning that streamed, they are in the response
/// alone, and shown from it.
#[tokio::test]
async fn text_that_did_not_stream_beside_reasoning_that_did_is_shown_from_the_response() {
    use golem::Agent;
    use golem::model::function::FunctionModel;
    use golem::model::{ResponseDelta, StreamEvent};

    let model = FunctionModel::new_stream(|_, _| {
        vec![
            StreamEvent::Delta(ResponseDelta::Thinking {
                part: 0,
                text: "Not this.".into(),
            }),
            StreamEvent::Done(ModelResponse::new(vec![
                ResponsePart::Thinking(ThinkingPart::new("Not this.")),
                ResponsePart::text("I can't help with that."),
            ])),
        ]
    });
    let agent: Agent<(), String> = Agent::builder(model).build().expect("the agent builds");
    let mut run = agent.start("Pick a lock", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"1-0"}"#,
            r#"{"type":"reasoning-delta","id":"1-0","delta":"Not this."}"#,
            r#"{"type":"reasoning-end","id":"1-0"}"#,
            r#"{"type":"text-start","id":"1-1"}"#,
            r#"{"type":"text-delta","id":"1-1","delta":"I can't help with that."}"#,
            r#"{"type":"text-end","id":"1-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );

    // Text that streamed is not shown again, though the response puts it at another index
    // (an OpenAI-compatible server's text after a call began: the response puts it first).
    let model =
        FunctionModel::new_stream(
            |messages: &[golem::model::Message], _| match messages.len() {
                1 => vec![
                    StreamEvent::Delta(ResponseDelta::ToolCallStart {
                        part: 0,
                        tool_name: "add".into(),
                        tool_call_id: "c1".into(),
                    }),
                    StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                        part: 0,
                        args: r#"{"a":2,"b":3}"#.into(),
                    }),
                    StreamEvent::Delta(ResponseDelta::Text {
                        part: 1,
                        text: "Adding.".into(),
                    }),
                    StreamEvent::Done(ModelResponse::new(vec![
                        ResponsePart::text("Adding."),
                        ResponsePart::tool_call("add", r#"{"a":2,"b":3}"#, "c1"),
                    ])),
                ],
                _ => vec![StreamEvent::Done(ModelResponse::text("5"))],
            },
        );
    let events = adding(model).await;
    let lines = ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events);
    let adding = lines.iter().filter(|line| line.contains("Adding.")).count();
    assert_eq!(adding, 1, "{lines:#?}");
}

#[test]
fn sse_framing_and_the_stream_header() {
    assert_eq!(ai_sdk::HEADER, ("x-vercel-ai-ui-message-stream", "v1"));
    assert_eq!(ai_sdk::DONE, "data: [DONE]\n\n");
    assert_eq!(
        ai_sdk::sse(&ai_sdk::UiChunk::Finish),
        "data: {\"type\":\"finish\"}\n\n"
    );
}

#[tokio::test]
async fn reasoning_streams_as_reasoning_parts_and_messages() {
    let mut run = common::thinker().start("Roll?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"1-0"}"#,
            r#"{"type":"reasoning-delta","id":"1-0","delta":"Two"}"#,
            r#"{"type":"reasoning-delta","id":"1-0","delta":" dice."}"#,
            r#"{"type":"text-start","id":"1-1"}"#,
            r#"{"type":"text-delta","id":"1-1","delta":"Six."}"#,
            r#"{"type":"reasoning-end","id":"1-0"}"#,
            r#"{"type":"text-end","id":"1-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"REASONING_START","messageId":"r1-1-0"}"#,
            r#"{"type":"REASONING_MESSAGE_START","messageId":"r1-1-0","role":"reasoning"}"#,
            r#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1-1-0","delta":"Two"}"#,
            r#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1-1-0","delta":" dice."}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-1-1","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-1-1","delta":"Six."}"#,
            r#"{"type":"REASONING_MESSAGE_END","messageId":"r1-1-0"}"#,
            r#"{"type":"REASONING_END","messageId":"r1-1-0"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-1-1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"}}"#,
        ]
    );
    let without = ag_ui_lines(ag_ui::Encoder::new("t1", "r1").without_reasoning(), &events);
    assert!(
        !without.iter().any(|line| line.contains("REASONING")),
        "{without:#?}"
    );
    assert_eq!(without.len(), 7, "{without:#?}");
    let without = ai_sdk_lines(ai_sdk::Encoder::new("m1").without_reasoning(), &events);
    assert!(
        !without.iter().any(|line| line.contains("reasoning")),
        "{without:#?}"
    );
    assert_eq!(without.len(), 7, "{without:#?}");
}

#[test]
fn a_whole_thinking_part_is_one_reasoning_message() {
    let response = ModelResponse::new(vec![
        ResponsePart::Thinking(ThinkingPart::new("Again.")),
        ResponsePart::text("Five."),
    ]);
    let events = [
        RunEvent::<String>::RequestSent { turn: 2 },
        RunEvent::ResponseReceived {
            turn: 2,
            response: std::sync::Arc::new(response),
        },
    ];
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r2"), &events)[2..9],
        [
            r#"{"type":"REASONING_START","messageId":"r2-2-0"}"#,
            r#"{"type":"REASONING_MESSAGE_START","messageId":"r2-2-0","role":"reasoning"}"#,
            r#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"r2-2-0","delta":"Again."}"#,
            r#"{"type":"REASONING_MESSAGE_END","messageId":"r2-2-0"}"#,
            r#"{"type":"REASONING_END","messageId":"r2-2-0"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r2-2-1","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r2-2-1","delta":"Five."}"#,
        ]
    );
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m2"), &events)[2..5],
        [
            r#"{"type":"reasoning-start","id":"2-0"}"#,
            r#"{"type":"reasoning-delta","id":"2-0","delta":"Again."}"#,
            r#"{"type":"reasoning-end","id":"2-0"}"#,
        ]
    );
}

#[tokio::test]
async fn a_delegated_agent_shows_while_its_call_runs() {
    let mut run = common::delegator().start("2 + 3?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    let preliminary = |parts: &str| {
        format!(
            r#"{{"type":"tool-output-available","toolCallId":"p1","output":{{"role":"assistant","parts":[{parts}]}},"preliminary":true}}"#
        )
    };
    let add = r#"{"type":"step-start"},{"type":"tool-add","toolCallId":"k1","state":"output-available","input":{"a":2,"b":3},"output":5},{"type":"step-start"}"#;
    assert_eq!(
        ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events),
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-available","toolCallId":"p1","toolName":"research","input":{"task":"2 + 3"}}"#,
            &preliminary(""),
            &preliminary(
                r#"{"type":"step-start"},{"type":"tool-add","toolCallId":"k1","state":"input-available","input":{"a":2,"b":3}}"#
            ),
            &preliminary(
                r#"{"type":"step-start"},{"type":"tool-add","toolCallId":"k1","state":"output-available","input":{"a":2,"b":3},"output":5}"#
            ),
            &preliminary(&format!(
                r#"{add},{{"type":"text","text":"Sum: ","state":"streaming"}}"#
            )),
            &preliminary(&format!(
                r#"{add},{{"type":"text","text":"Sum: 5.","state":"streaming"}}"#
            )),
            &preliminary(&format!(
                r#"{add},{{"type":"text","text":"Sum: 5.","state":"done"}}"#
            )),
            r#"{"type":"tool-output-available","toolCallId":"p1","output":"Sum: 5."}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"2-0"}"#,
            r#"{"type":"text-delta","id":"2-0","delta":"It is 5."}"#,
            r#"{"type":"text-end","id":"2-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    assert_eq!(
        ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events),
        [
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"p1","toolCallName":"research","parentMessageId":"r1-1"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"p1","delta":"{\"task\":\"2 + 3\"}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"p1"}"#,
            r#"{"type":"SUBAGENT_STARTED","subagentRunId":"r1-agent-p1","name":"research","parentToolCallId":"p1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-1","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"k1","toolCallName":"add","parentMessageId":"r1-agent-p1-1","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"k1","delta":"{\"a\":2,\"b\":3}","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"k1","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-agent-p1-result-k1","toolCallId":"k1","content":"5","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-2","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-agent-p1-2-0","role":"assistant","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-agent-p1-2-0","delta":"Sum: ","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-agent-p1-2-0","delta":"5.","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-agent-p1-2-0","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-2","subagentRunId":"r1-agent-p1"}"#,
            r#"{"type":"SUBAGENT_FINISHED","subagentRunId":"r1-agent-p1","result":"Sum: 5."}"#,
            r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-result-p1","toolCallId":"p1","content":"Sum: 5."}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-1"}"#,
            r#"{"type":"STEP_STARTED","stepName":"turn-2"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-2-0","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-2-0","delta":"It is 5."}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-2-0"}"#,
            r#"{"type":"STEP_FINISHED","stepName":"turn-2"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"success"}}"#,
        ]
    );
    // Hidden: the call and its result only.
    let hidden = ai_sdk_lines(ai_sdk::Encoder::new("m1").without_nested_agents(), &events);
    assert!(
        !hidden.iter().any(|line| line.contains("preliminary")),
        "{hidden:#?}"
    );
    assert_eq!(hidden.len(), 11, "{hidden:#?}");
    let hidden = ag_ui_lines(
        ag_ui::Encoder::new("t1", "r1").without_nested_agents(),
        &events,
    );
    assert!(
        !hidden.iter().any(|line| line.contains("subagent")),
        "{hidden:#?}"
    );
    assert_eq!(hidden.len(), 13, "{hidden:#?}");
    // While rejections are hidden a call is shown once it ran, so its agent is not.
    let held = ag_ui_lines(
        ag_ui::Encoder::new("t1", "r1").rejections(Rejections::Hidden),
        &events,
    );
    assert!(
        !held.iter().any(|line| line.contains("subagent")),
        "{held:#?}"
    );
}

#[tokio::test]
async fn a_delegated_agent_that_fails_ends_in_an_error() {
    let mut run = common::failing_delegator().start("2 + 3?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    let lines = ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events);
    let failed = lines
        .iter()
        .position(|line| line.contains("SUBAGENT_ERROR"))
        .expect("the agent's error");
    let feedback = "The `research` agent failed: tool `add` was rejected and its retries are off. Change the request, or do without it.";
    assert_eq!(
        lines[failed - 1..failed + 2],
        [
            r#"{"type":"STEP_FINISHED","stepName":"turn-1","subagentRunId":"r1-agent-p1"}"#
                .to_owned(),
            format!(
                r#"{{"type":"SUBAGENT_ERROR","subagentRunId":"r1-agent-p1","message":"{feedback}"}}"#
            ),
            format!(
                r#"{{"type":"TOOL_CALL_RESULT","messageId":"r1-result-p1","toolCallId":"p1","content":"{feedback}"}}"#
            ),
        ]
    );
}

#[tokio::test]
async fn an_agents_agent_is_nested_in_both_protocols() {
    let mut run = common::grand_delegator().start("Roll?", ());
    let (events, error) = drive(&mut run).await;
    assert_eq!(error, None);
    let lines = ag_ui_lines(ag_ui::Encoder::new("t1", "r1"), &events);
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("{line} in {lines:#?}"))
    };
    let started = at(
        r#"{"type":"SUBAGENT_STARTED","subagentRunId":"r1-agent-p1-g1","name":"dice","parentToolCallId":"g1","parentSubagentRunId":"r1-agent-p1"}"#,
    );
    let text = at(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-agent-p1-g1-1-0","delta":"6","subagentRunId":"r1-agent-p1-g1"}"#,
    );
    let finished =
        at(r#"{"type":"SUBAGENT_FINISHED","subagentRunId":"r1-agent-p1-g1","result":"6"}"#);
    let result = at(
        r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-agent-p1-result-g1","toolCallId":"g1","content":"6","subagentRunId":"r1-agent-p1"}"#,
    );
    let outer =
        at(r#"{"type":"SUBAGENT_FINISHED","subagentRunId":"r1-agent-p1","result":"Rolled 6."}"#);
    assert!(started < text && text < finished && finished < result && result < outer);

    let lines = ai_sdk_lines(ai_sdk::Encoder::new("m1"), &events);
    let nested = r#"{"type":"tool-output-available","toolCallId":"p1","output":{"role":"assistant","parts":[{"type":"step-start"},{"type":"tool-dice","toolCallId":"g1","state":"output-available","input":{"task":"roll"},"output":{"role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"6","state":"done"}]},"preliminary":true}]},"preliminary":true}"#;
    assert!(lines.iter().any(|line| line == nested), "{lines:#?}");
    let done = r#"{"type":"tool-output-available","toolCallId":"p1","output":{"role":"assistant","parts":[{"type":"step-start"},{"type":"tool-dice","toolCallId":"g1","state":"output-available","input":{"task":"roll"},"output":"6"},{"type":"step-start"},{"type":"text","text":"Rolled 6.","state":"done"}]},"preliminary":true}"#;
    assert!(lines.iter().any(|line| line == done), "{lines:#?}");
}

#[tokio::test]
async fn with_rejections_hidden_a_call_beside_an_approval_is_shown_before_the_pause() {
    use golem::model::function::FunctionModel;
    use golem::model::{Message, StreamEvent};
    use golem::tool::FunctionTool;
    use golem::{Agent, ModelRetry, RunContext};

    // The model adds and deletes at once; the delete waits for approval, so neither runs
    // until the answer, in the next request's stream.
    let model = FunctionModel::new_stream(|messages: &[Message], _| {
        let response = match messages.len() {
            1 => ModelResponse::new(vec![
                ResponsePart::tool_call("add", r#"{"a":2,"b":3}"#, "c1"),
                ResponsePart::tool_call("delete", r#"{"path":"a.txt"}"#, "d1"),
            ]),
            _ => ModelResponse::text("Done."),
        };
        vec![StreamEvent::Done(response)]
    });
    let delete = FunctionTool::new(
        "delete",
        |_ctx: RunContext<()>, args: common::Delete| async move {
            Ok::<_, ModelRetry>(format!("deleted {}", args.path))
        },
    )
    .requires_approval(true);
    let agent: Agent<(), String> = Agent::builder(model)
        .tool(common::add())
        .tool(delete)
        .build()
        .expect("the agent builds");
    let mut run = agent.start("Add, then delete", ());

    let (events, _) = drive(&mut run).await;
    let paused = ai_sdk_lines(
        ai_sdk::Encoder::new("m1").rejections(Rejections::Hidden),
        &events,
    );
    run.approve("d1").expect("d1 waits");
    let (events, _) = drive(&mut run).await;
    let resumed = ai_sdk_lines(
        ai_sdk::Encoder::new("m1").rejections(Rejections::Hidden),
        &events,
    );

    assert_eq!(
        paused,
        [
            r#"{"type":"start","messageId":"m1"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-available","toolCallId":"d1","toolName":"delete","input":{"path":"a.txt"}}"#,
            r#"{"type":"tool-approval-request","approvalId":"d1","toolCallId":"d1"}"#,
            r#"{"type":"tool-input-available","toolCallId":"c1","toolName":"add","input":{"a":2,"b":3}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish"}"#,
        ]
    );
    // The next stream reports outcomes of calls the client was shown.
    assert_eq!(
        resumed[1..3],
        [
            r#"{"type":"tool-output-available","toolCallId":"c1","output":5}"#,
            r#"{"type":"tool-output-available","toolCallId":"d1","output":"deleted a.txt"}"#,
        ]
    );
}

/// Calls shown that will have no outcome, because the run failed before they ran (over its
/// tool-call limit here), end in an error before the stream's: no part is left waiting.
#[tokio::test]
async fn calls_a_failed_run_never_ran_end_in_an_error_before_the_streams() {
    use golem::model::function::FunctionModel;

    let model = FunctionModel::new(|_, _| {
        ModelResponse::new(vec![
            ResponsePart::tool_call("add", r#"{"a":1,"b":2}"#, "c1"),
            ResponsePart::tool_call("add", r#"{"a":3,"b":4}"#, "c2"),
        ])
    });
    let agent: golem::Agent<(), String> = golem::Agent::builder(model)
        .tool(common::add())
        .usage_limits(golem::usage::UsageLimits::new().tool_calls_limit(1))
        .build()
        .expect("the agent builds");
    let mut run = agent.start("Add twice", ());
    let (events, error) = drive(&mut run).await;
    let error = error.expect("the run fails over its limit");

    assert_eq!(
        ai_sdk_lines_ending(ai_sdk::Encoder::new("m1"), &events, Some(&error))[2..],
        [
            r#"{"type":"tool-input-available","toolCallId":"c1","toolName":"add","input":{"a":1,"b":2}}"#,
            r#"{"type":"tool-input-available","toolCallId":"c2","toolName":"add","input":{"a":3,"b":4}}"#,
            r#"{"type":"tool-output-error","toolCallId":"c1","errorText":"the run ended before the call did"}"#,
            r#"{"type":"tool-output-error","toolCallId":"c2","errorText":"the run ended before the call did"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"error","errorText":"the run reached a limit"}"#,
        ]
    );
}
