//! OpenAI Chat Completions, streamed: recorded chunk streams served a few bytes at a time
//! from a loopback socket; the response they add up to equals the non-streamed one for the
//! same content, and a whole agent run streams with the same history and usage.

#![cfg(feature = "openai")]

use crate::common;

use std::time::Duration;

use common::dice::{Game, roll_dice};
use common::sse::{Reply, SseServer, serve};
use common::streams::*;
use common::*;
use futures_util::StreamExt;
use golem::model::openai::OpenAiModel;
use golem::model::{FinishReason, Model, RequestParams, RequestUsage, ResponsePart, ThinkingPart};
use golem::{Agent, RunEvent};
use serde_json::json;

fn model(server: &SseServer) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o")
        .api_key("sk-test-0123456789abcdef")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model")
}

/// The fixture `name` streamed (`split` bytes at a time) and answered whole, through the
/// same model: the two responses, and the deltas.
async fn streamed_and_whole(
    name: &str,
    split: usize,
    pause: Duration,
) -> (Streamed, golem::model::ModelResponse) {
    let sse = fixture(&format!("openai-stream/{name}.sse"));
    let whole = json_fixture(&format!("openai-stream/{name}.json"));
    let server = serve(vec![Reply::sse(&sse, split, pause), Reply::json(&whole)]).await;
    let model = model(&server);
    let messages = [request(vec![user("Hi")])];
    let params = RequestParams::text(Vec::new());
    let streamed = drive(&model, &messages, &params).await;
    let whole = model
        .request(&messages, &params)
        .await
        .expect("as scripted");
    let bodies = server.bodies();
    assert_eq!(bodies[0]["stream"], json!(true));
    assert_eq!(bodies[0]["stream_options"], json!({"include_usage": true}));
    assert_eq!(bodies[1].get("stream"), None);
    assert_eq!(bodies[1].get("stream_options"), None);
    (streamed, whole)
}

#[tokio::test]
async fn text_streams_as_deltas_and_adds_up_to_the_non_streamed_response() {
    let (streamed, whole) = streamed_and_whole("text", 7, Duration::from_millis(1)).await;
    assert_eq!(
        streamed.deltas,
        [
            text_delta(0, "The sky"),
            text_delta(0, " is \"blue\""),
            text_delta(0, " — mostly"),
            text_delta(0, ",\nby day."),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [ResponsePart::text("The sky is \"blue\" — mostly,\nby day.")]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        response.usage,
        RequestUsage {
            cache_read_tokens: 3,
            ..RequestUsage::new(19, 10)
        }
    );
    assert_eq!(
        response.provider_response_id.as_deref(),
        Some("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG")
    );
    assert_eq!(response.model_name.as_deref(), Some("gpt-4o-2024-08-06"));
}

#[tokio::test]
async fn a_stream_served_byte_by_byte_gives_the_same_response() {
    let (streamed, whole) = streamed_and_whole("text", 1, Duration::ZERO).await;
    assert_eq!(streamed.text(0), "The sky is \"blue\" — mostly,\nby day.");
    assert_eq!(streamed.response(), whole);
}

#[tokio::test]
async fn parallel_tool_call_fragments_are_joined_by_index() {
    let (streamed, whole) = streamed_and_whole("tools", 16, Duration::from_millis(1)).await;
    assert_eq!(
        streamed.deltas,
        [
            call_start(0, "get_weather", "call_DdmO9pD3xa9XTPNJ32zg2hcA"),
            args_delta(0, r#"{"lo"#),
            args_delta(0, r#"cation": "Par"#),
            args_delta(0, r#"is, France"}"#),
            call_start(1, "get_weather", "call_ABCDEFGHIJKLMNOPQRSTUVWX"),
            args_delta(1, r#"{"location": "#),
            args_delta(1, r#""Bogotá, Colombia""#),
            args_delta(1, "}"),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            call(
                "get_weather",
                r#"{"location": "Paris, France"}"#,
                "call_DdmO9pD3xa9XTPNJ32zg2hcA"
            ),
            call(
                "get_weather",
                r#"{"location": "Bogotá, Colombia"}"#,
                "call_ABCDEFGHIJKLMNOPQRSTUVWX"
            ),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCall));
    assert_eq!(response.usage, RequestUsage::new(82, 46));
}

#[tokio::test]
async fn reasoning_content_streams_as_thinking_before_the_text() {
    let (streamed, whole) = streamed_and_whole("reasoning", 32, Duration::from_millis(1)).await;
    assert_eq!(
        streamed.deltas,
        [
            thinking_delta(0, "9.11 vs 9.9:"),
            thinking_delta(0, " compare tenths."),
            text_delta(1, "9.9"),
            text_delta(1, " is larger."),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("9.11 vs 9.9: compare tenths.").with_provider("openai")
            ),
            ResponsePart::text("9.9 is larger."),
        ]
    );
    // Usage in the finishing chunk, as DeepSeek sends it.
    assert_eq!(response.usage, RequestUsage::new(15, 42));
}

#[tokio::test]
async fn stream_usage_can_be_turned_off_for_servers_that_refuse_it() {
    let server = serve(vec![Reply::sse_whole(&fixture("openai-stream/text.sse"))]).await;
    let model = OpenAiModel::builder("local")
        .base_url(format!("{}/v1", server.uri()))
        .stream_usage(false)
        .build()
        .expect("as scripted");
    let streamed = drive(
        &model,
        &[request(vec![user("Hi")])],
        &RequestParams::text(vec![]),
    )
    .await;
    assert!(streamed.end.is_ok());
    let body = &server.bodies()[0];
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body.get("stream_options"), None);
}

/// A tool call, then text: as chunk streams and as whole completions.
fn dice_chunks(turn: usize) -> String {
    let chunk = |choice: serde_json::Value, usage: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": format!("chatcmpl-{turn}"), "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                   "choices": choice, "usage": usage})
        )
    };
    let mut sse = String::new();
    if turn == 1 {
        sse += &chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": ""}}]}, "finish_reason": null}]),
            json!(null),
        );
        for args in [r#"{"n""#, r#": 2}"#] {
            sse += &chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}, "finish_reason": null}]),
                json!(null),
            );
        }
        sse += &chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
            json!(null),
        );
        sse += &chunk(
            json!([]),
            json!({"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}),
        );
    } else {
        for text in ["You rolled", " 6."] {
            sse += &chunk(
                json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}]),
                json!(null),
            );
        }
        sse += &chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            json!(null),
        );
        sse += &chunk(
            json!([]),
            json!({"prompt_tokens": 50, "completion_tokens": 4, "total_tokens": 54}),
        );
    }
    sse + "data: [DONE]\n\n"
}

fn dice_completion(turn: usize) -> serde_json::Value {
    let (message, finish, usage) = if turn == 1 {
        (
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 2}"}}]}),
            "tool_calls",
            json!({"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}),
        )
    } else {
        (
            json!({"role": "assistant", "content": "You rolled 6."}),
            "stop",
            json!({"prompt_tokens": 50, "completion_tokens": 4, "total_tokens": 54}),
        )
    };
    json!({"id": format!("chatcmpl-{turn}"), "object": "chat.completion", "created": 1, "model": "gpt-4o",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
}

fn dice_agent(server: &SseServer) -> Agent<Game, String> {
    Agent::<Game, String>::builder(model(server))
        .tool(roll_dice())
        .build()
        .expect("as scripted")
}

#[tokio::test]
async fn an_agent_run_streams_with_the_history_and_usage_of_a_run_that_does_not() {
    let streaming = serve(vec![
        Reply::sse(&dice_chunks(1), 5, Duration::from_millis(1)),
        Reply::sse(&dice_chunks(2), 5, Duration::from_millis(1)),
    ])
    .await;
    let whole = serve(vec![
        Reply::json(&dice_completion(1)),
        Reply::json(&dice_completion(2)),
    ])
    .await;

    let mut events = dice_agent(&streaming).run_stream("Roll two", Game);
    let mut deltas = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event.expect("as scripted") {
            RunEvent::Delta { turn, delta } => deltas.push((turn, delta)),
            RunEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let streamed = finished.expect("the run finishes");
    let plain = dice_agent(&whole)
        .run("Roll two", Game)
        .await
        .expect("as scripted");

    assert_eq!(
        deltas,
        [
            (1, call_start(0, "roll_dice", "call_1")),
            (1, args_delta(0, r#"{"n""#)),
            (1, args_delta(0, ": 2}")),
            (2, text_delta(0, "You rolled")),
            (2, text_delta(0, " 6.")),
        ]
    );
    assert_eq!(streamed.output, "You rolled 6.");
    assert_eq!(streamed.messages, plain.messages);
    assert_eq!(streamed.usage, plain.usage);
    assert_eq!(streamed.usage.requests, 2);
    assert_eq!(streamed.usage.input_tokens, 80);
    assert_eq!(streamed.usage.output_tokens, 13);
    // The second request sent the streamed call back as the non-streamed run did.
    let (sent, plain_sent) = (streaming.bodies(), whole.bodies());
    assert_eq!(sent[1]["messages"], plain_sent[1]["messages"]);
    assert_eq!(sent[1]["stream"], json!(true));
}

/// A verdict the model streams as the output tool's arguments.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Verdict {
    winner: String,
    score: u32,
}

/// The output call's chunks: the arguments in `fragments`.
fn verdict_chunks(fragments: &[&str], end: bool) -> String {
    let chunk = |choice: serde_json::Value, usage: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-v", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                   "choices": choice, "usage": usage})
        )
    };
    let mut sse = chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_v", "type": "function", "function": {"name": "final_result", "arguments": ""}}]}, "finish_reason": null}]),
        json!(null),
    );
    for args in fragments {
        sse += &chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}, "finish_reason": null}]),
            json!(null),
        );
    }
    if end {
        sse += &chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
            json!(null),
        );
        sse += &chunk(
            json!([]),
            json!({"prompt_tokens": 20, "completion_tokens": 11, "total_tokens": 31}),
        );
        sse += "data: [DONE]\n\n";
    }
    sse
}

#[tokio::test]
async fn a_structured_answer_streamed_over_sse_is_reported_as_its_partial_twin() {
    let fragments = [r#"{"winner": "An"#, r#"n", "sco"#, r#"re": 7}"#];
    let server = serve(vec![Reply::sse(
        &verdict_chunks(&fragments, true),
        7,
        Duration::from_millis(1),
    )])
    .await;
    let agent = Agent::<(), Verdict>::builder(model(&server))
        .build()
        .expect("as scripted");
    let mut events = agent.run_stream("Who won?", ());
    let mut partials = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event.expect("as scripted") {
            RunEvent::PartialOutput { partial, .. } => partials.push(partial),
            RunEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let partial = |winner: &str, score| VerdictPartial {
        winner: Some(winner.to_owned()),
        score,
    };
    assert_eq!(
        partials,
        [
            partial("An", None),
            partial("Ann", None),
            partial("Ann", Some(7))
        ]
    );
    let finished = finished.expect("the run finishes");
    assert_eq!(
        finished.output,
        Verdict {
            winner: "Ann".to_owned(),
            score: 7
        }
    );
    assert_eq!(finished.usage.input_tokens, 20);
    assert_eq!(finished.usage.output_tokens, 11);
}

#[tokio::test]
async fn a_stop_mid_stream_closes_the_connection_and_keeps_what_arrived() {
    let sse = verdict_chunks(&[r#"{"winner": "An"#], false);
    let server = serve(vec![
        Reply::sse_open(&sse, 64, Duration::ZERO).then(common::sse::Piece::Hold),
    ])
    .await;
    let agent = Agent::<(), Verdict>::builder(model(&server))
        .build()
        .expect("as scripted");
    let token = golem::run::CancellationToken::new();
    let mut run = agent.start("Who won?", ()).with_cancellation(token.clone());
    let mut events = run.events();
    let mut error = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::PartialOutput { .. }) => token.cancel(),
            Ok(_) => {}
            Err(stopped) => error = Some(stopped),
        }
    }
    let error = error.expect("the run stopped");
    assert_eq!(error.stopped(), Some(&golem::run::Stopped::Cancelled));
    assert!(
        server.wait_closed(Duration::from_secs(5)).await,
        "the server saw the connection close"
    );
    let Some(golem::model::Message::Response(kept)) = error.messages().get(1) else {
        panic!(
            "the response that streamed in is kept: {:?}",
            error.messages()
        )
    };
    assert_eq!(kept.finish_reason, Some(FinishReason::Incomplete));
    assert_eq!(
        kept.parts,
        [ResponsePart::ToolCall(golem::model::ToolCallPart::new(
            "final_result",
            r#"{"winner": "An"#,
            "call_v"
        ))]
    );
    assert_eq!(error.usage().requests, 1);
}

#[tokio::test]
async fn a_call_starts_once_its_name_arrives_and_keeps_its_part_when_text_follows() {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-o", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let call =
        |function: serde_json::Value| json!({"tool_calls": [{"index": 0, "function": function}]});
    let mut sse = chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function"}]}),
        json!(null),
    );
    sse += &chunk(
        call(json!({"name": "roll_dice", "arguments": "{\"n\""})),
        json!(null),
    );
    sse += &chunk(json!({"content": "\n"}), json!(null));
    sse += &chunk(call(json!({"arguments": ": 2}"})), json!(null));
    sse += &chunk(json!({}), json!("tool_calls"));
    sse += "data: [DONE]\n\n";
    let server = serve(vec![Reply::sse(&sse, 9, Duration::ZERO)]).await;
    let streamed = drive(
        &model(&server),
        &[request(vec![user("Roll")])],
        &RequestParams::text(Vec::new()),
    )
    .await;
    // The id came first: the call starts with its name; it keeps part 0 when text follows.
    assert_eq!(
        streamed.deltas,
        [
            call_start(0, "roll_dice", "c1"),
            args_delta(0, r#"{"n""#),
            text_delta(1, "\n"),
            args_delta(0, ": 2}"),
        ]
    );
    let response = streamed.response();
    assert_eq!(response.text_content(), "\n");
    let calls: Vec<_> = response.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].args, r#"{"n": 2}"#);
}

#[tokio::test]
async fn a_tool_name_streamed_in_fragments_is_joined_before_the_call_starts() {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-f", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let call = |index: u32, id: Option<&str>, function: serde_json::Value| {
        let mut call = json!({"index": index, "type": "function", "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        json!({"tool_calls": [call]})
    };
    let mut sse = chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "roll"}}]}),
        json!(null),
    );
    sse += &chunk(call(0, None, json!({"name": "_di"})), json!(null));
    sse += &chunk(
        call(0, None, json!({"name": "ce", "arguments": ""})),
        json!(null),
    );
    sse += &chunk(
        call(0, None, json!({"arguments": "{\"n\": 2}"})),
        json!(null),
    );
    // A call without arguments, its name in two fragments: it starts at the end.
    sse += &chunk(call(1, Some("c2"), json!({"name": "no"})), json!(null));
    sse += &chunk(call(1, None, json!({"name": "w"})), json!(null));
    sse += &chunk(json!({}), json!("tool_calls"));
    sse += "data: [DONE]\n\n";
    let server = serve(vec![Reply::sse(&sse, 7, Duration::ZERO)]).await;
    let streamed = drive(
        &model(&server),
        &[request(vec![user("Roll")])],
        &RequestParams::text(Vec::new()),
    )
    .await;
    assert_eq!(
        streamed.deltas,
        [
            call_start(0, "roll_dice", "c1"),
            args_delta(0, r#"{"n": 2}"#),
            call_start(1, "now", "c2"),
        ]
    );
    let response = streamed.response();
    let calls: Vec<_> = response
        .tool_calls()
        .map(|call| (call.tool_name.as_str(), call.args.as_str()))
        .collect();
    assert_eq!(calls, [("roll_dice", r#"{"n": 2}"#), ("now", "")]);
}
