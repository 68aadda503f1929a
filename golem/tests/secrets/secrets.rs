//! Credentials never leave: servers that echo golem's credential headers into every kind of
//! body the decoders reject, into error bodies and into answers, and a subscriber capturing
//! every tracing event at TRACE. No credential may appear in an error's `Display`, `Debug`
//! or `source()` chain, in the history, or in a log line.
//!
//! Alone in its test binary: the subscriber is global.

#![cfg(all(feature = "openai", feature = "anthropic"))]

use crate::common;

use std::error::Error as _;
use std::time::Duration;

use common::logs::logs;

use golem::Agent;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-leak-Q7xv93kdLmZ0pRt5";
/// A proxy credential with characters that JSON and `Debug` escape.
const TOKEN: &str = "tok\"Wq81\\zzPLM4nsY2";
/// An upstream token added with `header`, not `secret_header`: its name makes it secret.
const UPSTREAM: &str = "up-9Hc4TnV7eK2mRq";
/// The parts of the secrets that must never show, in any form.
const FRAGMENTS: [&str; 6] = [
    "Q7xv93kd", "kdLmZ0pR", "Wq81", "zzPLM4ns", "9Hc4TnV7", "eK2mRq",
];

fn assert_clean(what: &str, text: &str) {
    for fragment in FRAGMENTS {
        assert!(
            !text.contains(fragment),
            "{what} shows a credential ({fragment}): {text}"
        );
    }
}

/// The error's every face: Display, Debug (with the history), and the source chain.
fn assert_error_clean(error: &golem::RunError) {
    assert_clean("Display", &error.to_string());
    assert_clean("Debug", &format!("{error:?}"));
    assert_clean("history", &format!("{:?}", error.messages()));
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

/// What the server echoes: every credential header golem sent.
fn echo(request: &Request) -> String {
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    format!(
        "authorization={} x-api-key={} x-proxy-token={} x-upstream-token={}",
        header("authorization"),
        header("x-api-key"),
        header("x-proxy-token"),
        header("x-upstream-token")
    )
}

/// A server answering every request with `shape`, given the echo.
struct Echo(Box<dyn Fn(String) -> ResponseTemplate + Send + Sync>);

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        (self.0)(echo(request))
    }
}

async fn echoing(shape: impl Fn(String) -> ResponseTemplate + Send + Sync + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Echo(Box::new(shape)))
        .mount(&server)
        .await;
    server
}

fn fast_retries() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(1)
            .backoff(Duration::from_millis(1), Duration::from_millis(2)),
    )
}

fn openai(server: &MockServer) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .secret_header("x-proxy-token", TOKEN)
        .header("X-Upstream-Token", UPSTREAM)
        .base_url(format!("{}/v1", server.uri()))
        .http(fast_retries())
        .build()
        .expect("valid model")
}

fn anthropic(server: &MockServer) -> AnthropicModel {
    AnthropicModel::builder("claude-sonnet-4-5")
        .api_key(KEY)
        .secret_header("x-proxy-token", TOKEN)
        .header("X-Upstream-Token", UPSTREAM)
        .base_url(format!("{}/v1", server.uri()))
        .http(fast_retries())
        .build()
        .expect("valid model")
}

fn json_body(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn raw(status: u16, body: String, content_type: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body, content_type)
}

/// A response built around the echoed credentials.
type Shape = fn(String) -> ResponseTemplate;

/// Bodies no decoder accepts, and error bodies, each echoing the credentials.
fn shared_shapes() -> Vec<(&'static str, Shape)> {
    vec![
        ("a bare JSON string", |echo| json_body(json!(echo))),
        ("truncated JSON", |echo| {
            raw(200, format!("{{\"echo\": \"{echo}"), "application/json")
        }),
        ("plain text", |echo| raw(200, echo, "text/plain")),
        ("HTML cut inside the key", |echo| {
            raw(
                200,
                format!("<html>{}{echo}</html>", "x".repeat(260)),
                "text/html",
            )
        }),
        ("a JSON error", |echo| {
            ResponseTemplate::new(400).set_body_json(json!({"error": {"message": echo}}))
        }),
        ("a text error", |echo| raw(400, echo, "text/plain")),
        ("an auth error", |echo| {
            ResponseTemplate::new(401).set_body_json(json!({"error": {"message": echo}}))
        }),
        ("a server error, retried", |echo| {
            ResponseTemplate::new(500).set_body_json(json!({"error": echo}))
        }),
        ("a rate limit, retried", |echo| {
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "1")
                .set_body_json(json!({"error": {"message": echo, "type": "rate_limit"}}))
        }),
        ("a long error cut inside the key", |echo| {
            raw(503, format!("{}{echo}", "y".repeat(270)), "text/plain")
        }),
    ]
}

fn openai_shapes() -> Vec<(&'static str, Shape)> {
    let mut shapes = shared_shapes();
    shapes.extend([
        (
            "choices as a string",
            (|echo| json_body(json!({"choices": echo}))) as Shape,
        ),
        ("a token count as a string", |echo| {
            json_body(json!({"choices": [], "usage": {"prompt_tokens": echo}}))
        }),
        ("content as a list", |echo| {
            json_body(
                json!({"choices": [{"message": {"content": [echo]}, "finish_reason": "stop"}]}),
            )
        }),
        ("a tool name as an object", |echo| {
            json_body(json!({"choices": [{"message": {"tool_calls": [
                {"id": echo, "function": {"name": {"echo": echo}, "arguments": "{}"}}
            ]}}]}))
        }),
        ("a finish reason as a number, the id echoed", |echo| {
            json_body(
                json!({"id": echo, "choices": [{"message": {"content": "x"}, "finish_reason": 7}]}),
            )
        }),
    ]);
    shapes
}

fn anthropic_shapes() -> Vec<(&'static str, Shape)> {
    let mut shapes = shared_shapes();
    shapes.extend([
        (
            "content as a string",
            (|echo| json_body(json!({"content": echo, "usage": {"input_tokens": 1, "output_tokens": 1}})))
                as Shape,
        ),
        ("a token count as a string", |echo| {
            json_body(json!({"content": [], "usage": {"input_tokens": echo, "output_tokens": 1}}))
        }),
        ("text as a number, the id echoed", |echo| {
            json_body(json!({"id": echo, "content": [{"type": "text", "text": 5}], "usage": {"input_tokens": 1, "output_tokens": 1}}))
        }),
        ("a tool use without a name", |echo| {
            json_body(json!({"content": [{"type": "tool_use", "id": echo, "input": {"echo": echo}}], "usage": {"input_tokens": 1, "output_tokens": 1}}))
        }),
    ]);
    shapes
}

#[tokio::test]
async fn openai_never_shows_a_credential_a_server_echoes() {
    logs();
    for (name, shape) in openai_shapes() {
        let server = echoing(shape).await;
        let agent = Agent::<(), String>::builder(openai(&server))
            .build()
            .expect("valid agent");
        let error = agent.run("Hi", ()).await.expect_err(name);
        assert_error_clean(&error);
    }
    assert_clean(
        "the model's Debug",
        &format!("{:?}", openai(&MockServer::start().await)),
    );
    assert_logs_clean();
}

#[tokio::test]
async fn anthropic_never_shows_a_credential_a_server_echoes() {
    logs();
    for (name, shape) in anthropic_shapes() {
        let server = echoing(shape).await;
        let agent = Agent::<(), String>::builder(anthropic(&server))
            .build()
            .expect("valid agent");
        let error = agent.run("Hi", ()).await.expect_err(name);
        assert_error_clean(&error);
    }
    assert_clean(
        "the model's Debug",
        &format!("{:?}", anthropic(&MockServer::start().await)),
    );
    assert_logs_clean();
}

#[tokio::test]
async fn an_answer_that_echoes_a_credential_reaches_the_history_redacted() {
    logs();
    let server = echoing(|echo| {
        json_body(json!({
            "id": "c1", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("Your headers: {echo}")}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }))
    })
    .await;
    let agent = Agent::<(), String>::builder(openai(&server))
        .build()
        .expect("valid agent");

    let result = agent.run("Hi", ()).await.expect("the run succeeds");

    assert_eq!(
        result.output,
        "Your headers: authorization=Bearer [redacted] x-api-key= x-proxy-token=[redacted] \
         x-upstream-token=[redacted]"
    );
    assert_clean("the history", &format!("{:?}", result.messages));
    assert_logs_clean();
}

#[tokio::test]
async fn the_redacted_messages_still_say_what_went_wrong() {
    logs();
    let server = echoing(|echo| {
        ResponseTemplate::new(400)
            .set_body_json(json!({"error": {"message": format!("bad request: {echo}")}}))
    })
    .await;
    let agent = Agent::<(), String>::builder(openai(&server))
        .build()
        .expect("valid agent");

    let error = agent.run("Hi", ()).await.expect_err("the run fails");

    assert_eq!(
        error.source().expect("cause").to_string(),
        "openai answered HTTP 400 after 1 attempt(s): bad request: \
         authorization=Bearer [redacted] x-api-key= x-proxy-token=[redacted] \
         x-upstream-token=[redacted]"
    );
    // The retry log of a server error carries the redacted message too.
    let server = echoing(|echo| ResponseTemplate::new(503).set_body_string(echo)).await;
    let agent = Agent::<(), String>::builder(openai(&server))
        .build()
        .expect("valid agent");
    agent.run("Hi", ()).await.expect_err("the run fails");
    let logs = logs().lock().expect("not poisoned").clone();
    assert!(
        logs.iter()
            .any(|line| line.contains("retrying model request")
                && line.contains("x-proxy-token=[redacted]")),
        "{logs:#?}"
    );
}
