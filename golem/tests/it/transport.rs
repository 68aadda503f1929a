//! The shared transport against loopback servers: the retry headers the official SDKs
//! honour, the overall deadline, custom headers on both builders, settings per agent.

#![cfg(all(feature = "openai", feature = "anthropic"))]

use crate::common;

use std::time::{Duration, Instant};

use common::http::{bodies, first_header, json_ok, serve};
use golem::Agent;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{ModelError, ModelSettings, ProviderError};
use serde_json::json;
use wiremock::{MockServer, ResponseTemplate};

fn says(text: &str) -> ResponseTemplate {
    json_ok(json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    }))
}

fn model(server: &MockServer, http: HttpSettings) -> OpenAiModel {
    OpenAiModel::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .http(http)
        .build()
        .expect("valid model")
}

fn quick_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(max_retries)
        .backoff(Duration::from_millis(1), Duration::from_millis(2))
        .jitter(false)
}

async fn run(model: OpenAiModel) -> Result<String, golem::RunError> {
    let agent = Agent::<(), String>::builder(model).build().expect("agent");
    agent.run("Hi", ()).await.map(|result| result.output)
}

#[tokio::test]
async fn retry_after_ms_is_honoured_before_retry_after() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "400")
                .insert_header("retry-after", "0"),
            says("late"),
        ],
    )
    .await;
    let started = Instant::now();

    let output = run(model(
        &server,
        HttpSettings::default().retry(quick_retries(1)),
    ))
    .await
    .unwrap();

    assert_eq!(output, "late");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn retry_after_ms_is_capped_like_retry_after() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(503).insert_header("retry-after-ms", "600000"),
            says("soon"),
        ],
    )
    .await;
    let started = Instant::now();
    let policy = quick_retries(1).max_retry_after(Duration::from_millis(50));

    run(model(&server, HttpSettings::default().retry(policy)))
        .await
        .unwrap();

    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    // `true` makes a 400 retried.
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(400)
                .insert_header("x-should-retry", "true")
                .set_body_json(json!({"error": {"message": "try again"}})),
            says("ok"),
        ],
    )
    .await;
    let output = run(model(
        &server,
        HttpSettings::default().retry(quick_retries(2)),
    ))
    .await
    .unwrap();
    assert_eq!(output, "ok");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    // `false` makes a 503 final.
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(503)
                .insert_header("x-should-retry", "false")
                .set_body_json(json!({"error": {"message": "down for maintenance"}})),
            says("never"),
        ],
    )
    .await;
    let error = run(model(
        &server,
        HttpSettings::default().retry(quick_retries(2)),
    ))
    .await
    .unwrap_err();
    assert!(matches!(
        error.model_error(),
        Some(ModelError::Http {
            status: 503,
            attempts: 1,
            ..
        })
    ));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_deadline_cuts_a_slow_attempt_short() {
    let server = serve(
        "/v1/chat/completions",
        vec![says("late").set_delay(Duration::from_secs(10))],
    )
    .await;
    let started = Instant::now();

    let error = run(model(
        &server,
        HttpSettings::default()
            .timeout(Duration::from_secs(30))
            .deadline(Duration::from_millis(300))
            .retry(quick_retries(3)),
    ))
    .await
    .unwrap_err();

    let model_error = error.model_error().unwrap();
    assert!(model_error.is_timeout(), "{model_error:?}");
    assert!(matches!(
        model_error,
        ModelError::Transport { attempts: 1, .. }
    ));
    // The attempt's timeout is the deadline's rest, and says what did not arrive.
    let cause = std::error::Error::source(model_error)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        cause.starts_with("no whole response arrived within ") && cause.ends_with(" ms"),
        "{cause}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn no_retry_starts_whose_wait_ends_past_the_deadline() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(503)
                .insert_header("retry-after", "5")
                .set_body_string("busy"),
            says("too late"),
        ],
    )
    .await;
    let started = Instant::now();

    let error = run(model(
        &server,
        HttpSettings::default()
            .deadline(Duration::from_secs(1))
            .retry(quick_retries(3)),
    ))
    .await
    .unwrap_err();

    assert_eq!(
        std::error::Error::source(&error).unwrap().to_string(),
        "openai answered HTTP 503 after 1 attempt(s): busy"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn retries_within_the_deadline_still_happen() {
    let server = serve(
        "/v1/chat/completions",
        vec![ResponseTemplate::new(502), says("ok")],
    )
    .await;
    let output = run(model(
        &server,
        HttpSettings::default()
            .deadline(Duration::from_secs(20))
            .retry(quick_retries(1)),
    ))
    .await
    .unwrap();
    assert_eq!(output, "ok");
}

#[tokio::test]
async fn custom_headers_reach_openai_compatible_servers_and_replace_golems() {
    let server = serve("/v1/chat/completions", vec![says("ok")]).await;
    let builder = OpenAiModel::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-replaced-0123456789")
        .header("HTTP-Referer", "https://example.org/app")
        .secret_header("api-key", "azure-secret-0123456789")
        .secret_header("authorization", "Bearer proxy-token-0123456789");
    assert!(!format!("{builder:?}").contains("azure-secret"));
    assert!(format!("{builder:?}").contains("https://example.org/app"));

    run(builder.build().unwrap()).await.unwrap();

    assert_eq!(
        first_header(&server, "http-referer").await.as_deref(),
        Some("https://example.org/app")
    );
    assert_eq!(
        first_header(&server, "api-key").await.as_deref(),
        Some("azure-secret-0123456789")
    );
    assert_eq!(
        first_header(&server, "authorization").await.as_deref(),
        Some("Bearer proxy-token-0123456789")
    );
}

#[tokio::test]
async fn custom_headers_reach_anthropic() {
    let server = serve(
        "/v1/messages",
        vec![json_ok(json!({
            "id": "m", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        }))],
    )
    .await;
    let model = AnthropicModel::builder("claude")
        .api_key("sk-ant-0123456789")
        .base_url(format!("{}/v1", server.uri()))
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .header("anthropic-version", "2024-01-01")
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    agent.run("Hi", ()).await.unwrap();

    assert_eq!(
        first_header(&server, "anthropic-beta").await.as_deref(),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(
        first_header(&server, "anthropic-version").await.as_deref(),
        Some("2024-01-01")
    );
    assert_eq!(
        first_header(&server, "x-api-key").await.as_deref(),
        Some("sk-ant-0123456789")
    );
}

#[test]
fn a_header_http_cannot_carry_is_a_build_error_that_never_shows_the_value() {
    let error = OpenAiModel::builder("m")
        .base_url("http://127.0.0.1:1/v1")
        .secret_header("x-token", "line\nbreak-secret")
        .build()
        .unwrap_err();
    assert!(matches!(error, ProviderError::InvalidHeader { ref name } if name == "x-token"));
    assert!(!error.to_string().contains("break-secret"));
    let error = AnthropicModel::builder("claude")
        .api_key("sk-ant-0123456789")
        .header("bad name", "v")
        .build()
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::InvalidHeader { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn agent_settings_merge_over_the_models() {
    let server = serve("/v1/chat/completions", vec![says("ok")]).await;
    let model = OpenAiModel::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .settings(
            ModelSettings::default()
                .temperature(0.7)
                .max_tokens(100)
                .extra("top_k", 40)
                .extra("min_p", 0.05),
        )
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model)
        .model_settings(
            ModelSettings::default()
                .temperature(0.0)
                .seed(3)
                .extra("top_k", 10),
        )
        .build()
        .unwrap();

    agent.run("Hi", ()).await.unwrap();

    let body = &bodies(&server).await[0];
    assert_eq!(body["temperature"], json!(0.0));
    assert_eq!(body["max_tokens"], json!(100));
    assert_eq!(body["seed"], json!(3));
    assert_eq!(body["top_k"], json!(10));
    assert_eq!(body["min_p"], json!(0.05));
}

#[tokio::test]
async fn one_model_serves_many_agents_with_their_own_settings_over_one_pool() {
    let server = serve("/v1/chat/completions", vec![says("a"), says("b")]).await;
    let model = model(&server, HttpSettings::default());
    let cold = Agent::<(), String>::builder(model.clone())
        .model_settings(ModelSettings::default().temperature(0.0))
        .build()
        .unwrap();
    let hot = Agent::<(), String>::builder(model)
        .model_settings(ModelSettings::default().temperature(1.5))
        .build()
        .unwrap();

    cold.run("Hi", ()).await.unwrap();
    hot.run("Hi", ()).await.unwrap();

    let sent = bodies(&server).await;
    assert_eq!(sent[0]["temperature"], json!(0.0));
    assert_eq!(sent[1]["temperature"], json!(1.5));
}
