//! Credentials never leave a stream: servers that echo golem's credentials inside text
//! deltas, tool calls, error events, corrupt chunks, non-SSE bodies and error statuses,
//! sent a few bytes at a time so a key is split across chunks, and a subscriber capturing
//! every tracing event at TRACE. No credential may appear in a delta, the history, an
//! error's `Display`, `Debug` or `source()` chain, or a log line.
//!
//! Alone in its test binary: the subscriber is global.

#![cfg(all(feature = "openai", feature = "anthropic"))]

use crate::common;

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use common::logs::logs;
use common::sse::{Reply, SseServer, serve};
use common::streams::drive;
use futures_util::StreamExt;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{
    Message, Model, ModelRequest, RequestParams, RequestPart, ResponseDelta, StreamFault,
};
use golem::{Agent, RunEvent};
use serde_json::json;

const KEY: &str = "sk-leak-Q7xv93kdLmZ0pRt5";
/// A proxy credential with characters that JSON escapes.
const TOKEN: &str = "tok\"Wq81\\zzPLM4nsY2";
/// The parts of the secrets that must never show, in any form.
const FRAGMENTS: [&str; 4] = ["Q7xv93kd", "kdLmZ0pR", "Wq81", "zzPLM4ns"];

/// The credentials as a server echoing its request headers writes them (`json!` escapes
/// them where they go into JSON).
fn echo() -> String {
    format!("key={KEY} token={TOKEN}")
}

fn assert_clean(what: &str, text: &str) {
    for fragment in FRAGMENTS {
        assert!(
            !text.contains(fragment),
            "{what} shows a credential ({fragment}): {text}"
        );
    }
}

fn assert_error_clean(error: &golem::RunError) {
    assert_clean("Display", &error.to_string());
    assert_clean("Debug", &format!("{error:?}"));
    let mut source = error.source();
    while let Some(cause) = source {
        assert_clean("a source's Display", &cause.to_string());
        assert_clean("a source's Debug", &format!("{cause:?}"));
        source = cause.source();
    }
}

fn assert_logs_clean() {
    for line in logs().lock().expect("not poisoned").iter() {
        assert_clean("a log line", line);
    }
}

fn http() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(1)
            .backoff(Duration::from_millis(1), Duration::from_millis(2)),
    )
}

fn openai(server: &SseServer) -> Arc<dyn Model> {
    Arc::new(
        OpenAiModel::builder("gpt-4o")
            .api_key(KEY)
            .secret_header("x-proxy-token", TOKEN)
            .base_url(format!("{}/v1", server.uri()))
            .http(http())
            .build()
            .expect("as scripted"),
    )
}

fn anthropic(server: &SseServer) -> Arc<dyn Model> {
    Arc::new(
        AnthropicModel::builder("claude")
            .api_key(KEY)
            .secret_header("x-proxy-token", TOKEN)
            .base_url(format!("{}/v1", server.uri()))
            .http(http())
            .build()
            .expect("as scripted"),
    )
}

fn chunk(choices: serde_json::Value, usage: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": choices, "usage": usage})
    )
}

fn event(data: serde_json::Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().expect("as scripted")
    )
}

fn anthropic_start() -> String {
    event(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    )
}

/// Streams that end in an error, each echoing the credentials somewhere.
fn failing(anthropic: bool) -> Vec<(&'static str, Reply)> {
    let echo = echo();
    let split = |body: String| Reply::sse(&body, 3, Duration::ZERO);
    let mut shapes = vec![
        (
            "a JSON 200",
            Reply::whole(200, "application/json", &json!({"echo": echo}).to_string()),
        ),
        (
            "HTML cut inside the key",
            Reply::whole(
                200,
                "text/html",
                &format!("<html>{}{echo}</html>", "x".repeat(280)),
            ),
        ),
        (
            "a 400 before the stream",
            Reply::whole(
                400,
                "application/json",
                &json!({"error": {"message": echo}}).to_string(),
            ),
        ),
        (
            "a 401",
            Reply::whole(
                401,
                "application/json",
                &json!({"error": {"message": echo}}).to_string(),
            ),
        ),
        (
            "a corrupt chunk",
            split(format!("data: {{\"echo\": \"{echo}\n\n")),
        ),
    ];
    if anthropic {
        shapes.extend([
            ("an error event", split(anthropic_start() + &event(json!({"type": "error", "error": {"type": "overloaded_error", "message": echo}})))),
            ("an unknown block index", split(anthropic_start() + &event(json!({"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": echo}})))),
            ("an early end after echoed text", split(anthropic_start()
                + &event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
                + &event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": echo}}))))
        ]);
    } else {
        shapes.extend([
            (
                "an error chunk",
                split(
                    chunk(
                        json!([{"index": 0, "delta": {"content": "Hi"}}]),
                        json!(null),
                    ) + &format!(
                        "data: {}\n\n",
                        json!({"error": {"message": echo, "type": echo}})
                    ),
                ),
            ),
            (
                "a vLLM error chunk",
                split(format!(
                    "data: {}\n\n",
                    json!({"object": "error", "message": echo})
                )),
            ),
            (
                "an early end after echoed text",
                split(chunk(
                    json!([{"index": 0, "delta": {"content": echo}}]),
                    json!(null),
                )),
            ),
        ]);
    }
    shapes
}

/// A stream that succeeds with the credentials in its text and in a tool call.
fn echoing(anthropic: bool) -> String {
    let echo = echo();
    if anthropic {
        anthropic_start()
            + &event(
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            )
            + &event(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("Your headers: {echo}")}}),
            )
            + &event(json!({"type": "content_block_stop", "index": 0}))
            + &event(
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
            )
            + &event(json!({"type": "message_stop"}))
    } else {
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": format!("Your headers: {echo}")}}]),
            json!(null),
        ) + &chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            json!(null),
        ) + &chunk(
            json!([]),
            json!({"prompt_tokens": 3, "completion_tokens": 5}),
        ) + "data: [DONE]\n\n"
    }
}

async fn never_shows_a_credential(anthropic_wire: bool) {
    logs();
    for (name, reply) in failing(anthropic_wire) {
        let server = serve(vec![reply.clone(), reply]).await;
        let model = if anthropic_wire {
            anthropic(&server)
        } else {
            openai(&server)
        };
        let agent = Agent::<(), String>::builder(model)
            .build()
            .expect("as scripted");
        let mut events = agent.run_stream("Hi", ());
        let mut error = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => assert_clean(name, &format!("{event:?}")),
                Err(failure) => error = Some(failure),
            }
        }
        let error = error.unwrap_or_else(|| panic!("{name}: the run fails"));
        assert_error_clean(&error);
        assert_clean("the history", &format!("{:?}", error.messages()));
    }
    assert_logs_clean();
}

#[tokio::test]
async fn an_openai_stream_never_shows_a_credential_a_server_echoes() {
    never_shows_a_credential(false).await;
}

#[tokio::test]
async fn an_anthropic_stream_never_shows_a_credential_a_server_echoes() {
    never_shows_a_credential(true).await;
}

#[tokio::test]
async fn echoed_credentials_reach_deltas_and_history_redacted_even_split_across_chunks() {
    logs();
    for anthropic_wire in [false, true] {
        let server = serve(vec![Reply::sse(
            &echoing(anthropic_wire),
            2,
            Duration::ZERO,
        )])
        .await;
        let model = if anthropic_wire {
            anthropic(&server)
        } else {
            openai(&server)
        };
        let agent = Agent::<(), String>::builder(model)
            .build()
            .expect("as scripted");
        let mut events = agent.run_stream("Hi", ());
        let mut text = String::new();
        let mut finished = None;
        while let Some(event) = events.next().await {
            match event.expect("as scripted") {
                RunEvent::Delta {
                    delta: golem::model::ResponseDelta::Text { text: more, .. },
                    ..
                } => {
                    text.push_str(&more);
                }
                RunEvent::Finished(result) => finished = Some(result),
                _ => {}
            }
        }
        let result = finished.expect("as scripted");
        let expected = "Your headers: key=[redacted] token=[redacted]";
        assert_eq!(text, expected);
        assert_eq!(result.output, expected);
        assert_clean("the history", &format!("{:?}", result.messages));
    }
    assert_logs_clean();
}

/// `text` cut into `count` pieces of about equal length, at character boundaries; with
/// `usize::MAX`, a character a piece.
fn cut(text: &str, count: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(count.min(chars.len()).max(1));
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// What the echo becomes once redacted.
const REDACTED_ECHO: &str = "key=[redacted] token=[redacted]";

/// A stream whose text, tool call arguments and (Anthropic) thinking carry the
/// credentials, each cut into `count` events. With `end_early`, the stream ends after the
/// text, cut in the middle of the key, cleanly but without its end.
fn split_stream(anthropic_wire: bool, count: usize, end_early: bool) -> String {
    let text = format!("Your headers: {}", echo());
    let args = json!({"note": echo()}).to_string();
    if end_early {
        let cut_at = text.find("93kd").expect("in the key");
        let text = &text[..cut_at];
        return if anthropic_wire {
            anthropic_start()
                + &event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
                + &cut(text, count)
                    .iter()
                    .map(|piece| event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})))
                    .collect::<String>()
        } else {
            cut(text, count)
                .iter()
                .map(|piece| {
                    chunk(
                        json!([{"index": 0, "delta": {"content": piece}}]),
                        json!(null),
                    )
                })
                .collect()
        };
    }
    if anthropic_wire {
        let block = |index: usize,
                     start: serde_json::Value,
                     kind: &str,
                     field: &str,
                     text: &str| {
            event(json!({"type": "content_block_start", "index": index, "content_block": start}))
                + &cut(text, count)
                    .iter()
                    .map(|piece| event(json!({"type": "content_block_delta", "index": index, "delta": {"type": kind, field: piece}})))
                    .collect::<String>()
                + &event(json!({"type": "content_block_stop", "index": index}))
        };
        anthropic_start()
            + &block(
                0,
                json!({"type": "thinking", "thinking": ""}),
                "thinking_delta",
                "thinking",
                &text,
            )
            + &block(
                1,
                json!({"type": "text", "text": ""}),
                "text_delta",
                "text",
                &text,
            )
            + &block(
                2,
                json!({"type": "tool_use", "id": "toolu_1", "name": "note", "input": {}}),
                "input_json_delta",
                "partial_json",
                &args,
            )
            + &event(
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            )
            + &event(json!({"type": "message_stop"}))
    } else {
        cut(&text, count)
            .iter()
            .map(|piece| chunk(json!([{"index": 0, "delta": {"content": piece}}]), json!(null)))
            .collect::<String>()
            + &chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "note", "arguments": ""}}]}}]),
                json!(null),
            )
            + &cut(&args, count)
                .iter()
                .map(|piece| chunk(json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]), json!(null)))
                .collect::<String>()
            + &chunk(json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]), json!(null))
            + &chunk(json!([]), json!({"prompt_tokens": 3, "completion_tokens": 9}))
            + "data: [DONE]\n\n"
    }
}

/// The deltas of one kind, joined.
fn joined(deltas: &[ResponseDelta], kind: fn(&ResponseDelta) -> Option<&str>) -> String {
    deltas.iter().filter_map(kind).collect()
}

#[tokio::test]
async fn a_credential_split_across_events_is_redacted_in_the_deltas_and_the_response() {
    logs();
    let params = RequestParams::text(Vec::new());
    let messages = [Message::Request(ModelRequest::new(vec![
        RequestPart::user_prompt("Hi"),
    ]))];
    for anthropic_wire in [false, true] {
        // In two events, in three, and a character an event.
        for count in [2, 3, usize::MAX] {
            let what = format!("anthropic: {anthropic_wire}, in {count} pieces");
            let server = serve(vec![Reply::sse_whole(&split_stream(
                anthropic_wire,
                count,
                false,
            ))])
            .await;
            let model = if anthropic_wire {
                anthropic(&server)
            } else {
                openai(&server)
            };
            let streamed = drive(&*model, &messages, &params).await;
            assert_clean(&what, &format!("{:?}", streamed.deltas));
            let expected_text = format!("Your headers: {REDACTED_ECHO}");
            let text = joined(&streamed.deltas, |delta| match delta {
                ResponseDelta::Text { text, .. } => Some(text),
                _ => None,
            });
            assert_eq!(text, expected_text, "{what}");
            let args = joined(&streamed.deltas, |delta| match delta {
                ResponseDelta::ToolCallArgs { args, .. } => Some(args),
                _ => None,
            });
            let expected_args = json!({"note": REDACTED_ECHO});
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&args).expect("JSON"),
                expected_args,
                "{what}"
            );
            let thinking = joined(&streamed.deltas, |delta| match delta {
                ResponseDelta::Thinking { text, .. } => Some(text),
                _ => None,
            });
            let response = streamed.response();
            assert_clean(&what, &format!("{response:?}"));
            assert_eq!(response.text_content(), expected_text, "{what}");
            let calls: Vec<_> = response.tool_calls().collect();
            assert_eq!(calls.len(), 1, "{what}");
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&calls[0].args).expect("JSON"),
                expected_args,
                "{what}"
            );
            if anthropic_wire {
                assert_eq!(
                    streamed_thinking(&response).concat(),
                    expected_text,
                    "{what}"
                );
                assert_eq!(thinking, expected_text, "{what}");
            }
        }
    }
    assert_logs_clean();
}

/// The thinking parts' texts of a response.
fn streamed_thinking(response: &golem::model::ModelResponse) -> Vec<String> {
    response
        .parts
        .iter()
        .filter_map(|part| match part {
            golem::model::ResponsePart::Thinking(thinking) => Some(thinking.content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stream_that_ends_inside_a_split_credential_shows_none_of_it() {
    logs();
    let params = RequestParams::text(Vec::new());
    let messages = [Message::Request(ModelRequest::new(vec![
        RequestPart::user_prompt("Hi"),
    ]))];
    for anthropic_wire in [false, true] {
        for count in [2, 3, usize::MAX] {
            let what = format!("anthropic: {anthropic_wire}, in {count} pieces");
            let server = serve(vec![Reply::sse_whole(&split_stream(
                anthropic_wire,
                count,
                true,
            ))])
            .await;
            let model = if anthropic_wire {
                anthropic(&server)
            } else {
                openai(&server)
            };
            let streamed = drive(&*model, &messages, &params).await;
            // What could begin the key was held back, and is dropped with the stream.
            assert_eq!(
                joined(&streamed.deltas, |delta| match delta {
                    ResponseDelta::Text { text, .. } => Some(text),
                    _ => None,
                }),
                "Your headers: key=",
                "{what}"
            );
            let error = streamed.error();
            assert_eq!(
                error.stream_fault(),
                Some(StreamFault::EndedEarly),
                "{what}"
            );
            assert_clean(&what, &format!("{error} {error:?}"));
        }
        // The same through a run: the history, the error and its chain stay clean.
        let server = serve(vec![Reply::sse_whole(&split_stream(
            anthropic_wire,
            usize::MAX,
            true,
        ))])
        .await;
        let model = if anthropic_wire {
            anthropic(&server)
        } else {
            openai(&server)
        };
        let agent = Agent::<(), String>::builder(model)
            .build()
            .expect("as scripted");
        let mut events = agent.run_stream("Hi", ());
        let mut failure = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => assert_clean("a run event", &format!("{event:?}")),
                Err(error) => failure = Some(error),
            }
        }
        let failure = failure.expect("the run fails");
        assert_error_clean(&failure);
        assert_clean("the history", &format!("{:?}", failure.messages()));
    }
    assert_logs_clean();
}
