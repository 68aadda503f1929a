//! Anthropic's Messages API, streamed: recorded event streams (thinking with its
//! signature, text, a tool use in JSON fragments, pings, a redacted thinking block) served
//! a few bytes at a time from a loopback socket; the message they add up to equals the
//! non-streamed one for the same content.

#![cfg(feature = "anthropic")]

use crate::common;

use std::time::Duration;

use common::sse::{Reply, SseServer, serve};
use common::streams::*;
use common::*;
use golem::model::anthropic::AnthropicModel;
use golem::model::{
    FinishReason, Model, ModelResponse, ProviderPart, RequestParams, RequestUsage, ResponseDelta,
    ResponsePart, ThinkingPart,
};
use serde_json::json;

fn model(server: &SseServer) -> AnthropicModel {
    AnthropicModel::builder("claude-sonnet-4-5")
        .api_key("sk-ant-test-0123456789")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model")
}

async fn streamed_and_whole(
    name: &str,
    split: usize,
    pause: Duration,
) -> (Streamed, ModelResponse) {
    let sse = fixture(&format!("anthropic-stream/{name}.sse"));
    let whole = json_fixture(&format!("anthropic-stream/{name}.json"));
    let server = serve(vec![Reply::sse(&sse, split, pause), Reply::json(&whole)]).await;
    let model = model(&server);
    let messages = [request(vec![user("What is the weather in Paris?")])];
    let params = RequestParams::text(Vec::new());
    let streamed = drive(&model, &messages, &params).await;
    let whole = model
        .request(&messages, &params)
        .await
        .expect("as scripted");
    let bodies = server.bodies();
    assert_eq!(bodies[0]["stream"], json!(true));
    assert_eq!(bodies[1].get("stream"), None);
    (streamed, whole)
}

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7yCIlVgdH6KH4BpZ6jRCsdEyn3jrPjMXcFYO5HXhmzrFL4z5A==";

#[tokio::test]
async fn thinking_text_and_a_tool_use_stream_and_add_up_to_the_non_streamed_message() {
    let (streamed, whole) = streamed_and_whole("tools", 11, Duration::from_millis(1)).await;
    assert_eq!(
        streamed.deltas,
        [
            thinking_delta(0, "The user wants the weather in"),
            thinking_delta(0, " Paris; I should call the tool."),
            ResponseDelta::ThinkingSignature {
                part: 0,
                signature: SIGNATURE.to_owned(),
            },
            text_delta(1, "I'll check the "),
            // The key is `sk-ant-…`: the `s` that ends this delta could begin it, so it
            // is held back until the next delta shows it does not.
            text_delta(1, "current weather in Pari"),
            text_delta(1, "s."),
            call_start(2, "get_weather", "toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
            args_delta(2, r#"{"location": "#),
            args_delta(2, r#""Paris, France", "unit": "c"#),
            args_delta(2, r#"elsius"}"#),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("The user wants the weather in Paris; I should call the tool.")
                    .with_signature(SIGNATURE)
                    .with_provider("anthropic")
            ),
            ResponsePart::text("I'll check the current weather in Paris."),
            call(
                "get_weather",
                r#"{"location":"Paris, France","unit":"celsius"}"#,
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
            ),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCall));
    // `message_delta`'s output tokens replace `message_start`'s; input counts cached reads.
    assert_eq!(
        response.usage,
        RequestUsage {
            cache_read_tokens: 128,
            ..RequestUsage::new(600, 89)
        }
    );
    assert_eq!(
        response.provider_response_id.as_deref(),
        Some("msg_01XFDUDYJgAACzvnptvVoYEL")
    );
}

#[tokio::test]
async fn text_with_a_redacted_thinking_block_served_byte_by_byte() {
    let (streamed, whole) = streamed_and_whole("text", 1, Duration::ZERO).await;
    assert_eq!(
        streamed.deltas,
        [
            text_delta(1, "Hello"),
            text_delta(1, "! Ünïcode \"quotes\""),
            text_delta(1, "\nand a new line."),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            ResponsePart::Provider(ProviderPart::new(
                "anthropic",
                json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"})
            )),
            ResponsePart::text("Hello! Ünïcode \"quotes\"\nand a new line."),
        ]
    );
    assert_eq!(response.usage, RequestUsage::new(25, 15));
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn a_tool_use_without_arguments_keeps_its_empty_input() {
    let sse = [
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ]
    .iter()
    .map(|data| {
        let kind = serde_json::from_str::<serde_json::Value>(data).expect("as scripted")["type"]
            .as_str()
            .expect("as scripted")
            .to_owned();
        format!("event: {kind}\ndata: {data}\n\n")
    })
    .collect::<String>();
    let server = serve(vec![Reply::sse_whole(&sse)]).await;
    let streamed = drive(
        &model(&server),
        &[request(vec![user("Time?")])],
        &RequestParams::text(vec![]),
    )
    .await;
    assert_eq!(streamed.deltas, [call_start(0, "now", "toolu_1")]);
    let response = streamed.response();
    assert_eq!(response.parts, [call("now", "{}", "toolu_1")]);
    assert_eq!(response.usage, RequestUsage::new(10, 7));
}

#[tokio::test]
async fn thinking_held_back_by_the_redaction_goes_out_before_its_signature() {
    let event = |data: serde_json::Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().expect("as scripted")
        )
    };
    let sse = [
        event(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 1}}})),
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
        // The key is `sk-ant-…`: the final `s` could begin it.
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Yes"}})),
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
        event(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Ok, yes"}})),
        event(json!({"type": "content_block_stop", "index": 1})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat();
    let server = serve(vec![Reply::sse_whole(&sse)]).await;
    let streamed = drive(
        &model(&server),
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;
    assert_eq!(
        streamed.deltas,
        [
            thinking_delta(0, "Ye"),
            thinking_delta(0, "s"),
            ResponseDelta::ThinkingSignature {
                part: 0,
                signature: "c2lnbmVk".to_owned(),
            },
            text_delta(1, "Ok, ye"),
            // Released when its block stopped.
            text_delta(1, "s"),
        ]
    );
}
