//! Stream faults, for both providers, against a raw loopback socket: a cut connection, a
//! clean but early end, a stall, a corrupt chunk, an in-stream error event, a body that is
//! no event stream, error statuses before the stream (retried) and after it began (never),
//! the deadline, and a dropped stream closing its connection. Each ends in a typed
//! `ModelError` with the deltas that arrived before it, never a hang or a short response.

#![cfg(all(feature = "openai", feature = "anthropic"))]

use crate::common;

use std::error::Error as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dice::{Game, roll_dice};
use common::sse::{Piece, Reply, SseServer, serve};
use common::streams::*;
use common::*;
use futures_util::StreamExt;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{Model, ModelError, RequestParams, StreamEvent, StreamFault};
use golem::{Agent, Stage};

#[derive(Debug, Clone, Copy)]
enum Provider {
    OpenAi,
    Anthropic,
}

const BOTH: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

fn anthropic_event(data: &str) -> String {
    let kind = serde_json::from_str::<serde_json::Value>(data).expect("as scripted")["type"]
        .as_str()
        .expect("as scripted")
        .to_owned();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn openai_chunk(choices: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":{choices}}}\n\n"
    )
}

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    fn model(self, server: &SseServer, http: HttpSettings) -> Arc<dyn Model> {
        let base = format!("{}/v1", server.uri());
        match self {
            Provider::OpenAi => Arc::new(
                OpenAiModel::builder("gpt-4o")
                    .api_key("sk-test-0123456789abcdef")
                    .base_url(base)
                    .http(http)
                    .build()
                    .expect("as scripted"),
            ),
            Provider::Anthropic => Arc::new(
                AnthropicModel::builder("claude")
                    .api_key("sk-ant-test-0123456789")
                    .base_url(base)
                    .http(http)
                    .build()
                    .expect("as scripted"),
            ),
        }
    }

    /// The start of a text response: one delta, "Hel".
    fn head(self) -> String {
        match self {
            Provider::OpenAi => {
                openai_chunk(r#"[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]"#)
                    + &openai_chunk(r#"[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]"#)
            }
            Provider::Anthropic => [
                r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            ]
            .map(anthropic_event)
            .concat(),
        }
    }

    /// Everything but the end: OpenAI's finish reason without the usage (which was asked
    /// for) and `[DONE]`, Anthropic's `message_delta` without `message_stop`.
    fn all_but_the_end(self) -> String {
        match self {
            Provider::OpenAi => {
                self.head()
                    + &openai_chunk(r#"[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]"#)
            }
            Provider::Anthropic => {
                self.head()
                    + &[
                        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}"#,
                        r#"{"type":"content_block_stop","index":0}"#,
                        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#,
                    ]
                    .map(anthropic_event)
                    .concat()
            }
        }
    }

    /// A whole text response, "Hello".
    fn full(self) -> String {
        self.all_but_the_end()
            + match self {
                Provider::OpenAi => "data: [DONE]\n\n".to_owned(),
                Provider::Anthropic => anthropic_event(r#"{"type":"message_stop"}"#),
            }
            .as_str()
    }

    /// An error event, as each provider sends one.
    fn error_event(self) -> String {
        match self {
            Provider::OpenAi => "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n".to_owned(),
            Provider::Anthropic => "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
        }
    }

    /// The provider's error event, as the caller reads it.
    fn error_message(self) -> &'static str {
        match self {
            Provider::OpenAi => {
                "server_error: The server had an error while processing your request."
            }
            Provider::Anthropic => "overloaded_error: Overloaded",
        }
    }
}

fn settings() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(2)
            .backoff(Duration::from_millis(1), Duration::from_millis(5)),
    )
}

async fn run(provider: Provider, replies: Vec<Reply>, http: HttpSettings) -> (Streamed, SseServer) {
    let server = serve(replies).await;
    let model = provider.model(&server, http);
    let streamed = drive(
        model.as_ref(),
        &[request(vec![user("Hi")])],
        &RequestParams::text(vec![]),
    )
    .await;
    (streamed, server)
}

fn assert_fault(provider: Provider, streamed: &Streamed, fault: StreamFault, message: &str) {
    let error = streamed.error();
    assert_eq!(error.stream_fault(), Some(fault), "{provider:?}: {error}");
    assert_eq!(
        error.to_string(),
        format!(
            "the response stream from {} failed ({fault}): {message}",
            provider.name()
        ),
        "{provider:?}"
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_a_disconnect_after_the_deltas_that_arrived() {
    for provider in BOTH {
        let reply = Reply::sse_open(&(provider.head() + "data: {\"partial"), 9, Duration::ZERO)
            .then(Piece::Cut);
        let (streamed, server) = run(provider, vec![reply], settings()).await;
        assert_eq!(streamed.deltas, [text_delta(0, "Hel")], "{provider:?}");
        assert_fault(
            provider,
            &streamed,
            StreamFault::Disconnected,
            "the connection broke before the response was complete",
        );
        assert!(
            streamed.error().source().is_some(),
            "the transport error is the source"
        );
        assert_eq!(
            server.requests(),
            1,
            "{provider:?}: a started stream is never retried"
        );
    }
}

#[tokio::test]
async fn a_stream_that_ends_cleanly_before_its_end_event_ended_early() {
    for provider in BOTH {
        let (streamed, _server) = run(
            provider,
            vec![Reply::sse(&provider.all_but_the_end(), 13, Duration::ZERO)],
            settings(),
        )
        .await;
        assert_eq!(
            streamed.deltas,
            [text_delta(0, "Hel"), text_delta(0, "lo")],
            "{provider:?}"
        );
        assert_fault(
            provider,
            &streamed,
            StreamFault::EndedEarly,
            "the stream ended before the response was complete",
        );
    }
}

#[tokio::test]
async fn an_openai_stream_done_without_a_finish_reason_ended_early() {
    let body = Provider::OpenAi.head() + "data: [DONE]\n\n";
    let (streamed, _server) =
        run(Provider::OpenAi, vec![Reply::sse_whole(&body)], settings()).await;
    assert_eq!(streamed.deltas, [text_delta(0, "Hel")]);
    assert_fault(
        Provider::OpenAi,
        &streamed,
        StreamFault::EndedEarly,
        "the stream ended with [DONE] but no choice had a finish_reason",
    );
}

#[tokio::test]
async fn an_anthropic_stream_cut_after_message_start_is_not_a_message() {
    let body = anthropic_event(
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    let (streamed, _server) = run(
        Provider::Anthropic,
        vec![Reply::sse_whole(&body)],
        settings(),
    )
    .await;
    assert_fault(
        Provider::Anthropic,
        &streamed,
        StreamFault::Corrupt,
        "`content_block_start` before `message_start`",
    );
}

#[tokio::test]
async fn a_stall_between_chunks_fails_at_the_idle_timeout() {
    for provider in BOTH {
        let reply = Reply::sse_open(&provider.head(), usize::MAX, Duration::ZERO)
            .then(Piece::Pause(Duration::from_secs(30)));
        let started = Instant::now();
        let (streamed, _server) = run(
            provider,
            vec![reply],
            settings().idle_timeout(Some(Duration::from_millis(200))),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5), "{provider:?}");
        assert_eq!(streamed.deltas, [text_delta(0, "Hel")]);
        assert_fault(
            provider,
            &streamed,
            StreamFault::Idle,
            "no byte arrived for 200 ms",
        );
        assert!(streamed.error().is_timeout());
    }
}

#[tokio::test]
async fn slow_chunks_within_the_idle_timeout_are_fine() {
    for provider in BOTH {
        let reply = Reply::sse(&provider.full(), 40, Duration::from_millis(30));
        let (streamed, _server) = run(
            provider,
            vec![reply],
            settings().idle_timeout(Some(Duration::from_millis(500))),
        )
        .await;
        assert_eq!(streamed.text(0), "Hello", "{provider:?}");
        assert_eq!(streamed.response().parts, [text("Hello")]);
    }
}

#[tokio::test]
async fn the_deadline_ends_a_stream_that_keeps_going() {
    for provider in BOTH {
        // A chunk every 50 ms never trips the idle timeout; the deadline still ends it.
        let mut reply = Reply::sse_open(&provider.head(), usize::MAX, Duration::ZERO);
        for _ in 0..200 {
            reply = reply
                .then(Piece::Pause(Duration::from_millis(50)))
                .then(Piece::Chunk(b": keep-alive\n\n".to_vec()));
        }
        let started = Instant::now();
        let (streamed, _server) = run(
            provider,
            vec![reply],
            settings()
                .idle_timeout(Some(Duration::from_secs(2)))
                .deadline(Duration::from_millis(600)),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5), "{provider:?}");
        let error = streamed.error();
        assert_eq!(
            error.stream_fault(),
            Some(StreamFault::TimedOut),
            "{provider:?}: {error}"
        );
        assert!(error.is_timeout());
    }
}

#[tokio::test]
async fn a_corrupt_chunk_is_a_corrupt_stream() {
    for provider in BOTH {
        let body = provider.head() + "data: {\"type\": \"content_block_delta\", \"index\": \n\n";
        let (streamed, _server) = run(
            provider,
            vec![Reply::sse(&body, 17, Duration::ZERO)],
            settings(),
        )
        .await;
        assert_eq!(streamed.deltas, [text_delta(0, "Hel")], "{provider:?}");
        let error = streamed.error();
        assert_eq!(
            error.stream_fault(),
            Some(StreamFault::Corrupt),
            "{provider:?}: {error}"
        );
        let prefix = match provider {
            Provider::OpenAi => "a chunk is not a chat completion chunk: ",
            Provider::Anthropic => "an event cannot be read: ",
        };
        assert!(
            error.to_string().starts_with(&format!(
                "the response stream from {} failed (corrupt chunk): {prefix}",
                provider.name()
            )),
            "{error}"
        );
    }
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_a_corrupt_stream() {
    for provider in BOTH {
        let reply = Reply::sse_open(&provider.head(), usize::MAX, Duration::ZERO)
            .then(Piece::Chunk(b"data: \xff\xfe\n\n".to_vec()))
            .then(Piece::End);
        let (streamed, _server) = run(provider, vec![reply], settings()).await;
        assert_fault(
            provider,
            &streamed,
            StreamFault::Corrupt,
            "the stream is not UTF-8",
        );
    }
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_the_providers_error() {
    for provider in BOTH {
        let body = provider.head() + &provider.error_event();
        let (streamed, server) = run(
            provider,
            vec![Reply::sse(&body, 21, Duration::ZERO)],
            settings(),
        )
        .await;
        assert_eq!(streamed.deltas, [text_delta(0, "Hel")], "{provider:?}");
        assert_fault(
            provider,
            &streamed,
            StreamFault::Provider,
            provider.error_message(),
        );
        assert_eq!(server.requests(), 1);
    }
}

#[tokio::test]
async fn a_vllm_error_chunk_is_the_providers_error() {
    let body = "data: {\"object\":\"error\",\"message\":\"max_tokens is too large\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}\n\n";
    let (streamed, _server) = run(Provider::OpenAi, vec![Reply::sse_whole(body)], settings()).await;
    assert!(streamed.deltas.is_empty());
    assert_fault(
        Provider::OpenAi,
        &streamed,
        StreamFault::Provider,
        "max_tokens is too large",
    );
}

#[tokio::test]
async fn an_answer_that_is_no_event_stream_is_refused() {
    for provider in BOTH {
        let replies = vec![
            Reply::whole(200, "application/json", r#"{"id":"x","choices":[]}"#),
            Reply::whole(
                200,
                "text/html; charset=utf-8",
                "<html><body>Gateway login</body></html>",
            ),
        ];
        let server = serve(replies).await;
        let model = provider.model(&server, settings());
        let (messages, params) = ([request(vec![user("Hi")])], RequestParams::text(vec![]));
        for (content_type, body) in [
            ("application/json", r#"{"id":"x","choices":[]}"#),
            (
                "text/html; charset=utf-8",
                "<html><body>Gateway login</body></html>",
            ),
        ] {
            let streamed = drive(model.as_ref(), &messages, &params).await;
            assert!(streamed.deltas.is_empty());
            assert_fault(
                provider,
                &streamed,
                StreamFault::NotEventStream,
                &format!("expected an event stream, got content type `{content_type}`: {body}"),
            );
        }
        assert_eq!(server.requests(), 2, "{provider:?}: not retried");
    }
}

#[tokio::test]
async fn statuses_before_the_stream_are_retried_under_the_policy() {
    for provider in BOTH {
        let replies = vec![
            Reply::whole(
                429,
                "application/json",
                r#"{"error":{"message":"Rate limit reached"}}"#,
            ),
            Reply::whole(503, "text/plain", "upstream unavailable"),
            Reply::sse(&provider.full(), 8, Duration::ZERO),
        ];
        let (streamed, server) = run(provider, replies, settings()).await;
        assert_eq!(streamed.text(0), "Hello", "{provider:?}");
        assert!(streamed.end.is_ok());
        assert_eq!(server.requests(), 3);
    }
}

#[tokio::test]
async fn retries_run_out_as_an_http_error_and_client_errors_are_not_retried() {
    for provider in BOTH {
        let busy = || {
            Reply::whole(
                529,
                "application/json",
                r#"{"error":{"message":"Overloaded"}}"#,
            )
        };
        let (streamed, server) = run(provider, vec![busy(), busy(), busy()], settings()).await;
        assert!(streamed.deltas.is_empty());
        assert!(
            matches!(streamed.error(), ModelError::Http { status: 529, attempts: 3, message, .. } if message == "Overloaded"),
            "{provider:?}: {}",
            streamed.error()
        );
        assert_eq!(server.requests(), 3);

        let bad = Reply::whole(
            400,
            "application/json",
            r#"{"error":{"message":"stream_options is unsupported"}}"#,
        );
        let (streamed, server) = run(provider, vec![bad], settings()).await;
        assert!(
            matches!(
                streamed.error(),
                ModelError::Http {
                    status: 400,
                    attempts: 1,
                    ..
                }
            ),
            "{provider:?}: {}",
            streamed.error()
        );
        assert_eq!(server.requests(), 1);
    }
}

#[tokio::test]
async fn a_stream_that_began_is_not_retried_even_with_retries_left() {
    for provider in BOTH {
        let replies = vec![
            Reply::whole(503, "text/plain", "warming up"),
            Reply::sse_open(&provider.head(), 5, Duration::ZERO).then(Piece::Cut),
            Reply::sse(&provider.full(), 8, Duration::ZERO),
        ];
        let (streamed, server) = run(provider, replies, settings()).await;
        assert_eq!(streamed.deltas, [text_delta(0, "Hel")]);
        assert_eq!(
            streamed.error().stream_fault(),
            Some(StreamFault::Disconnected)
        );
        assert_eq!(
            server.requests(),
            2,
            "{provider:?}: the 503 was retried, the stream not"
        );
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    for provider in BOTH {
        let reply = Reply::sse_open(&provider.head(), usize::MAX, Duration::ZERO).then(Piece::Hold);
        let server = serve(vec![reply]).await;
        let model = provider.model(&server, settings());
        let (messages, params) = ([request(vec![user("Hi")])], RequestParams::text(vec![]));
        let mut stream = model.request_stream(&messages, &params);
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("a delta arrives");
        assert!(
            matches!(first, Some(Ok(StreamEvent::Delta(_)))),
            "{first:?}"
        );
        drop(stream);
        assert!(
            server.wait_closed(Duration::from_secs(5)).await,
            "{provider:?}: the server sees the connection close"
        );
    }
}

#[tokio::test]
async fn a_stream_fault_ends_an_agent_run_with_the_history_so_far() {
    for provider in BOTH {
        let reply = Reply::sse_open(&provider.head(), 6, Duration::ZERO).then(Piece::Cut);
        let server = serve(vec![reply]).await;
        let agent = Agent::<Game, String>::builder(provider.model(&server, settings()))
            .tool(roll_dice())
            .build()
            .expect("as scripted");
        let items: Vec<_> = agent.run_stream("Roll", Game).collect().await;
        let error = items.last().expect("as scripted").as_ref().unwrap_err();
        assert_eq!(error.stage(), Stage::Model);
        let model_error = error
            .source()
            .and_then(|source| source.downcast_ref::<ModelError>())
            .expect("the model error is the source");
        assert_eq!(model_error.stream_fault(), Some(StreamFault::Disconnected));
        assert_eq!(
            error.messages(),
            [request(vec![user("Roll")])],
            "{provider:?}"
        );
        assert_eq!(error.usage().requests, 0);
        assert_eq!(server.requests(), 1);
    }
}

/// OpenAI's usage chunk, sent after the finish reason when `include_usage` was asked for.
const OPENAI_USAGE: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"total_tokens\":12}}\n\n";

#[tokio::test]
async fn an_openai_stream_complete_but_for_done_is_accepted() {
    // The finish reason and the usage arrived; the body ends without `[DONE]`.
    let body = Provider::OpenAi.all_but_the_end() + OPENAI_USAGE;
    let (streamed, _server) = run(
        Provider::OpenAi,
        vec![Reply::sse(&body, 11, Duration::ZERO)],
        settings(),
    )
    .await;
    assert_eq!(streamed.deltas, [text_delta(0, "Hel"), text_delta(0, "lo")]);
    let response = streamed.response();
    assert_eq!(response.parts, [text("Hello")]);
    assert_eq!(
        response.finish_reason,
        Some(golem::model::FinishReason::Stop)
    );
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (10, 2)
    );

    // Without the usage asked for, the finish reason is the end.
    let server = serve(vec![Reply::sse_whole(&Provider::OpenAi.all_but_the_end())]).await;
    let model = OpenAiModel::builder("gpt-4o")
        .api_key("sk-test-0123456789abcdef")
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
    assert_eq!(streamed.response().parts, [text("Hello")]);
}

#[tokio::test]
async fn a_stream_may_outlast_the_request_timeout_while_it_is_not_idle() {
    for provider in BOTH {
        // A keep-alive every 100 ms for a second, three times the request timeout.
        let full = provider.full();
        let head = provider.head();
        let mut reply = Reply::sse_open(&head, usize::MAX, Duration::ZERO);
        for _ in 0..10 {
            reply = reply
                .then(Piece::Pause(Duration::from_millis(100)))
                .then(Piece::Chunk(b": keep-alive\n\n".to_vec()));
        }
        let reply = reply
            .then(Piece::Chunk(full.as_bytes()[head.len()..].to_vec()))
            .then(Piece::End);
        let (streamed, server) = run(
            provider,
            vec![reply],
            settings()
                .timeout(Duration::from_millis(300))
                .idle_timeout(Some(Duration::from_secs(2))),
        )
        .await;
        assert_eq!(
            streamed.deltas,
            [text_delta(0, "Hel"), text_delta(0, "lo")],
            "{provider:?}"
        );
        assert_eq!(streamed.response().parts, [text("Hello")], "{provider:?}");
        assert_eq!(server.requests(), 1);
    }
}

#[tokio::test]
async fn the_request_timeout_bounds_the_wait_for_a_streams_headers() {
    for provider in BOTH {
        let late = Reply(vec![Piece::Pause(Duration::from_secs(3))]).then(Piece::End);
        let http = settings().timeout(Duration::from_millis(200));
        // Late headers are retried like any timeout...
        let (streamed, server) = run(
            provider,
            vec![late.clone(), Reply::sse_whole(&provider.full())],
            http.clone(),
        )
        .await;
        assert_eq!(streamed.response().parts, [text("Hello")], "{provider:?}");
        assert_eq!(server.requests(), 2, "{provider:?}");
        // ...and, once the retries ran out, a timeout error.
        let (streamed, server) = run(
            provider,
            vec![late.clone(), late],
            http.retry(RetryPolicy::none()),
        )
        .await;
        let error = streamed.error();
        assert!(error.is_timeout(), "{provider:?}: {error:?}");
        assert!(
            matches!(error, ModelError::Transport { attempts: 1, .. }),
            "{error:?}"
        );
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("no response headers arrived within 200 ms")
        );
        assert_eq!(server.requests(), 1);
    }
}

/// A 4 MiB text, as one event's data.
fn four_mib_stream(provider: Provider) -> (String, String) {
    let text: String = "golem streams ".repeat(4 * 1024 * 1024 / 14 + 1);
    let body = match provider {
        Provider::OpenAi => {
            openai_chunk(&serde_json::json!([{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]).to_string())
                + &openai_chunk(r#"[{"index":0,"delta":{},"finish_reason":"stop"}]"#)
                + OPENAI_USAGE
                + "data: [DONE]\n\n"
        }
        Provider::Anthropic => [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#.to_owned(),
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.to_owned(),
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}).to_string(),
            r#"{"type":"content_block_stop","index":0}"#.to_owned(),
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#.to_owned(),
            r#"{"type":"message_stop"}"#.to_owned(),
        ]
        .iter()
        .map(|data| anthropic_event(data))
        .collect(),
    };
    (text, body)
}

#[tokio::test]
async fn a_four_mib_event_arrives_whole_while_an_idle_stream_beside_it_times_out() {
    for provider in BOTH {
        let (text, body) = four_mib_stream(provider);
        let big = serve(vec![Reply::sse(&body, 8 * 1024, Duration::ZERO)]).await;
        let stalled = serve(vec![
            Reply::sse_open(&provider.head(), usize::MAX, Duration::ZERO)
                .then(Piece::Pause(Duration::from_secs(30))),
        ])
        .await;
        let idle = settings().idle_timeout(Some(Duration::from_millis(500)));
        let (big_model, stalled_model) = (
            provider.model(&big, idle.clone()),
            provider.model(&stalled, idle),
        );
        let messages = [request(vec![user("Hi")])];
        let params = RequestParams::text(vec![]);
        let (big, stalled) = futures_util::join!(
            drive(big_model.as_ref(), &messages, &params),
            drive(stalled_model.as_ref(), &messages, &params),
        );
        assert_eq!(big.text(0).len(), text.len(), "{provider:?}");
        assert!(big.text(0) == text, "{provider:?}: the text arrives whole");
        assert_eq!(big.response().text_content(), text, "{provider:?}");
        assert_fault(
            provider,
            &stalled,
            StreamFault::Idle,
            "no byte arrived for 500 ms",
        );
    }
}

#[tokio::test]
async fn a_complete_stream_gives_its_connection_back_when_its_body_ends_soon_after() {
    for provider in BOTH {
        // The body's last chunk comes 50 ms after the end event, as a proxy may send it.
        let reply = || Reply::sse_keep_alive(&provider.full(), Duration::from_millis(50));
        let server = serve(vec![reply(), reply(), reply()]).await;
        let model = provider.model(&server, settings());
        for _ in 0..3 {
            let streamed = drive(
                model.as_ref(),
                &[request(vec![user("Hi")])],
                &RequestParams::text(vec![]),
            )
            .await;
            assert_eq!(streamed.response().parts, [text("Hello")], "{provider:?}");
        }
        assert_eq!(server.requests(), 3);
        assert_eq!(
            server.connections(),
            1,
            "{provider:?}: one connection, reused"
        );
    }
}
