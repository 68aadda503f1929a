//! `FallbackModel` over real HTTP models on loopback: the next model answers on the failures
//! chosen (transport, 429, 5xx, overloaded by default), not on a request the user must fix;
//! a stream falls back only before its first event; the response and the error say which
//! model answered or failed.

#![cfg(feature = "openai")]

use crate::common;

use std::error::Error as _;
use std::time::Duration;

use common::sse::{Piece, Reply, SseServer, serve};
use common::streams::*;
use common::*;
use golem::model::fallback::{FailureClass, FallbackModel};
use golem::model::function::FunctionModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{Model, ModelError, RequestParams, StreamFault};
use golem::{Agent, Stage};
use serde_json::json;

fn openai(name: &str, server: &SseServer) -> OpenAiModel {
    OpenAiModel::builder(name)
        .api_key("sk-test-0123456789abcdef")
        .base_url(format!("{}/v1", server.uri()))
        .http(HttpSettings::default().retry(RetryPolicy::none()))
        .build()
        .expect("valid model")
}

fn completion(model: &str, text: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    })
}

fn error_reply(status: u16, message: &str) -> Reply {
    Reply::whole(
        status,
        "application/json",
        &json!({"error": {"message": message, "type": "error"}}).to_string(),
    )
}

#[tokio::test]
async fn a_rate_limited_model_is_followed_by_the_next_and_the_response_names_it() {
    let primary = serve(vec![error_reply(429, "Rate limit reached")]).await;
    let backup = serve(vec![Reply::json(&completion(
        "gpt-4o-mini-2024-07-18",
        "Hello",
    ))])
    .await;
    let model = FallbackModel::new(openai("gpt-4o", &primary)).or(openai("gpt-4o-mini", &backup));
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let result = agent.run("Hi", ()).await.unwrap();

    assert_eq!(result.output, "Hello");
    let answered = result.messages[1].as_response().unwrap();
    assert_eq!(
        answered.model_name.as_deref(),
        Some("gpt-4o-mini-2024-07-18")
    );
    assert_eq!(result.usage, golem::model::Usage::request(9, 2));
    assert_eq!((primary.requests(), backup.requests()), (1, 1));
}

#[tokio::test]
async fn every_default_class_falls_back() {
    let cases = [
        error_reply(500, "The server had an error"),
        error_reply(503, "The engine is currently overloaded"),
        error_reply(529, "Overloaded"),
        error_reply(429, "Rate limit reached"),
    ];
    for reply in cases {
        let primary = serve(vec![reply]).await;
        let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
        let model = FallbackModel::new(openai("a", &primary)).or(openai("b", &backup));
        let response = model
            .request(
                &[request(vec![user("Hi")])],
                &RequestParams::text(Vec::new()),
            )
            .await
            .unwrap();
        assert_eq!(response.text_content(), "Hello");
    }
    // A server that is not there at all: a transport failure.
    let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
    let gone = OpenAiModel::builder("a")
        .base_url("http://127.0.0.1:9/v1")
        .http(HttpSettings::default().retry(RetryPolicy::none()))
        .build()
        .unwrap();
    let response = FallbackModel::new(gone)
        .or(openai("b", &backup))
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap();
    assert_eq!(response.text_content(), "Hello");
}

#[tokio::test]
async fn a_request_the_user_must_fix_is_not_sent_to_the_next_model() {
    let primary = serve(vec![error_reply(
        400,
        "Invalid 'messages[0].content': string too long.",
    )])
    .await;
    let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
    let agent = Agent::<(), String>::builder(
        FallbackModel::new(openai("gpt-4o", &primary)).or(openai("gpt-4o-mini", &backup)),
    )
    .build()
    .unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Model);
    let Some(ModelError::Fallback(fallback)) = error.model_error() else {
        panic!("a fallback error: {error:?}");
    };
    assert_eq!(fallback.failures().len(), 1);
    assert_eq!(fallback.failures()[0].model, "gpt-4o");
    assert_eq!(fallback.failures()[0].system, "openai");
    assert_eq!(
        error.source().unwrap().to_string(),
        "model `gpt-4o` failed: openai answered HTTP 400 after 1 attempt(s): \
         Invalid 'messages[0].content': string too long."
    );
    assert_eq!(error.model_error().unwrap().status(), Some(400));
    assert_eq!(
        FailureClass::of(error.model_error().unwrap()),
        FailureClass::ClientError
    );
    assert_eq!(backup.requests(), 0);
}

#[tokio::test]
async fn when_every_model_fails_the_error_lists_each_in_order() {
    let first = serve(vec![error_reply(503, "Service unavailable")]).await;
    let second = serve(vec![error_reply(429, "Rate limit reached")]).await;
    let model = FallbackModel::new(openai("gpt-4o", &first)).or(openai("gpt-4o-mini", &second));

    let error = model
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap_err();

    assert_eq!(
        error.to_string(),
        "2 models failed: `gpt-4o`: openai answered HTTP 503 after 1 attempt(s): Service unavailable; \
         `gpt-4o-mini`: openai answered HTTP 429 after 1 attempt(s): Rate limit reached"
    );
    assert_eq!(error.status(), Some(429));
    let ModelError::Fallback(fallback) = &error else {
        panic!("a fallback error");
    };
    assert_eq!(
        fallback.source().unwrap().to_string(),
        "openai answered HTTP 429 after 1 attempt(s): Rate limit reached"
    );
}

#[tokio::test]
async fn the_classes_to_fall_back_on_are_the_users_choice() {
    let primary = serve(vec![error_reply(
        404,
        "The model `gpt-5-nano` does not exist",
    )])
    .await;
    let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
    let model = FallbackModel::new(openai("gpt-5-nano", &primary))
        .or(openai("gpt-4o-mini", &backup))
        .fallback_on([FailureClass::ClientError]);

    let response = model
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap();
    assert_eq!(response.text_content(), "Hello");

    // And a class left out is not fallen back on.
    let primary = serve(vec![error_reply(429, "Rate limit reached")]).await;
    let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
    let model = FallbackModel::new(openai("a", &primary))
        .or(openai("b", &backup))
        .fallback_on([FailureClass::ServerError]);
    let error = model
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(429));
    assert_eq!(backup.requests(), 0);
}

#[tokio::test]
async fn a_stream_that_fails_before_its_first_event_falls_back() {
    let primary = serve(vec![error_reply(503, "Service unavailable")]).await;
    let backup = serve(vec![Reply::sse(
        &fixture("openai-stream/text.sse"),
        16,
        Duration::ZERO,
    )])
    .await;
    let model = FallbackModel::new(openai("gpt-4o", &primary)).or(openai("gpt-4o-mini", &backup));

    let streamed = drive(
        &model,
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;

    assert_eq!(streamed.text(0), "The sky is \"blue\" — mostly,\nby day.");
    let response = streamed.response();
    assert_eq!(response.model_name.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!((primary.requests(), backup.requests()), (1, 1));
}

/// A model whose stream's first event is a provider's error with `message`.
fn failing_stream(message: &'static str) -> FunctionModel {
    FunctionModel::new_stream(move |_, _| {
        vec![Err::<golem::model::StreamEvent, _>(ModelError::Stream {
            provider: "anthropic".into(),
            fault: StreamFault::Provider,
            message: message.into(),
            source: None,
        })]
    })
    .with_name("claude")
}

#[tokio::test]
async fn an_overloaded_rate_limited_or_failing_provider_as_a_streams_first_event_falls_back() {
    for message in [
        "overloaded_error: Overloaded",
        "rate_limit_error: Number of request tokens has exceeded your per-minute rate limit",
        "RESOURCE_EXHAUSTED: Quota exceeded",
        "api_error: Internal server error",
    ] {
        let backup = FunctionModel::new(|_, _| golem::model::ModelResponse::text("Hello"))
            .with_name("backup");
        let model = FallbackModel::new(failing_stream(message)).or(backup);

        let streamed = drive(
            &model,
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await;

        let response = streamed.response();
        assert_eq!(response.text_content(), "Hello", "{message}");
        assert_eq!(response.model_name.as_deref(), Some("backup"));
    }
}

#[tokio::test]
async fn a_streams_first_event_the_user_must_fix_does_not_fall_back() {
    let backup =
        FunctionModel::new(|_, _| golem::model::ModelResponse::text("Hello")).with_name("backup");
    let model =
        FallbackModel::new(failing_stream("invalid_request_error: prompt is too long")).or(backup);

    let streamed = drive(
        &model,
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;

    let ModelError::Fallback(fallback) = streamed.error() else {
        panic!("a fallback error");
    };
    assert_eq!(fallback.failures().len(), 1);
    assert_eq!(fallback.failures()[0].model, "claude");
    assert_eq!(
        fallback.last().to_string(),
        "the response stream from anthropic failed (provider error): invalid_request_error: prompt is too long"
    );
}

#[tokio::test]
async fn a_stream_that_fails_after_its_first_event_does_not_fall_back() {
    let sse = fixture("openai-stream/text.sse");
    // The second event carries the first delta.
    let first = sse.find("\n\n").unwrap() + 2;
    let cut = first + sse[first..].find("\n\n").unwrap() + 2;
    let primary = serve(vec![
        Reply::sse_open(&sse[..cut], 1024, Duration::ZERO).then(Piece::Cut),
    ])
    .await;
    let backup = serve(vec![Reply::json(&completion("b", "Hello"))]).await;
    let model = FallbackModel::new(openai("gpt-4o", &primary)).or(openai("gpt-4o-mini", &backup));

    let streamed = drive(
        &model,
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;

    assert_eq!(streamed.deltas, [text_delta(0, "The sky")]);
    assert_eq!(
        streamed.error().stream_fault(),
        Some(StreamFault::Disconnected)
    );
    let ModelError::Fallback(fallback) = streamed.error() else {
        panic!("a fallback error");
    };
    assert_eq!(fallback.failures()[0].model, "gpt-4o");
    assert_eq!(backup.requests(), 0);
}

#[test]
fn the_name_lists_the_models_and_the_system_is_the_first_ones() {
    let model = FallbackModel::new(
        FunctionModel::new(|_, _| golem::model::ModelResponse::text("")).with_name("a"),
    )
    .or(FunctionModel::new(|_, _| golem::model::ModelResponse::text("")).with_name("b"));
    assert_eq!(model.name(), "fallback:a,b");
    assert_eq!(model.system(), "function");
    assert_eq!(model.models().len(), 2);
}
